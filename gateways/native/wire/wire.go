package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame header (PROTOCOL.md, "Framing"):
//
//	offset  size  field
//	     0     1  magic   0xAE
//	     1     1  version 0x01
//	     2     1  opcode
//	     3     4  payload length, uint32 big-endian
//	     7     n  payload, starting with a uint32 correlation id
const (
	Magic      byte = 0xAE
	Version    byte = 0x01
	HeaderSize      = 7

	// DefaultMaxFrameBytes bounds a frame's payload unless the handshake
	// lowers it.
	DefaultMaxFrameBytes = 64 << 20
)

// Opcode names a request and its response (which carries the same opcode).
// The ring's internal opcodes start at 0x80 and never appear here.
type Opcode byte

const (
	OpHandshake     Opcode = 0x01
	OpLookup        Opcode = 0x02
	OpProduce       Opcode = 0x03
	OpFetch         Opcode = 0x04
	OpListOffsets   Opcode = 0x05
	OpCreateTopic   Opcode = 0x06
	OpDeleteTopic   Opcode = 0x07
	OpListTopics    Opcode = 0x08
	OpDescribe      Opcode = 0x09
	OpOffsetCommit  Opcode = 0x0A
	OpOffsetFetch   Opcode = 0x0B
	OpJoinGroup     Opcode = 0x0C
	OpHeartbeat     Opcode = 0x0D
	OpLeaveGroup    Opcode = 0x0E
	OpDescribeGroup Opcode = 0x0F
	OpListGroups    Opcode = 0x10
	// OpSubscribe's answer and its pushes carry the Subscribe's opcode and
	// correlation id.
	OpSubscribe    Opcode = 0x11
	OpCredit       Opcode = 0x12
	OpUnsubscribe  Opcode = 0x13
	OpAlterConfigs Opcode = 0x14
	// OpInitProducerID hands out an idempotent producer id from the
	// cluster's allocator, the one Kafka's InitProducerId uses.
	OpInitProducerID Opcode = 0x15
	// OpProduceMany carries batches for many partitions in one request.
	OpProduceMany Opcode = 0x16
	OpGroupLag    Opcode = 0x17
	// OpSaslAuthenticate carries one SASL message each way, after a
	// Handshake that named the mechanism (Kafka's SaslAuthenticate).
	OpSaslAuthenticate Opcode = 0x18
	// OpError is sent by the server only, for a frame it cannot answer
	// otherwise (bad header, unknown opcode); the server then closes.
	OpError Opcode = 0x7F
)

var opNames = map[Opcode]string{
	OpHandshake: "Handshake", OpLookup: "Lookup", OpProduce: "Produce", OpFetch: "Fetch",
	OpListOffsets: "ListOffsets", OpCreateTopic: "CreateTopic", OpDeleteTopic: "DeleteTopic",
	OpListTopics: "ListTopics", OpDescribe: "Describe", OpOffsetCommit: "OffsetCommit", OpOffsetFetch: "OffsetFetch",
	OpJoinGroup: "JoinGroup", OpHeartbeat: "Heartbeat", OpLeaveGroup: "LeaveGroup", OpSubscribe: "Subscribe",
	OpCredit: "Credit", OpUnsubscribe: "Unsubscribe", OpAlterConfigs: "AlterConfigs", OpError: "Error",
	OpDescribeGroup: "DescribeGroup", OpListGroups: "ListGroups", OpInitProducerID: "InitProducerID",
	OpProduceMany: "ProduceMany", OpGroupLag: "GroupLag", OpSaslAuthenticate: "SaslAuthenticate",
}

func (o Opcode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Opcode(0x%02X)", byte(o))
}

// Known reports whether o is a request opcode this revision defines.
func (o Opcode) Known() bool { _, ok := opNames[o]; return ok && o != OpError }

// Feature bits of the handshake. A peer ignores bits it does not know.
const (
	// FeatureIdempotence: produce honours producer id, epoch and
	// sequence in the batch header.
	FeatureIdempotence uint64 = 1 << 0
	// FeatureZeroCopyFetch: fetch records may come straight from segment
	// files (informational: the bytes on the wire are the same).
	FeatureZeroCopyFetch uint64 = 1 << 1
	// FeatureLongPoll: fetch waits up to max_wait for min_bytes.
	FeatureLongPoll uint64 = 1 << 2
	// FeaturePush: Subscribe streams records with credit-based flow
	// control.
	FeaturePush uint64 = 1 << 3
	// FeatureFetchCommit: a Fetch may carry a group's offsets to commit
	// (its optional trailer), and its response then the commit's outcome.
	FeatureFetchCommit uint64 = 1 << 4
)

// Sentinels of the codec.
var (
	// ErrMalformed: the bytes are not a frame or a message of this
	// protocol (short, bad magic, a length past the end).
	ErrMalformed = errors.New("malformed native frame")
	// ErrVersion: the frame's version byte is not one this side speaks.
	ErrVersion = errors.New("unsupported native protocol version")
	// ErrTooLarge: a frame claims more payload than the limit.
	ErrTooLarge = errors.New("native frame too large")
)

