package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file is the cleaner's view of the bytes: reading stored batches
// with every check a reader relies on, taking their records apart, and
// writing the batches it keeps back as RecordBatch v2.
//
// A batch the cleaner rewrites keeps its base offset, last offset delta,
// base timestamp, leader epoch, attributes and producer fields, as
// Kafka's cleaner does for v2: the producer's last sequence stays where
// the offsets say, so a retry after compaction is still recognised. Only
// the record count, the max timestamp, the length and the CRC change, so a
// compacted batch holds fewer records than offsets (checkStoredFields).

// checkStoredFields is checkHeaderFields for a batch read from a log: a
// batch the cleaner rewrote may hold fewer records than its offsets span,
// and none at all when it only keeps a producer's last sequence or the
// end of a cleaned segment. Produce keeps the strict check: only the
// cleaner may make such a batch.
func checkStoredFields(h *BatchHeader) error {
	if h.RecordCount > 0 && h.LastOffsetDelta == h.RecordCount-1 {
		return checkHeaderFields(h)
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < h.RecordCount {
		return fmt.Errorf("%w: last offset delta %d with %d records", ErrCorruptBatch, h.LastOffsetDelta, h.RecordCount)
	}
	if h.Compression() > 4 {
		return fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, h.Compression())
	}
	// The remaining checks (producer fields) as for a dense batch of one
	// uncompressed record.
	d := *h
	d.RecordCount, d.LastOffsetDelta, d.Attributes = 1, 0, h.Attributes&^attrCompressionMask
	d.Length = max(d.Length, BatchHeaderSize+7)
	return checkHeaderFields(&d)
}

// ValidateStoredBatch is ValidateBatch for a batch as a log holds it,
// compacted batches included (checkStoredFields): what a reader of a
// stored segment checks (the cold tier's cache), never what a producer
// sends.
func ValidateStoredBatch(b []byte) (BatchHeader, error) {
	return validateBatch(b, checkStoredFields)
}

// ValidateStoredBatchParts is ValidateStoredBatch over parts back to back
// (see ValidateBatchParts).
func ValidateStoredBatchParts(parts [][]byte) (BatchHeader, error) {
	return validateBatchParts(parts, checkStoredFields)
}

// segReader reads the batches of one sealed segment in order, through a
// window of the file, checking each (header, length, offsets that only go
// up, fields, CRC32C). Any failure is ErrCorruptSegment: the cleaner
// never writes what it could not read.
type segReader struct {
	f       *os.File
	path    string
	size    int64
	pos     int64
	next    int64 // lowest base offset the next batch may have
	win     []byte
	winFrom int64
	winLen  int
	onRead  func(n int) error // the cleaner's I/O budget
}

func newSegReader(f *os.File, path string, size, base int64, buf []byte, onRead func(int) error) *segReader {
	return &segReader{f: f, path: path, size: size, next: base, win: buf[:cap(buf)], onRead: onRead}
}

func (r *segReader) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d: %s", ErrCorruptSegment, r.path, r.pos, fmt.Sprintf(format, args...))
}

// batch returns the next batch and its header, io.EOF at the end. The
// bytes are valid until the next call.
func (r *segReader) batch() ([]byte, BatchHeader, error) {
	if r.pos >= r.size {
		return nil, BatchHeader{}, io.EOF
	}
	if r.size-r.pos < BatchHeaderSize {
		return nil, BatchHeader{}, r.corrupt("%d trailing bytes", r.size-r.pos)
	}
	hb, err := r.view(BatchHeaderSize)
	if err != nil {
		return nil, BatchHeader{}, err
	}
	h, err := ParseBatchHeader(hb)
	if err != nil {
		return nil, h, r.corrupt("%v", err)
	}
	if int64(h.Length) > r.size-r.pos {
		return nil, h, r.corrupt("batch of %d bytes with %d left", h.Length, r.size-r.pos)
	}
	if h.BaseOffset < r.next {
		return nil, h, r.corrupt("batch offset %d below %d", h.BaseOffset, r.next)
	}
	b, err := r.view(int(h.Length))
	if err != nil {
		return nil, h, err
	}
	if err := checkStoredFields(&h); err != nil {
		return nil, h, r.corrupt("%v", err)
	}
	if crc32.Checksum(b[offAttributes:], crcTable) != h.CRC {
		return nil, h, r.corrupt("crc mismatch")
	}
	r.pos += int64(h.Length)
	r.next = h.NextOffset()
	return b, h, nil
}

