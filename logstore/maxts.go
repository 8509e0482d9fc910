package logstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ListOffsets with MAX_TIMESTAMP (-3) names the record that holds the
// largest timestamp, not the batch: Kafka (KIP-734) answers with that
// record's offset. The store tracks the batch (its header carries the max
// timestamp and the last offset), so the answer walks that one batch's
// records, decompressing it when it is compressed.

// attrLogAppendTime is the batch attribute bit of LogAppendTime: every
// record's timestamp is then the batch's max timestamp.
const attrLogAppendTime = 0x08

// maxDecodedBatch bounds what a compressed batch may decompress to while
// its records are walked here; producers cap batches far below it.
const maxDecodedBatch = 64 << 20

var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// offsetOfTimestamp returns the offset of the first record of batch (whole,
// header h) whose timestamp is ts. It reports ok=false when no record has
// it or the records are malformed.
func offsetOfTimestamp(batch []byte, h *BatchHeader, ts int64) (off int64, ok bool, err error) {
	if h.Attributes&attrLogAppendTime != 0 {
		return h.BaseOffset, ts == h.MaxTimestamp, nil
	}
	body := batch[BatchHeaderSize:]
	var r io.Reader
	switch c := h.Compression(); c {
	case 0:
		r = bytes.NewReader(body)
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return 0, false, fmt.Errorf("%w: gzip: %v", ErrCorruptBatch, err)
		}
		defer zr.Close()
		r = zr
	case 2:
		b, err := unsnappy(body)
		if err != nil {
			return 0, false, fmt.Errorf("%w: snappy: %v", ErrCorruptBatch, err)
		}
		r = bytes.NewReader(b)
	case 3:
		r = lz4.NewReader(bytes.NewReader(body))
	case 4:
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxDecodedBatch))
		if err != nil {
			return 0, false, fmt.Errorf("%w: zstd: %v", ErrCorruptBatch, err)
		}
		defer zr.Close()
		r = zr
	default:
		return 0, false, fmt.Errorf("%w: compression codec %d", ErrCorruptBatch, c)
	}
	br := bufio.NewReaderSize(io.LimitReader(r, maxDecodedBatch), 4096)
	for i := int32(0); i < h.RecordCount; i++ {
		length, err := binary.ReadVarint(br)
		if err != nil || length < 3 {
			return 0, false, nil
		}
		// attributes, then the timestamp and offset deltas.
		cr := &countingReader{r: br}
		if _, err := cr.ReadByte(); err != nil {
			return 0, false, nil
		}
		tsDelta, err1 := binary.ReadVarint(cr)
		offDelta, err2 := binary.ReadVarint(cr)
		if err1 != nil || err2 != nil || cr.n > length {
			return 0, false, nil
		}
		if h.BaseTimestamp+tsDelta == ts {
			return h.BaseOffset + offDelta, true, nil
		}
		if _, err := br.Discard(int(length - cr.n)); err != nil {
			return 0, false, nil
		}
	}
	return 0, false, nil
}

// countingReader counts the bytes read through ReadByte.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// unsnappy decodes Kafka's snappy: xerial framing (what the Java client
// writes: a magic header, then length-prefixed blocks) or one raw block.
func unsnappy(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, xerialHeader) {
		return decodeSnappyBlock(nil, b)
	}
	if len(b) < 16 {
		return nil, errors.New("short xerial header")
	}
	b = b[16:]
	var out []byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errors.New("short xerial block length")
		}
		n := int(binary.BigEndian.Uint32(b))
		if n > len(b)-4 {
			return nil, errors.New("xerial block past the end")
		}
		var err error
		if out, err = decodeSnappyBlock(out, b[4:4+n]); err != nil {
			return nil, err
		}
		b = b[4+n:]
	}
	return out, nil
}

func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n < 0 || len(dst)+n > maxDecodedBatch {
		return nil, fmt.Errorf("a block decoding to %d bytes", n)
	}
	d, err := snappy.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, d...), nil
}

// exactMaxTsOffset returns the offset of the first record holding the
// segment's max timestamp, reading the batch that holds it once; the
// answer is kept until a later batch raises the max.
func (s *segment) exactMaxTsOffset(scratch []byte) (int64, error) {
	if s.maxTs < 0 || s.maxTsOffset < 0 {
		return -1, nil
	}
	if s.maxTsExactSet && s.maxTsExactOf == s.maxTsOffset {
		return s.maxTsExact, nil
	}
	limit := s.size
	pos, err := s.findPosition(s.maxTsOffset, limit, scratch)
	if err != nil {
		return -1, err
	}
	if pos >= limit {
		return -1, fmt.Errorf("%w: %s: no batch holds offset %d", ErrCorruptSegment, s.logPath, s.maxTsOffset)
	}
	h, err := s.readHeader(pos, scratch)
	if err != nil {
		return -1, err
	}
	off := h.LastOffset() // when the records do not say, the batch's last offset, as before
	if h.MaxTimestamp == s.maxTs {
		body := make([]byte, h.Length)
		if _, err := s.ref.f.ReadAt(body, pos); err != nil { // readHeader opened it
			return -1, fmt.Errorf("%w: %s at %d: %v", ErrStorage, s.logPath, pos, err)
		}
		if o, ok, err := offsetOfTimestamp(body, &h, s.maxTs); err == nil && ok {
			off = o
		}
	}
	s.maxTsExact, s.maxTsExactOf, s.maxTsExactSet = off, s.maxTsOffset, true
	return off, nil
}
