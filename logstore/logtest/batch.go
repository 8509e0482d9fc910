package logtest

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one record of a batch.
type Record struct {
	Key, Value []byte
	// TimestampDelta is added to the batch's base timestamp.
	TimestampDelta int64
}

// Batch encodes records into one uncompressed RecordBatch v2 with base
// offset 0, no producer id, and firstTimestamp ts. The result is what a
// Kafka producer would send.
func Batch(ts int64, records ...Record) []byte {
	return AppendBatch(nil, ts, records...)
}

// AppendBatch is Batch appending to dst.
func AppendBatch(dst []byte, ts int64, records ...Record) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, 61)...)
	maxTs := ts
	for i, r := range records {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.TimestampDelta)
		body = binary.AppendVarint(body, int64(i))
		if r.Key == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.Key)))
			body = append(body, r.Key...)
		}
		if r.Value == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.Value)))
			body = append(body, r.Value...)
		}
		body = binary.AppendVarint(body, 0) // headers
		dst = binary.AppendVarint(dst, int64(len(body)))
		dst = append(dst, body...)
		if ts+r.TimestampDelta > maxTs {
			maxTs = ts + r.TimestampDelta
		}
	}
	b := dst[start:]
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[23:], uint32(len(records)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)     // epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff) // sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(records)))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return dst
}

// Filler returns one batch of n records whose values are size bytes each,
// the value bytes derived from seed so content can be checked on read-back.
func Filler(ts int64, n, size int, seed byte) []byte {
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = seed + byte(i) + byte(j)
		}
		recs[i] = Record{Value: v}
	}
	return Batch(ts, recs...)
}

// Records decodes the uncompressed records of a batch (its header skipped):
// key and value of each. It is the inverse of Batch for tests; it returns
// nil on malformed input rather than panicking.
func Records(batch []byte) []Record {
	if len(batch) < 61 {
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(batch[57:])))
	b := batch[61:]
	var out []Record
	for i := 0; i < n; i++ {
		l, k := binary.Varint(b)
		if k <= 0 || l < 0 || int(l) > len(b)-k {
			return nil
		}
		rec := b[k : k+int(l)]
		b = b[k+int(l):]
		if len(rec) == 0 {
			return nil
		}
		rec = rec[1:] // attributes
		td, k := binary.Varint(rec)
		if k <= 0 {
			return nil
		}
		rec = rec[k:]
		_, k = binary.Varint(rec) // offset delta
		if k <= 0 {
			return nil
		}
		rec = rec[k:]
		var r Record
		r.TimestampDelta = td
		for _, dst := range []*[]byte{&r.Key, &r.Value} {
			vl, k := binary.Varint(rec)
			if k <= 0 || int(vl) > len(rec)-k {
				return nil
			}
			rec = rec[k:]
			if vl >= 0 {
				*dst = rec[:vl]
				rec = rec[vl:]
			}
		}
		out = append(out, r)
	}
	return out
}

// WithProducer sets the producer id, epoch and base sequence of a batch
// built by Batch and recomputes its CRC, making it an idempotent batch.
func WithProducer(batch []byte, producerID int64, epoch int16, baseSequence int32) []byte {
	binary.BigEndian.PutUint64(batch[43:], uint64(producerID))
	binary.BigEndian.PutUint16(batch[51:], uint16(epoch))
	binary.BigEndian.PutUint32(batch[53:], uint32(baseSequence))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], castagnoli))
	return batch
}
