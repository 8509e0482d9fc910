package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// RecordBatch v2 header layout (Kafka's DefaultRecordBatch). Offsets are
// byte positions from the start of the batch.
const (
	offBaseOffset      = 0  // int64
	offBatchLength     = 8  // int32: bytes after this field
	offLeaderEpoch     = 12 // int32
	offMagic           = 16 // int8
	offCRC             = 17 // uint32, CRC32C of [offAttributes, end)
	offAttributes      = 21 // int16
	offLastOffsetDelta = 23 // int32
	offBaseTimestamp   = 27 // int64
	offMaxTimestamp    = 35 // int64
	offProducerID      = 43 // int64
	offProducerEpoch   = 51 // int16
	offBaseSequence    = 53 // int32
	offRecordCount     = 57 // int32

	// BatchHeaderSize is the fixed size of a RecordBatch v2 header.
	BatchHeaderSize = 61
	// batchLogOverhead is what precedes the batchLength-counted bytes.
	batchLogOverhead = 12

	attrCompressionMask = 0x07
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed part of a RecordBatch v2. It is a value
// type so decoding allocates nothing.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // total bytes of the batch, header included
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

// LastOffset is the offset of the batch's last record.
func (h *BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h *BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (h *BatchHeader) Compression() int { return int(h.Attributes & attrCompressionMask) }

// IsTransactional reports the transactional attribute bit.
func (h *BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports the control-batch attribute bit.
func (h *BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// ParseBatchHeader decodes the header at the start of b without checking the
// CRC. It checks only what it needs to trust the length: that the header is
// complete, the magic is 2 and the length is plausible.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < BatchHeaderSize {
		return h, fmt.Errorf("%w: %d bytes, header needs %d", ErrCorruptBatch, len(b), BatchHeaderSize)
	}
	if m := int8(b[offMagic]); m != 2 {
		return h, fmt.Errorf("%w: magic %d, want 2", ErrBadMagic, m)
	}
	bl := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if bl < BatchHeaderSize-batchLogOverhead {
		return h, fmt.Errorf("%w: batch length %d below header size", ErrCorruptBatch, bl)
	}
	// Length counts the 12 bytes before the length field too, in an int32
	// that callers slice with: a field within 12 of the int32 maximum would
	// wrap it negative (found by FuzzRecoverSegment). No real batch comes
	// near that size.
	if bl > math.MaxInt32-batchLogOverhead {
		return h, fmt.Errorf("%w: batch length %d too large", ErrCorruptBatch, bl)
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.Length = bl + batchLogOverhead
	h.LeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	return h, nil
}

// ValidateBatch fully validates one RecordBatch v2 that must fill b exactly:
// magic, length, CRC32C, record count and producer fields. It does no
// per-record work, so its cost is one CRC pass over the bytes.
func ValidateBatch(b []byte) (BatchHeader, error) {
	return validateBatch(b, checkHeaderFields)
}

// validateBatch is ValidateBatch with fields checking the header's fields,
// so that a stored batch can be held to its own rules (checkStoredFields).
func validateBatch(b []byte, fields func(*BatchHeader) error) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if err := checkLengthAndFields(&h, len(b), fields); err != nil {
		return h, err
	}
	return h, checkCRC(&h, crc32.Checksum(b[offAttributes:], crcTable))
}

// ValidateBatchParts is ValidateBatch for one batch whose bytes are parts
// back to back. A cold read hands over a batch that lies across two cache
// chunks as a slice of each, and checking it in place saves copying it
// together (a quarter of a cold replay's bytes, with 1 MiB batches in 4 MiB
// chunks).
func ValidateBatchParts(parts [][]byte) (BatchHeader, error) {
	return validateBatchParts(parts, checkHeaderFields)
}

// validateBatchParts is validateBatch over parts back to back.
func validateBatchParts(parts [][]byte, fields func(*BatchHeader) error) (BatchHeader, error) {
	var buf [BatchHeaderSize]byte
	hdr, total := buf[:0], 0
	for _, p := range parts {
		if len(hdr) < BatchHeaderSize {
			hdr = append(hdr, p[:min(len(p), BatchHeaderSize-len(hdr))]...)
		}
		total += len(p)
	}
	h, err := ParseBatchHeader(hdr)
	if err != nil {
		return h, err
	}
	if err := checkLengthAndFields(&h, total, fields); err != nil {
		return h, err
	}
	var crc uint32
	skip := offAttributes // the CRC covers the batch from its attributes on
	for _, p := range parts {
		n := min(skip, len(p))
		skip -= n
		crc = crc32.Update(crc, crcTable, p[n:])
	}
	return h, checkCRC(&h, crc)
}

// checkLengthAndFields checks that h's length is the size of the bytes
// holding the batch, and the header's fields with fields.
func checkLengthAndFields(h *BatchHeader, size int, fields func(*BatchHeader) error) error {
	if int(h.Length) != size {
		return fmt.Errorf("%w: batch length field says %d bytes, got %d", ErrCorruptBatch, h.Length, size)
	}
	return fields(h)
}

func checkCRC(h *BatchHeader, got uint32) error {
	if got != h.CRC {
		return fmt.Errorf("%w: computed %08x, header %08x", ErrBadCRC, got, h.CRC)
	}
	return nil
}

func checkHeaderFields(h *BatchHeader) error {
	if h.RecordCount <= 0 {
		return fmt.Errorf("%w: record count %d", ErrCorruptBatch, h.RecordCount)
	}
	if h.LastOffsetDelta != h.RecordCount-1 {
		// Producers always send dense batches; a mismatch means the offsets
		// we assign would not cover the records the batch holds.
		return fmt.Errorf("%w: last offset delta %d with %d records", ErrCorruptBatch, h.LastOffsetDelta, h.RecordCount)
	}
	// A record needs at least 7 bytes (length, attributes, two deltas, key and
	// value lengths, header count) when uncompressed; compressed data can be
	// smaller than that per record, but never empty.
	body := h.Length - BatchHeaderSize
	if h.Compression() == 0 && int64(body) < 7*int64(h.RecordCount) {
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorruptBatch, h.RecordCount, body)
	}
	if h.Compression() > 4 {
		return fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, h.Compression())
	}
	switch {
	case h.ProducerID < -1:
		return fmt.Errorf("%w: producer id %d", ErrInvalidProducer, h.ProducerID)
	case h.ProducerID == -1:
		if h.IsTransactional() {
			return fmt.Errorf("%w: transactional batch without producer id", ErrInvalidProducer)
		}
		if h.BaseSequence != -1 && h.BaseSequence != 0 {
			// librdkafka and the Java client send -1; some older clients 0.
			return fmt.Errorf("%w: sequence %d without producer id", ErrInvalidProducer, h.BaseSequence)
		}
	default:
		if h.ProducerEpoch < 0 {
			return fmt.Errorf("%w: producer %d with epoch %d", ErrInvalidProducer, h.ProducerID, h.ProducerEpoch)
		}
		if h.BaseSequence < 0 && !h.IsControl() { // a marker has no sequence, as in Kafka
			return fmt.Errorf("%w: producer %d with sequence %d", ErrInvalidProducer, h.ProducerID, h.BaseSequence)
		}
	}
	return nil
}

