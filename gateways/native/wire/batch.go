package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// RecordBatch v2, the format the store keeps and both protocols carry
// (Kafka's KIP-98 layout):
//
//	baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 (2)
//	crc u32 (CRC-32C of what follows) | attributes i16 | lastOffsetDelta i32
//	baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16
//	baseSequence i32 | recordCount i32 | records (compressed per attributes)

// BatchHeaderSize is the fixed part of a RecordBatch v2.
const BatchHeaderSize = 61

// Compression codecs, the low three bits of a batch's attributes.
const (
	CompressionNone   int16 = 0
	CompressionGzip   int16 = 1
	CompressionSnappy int16 = 2
	CompressionLZ4    int16 = 3
	CompressionZstd   int16 = 4
)

// ErrBadBatch: bytes that are not a RecordBatch v2.
var ErrBadBatch = errors.New("bad record batch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one record of a batch. Decoded records alias the batch (or its
// decompressed copy).
type Record struct {
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

// BatchBuilder builds RecordBatch v2 bytes. The zero value builds
// uncompressed batches without a producer id; reuse it across batches.
type BatchBuilder struct {
	Compression   int16
	ProducerID    int64 // -1 (set by Reset when 0 and not idempotent) for none
	ProducerEpoch int16
	BaseSequence  int32

	recs   []byte
	count  int32
	baseTs int64
	maxTs  int64
	comp   bytes.Buffer
	zenc   *zstd.Encoder
}

// Reset empties the builder for a new batch.
func (b *BatchBuilder) Reset() {
	b.recs = b.recs[:0]
	b.count = 0
}

// Len is the records' uncompressed size so far.
func (b *BatchBuilder) Len() int { return len(b.recs) }

// Count is the records added since Reset.
func (b *BatchBuilder) Count() int32 { return b.count }

func appendVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// Add appends a record with timestamp ts (Unix ms). The record is written
// once, straight into the batch's buffer: its size prefix is computed
// first.
func (b *BatchBuilder) Add(ts int64, key, value []byte, headers []Header) {
	if b.count == 0 {
		b.baseTs, b.maxTs = ts, ts
	}
	b.maxTs = max(b.maxTs, ts)
	n := 1 + varintLen(ts-b.baseTs) + varintLen(int64(b.count))
	n += bytesLen(key) + bytesLen(value) + varintLen(int64(len(headers)))
	for _, h := range headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	body := slices.Grow(b.recs, varintLen(int64(n))+n)
	body = appendVarint(body, int64(n))
	body = append(body, 0) // attributes
	body = appendVarint(body, ts-b.baseTs)
	body = appendVarint(body, int64(b.count))
	body = appendVarintBytes(body, key)
	body = appendVarintBytes(body, value)
	body = appendVarint(body, int64(len(headers)))
	for _, h := range headers {
		body = appendVarint(body, int64(len(h.Key)))
		body = append(body, h.Key...)
		body = appendVarintBytes(body, h.Value)
	}
	b.recs = body
	b.count++
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesLen is the size of b with its varint length (-1 for nil).
func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// AppendBatch appends the batch of the records added since Reset to dst.
func (b *BatchBuilder) AppendBatch(dst []byte) ([]byte, error) {
	if b.count == 0 {
		return dst, fmt.Errorf("%w: no records", ErrBadBatch)
	}
	recs := b.recs
	if b.Compression != CompressionNone {
		b.comp.Reset()
		if err := b.compress(&b.comp, recs); err != nil {
			return dst, err
		}
		recs = b.comp.Bytes()
	}
	dst = slices.Grow(dst, BatchHeaderSize+len(recs))
	start := len(dst)
	dst = AppendI64(dst, 0)
	dst = AppendI32(dst, int32(BatchHeaderSize-12+len(recs)))
	dst = AppendI32(dst, -1) // partition leader epoch: the store sets it
	dst = append(dst, 2)
	dst = AppendU32(dst, 0) // CRC, below
	dst = AppendI16(dst, b.Compression&7)
	dst = AppendI32(dst, b.count-1)
	dst = AppendI64(dst, b.baseTs)
	dst = AppendI64(dst, b.maxTs)
	pid := b.ProducerID
	if pid == 0 {
		pid = -1
	}
	dst = AppendI64(dst, pid)
	epoch, seq := b.ProducerEpoch, b.BaseSequence
	if pid < 0 {
		epoch, seq = -1, -1
	}
	dst = AppendI16(dst, epoch)
	dst = AppendI32(dst, seq)
	dst = AppendI32(dst, b.count)
	dst = append(dst, recs...)
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[start+21:], castagnoli))
	return dst, nil
}

func (b *BatchBuilder) compress(w *bytes.Buffer, src []byte) error {
	switch b.Compression {
	case CompressionGzip:
		zw := gzip.NewWriter(w)
		if _, err := zw.Write(src); err != nil {
			return err
		}
		return zw.Close()
	case CompressionSnappy:
		w.Write(snappy.Encode(nil, src))
		return nil
	case CompressionLZ4:
		zw := lz4.NewWriter(w)
		if _, err := zw.Write(src); err != nil {
			return err
		}
		return zw.Close()
	case CompressionZstd:
		if b.zenc == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return err
			}
			b.zenc = enc
		}
		w.Write(b.zenc.EncodeAll(src, nil))
		return nil
	}
	return fmt.Errorf("%w: compression codec %d", ErrBadBatch, b.Compression)
}

