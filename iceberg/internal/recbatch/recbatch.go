package recbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordBatch v2 header layout (Kafka's DefaultRecordBatch).
const (
	batchHeaderSize = 61
	attrControl     = 0x20
	attrTxn         = 0x10
	attrLogAppend   = 0x08
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadRecord: bytes that are not a well-formed RecordBatch v2.
var ErrBadRecord = errors.New("bad record batch")

// Record is one Kafka record. Key, Value and header values alias the
// batch (or its decompressed copy) until the decoder's next call.
type Record struct {
	Partition int32
	Offset    int64
	Timestamp int64  // Unix milliseconds
	Key       []byte // nil: no key
	Value     []byte // nil: a tombstone
	Headers   []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Batch is one RecordBatch v2 cut off a fetch.
type Batch struct {
	Base        int64
	lastDelta   int32
	attrs       int16
	baseTs      int64
	maxTs       int64
	ProducerID  int64
	recordCount int32
	body        []byte // the records, still compressed
}

func (b *Batch) Control() bool       { return b.attrs&attrControl != 0 }
func (b *Batch) Transactional() bool { return b.attrs&attrTxn != 0 }
func (b *Batch) Next() int64         { return b.Base + int64(b.lastDelta) + 1 }

// NextBatch cuts the first whole batch off p; ok is false when p holds no
// whole batch (a fetch may end inside one).
func NextBatch(p []byte) (b Batch, rest []byte, ok bool, err error) {
	if len(p) < 12 {
		return b, p, false, nil
	}
	n := int(int32(binary.BigEndian.Uint32(p[8:])))
	if n < batchHeaderSize-12 {
		return b, p, false, fmt.Errorf("%w: batch length %d", ErrBadRecord, n)
	}
	if len(p) < 12+n {
		return b, p, false, nil
	}
	raw := p[:12+n]
	if raw[16] != 2 {
		return b, p, false, fmt.Errorf("%w: magic %d", ErrBadRecord, raw[16])
	}
	if crc32.Checksum(raw[21:], castagnoli) != binary.BigEndian.Uint32(raw[17:]) {
		return b, p, false, fmt.Errorf("%w: CRC mismatch at offset %d", ErrBadRecord, int64(binary.BigEndian.Uint64(raw)))
	}
	b = Batch{
		Base: int64(binary.BigEndian.Uint64(raw)), attrs: int16(binary.BigEndian.Uint16(raw[21:])),
		lastDelta: int32(binary.BigEndian.Uint32(raw[23:])), baseTs: int64(binary.BigEndian.Uint64(raw[27:])),
		maxTs: int64(binary.BigEndian.Uint64(raw[35:])), ProducerID: int64(binary.BigEndian.Uint64(raw[43:])),
		recordCount: int32(binary.BigEndian.Uint32(raw[57:])), body: raw[batchHeaderSize:],
	}
	if b.recordCount < 0 || b.lastDelta < 0 {
		return b, p, false, fmt.Errorf("%w: batch at offset %d counts %d records", ErrBadRecord, b.Base, b.recordCount)
	}
	return b, p[12+n:], true, nil
}

// Decoder turns batches into records, reusing its buffers.
type Decoder struct {
	dec   kgo.Decompressor
	recs  []Record
	hdrs  []Header
	nhdrs []int
}

func NewDecoder() *Decoder { return &Decoder{dec: kgo.DefaultDecompressor()} }

// Records decodes b's records for partition; they alias b (or the
// decompressed copy) until the next call.
func (d *Decoder) Records(partition int32, b *Batch) ([]Record, error) {
	body := b.body
	if codec := b.attrs & 7; codec != 0 {
		var err error
		if body, err = d.dec.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
			return nil, fmt.Errorf("%w: batch at offset %d: %v", ErrBadRecord, b.Base, err)
		}
	}
	d.recs, d.hdrs, d.nhdrs = d.recs[:0], d.hdrs[:0], d.nhdrs[:0]
	for i := int32(0); i < b.recordCount; i++ {
		n, k := binary.Varint(body)
		if k <= 0 || n < 0 || int64(len(body)-k) < n {
			return nil, fmt.Errorf("%w: record %d of batch at offset %d", ErrBadRecord, i, b.Base)
		}
		r, nh, err := d.record(body[k:k+int(n)], partition, b)
		if err != nil {
			return nil, err
		}
		d.recs = append(d.recs, r)
		d.nhdrs = append(d.nhdrs, nh)
		body = body[k+int(n):]
	}
	// Headers were appended to one slice; slice them out per record now
	// that it no longer grows.
	h := 0
	for i := range d.recs {
		n := d.nhdrs[i]
		if n == 0 {
			continue
		}
		d.recs[i].Headers = d.hdrs[h : h+n : h+n]
		h += n
	}
	return d.recs, nil
}

func (d *Decoder) record(rec []byte, partition int32, b *Batch) (Record, int, error) {
	bad := func() (Record, int, error) {
		return Record{}, 0, fmt.Errorf("%w: record in batch at offset %d", ErrBadRecord, b.Base)
	}
	if len(rec) < 1 {
		return bad()
	}
	rec = rec[1:] // attributes
	tsDelta, k := binary.Varint(rec)
	if k <= 0 {
		return bad()
	}
	rec = rec[k:]
	offDelta, k := binary.Varint(rec)
	if k <= 0 || offDelta < 0 || offDelta > int64(b.lastDelta) {
		return bad()
	}
	rec = rec[k:]
	out := Record{Partition: partition, Offset: b.Base + offDelta, Timestamp: b.baseTs + tsDelta}
	if b.attrs&attrLogAppend != 0 {
		out.Timestamp = b.maxTs
	}
	field := func() ([]byte, bool) {
		n, k := binary.Varint(rec)
		if k <= 0 || n < -1 || int64(len(rec)-k) < n {
			return nil, false
		}
		rec = rec[k:]
		if n < 0 {
			return nil, true
		}
		f := rec[:n:n]
		rec = rec[n:]
		return f, true
	}
	var ok bool
	if out.Key, ok = field(); !ok {
		return bad()
	}
	if out.Value, ok = field(); !ok {
		return bad()
	}
	nh, k := binary.Varint(rec)
	if k <= 0 || nh < 0 || nh > int64(len(rec)) {
		return bad()
	}
	rec = rec[k:]
	for range nh {
		hk, ok1 := field()
		hv, ok2 := field()
		if !ok1 || !ok2 || hk == nil {
			return bad()
		}
		d.hdrs = append(d.hdrs, Header{Key: string(hk), Value: hv})
	}
	return out, int(nh), nil
}