// ParseHeader checks a 7-byte header and returns the opcode and payload
// length; a payload over maxPayload is refused before it is read.
func ParseHeader(h []byte, maxPayload int) (Opcode, int, error) {
	if len(h) < HeaderSize {
		return 0, 0, fmt.Errorf("%w: short header (%d bytes)", ErrMalformed, len(h))
	}
	if h[0] != Magic {
		return 0, 0, fmt.Errorf("%w: bad magic 0x%02X, want 0x%02X", ErrMalformed, h[0], Magic)
	}
	if h[1] != Version {
		return Opcode(h[2]), 0, fmt.Errorf("%w: frame version %d, this side speaks %d", ErrVersion, h[1], Version)
	}
	n := binary.BigEndian.Uint32(h[3:])
	if uint64(n) > uint64(maxPayload) {
		return Opcode(h[2]), 0, fmt.Errorf("%w: payload of %d bytes, limit %d", ErrTooLarge, n, maxPayload)
	}
	return Opcode(h[2]), int(n), nil
}

// AppendHeader appends a header for a payload of n bytes.
func AppendHeader(dst []byte, op Opcode, n int) []byte {
	return append(dst, Magic, Version, byte(op), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// PutLength fills in the payload length of a frame built in place from
// dst[0] (its header first).
func PutLength(frame []byte) {
	binary.BigEndian.PutUint32(frame[3:], uint32(len(frame)-HeaderSize))
}

// SplitFrame cuts one whole frame off the front of b.
func SplitFrame(b []byte, maxPayload int) (op Opcode, payload, rest []byte, err error) {
	op, n, err := ParseHeader(b, maxPayload)
	if err != nil {
		return op, nil, b, err
	}
	if len(b)-HeaderSize < n {
		return op, nil, b, fmt.Errorf("%w: frame truncated: %d of %d payload bytes", ErrMalformed, len(b)-HeaderSize, n)
	}
	return op, b[HeaderSize : HeaderSize+n : HeaderSize+n], b[HeaderSize+n:], nil
}

// Reader decodes a payload. The first error sticks and every later read
// returns zero values, so a decoder reads all its fields and checks Err
// once.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Err is the first decoding error.
func (r *Reader) Err() error { return r.err }

// Len is the bytes left.
func (r *Reader) Len() int { return len(r.b) }

func (r *Reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("%w: %s needs %d bytes, %d left", ErrMalformed, what, n, len(r.b))
		r.b = nil
		return false
	}
	return true
}

func (r *Reader) U8(what string) uint8 {
	if !r.need(1, what) {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *Reader) U16(what string) uint16 {
	if !r.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

func (r *Reader) U32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *Reader) U64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *Reader) I16(what string) int16 { return int16(r.U16(what)) }
func (r *Reader) I32(what string) int32 { return int32(r.U32(what)) }
func (r *Reader) I64(what string) int64 { return int64(r.U64(what)) }

// ID reads a 16-byte topic id.
func (r *Reader) ID(what string) (id [16]byte) {
	if !r.need(16, what) {
		return id
	}
	copy(id[:], r.b)
	r.b = r.b[16:]
	return id
}

// Str reads a string of u16 length.
func (r *Reader) Str(what string) string {
	n := int(r.U16(what))
	if !r.need(n, what) {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// StrBytes reads a string of u16 length without copying it.
func (r *Reader) StrBytes(what string) []byte {
	n := int(r.U16(what))
	if !r.need(n, what) {
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// Bytes reads a byte string of u32 length, without copying it.
func (r *Reader) Bytes(what string) []byte {
	n := r.U32(what)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.need(len(r.b)+1, what)
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

// Count reads a u16 element count, checking that at least min bytes per
// element remain, so a lying count cannot make a decoder allocate.
func (r *Reader) Count(what string, minEach int) int {
	n := int(r.U16(what))
	if r.err == nil && n*minEach > len(r.b) {
		r.err = fmt.Errorf("%w: %s: %d elements cannot fit in %d bytes", ErrMalformed, what, n, len(r.b))
		r.b = nil
		return 0
	}
	return n
}

// End fails if bytes are left over: a message has exactly its fields.
func (r *Reader) End(what string) error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the end of %s", ErrMalformed, len(r.b), what)
	}
	return r.err
}

// Append helpers.
func AppendU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func AppendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func AppendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }
func AppendI16(b []byte, v int16) []byte  { return AppendU16(b, uint16(v)) }
func AppendI32(b []byte, v int32) []byte  { return AppendU32(b, uint32(v)) }
func AppendI64(b []byte, v int64) []byte  { return AppendU64(b, uint64(v)) }

// AppendStr appends a string of u16 length, cut at 65535 bytes.
func AppendStr(b []byte, s string) []byte {
	if len(s) > 0xFFFF {
		s = s[:0xFFFF]
	}
	b = AppendU16(b, uint16(len(s)))
	return append(b, s...)
}

// AppendBytes appends a byte string of u32 length.
func AppendBytes(b []byte, v []byte) []byte {
	b = AppendU32(b, uint32(len(v)))
	return append(b, v...)
}