// view returns n bytes at pos, refilling the window when they are not in it.
func (r *segReader) view(n int) ([]byte, error) {
	if r.pos >= r.winFrom && r.pos+int64(n) <= r.winFrom+int64(r.winLen) {
		off := int(r.pos - r.winFrom)
		return r.win[off : off+n], nil
	}
	if n > len(r.win) {
		r.win = make([]byte, n)
	}
	want := int(min(int64(len(r.win)), r.size-r.pos))
	got, err := r.f.ReadAt(r.win[:want], r.pos)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, r.corrupt("read: %v", err)
	}
	if r.onRead != nil {
		if err := r.onRead(got); err != nil {
			return nil, err
		}
	}
	r.winFrom, r.winLen = r.pos, got
	return r.win[:n], nil
}

// cleanRecord is one record of a batch as the cleaner sees it.
type cleanRecord struct {
	offDelta  int64
	tsDelta   int64
	key       []byte // nil: no key
	tombstone bool   // null value
	raw       []byte // the record as stored, its length prefix included
}

// batchRecords takes the records of batch b apart. A compressed batch is
// decompressed into scratch (bounded by MaxBatchRecordBytes). The count,
// the offset deltas (rising, within the batch's span) and the fields must
// agree with the header, or the batch is corrupt.
func batchRecords(b []byte, h *BatchHeader, scratch []byte, out []cleanRecord) ([]cleanRecord, []byte, error) {
	body := b[BatchHeaderSize:h.Length]
	if c := h.Compression(); c != 0 && h.RecordCount > 0 {
		d := getDecompressor(c)
		err := d.reset(body)
		if err == nil {
			var buf bytes.Buffer
			buf.Grow(max(cap(scratch), 4*len(body)))
			var n int64
			n, err = io.Copy(&buf, io.LimitReader(d.br, MaxBatchRecordBytes+1))
			if err == nil && n > MaxBatchRecordBytes {
				err = fmt.Errorf("records exceed %d bytes", MaxBatchRecordBytes)
			}
			scratch = buf.Bytes()
		}
		d.put()
		if err != nil {
			return out, scratch, fmt.Errorf("%w: %s data: %v", ErrCorruptBatch, codecName(c), err)
		}
		body = scratch
	}
	prev := int64(-1)
	for i := int32(0); i < h.RecordCount; i++ {
		size, n := binary.Varint(body)
		if n <= 0 || size < minRecordBody || size > int64(len(body)-n) {
			return out, scratch, fmt.Errorf("%w: record %d: bad length", ErrCorruptBatch, i)
		}
		rec, err := parseCleanRecord(body[n : n+int(size)])
		if err != nil {
			return out, scratch, fmt.Errorf("%w: record %d: %v", ErrCorruptBatch, i, err)
		}
		if rec.offDelta <= prev || rec.offDelta > int64(h.LastOffsetDelta) {
			return out, scratch, fmt.Errorf("%w: record %d has offset delta %d after %d (last %d)", ErrCorruptBatch, i,
				rec.offDelta, prev, h.LastOffsetDelta)
		}
		prev = rec.offDelta
		rec.raw = body[:n+int(size)]
		body = body[n+int(size):]
		out = append(out, rec)
	}
	if len(body) != 0 {
		return out, scratch, fmt.Errorf("%w: %d bytes after the %d records", ErrCorruptBatch, len(body), h.RecordCount)
	}
	return out, scratch, nil
}

// parseCleanRecord reads the fields the cleaner needs from a record body
// and checks that the rest is well formed (checkRecordBytes without the
// dense offset delta).
func parseCleanRecord(r []byte) (cleanRecord, error) {
	var rec cleanRecord
	field := func() (int64, error) {
		v, n := binary.Varint(r)
		if n <= 0 {
			return 0, errRecordSize
		}
		r = r[n:]
		return v, nil
	}
	r = r[1:] // attributes
	var err error
	if rec.tsDelta, err = field(); err != nil {
		return rec, err
	}
	if rec.offDelta, err = field(); err != nil {
		return rec, err
	}
	kl, err := field()
	if err != nil {
		return rec, err
	}
	switch {
	case kl == -1:
	case kl < 0 || kl > int64(len(r)):
		return rec, fmt.Errorf("key length %d", kl)
	default:
		rec.key, r = r[:kl:kl], r[kl:]
	}
	vl, err := field()
	if err != nil {
		return rec, err
	}
	switch {
	case vl == -1:
		rec.tombstone = true
	case vl < 0 || vl > int64(len(r)):
		return rec, fmt.Errorf("value length %d", vl)
	default:
		r = r[vl:]
	}
	hc, err := field()
	if err != nil {
		return rec, err
	}
	if hc < 0 || hc > int64(len(r)) {
		return rec, fmt.Errorf("%d headers in %d bytes", hc, len(r))
	}
	for range hc {
		hk, err := field()
		if err != nil {
			return rec, err
		}
		if hk < 0 || hk > int64(len(r)) {
			return rec, fmt.Errorf("header key length %d", hk)
		}
		r = r[hk:]
		hv, err := field()
		if err != nil {
			return rec, err
		}
		if hv < -1 || hv > int64(len(r)) {
			return rec, fmt.Errorf("header value length %d", hv)
		}
		r = r[max(hv, 0):]
	}
	if len(r) != 0 {
		return rec, fmt.Errorf("%w: %d bytes left over", errRecordSize, len(r))
	}
	return rec, nil
}