// ValidateBatches validates a buffer holding one or more whole batches,
// records included (checkRecords), and returns how many there are and the
// total record count. It is the check on what producers send.
func ValidateBatches(b []byte) (batches int, records int64, err error) {
	batches, records, _, err = validateBatches(b)
	return batches, records, err
}

// validateBatches is ValidateBatches that also counts the records with a
// null key, which a compacted topic refuses.
func validateBatches(b []byte) (batches int, records int64, nullKeys int32, err error) {
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			return batches, records, 0, err
		}
		if int(h.Length) > len(b) {
			return batches, records, 0, fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrCorruptBatch, h.Length, len(b))
		}
		if _, err := ValidateBatch(b[:h.Length]); err != nil {
			return batches, records, 0, err
		}
		n, err := checkRecords(&h, b[:h.Length])
		if err != nil {
			return batches, records, 0, err
		}
		nullKeys += n
		batches++
		records += int64(h.RecordCount)
		b = b[h.Length:]
	}
	if batches == 0 {
		return 0, 0, 0, fmt.Errorf("%w: no batch", ErrCorruptBatch)
	}
	return batches, records, nullKeys, nil
}

// setBaseOffset patches the base offset and leader epoch in place. Neither is
// covered by the CRC, which is why offsets can be assigned without
// re-encoding anything.
func setBaseOffset(b []byte, base int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
}
