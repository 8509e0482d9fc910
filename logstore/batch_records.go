package logstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A produced batch's header says how many records it holds, and offsets are
// assigned from that count, so a count the body does not bear out would
// burn offsets for records that do not exist and stall consumers in the
// gap. As Kafka's LogValidator does, the records are walked (decompressed,
// for a compressed batch) and must be exactly RecordCount well-formed
// records, with offset deltas 0, 1, 2, ... as the offsets assume.
//
// Decompression streams through a small fixed buffer, so no memory is
// taken from a size the batch claims; the decompressed bytes are bounded
// by MaxBatchRecordBytes, which caps the CPU a small batch can cost.

// MaxBatchRecordBytes bounds the records of one batch once decompressed.
// Producers cap a batch before compression (batch.size, 1 MiB by default
// in most clients), so a batch far past this is a decompression bomb, not
// data.
const MaxBatchRecordBytes = 64 << 20

// minRecordBody is the smallest record body: attributes, and one byte each
// for the timestamp delta, offset delta, key length, value length and
// header count.
const minRecordBody = 6

// snappy's densest element, a 3-byte copy of 64 bytes, bounds how much
// larger a block can decode; a block claiming more lies about its size.
const snappyMaxRatio = 22

// zstdMaxWindow bounds a zstd frame's window, the history its decoder
// keeps: 8 MiB is what the zstd format asks every decoder to support, and
// a frame header asking for more is refused rather than obeyed.
const zstdMaxWindow = 8 << 20

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// recordSource is what the record walk reads from: the bytes of an
// uncompressed batch, or a decompressing stream.
type recordSource interface {
	io.ByteReader
	Discard(n int) (int, error)
}

// checkRecords checks the records of batch b, whose header h has been
// validated (ValidateBatch), and counts those with a null key: a compacted
// topic refuses them (shard.produce), and the walk reads every key length
// anyway.
func checkRecords(h *BatchHeader, b []byte) (nullKeys int32, err error) {
	body := b[BatchHeaderSize:h.Length]
	if h.Compression() == 0 {
		return walkRecordBytes(body, h.RecordCount)
	}
	d := getDecompressor(h.Compression())
	defer d.put()
	if err := d.reset(body); err != nil {
		return 0, fmt.Errorf("%w: %s data: %v", ErrCorruptBatch, codecName(h.Compression()), err)
	}
	if nullKeys, err = walkRecords(d.br, h.RecordCount, MaxBatchRecordBytes); err != nil {
		return 0, err
	}
	// The stream must end with the last record: more bytes are records the
	// count leaves out, and an error is a truncated or corrupt stream.
	switch _, err := d.br.ReadByte(); {
	case err == nil:
		return 0, fmt.Errorf("%w: data after the %d records", ErrCorruptBatch, h.RecordCount)
	case !errors.Is(err, io.EOF):
		return 0, fmt.Errorf("%w: %s data: %v", ErrCorruptBatch, codecName(h.Compression()), err)
	}
	return nullKeys, nil
}

func codecName(c int) string {
	switch c {
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return "uncompressed"
}

// walkRecords reads count records from src, checking each one's structure
// against its length, as Kafka's DefaultRecord does, and counts the records
// with a null key. budget bounds the bytes the records may take in all.
func walkRecords(src recordSource, count int32, budget int64) (nullKeys int32, err error) {
	short := func(i int32, err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: batch claims %d records, holds %d", ErrCorruptBatch, count, i)
		}
		return fmt.Errorf("%w: record %d: %v", ErrCorruptBatch, i, err)
	}
	for i := int32(0); i < count; i++ {
		size, n, err := readVarint(src)
		if err != nil {
			return 0, short(i, err)
		}
		budget -= int64(n)
		if size < minRecordBody || size > budget {
			return 0, fmt.Errorf("%w: record %d of %d bytes (at most %d left)", ErrCorruptBatch, i, size, budget)
		}
		budget -= size
		var nullKey bool
		if err := checkRecord(src, i, size, &nullKey); err != nil {
			return 0, short(i, err)
		}
		if nullKey {
			nullKeys++
		}
	}
	return nullKeys, nil
}

var errRecordSize = errors.New("fields do not fill the record's length")

