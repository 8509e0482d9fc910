package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The gateway writes and reads its own internal records
// (__consumer_offsets) as uncompressed RecordBatch v2, encoded here: a few
// dozen lines that need no codec and keep the batch layout in one place.

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// record is one key/value of an internal batch; a nil value is a
// tombstone.
type record struct {
	key, value []byte
}

// appendBatch appends one uncompressed RecordBatch v2 holding recs, all at
// timestamp ts, with no producer.
func appendBatch(dst []byte, ts int64, recs []record) []byte {
	start := len(dst)
	dst = kbin.AppendInt64(dst, 0)  // base offset, assigned by the store
	dst = kbin.AppendInt32(dst, 0)  // length, patched below
	dst = kbin.AppendInt32(dst, -1) // partition leader epoch
	dst = append(dst, 2)            // magic
	dst = kbin.AppendInt32(dst, 0)  // crc, patched below
	crcFrom := len(dst)
	dst = kbin.AppendInt16(dst, 0) // attributes: no compression, CreateTime
	dst = kbin.AppendInt32(dst, int32(len(recs)-1))
	dst = kbin.AppendInt64(dst, ts)
	dst = kbin.AppendInt64(dst, ts)
	dst = kbin.AppendInt64(dst, -1) // producer id
	dst = kbin.AppendInt16(dst, -1) // producer epoch
	dst = kbin.AppendInt32(dst, -1) // base sequence
	dst = kbin.AppendInt32(dst, int32(len(recs)))
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0)                       // attributes
		body = kbin.AppendVarlong(body, 0)           // timestamp delta
		body = kbin.AppendVarint(body, int32(i))     // offset delta
		body = kbin.AppendVarintBytes(body, r.key)   // -1 length for nil
		body = kbin.AppendVarintBytes(body, r.value) // nil value: tombstone
		body = kbin.AppendVarint(body, 0)            // no headers
		dst = kbin.AppendVarint(dst, int32(len(body)))
		dst = append(dst, body...)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[crcFrom:], crc32c))
	return dst
}

var errBadInternalBatch = errors.New("malformed internal record batch")

// batchInfo is what readBatches reports of a batch.
type batchInfo struct {
	baseOffset int64
	nextOffset int64 // offset after the batch's last record
	compressed bool
	control    bool
}

// readBatches walks whole batches in data (a trailing partial batch is
// ignored, as fetches may cut one) and calls fn for each record of each
// uncompressed, non-control batch. It returns the offset after the last
// whole batch, or -1 if there was none.
func readBatches(data []byte, fn func(b batchInfo, r record) error) (int64, error) {
	next := int64(-1)
	for len(data) >= 61 {
		n := 12 + int(int32(binary.BigEndian.Uint32(data[8:])))
		if n < 61 {
			return next, fmt.Errorf("%w: batch length %d", errBadInternalBatch, n)
		}
		if n > len(data) {
			break
		}
		b := data[:n]
		data = data[n:]
		if b[16] != 2 {
			return next, fmt.Errorf("%w: magic %d", errBadInternalBatch, b[16])
		}
		attrs := binary.BigEndian.Uint16(b[21:])
		info := batchInfo{
			baseOffset: int64(binary.BigEndian.Uint64(b)),
			compressed: attrs&0x07 != 0,
			control:    attrs&0x20 != 0,
		}
		info.nextOffset = info.baseOffset + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		next = info.nextOffset
		if info.compressed || info.control {
			if err := fn(info, record{}); err != nil {
				return next, err
			}
			continue
		}
		count := int(int32(binary.BigEndian.Uint32(b[57:])))
		r := kbin.Reader{Src: b[61:]}
		for i := 0; i < count; i++ {
			length := r.Varint()
			rec := kbin.Reader{Src: r.Span(int(length))}
			rec.Int8()    // attributes
			rec.Varlong() // timestamp delta
			rec.Varint()  // offset delta
			key := rec.VarintBytes()
			value := rec.VarintBytes()
			if !r.Ok() || !rec.Ok() {
				return next, fmt.Errorf("%w: record %d truncated", errBadInternalBatch, i)
			}
			if err := fn(info, record{key: key, value: value}); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}