// BatchInfo is a batch's header.
type BatchInfo struct {
	BaseOffset      int64
	Length          int // the whole batch, header included
	LeaderEpoch     int32
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Compression is the batch's codec.
func (h *BatchInfo) Compression() int16 { return h.Attributes & 7 }

// LogAppendTime reports whether the topic stamps append times (bit 3).
func (h *BatchInfo) LogAppendTime() bool { return h.Attributes&8 != 0 }

// Control reports a transaction marker batch (bit 5).
func (h *BatchInfo) Control() bool { return h.Attributes&0x20 != 0 }

// NextBatch cuts the first whole batch off b. A partial batch at the end
// (a fetch may end inside one) gives ok false and no error.
func NextBatch(b []byte) (info BatchInfo, batch, rest []byte, ok bool, err error) {
	if len(b) < 12 {
		return info, nil, b, false, nil
	}
	n := int(int32(binary.BigEndian.Uint32(b[8:])))
	if n < BatchHeaderSize-12 {
		return info, nil, b, false, fmt.Errorf("%w: batch length %d", ErrBadBatch, n)
	}
	if len(b) < 12+n {
		return info, nil, b, false, nil
	}
	batch, rest = b[:12+n], b[12+n:]
	if batch[16] != 2 {
		return info, nil, b, false, fmt.Errorf("%w: magic %d, want 2", ErrBadBatch, batch[16])
	}
	info = BatchInfo{
		BaseOffset: int64(binary.BigEndian.Uint64(batch)), Length: 12 + n,
		LeaderEpoch: int32(binary.BigEndian.Uint32(batch[12:])), CRC: binary.BigEndian.Uint32(batch[17:]),
		Attributes: int16(binary.BigEndian.Uint16(batch[21:])), LastOffsetDelta: int32(binary.BigEndian.Uint32(batch[23:])),
		BaseTimestamp: int64(binary.BigEndian.Uint64(batch[27:])), MaxTimestamp: int64(binary.BigEndian.Uint64(batch[35:])),
		ProducerID: int64(binary.BigEndian.Uint64(batch[43:])), ProducerEpoch: int16(binary.BigEndian.Uint16(batch[51:])),
		BaseSequence: int32(binary.BigEndian.Uint32(batch[53:])), RecordCount: int32(binary.BigEndian.Uint32(batch[57:])),
	}
	if crc32.Checksum(batch[21:], castagnoli) != info.CRC {
		return info, nil, b, false, fmt.Errorf("%w: CRC mismatch at offset %d", ErrBadBatch, info.BaseOffset)
	}
	return info, batch, rest, true, nil
}

// Decoder turns batches into records; reuse one per consumer.
type Decoder struct {
	buf  bytes.Buffer
	zdec *zstd.Decoder
}

// Records appends the records of one batch (from NextBatch) to dst. They
// alias batch, or for a compressed batch a buffer of their own.
func (d *Decoder) Records(dst []Record, info *BatchInfo, batch []byte) ([]Record, error) {
	body := batch[BatchHeaderSize:]
	if c := info.Compression(); c != CompressionNone {
		d.buf.Reset()
		if err := d.decompress(c, body); err != nil {
			return dst, fmt.Errorf("%w: batch at offset %d: %v", ErrBadBatch, info.BaseOffset, err)
		}
		// A copy: the records must outlive the next batch's
		// decompression into the same buffer.
		body = bytes.Clone(d.buf.Bytes())
	}
	r := body
	for i := int32(0); i < info.RecordCount; i++ {
		n, k := binary.Varint(r)
		if k <= 0 || n < 0 || int64(len(r)-k) < n {
			return dst, fmt.Errorf("%w: record %d of batch at offset %d", ErrBadBatch, i, info.BaseOffset)
		}
		rec := r[k : k+int(n)]
		r = r[k+int(n):]
		out, err := decodeRecord(rec, info)
		if err != nil {
			return dst, err
		}
		if info.LogAppendTime() {
			out.Timestamp = info.MaxTimestamp
		}
		dst = append(dst, out)
	}
	return dst, nil
}

func decodeRecord(rec []byte, info *BatchInfo) (Record, error) {
	bad := func() (Record, error) {
		return Record{}, fmt.Errorf("%w: record in batch at offset %d", ErrBadBatch, info.BaseOffset)
	}
	if len(rec) < 1 {
		return bad()
	}
	rec = rec[1:]
	var vals [4]int64
	for i := 0; i < 2; i++ {
		v, k := binary.Varint(rec)
		if k <= 0 {
			return bad()
		}
		vals[i] = v
		rec = rec[k:]
	}
	out := Record{Timestamp: info.BaseTimestamp + vals[0], Offset: info.BaseOffset + vals[1]}
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
		if !ok1 || !ok2 {
			return bad()
		}
		out.Headers = append(out.Headers, Header{Key: string(hk), Value: hv})
	}
	return out, nil
}