// walkRecordBytes is walkRecords over an uncompressed batch's records, in
// place: the produce path's common case, kept free of per-byte calls.
func walkRecordBytes(b []byte, count int32) (nullKeys int32, err error) {
	for i := int32(0); i < count; i++ {
		size, n := binary.Varint(b)
		if n <= 0 {
			if len(b) == 0 {
				return 0, fmt.Errorf("%w: batch claims %d records, holds %d", ErrCorruptBatch, count, i)
			}
			return 0, fmt.Errorf("%w: record %d: bad length varint", ErrCorruptBatch, i)
		}
		b = b[n:]
		if size < minRecordBody || size > int64(len(b)) {
			return 0, fmt.Errorf("%w: record %d of %d bytes (at most %d left)", ErrCorruptBatch, i, size, len(b))
		}
		var nullKey bool
		if err := checkRecordBytes(b[:size], i, &nullKey); err != nil {
			return 0, fmt.Errorf("%w: record %d: %v", ErrCorruptBatch, i, err)
		}
		if nullKey {
			nullKeys++
		}
		b = b[size:]
	}
	if len(b) > 0 {
		return 0, fmt.Errorf("%w: %d bytes after the %d records", ErrCorruptBatch, len(b), count)
	}
	return nullKeys, nil
}

// checkRecordBytes is checkRecord over the bytes of record i.
func checkRecordBytes(r []byte, i int32, nullKey *bool) error {
	field := func() (int64, error) {
		v, n := binary.Varint(r)
		if n <= 0 {
			return 0, errRecordSize
		}
		r = r[n:]
		return v, nil
	}
	// skip drops n bytes of a field whose length was l (-1: null).
	skip := func(l int64, nullable bool) error {
		switch {
		case l == -1 && nullable:
			return nil
		case l < 0:
			return fmt.Errorf("field length %d", l)
		case l > int64(len(r)):
			return fmt.Errorf("%w: a field of %d bytes with %d left", errRecordSize, l, len(r))
		}
		r = r[l:]
		return nil
	}
	// Attributes: a record has at least minRecordBody bytes.
	r = r[1:]
	if _, err := field(); err != nil { // timestamp delta
		return err
	}
	delta, err := field()
	if err != nil {
		return err
	}
	if delta != int64(i) {
		return fmt.Errorf("offset delta %d, want %d", delta, i)
	}
	for f := range 2 { // key, value
		l, err := field()
		if err != nil {
			return err
		}
		if f == 0 {
			*nullKey = l == -1
		}
		if err := skip(l, true); err != nil {
			return err
		}
	}
	headers, err := field()
	if err != nil {
		return err
	}
	if headers < 0 || headers > int64(len(r)) {
		return fmt.Errorf("%d headers in %d bytes", headers, len(r))
	}
	for range headers {
		for _, nullable := range [2]bool{false, true} { // key, value
			l, err := field()
			if err != nil {
				return err
			}
			if err := skip(l, nullable); err != nil {
				return err
			}
		}
	}
	if len(r) != 0 {
		return fmt.Errorf("%w: %d bytes left over", errRecordSize, len(r))
	}
	return nil
}

// checkRecord reads record i, of size bytes, field by field, setting
// nullKey when its key is null.
func checkRecord(src recordSource, i int32, size int64, nullKey *bool) error {
	rem := size
	field := func() (int64, error) {
		v, n, err := readVarint(src)
		rem -= int64(n)
		if err == nil && rem < 0 {
			err = errRecordSize
		}
		return v, err
	}
	skip := func(n int64) error {
		if n < 0 || n > rem {
			return fmt.Errorf("%w: a field of %d bytes with %d left", errRecordSize, n, rem)
		}
		rem -= n
		_, err := src.Discard(int(n))
		return err
	}
	if _, err := src.ReadByte(); err != nil { // attributes
		return err
	}
	rem--
	if _, err := field(); err != nil { // timestamp delta
		return err
	}
	delta, err := field()
	if err != nil {
		return err
	}
	if delta != int64(i) {
		return fmt.Errorf("offset delta %d, want %d", delta, i)
	}
	// A length, then that many bytes unless null (-1).
	var null bool
	nullable := func(what string) error {
		n, err := field()
		if err != nil {
			return err
		}
		if null = n == -1; null {
			return nil
		}
		if n < 0 {
			return fmt.Errorf("%s length %d", what, n)
		}
		return skip(n)
	}
	if err := nullable("key"); err != nil {
		return err
	}
	*nullKey = null
	if err := nullable("value"); err != nil {
		return err
	}
	headers, err := field()
	if err != nil {
		return err
	}
	if headers < 0 || headers > rem {
		return fmt.Errorf("%d headers in %d bytes", headers, rem)
	}
	for range headers {
		kl, err := field()
		if err != nil {
			return err
		}
		if kl < 0 {
			return fmt.Errorf("header key length %d", kl)
		}
		if err := skip(kl); err != nil {
			return err
		}
		if err := nullable("header value"); err != nil {
			return err
		}
	}
	if rem != 0 {
		return fmt.Errorf("%w: %d bytes left over", errRecordSize, rem)
	}
	return nil
}

