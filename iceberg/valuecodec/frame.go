package valuecodec

import (
	"encoding/binary"
	"fmt"
)

// maxMessageIndexes bounds the Protobuf message-index list: it is a path
// through nested message declarations, never long in a real schema.
const maxMessageIndexes = 64

// SplitFrame reads Confluent's wire format: magic byte 0, then the schema
// id as a big-endian int32, then the payload.
func SplitFrame(b []byte) (id int32, payload []byte, err error) {
	if len(b) < 5 {
		return 0, nil, fmt.Errorf("%w: %d bytes, want at least 5 (magic byte and schema id)", ErrFrame, len(b))
	}
	if b[0] != 0 {
		return 0, nil, fmt.Errorf("%w: magic byte %d, want 0", ErrFrame, b[0])
	}
	return int32(binary.BigEndian.Uint32(b[1:5])), b[5:], nil
}

// HasFrame says whether b could be a framed value: it starts with the
// magic byte and is long enough for an id. Plain Avro or Protobuf
// payloads can start with 0 too, so this is a guess, used only where the
// mode says framing is optional.
func HasFrame(b []byte) bool { return len(b) >= 5 && b[0] == 0 }

// messageIndexes reads the Protobuf message-index list that follows the
// schema id: a zigzag varint count, then that many zigzag varint indexes,
// each the position of a message among its parent's (the file's top-level
// messages first). A single 0 byte stands for [0], the first message.
func messageIndexes(b []byte) ([]int, []byte, error) {
	n, w := binary.Varint(b)
	if w <= 0 {
		return nil, nil, fmt.Errorf("%w: message-index count is not a varint", ErrFrame)
	}
	b = b[w:]
	if n == 0 {
		return []int{0}, b, nil
	}
	if n < 0 || n > maxMessageIndexes {
		return nil, nil, fmt.Errorf("%w: %d message indexes (want 1 to %d)", ErrFrame, n, maxMessageIndexes)
	}
	out := make([]int, n)
	for i := range out {
		v, w := binary.Varint(b)
		if w <= 0 {
			return nil, nil, fmt.Errorf("%w: message index %d is not a varint", ErrFrame, i)
		}
		if v < 0 || v > 1<<20 {
			return nil, nil, fmt.Errorf("%w: message index %d is %d", ErrFrame, i, v)
		}
		out[i] = int(v)
		b = b[w:]
	}
	return out, b, nil
}

// AppendMessageIndexes appends the encoding of idx that messageIndexes
// reads (what a Confluent Protobuf serializer writes).
func AppendMessageIndexes(b []byte, idx []int) []byte {
	if len(idx) == 1 && idx[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(idx)))
	for _, i := range idx {
		b = binary.AppendVarint(b, int64(i))
	}
	return b
}