func (d *Decoder) decompress(codec int16, src []byte) error {
	switch codec {
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return err
		}
		_, err = io.Copy(&d.buf, zr)
		return err
	case CompressionSnappy:
		// Java clients frame snappy the xerial way; librdkafka and Go
		// clients send it raw.
		if bytes.HasPrefix(src, xerialMagic) {
			return unxerial(&d.buf, src)
		}
		out, err := snappy.Decode(nil, src)
		d.buf.Write(out)
		return err
	case CompressionLZ4:
		_, err := io.Copy(&d.buf, lz4.NewReader(bytes.NewReader(src)))
		return err
	case CompressionZstd:
		if d.zdec == nil {
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			if err != nil {
				return err
			}
			d.zdec = zd
		}
		out, err := d.zdec.DecodeAll(src, nil)
		d.buf.Write(out)
		return err
	}
	return fmt.Errorf("unknown compression codec %d", codec)
}

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func unxerial(dst *bytes.Buffer, src []byte) error {
	if len(src) < 16 {
		return errors.New("short xerial snappy header")
	}
	src = src[16:]
	for len(src) > 0 {
		if len(src) < 4 {
			return errors.New("short xerial snappy chunk")
		}
		n := int(binary.BigEndian.Uint32(src))
		src = src[4:]
		if n < 0 || n > len(src) {
			return errors.New("xerial snappy chunk past the end")
		}
		out, err := snappy.Decode(nil, src[:n])
		if err != nil {
			return err
		}
		dst.Write(out)
		src = src[n:]
	}
	return nil
}