// readVarint reads a zigzag varint of at most 10 bytes (Kafka's varint and
// varlong), returning how many bytes it took.
func readVarint(src io.ByteReader) (int64, int, error) {
	var ux uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := src.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			ux |= uint64(c) << (7 * i)
			return int64(ux>>1) ^ -int64(ux&1), i + 1, nil
		}
		ux |= uint64(c&0x7f) << (7 * i)
	}
	return 0, binary.MaxVarintLen64, errors.New("varint overflows 64 bits")
}

// decompressor is a pooled decompressing reader for one codec, with the
// buffered reader the record walk reads through.
type decompressor struct {
	codec int
	in    bytes.Reader
	br    *bufio.Reader

	gz   *gzip.Reader
	lz   *lz4.Reader
	zs   *zstd.Decoder
	snap snappyStream
}

var decompressors [5]sync.Pool

func getDecompressor(codec int) *decompressor {
	if d, ok := decompressors[codec].Get().(*decompressor); ok {
		return d
	}
	return &decompressor{codec: codec, br: bufio.NewReaderSize(nil, 4096)}
}

func (d *decompressor) put() {
	d.in.Reset(nil)
	d.br.Reset(nil)
	d.snap.src, d.snap.out = nil, nil
	if cap(d.snap.buf) > 1<<20 {
		d.snap.buf = nil // an outsized block's buffer is not kept
	}
	decompressors[d.codec].Put(d)
}

func (d *decompressor) reset(body []byte) error {
	d.in.Reset(body)
	var r io.Reader
	switch d.codec {
	case 1:
		if d.gz == nil {
			gz, err := gzip.NewReader(&d.in)
			if err != nil {
				return err
			}
			d.gz = gz
		} else if err := d.gz.Reset(&d.in); err != nil {
			return err
		}
		r = d.gz
	case 2:
		if err := d.snap.reset(body); err != nil {
			return err
		}
		r = &d.snap
	case 3:
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.in)
		} else {
			d.lz.Reset(&d.in)
		}
		r = d.lz
	case 4:
		if d.zs == nil {
			// One decoder without goroutines of its own, its window
			// bounded (zstdMaxWindow).
			zs, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(MaxBatchRecordBytes))
			if err != nil {
				return err
			}
			d.zs = zs
		}
		if err := d.zs.Reset(&d.in); err != nil {
			return err
		}
		r = d.zs
	default:
		return fmt.Errorf("unknown codec %d", d.codec)
	}
	d.br.Reset(r)
	return nil
}

// snappyStream reads Kafka's snappy data: either one raw block (librdkafka,
// franz-go) or xerial framing, a header then length-prefixed blocks (the
// Java client), whose records may span blocks. Blocks decode one at a time
// into a reused buffer.
type snappyStream struct {
	src []byte // blocks not yet decoded
	raw bool   // src is one raw block
	buf []byte // reused decode buffer
	out []byte // decoded bytes not yet read
}

func (s *snappyStream) reset(body []byte) error {
	s.out = nil
	if len(body) >= 16 && bytes.Equal(body[:8], xerialMagic) {
		s.src, s.raw = body[16:], false
		return nil
	}
	s.src, s.raw = body, true
	return nil
}

func (s *snappyStream) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if len(s.src) == 0 {
			return 0, io.EOF
		}
		var block []byte
		if s.raw {
			block, s.src = s.src, nil
		} else {
			if len(s.src) < 4 {
				return 0, io.ErrUnexpectedEOF
			}
			n := binary.BigEndian.Uint32(s.src)
			if uint64(n) > uint64(len(s.src)-4) {
				return 0, fmt.Errorf("snappy block of %d bytes with %d left", n, len(s.src)-4)
			}
			block, s.src = s.src[4:4+n], s.src[4+n:]
		}
		dlen, err := snappy.DecodedLen(block)
		if err != nil {
			return 0, err
		}
		if dlen > snappyMaxRatio*len(block)+16 || dlen > MaxBatchRecordBytes {
			return 0, fmt.Errorf("snappy block of %d bytes claims %d decoded", len(block), dlen)
		}
		if cap(s.buf) < dlen {
			s.buf = make([]byte, dlen)
		}
		s.out, err = snappy.Decode(s.buf[:cap(s.buf)], block)
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}
