package segobj

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// Key extensions. Ext names a bundled segment object; the Legacy ones are
// the three objects of a segment uploaded by earlier versions.
const (
	Ext                = ".seg"
	LegacyLogExt       = ".log"
	LegacyIndexExt     = ".index"
	LegacyTimeIndexExt = ".timeindex"
)

// TrailerSize is the length of the trailer that ends a bundled object.
const TrailerSize = 32

// magic ends every trailer; its last byte is the layout's version.
var magic = [8]byte{'A', 'e', 'r', 'o', 'S', 'e', 'g', '1'}

// ErrBadObject: a bundled object's trailer or indexes do not check out.
var ErrBadObject = errors.New("bad segment object")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Trailer describes the parts of a bundled object. On the wire, big-endian:
//
//	0  log bytes         uint64
//	8  .index bytes      uint32
//	12 .timeindex bytes  uint32
//	16 CRC32C of the .index and .timeindex bytes
//	20 CRC32C of bytes 0-19
//	24 magic "AeroSeg1"
//
// The whole object's CRC32C is the catalog's Checksum; the two CRCs here
// let a reader that fetched only the tail trust what it holds.
type Trailer struct {
	LogBytes       int64
	IndexBytes     uint32
	TimeIndexBytes uint32
	IndexCRC       uint32
}

// NewTrailer describes a bundle of a log of logBytes and the given indexes.
func NewTrailer(logBytes int64, index, timeIndex []byte) Trailer {
	h := crc32.Update(0, castagnoli, index)
	h = crc32.Update(h, castagnoli, timeIndex)
	return Trailer{LogBytes: logBytes, IndexBytes: uint32(len(index)), TimeIndexBytes: uint32(len(timeIndex)), IndexCRC: h}
}

// ObjectSize is the size of the object the trailer ends.
func (t Trailer) ObjectSize() int64 {
	return t.LogBytes + int64(t.IndexBytes) + int64(t.TimeIndexBytes) + TrailerSize
}

// TailBytes is the length of the object from the log's end: indexes and
// trailer.
func (t Trailer) TailBytes() int64 { return t.ObjectSize() - t.LogBytes }

// Append appends the trailer's 32 bytes to dst.
func (t Trailer) Append(dst []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LogBytes))
	dst = binary.BigEndian.AppendUint32(dst, t.IndexBytes)
	dst = binary.BigEndian.AppendUint32(dst, t.TimeIndexBytes)
	dst = binary.BigEndian.AppendUint32(dst, t.IndexCRC)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	return append(dst, magic[:]...)
}

// ParseTrailer reads the last TrailerSize bytes of b as a trailer.
func ParseTrailer(b []byte) (Trailer, error) {
	if len(b) < TrailerSize {
		return Trailer{}, fmt.Errorf("%w: %d bytes, a trailer is %d", ErrBadObject, len(b), TrailerSize)
	}
	b = b[len(b)-TrailerSize:]
	if [8]byte(b[24:]) != magic {
		return Trailer{}, fmt.Errorf("%w: no trailer (magic %q)", ErrBadObject, b[24:])
	}
	if got, want := crc32.Checksum(b[:20], castagnoli), binary.BigEndian.Uint32(b[20:]); got != want {
		return Trailer{}, fmt.Errorf("%w: trailer CRC32C %08x, stored %08x", ErrBadObject, got, want)
	}
	t := Trailer{LogBytes: int64(binary.BigEndian.Uint64(b)), IndexBytes: binary.BigEndian.Uint32(b[8:]),
		TimeIndexBytes: binary.BigEndian.Uint32(b[12:]), IndexCRC: binary.BigEndian.Uint32(b[16:])}
	if t.LogBytes < 0 || t.LogBytes > 1<<62 {
		return Trailer{}, fmt.Errorf("%w: trailer gives a log of %d bytes", ErrBadObject, t.LogBytes)
	}
	return t, nil
}

// SplitTail checks tail, the bytes of a bundled object from logBytes (the
// catalog's Bytes) to its end, and returns the two indexes in it. They are
// slices of tail.
func SplitTail(tail []byte, logBytes int64) (index, timeIndex []byte, err error) {
	t, err := ParseTrailer(tail)
	if err != nil {
		return nil, nil, err
	}
	if t.LogBytes != logBytes {
		return nil, nil, fmt.Errorf("%w: trailer gives a log of %d bytes, the record %d", ErrBadObject, t.LogBytes, logBytes)
	}
	if int64(len(tail)) != t.TailBytes() {
		return nil, nil, fmt.Errorf("%w: %d bytes after the log, the trailer gives %d", ErrBadObject, len(tail), t.TailBytes())
	}
	idx := tail[:t.IndexBytes:t.IndexBytes]
	tidx := tail[t.IndexBytes : t.IndexBytes+t.TimeIndexBytes : t.IndexBytes+t.TimeIndexBytes]
	if got := NewTrailer(logBytes, idx, tidx).IndexCRC; got != t.IndexCRC {
		return nil, nil, fmt.Errorf("%w: indexes have CRC32C %08x, the trailer %08x", ErrBadObject, got, t.IndexCRC)
	}
	return idx, tidx, nil
}

// IsBundle reports whether key names a bundled segment object.
func IsBundle(key string) bool { return strings.HasSuffix(key, Ext) }

// IsSegment reports whether key names a segment's log: a bundled object or
// a legacy .log object.
func IsSegment(key string) bool { return IsBundle(key) || strings.HasSuffix(key, LegacyLogExt) }

// Objects lists every object that holds part of the segment whose log is
// key: key alone for a bundle, the .log and its two indexes for a legacy
// segment (indexes first, the order they were uploaded in).
func Objects(key string) []string {
	base, ok := strings.CutSuffix(key, LegacyLogExt)
	if !ok {
		return []string{key}
	}
	return []string{base + LegacyIndexExt, base + LegacyTimeIndexExt, key}
}

// LegacyIndexKey is the .index object beside a legacy .log key, or "" when
// key is not one.
func LegacyIndexKey(key string) string {
	if base, ok := strings.CutSuffix(key, LegacyLogExt); ok {
		return base + LegacyIndexExt
	}
	return ""
}