// encoders are the cleaner's compressors, one of each at a time (one
// cleaner goroutine per store, and the pool serves tests running several).
var encoders = sync.Pool{New: func() any { return &encoder{} }}

type encoder struct {
	gz  *gzip.Writer
	lz  *lz4.Writer
	zs  *zstd.Encoder
	buf bytes.Buffer
}

// compress encodes records with codec, as the producer's batch was.
func (e *encoder) compress(codec int, records []byte) ([]byte, error) {
	e.buf.Reset()
	switch codec {
	case 1:
		if e.gz == nil {
			e.gz = gzip.NewWriter(&e.buf)
		} else {
			e.gz.Reset(&e.buf)
		}
		if _, err := e.gz.Write(records); err != nil {
			return nil, err
		}
		if err := e.gz.Close(); err != nil {
			return nil, err
		}
		return e.buf.Bytes(), nil
	case 2:
		// A raw block, as franz-go and librdkafka send it; Java reads it
		// too.
		return snappy.Encode(nil, records), nil
	case 3:
		if e.lz == nil {
			e.lz = lz4.NewWriter(&e.buf)
		} else {
			e.lz.Reset(&e.buf)
		}
		if _, err := e.lz.Write(records); err != nil {
			return nil, err
		}
		if err := e.lz.Close(); err != nil {
			return nil, err
		}
		return e.buf.Bytes(), nil
	case 4:
		if e.zs == nil {
			zs, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(64<<10), zstd.WithZeroFrames(true))
			if err != nil {
				return nil, err
			}
			e.zs = zs
		}
		return e.zs.EncodeAll(records, nil), nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrCorruptBatch, codec)
}

// rewriteBatch appends to dst the batch with header hdr (the original's
// first BatchHeaderSize bytes) holding only the records kept, and returns
// it. An empty batch is uncompressed with its max timestamp as its base
// timestamp, as Kafka writes one.
func rewriteBatch(dst []byte, hdr []byte, h *BatchHeader, kept []cleanRecord, enc *encoder) ([]byte, error) {
	start := len(dst)
	dst = append(dst, hdr[:BatchHeaderSize]...)
	out := dst[start:]
	maxTs := h.MaxTimestamp
	if len(kept) == 0 {
		binary.BigEndian.PutUint16(out[offAttributes:], uint16(h.Attributes&^attrCompressionMask))
		binary.BigEndian.PutUint64(out[offBaseTimestamp:], uint64(h.MaxTimestamp))
	} else {
		maxTs = -1
		var body []byte
		for _, r := range kept {
			maxTs = max(maxTs, h.BaseTimestamp+r.tsDelta)
			body = append(body, r.raw...)
		}
		if c := h.Compression(); c != 0 {
			z, err := enc.compress(c, body)
			if err != nil {
				return dst[:start], err
			}
			body = z
		}
		dst = append(dst, body...)
		out = dst[start:]
	}
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-batchLogOverhead))
	binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(out[offRecordCount:], uint32(len(kept)))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crcTable))
	return dst, nil
}

// ValidateStoredBatches is ValidateBatches for batches as a log holds
// them: what a follower takes from its leader, whose cleaner may have
// compacted them. A dense batch gets the produce checks; a compacted one
// the same structure, with fewer records than offsets.
func ValidateStoredBatches(b []byte) (batches int, records int64, err error) {
	var recs []cleanRecord
	var scratch []byte
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			return batches, records, err
		}
		if int(h.Length) > len(b) {
			return batches, records, fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrCorruptBatch, h.Length, len(b))
		}
		if h.RecordCount > 0 && h.LastOffsetDelta == h.RecordCount-1 {
			if _, err := ValidateBatch(b[:h.Length]); err != nil {
				return batches, records, err
			}
			if _, err := checkRecords(&h, b[:h.Length]); err != nil {
				return batches, records, err
			}
		} else {
			if _, err := ValidateStoredBatch(b[:h.Length]); err != nil {
				return batches, records, err
			}
			if recs, scratch, err = batchRecords(b[:h.Length], &h, scratch, recs[:0]); err != nil {
				return batches, records, err
			}
		}
		batches++
		records += int64(h.RecordCount)
		b = b[h.Length:]
	}
	if batches == 0 {
		return 0, 0, fmt.Errorf("%w: no batch", ErrCorruptBatch)
	}
	return batches, records, nil
}
