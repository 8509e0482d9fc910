package catalog

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/raft"
)

// Value format versions. A decoder accepts exactly the versions it knows: an
// older binary must refuse a newer record rather than silently drop fields it
// does not understand.
const (
	segmentVersion   byte = 1
	segmentVersion2  byte = 2 // adds the offset of the max timestamp
	partitionVersion byte = 1
	raftLogVersion   byte = 1
)

// appendSegment encodes the value part of s (everything except Topic,
// Partition and BaseOffset, which are in the key).
//
// Version 1 layout, in order: version byte; EndOffset, Bytes, MinTimestamp,
// MaxTimestamp as varints; State as one byte; LocalPath, SegmentID, ObjectKey
// as uvarint-length-prefixed strings; ObjectSize varint; Checksum, ETag
// strings; Epoch varint; UploadedAt varint. Version 2 (what is written)
// adds the max timestamp's record (Segment.maxTsRecord) as a varint.
func appendSegment(dst []byte, s *Segment) []byte {
	dst = append(dst, segmentVersion2)
	dst = binary.AppendVarint(dst, s.EndOffset)
	dst = binary.AppendVarint(dst, s.Bytes)
	dst = binary.AppendVarint(dst, s.MinTimestamp)
	dst = binary.AppendVarint(dst, s.MaxTimestamp)
	dst = append(dst, byte(s.State))
	dst = appendString(dst, s.LocalPath)
	dst = appendString(dst, s.SegmentID)
	dst = appendString(dst, s.ObjectKey)
	dst = binary.AppendVarint(dst, s.ObjectSize)
	dst = appendString(dst, s.Checksum)
	dst = appendString(dst, s.ETag)
	dst = binary.AppendVarint(dst, int64(s.Epoch))
	dst = binary.AppendVarint(dst, s.UploadedAt)
	dst = binary.AppendVarint(dst, s.maxTsRecord)
	return dst
}

// decodeSegment decodes a value written by appendSegment. The key fields of
// the result are zero; the caller fills them from the key.
func decodeSegment(b []byte) (Segment, error) {
	var s Segment
	d := decoder{b: b}
	v := d.byte()
	if d.err == nil && v != segmentVersion && v != segmentVersion2 {
		return Segment{}, fmt.Errorf("%w: segment record version %d", ErrCorruptRecord, v)
	}
	s.EndOffset = d.varint()
	s.Bytes = d.varint()
	s.MinTimestamp = d.varint()
	s.MaxTimestamp = d.varint()
	s.State = State(d.byte())
	s.LocalPath = d.string()
	s.SegmentID = d.string()
	s.ObjectKey = d.string()
	s.ObjectSize = d.varint()
	s.Checksum = d.string()
	s.ETag = d.string()
	s.Epoch = d.int32()
	s.UploadedAt = d.varint()
	if v == segmentVersion2 {
		s.maxTsRecord = d.varint()
	}
	if err := d.finish("segment"); err != nil {
		return Segment{}, err
	}
	if !s.State.Valid() {
		return Segment{}, fmt.Errorf("%w: segment state %d", ErrCorruptRecord, uint8(s.State))
	}
	return s, nil
}

// appendPartition encodes the value part of p. Version 1 layout: version
// byte; LogStartOffset and CreatedAt varints; Config as uvarint-length-prefixed
// bytes.
func appendPartition(dst []byte, p *Partition) []byte {
	dst = append(dst, partitionVersion)
	dst = binary.AppendVarint(dst, p.LogStartOffset)
	dst = binary.AppendVarint(dst, p.CreatedAt)
	dst = appendBytes(dst, p.Config)
	return dst
}

// decodePartition decodes a value written by appendPartition; Topic and
// Partition are left zero.
func decodePartition(b []byte) (Partition, error) {
	var p Partition
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != partitionVersion {
		return Partition{}, fmt.Errorf("%w: partition record version %d", ErrCorruptRecord, v)
	}
	p.LogStartOffset = d.varint()
	p.CreatedAt = d.varint()
	p.Config = d.bytes()
	if err := d.finish("partition"); err != nil {
		return Partition{}, err
	}
	return p, nil
}

// appendRaftLog encodes a raft log entry except its Index (in the key).
// Version 1 layout: version byte; Term uvarint; Type byte; Data and
// Extensions as length-prefixed bytes; AppendedAt as a flag byte (0 = zero
// time) followed, when set, by Unix seconds (varint) and nanoseconds
// (uvarint). Seconds+nanos rather than UnixNano because UnixNano is undefined
// outside 1678..2262 and a follower may see any leader clock.
func appendRaftLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, raftLogVersion)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = appendBytes(dst, l.Data)
	dst = appendBytes(dst, l.Extensions)
	if l.AppendedAt.IsZero() {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
	return binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
}

// decodeRaftLog decodes a value written by appendRaftLog into l, setting
// l.Index to index. Data and Extensions are copied, so l does not alias b.
func decodeRaftLog(index uint64, b []byte, l *raft.Log) error {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != raftLogVersion {
		return fmt.Errorf("%w: raft log version %d", ErrCorruptRecord, v)
	}
	var out raft.Log
	out.Index = index
	out.Term = d.uvarint()
	out.Type = raft.LogType(d.byte())
	out.Data = d.bytes()
	out.Extensions = d.bytes()
	switch flag := d.byte(); {
	case d.err != nil:
	case flag == 0:
	case flag == 1:
		sec := d.varint()
		nsec := d.uvarint()
		if d.err == nil && nsec >= uint64(time.Second) {
			return fmt.Errorf("%w: raft log appended-at nanoseconds %d", ErrCorruptRecord, nsec)
		}
		out.AppendedAt = time.Unix(sec, int64(nsec))
	default:
		return fmt.Errorf("%w: raft log appended-at flag %d", ErrCorruptRecord, flag)
	}
	if err := d.finish("raft log"); err != nil {
		return err
	}
	*l = out
	return nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decoder reads fields in order and remembers the first failure, so decode
// functions read straight through and check once at the end. Every read is
// bounds-checked against the remaining input, which is what keeps arbitrary
// bytes from panicking or allocating more than len(b).
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorruptRecord, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("malformed varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("malformed uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 field out of range")
		return 0
	}
	return int32(v)
}

// raw returns the next length-prefixed field without copying.
func (d *decoder) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("field length exceeds record")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.raw()) }

// bytes copies, because pebble reuses the buffers behind Get and iterator
// values; empty reads back as nil.
func (d *decoder) bytes() []byte {
	v := d.raw()
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

// finish rejects trailing bytes: a record longer than its format says was not
// written by this version, and ignoring the tail would hide that.
func (d *decoder) finish(what string) error {
	if d.err != nil {
		return fmt.Errorf("%s record: %w", what, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %s record has %d trailing bytes", ErrCorruptRecord, what, len(d.b))
	}
	return nil
}
