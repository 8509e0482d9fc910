package ring

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Frame header, shared with the native protocol (DESIGN §4):
//
//	offset  size  field
//	     0     1  magic   0xAE
//	     1     1  version 0x02 (the ring protocol's revision)
//	     2     1  opcode
//	     3     4  payload length, uint32 big-endian
//	     7     n  payload
//
// Every ring payload starts with a uint32 correlation id, so one connection
// multiplexes many requests; a response carries its request's id and
// opcode. message.go gives the payload layouts.
//
// The version byte names the revision of the payload layouts, and every
// frame is checked against it. A change that an older peer would misread
// (a field added to a message) moves it, so gateways and stores of
// different releases refuse each other at their first frame, with a message
// naming both versions, rather than misparse each other's messages.
// Version 2 added the follower fields of Fetch and OffsetForLeaderEpoch;
// version 3 the isolation level, last stable offset and aborted
// transactions of Fetch, and TxnMarker; version 4 ProduceBatch, which a
// gateway sends for every Kafka produce, so an older store must refuse it
// at the first frame rather than answer each produce with "unsupported".
// The native protocol keeps its own version 0x01.
const (
	frameMagic   byte = 0xAE
	frameVersion byte = 0x04
	headerSize        = 7

	// DefaultMaxPayloadBytes is the default bound on a frame's payload, on
	// both sides. A fetch response must fit in it, so it exceeds any sane
	// fetch.max.bytes.
	DefaultMaxPayloadBytes = 128 << 20
)

// Opcode names a ring message. The native protocol's public opcodes stay
// below 0x80; the ring's internal ones start there.
//
//	opcode  name               request body                       response body
//	  0x80  Describe           -                                  ring version, shards, max payload
//	  0x81  Hello              shard, ring version                -
//	  0x82  Produce            topic, partition, acks, records    base offset, append time, log start
//	  0x83  Fetch              min/max bytes, max wait, parts     per partition: error, HW, log start, records
//	  0x84  ListOffsets        topic, partition, timestamp        offset, timestamp
//	  0x85  CreatePartition    topic, partition, config           -
//	  0x86  DeletePartition    topic, partition                   -
//	  0x87  DescribePartition  topic, partition                   partition info
//	  0x88  ListPartitions     -                                  partition infos
//	  0x89  DeleteRecords      topic, partition, before           new log start offset
//	  0x8A  Cancel             - (the id is the request to drop)  none: no response is sent
//	  0x8B  OffsetForLeaderEpoch  topic, partition, epoch         epoch, end offset
//	  0x8C  TxnMarker          topic, partition, producer, commit  marker offset (-1: nothing to end)
//	  0x8D  ProduceBatch       [topic, partition, acks, records]  per part: error, base offset, append time, log start
//	  0xFF  Error              (server to client only)            error code, message; then the server closes
//
// Describe is the control request: a client sends it on a first connection
// to learn the ring, then opens one connection per shard, each starting with
// Hello. Describe is also accepted on shard connections. Every other request
// needs a Hello first.
type Opcode byte

const (
	OpDescribe          Opcode = 0x80
	OpHello             Opcode = 0x81
	OpProduce           Opcode = 0x82
	OpFetch             Opcode = 0x83
	OpListOffsets       Opcode = 0x84
	OpCreatePartition   Opcode = 0x85
	OpDeletePartition   Opcode = 0x86
	OpDescribePartition Opcode = 0x87
	OpListPartitions    Opcode = 0x88
	OpDeleteRecords     Opcode = 0x89
	OpCancel            Opcode = 0x8A
	// OpOffsetForLeaderEpoch answers from the partition's leader-epoch
	// cache: a follower truncating before it follows, and the gateway's
	// Kafka OffsetForLeaderEpoch.
	OpOffsetForLeaderEpoch Opcode = 0x8B
	// OpTxnMarker writes a transaction's commit or abort marker: the
	// gateway's transaction coordinator ends a transaction with it.
	OpTxnMarker Opcode = 0x8C
	// OpProduceBatch appends to several partitions in one message: a
	// gateway's produce request, split by shard.
	OpProduceBatch Opcode = 0x8D
	OpError        Opcode = 0xFF
)

var opNames = map[Opcode]string{
	OpDescribe:             "Describe",
	OpHello:                "Hello",
	OpProduce:              "Produce",
	OpFetch:                "Fetch",
	OpListOffsets:          "ListOffsets",
	OpCreatePartition:      "CreatePartition",
	OpDeletePartition:      "DeletePartition",
	OpDescribePartition:    "DescribePartition",
	OpListPartitions:       "ListPartitions",
	OpDeleteRecords:        "DeleteRecords",
	OpCancel:               "Cancel",
	OpOffsetForLeaderEpoch: "OffsetForLeaderEpoch",
	OpTxnMarker:            "TxnMarker",
	OpProduceBatch:         "ProduceBatch",
	OpError:                "Error",
}

func (o Opcode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Opcode(0x%02X)", byte(o))
}

// appendHeader appends a frame header for a payload of n bytes.
func appendHeader(dst []byte, op Opcode, n int) []byte {
	return append(dst, frameMagic, frameVersion, byte(op),
		byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// putLength fills in the payload length of a frame built in place, whose
// header sits at frame[0:7].
func putLength(frame []byte) {
	binary.BigEndian.PutUint32(frame[3:], uint32(len(frame)-headerSize))
}

// parseHeader checks a frame header and returns its opcode and payload
// length. A frame over maxPayload is refused before any of it is read.
func parseHeader(h []byte, maxPayload int) (Opcode, int, error) {
	if len(h) < headerSize {
		return 0, 0, fmt.Errorf("%w: short header (%d bytes)", ErrProtocol, len(h))
	}
	if h[0] != frameMagic {
		return 0, 0, fmt.Errorf("%w: bad magic 0x%02X, want 0x%02X", ErrProtocol, h[0], frameMagic)
	}
	if h[1] != frameVersion {
		return 0, 0, fmt.Errorf("%w: peer speaks ring protocol version %d, this node speaks %d: run gateways and stores of the same release",
			ErrProtocol, h[1], frameVersion)
	}
	n := binary.BigEndian.Uint32(h[3:])
	if uint64(n) > uint64(maxPayload) {
		return Opcode(h[2]), 0, fmt.Errorf("%w: payload of %d bytes, limit %d", ErrFrameTooLarge, n, maxPayload)
	}
	return Opcode(h[2]), int(n), nil
}

// decodeFrame splits one whole frame off the front of b. It is what
// readFrame does on a stream, on a buffer, and is what the fuzzer drives.
func decodeFrame(b []byte, maxPayload int) (op Opcode, payload, rest []byte, err error) {
	op, n, err := parseHeader(b, maxPayload)
	if err != nil {
		return 0, nil, b, err
	}
	if len(b)-headerSize < n {
		return 0, nil, b, fmt.Errorf("%w: frame truncated: %d of %d payload bytes", ErrProtocol, len(b)-headerSize, n)
	}
	return op, b[headerSize : headerSize+n : headerSize+n], b[headerSize+n:], nil
}

// readFrame reads one frame from r into a fresh buffer. The payload is the
// caller's to keep: fetch records are handed out as slices of it.
func readFrame(r io.Reader, maxPayload int) (Opcode, []byte, error) {
	op, n, err := readHeader(r, maxPayload)
	if err != nil {
		return op, nil, err
	}
	p, err := readPayload(r, op, n)
	return op, p, err
}

// readHeader reads and checks a frame header, returning the opcode and
// payload length.
func readHeader(r io.Reader, maxPayload int) (Opcode, int, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, err
	}
	return parseHeader(h[:], maxPayload)
}

// readPayload reads the n-byte payload of an op frame whose header was
// just read.
func readPayload(r io.Reader, op Opcode, n int) ([]byte, error) {
	// The buffer grows with the bytes that actually arrive, so a header
	// that merely claims a large payload costs nothing.
	payload := make([]byte, min(n, readStep))
	got := 0
	for {
		k, err := io.ReadFull(r, payload[got:])
		got += k
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				// The peer hung up mid-frame: that frame was malformed.
				return nil, fmt.Errorf("%w: %v frame truncated at %d of %d payload bytes", ErrProtocol, op, got, n)
			}
			return nil, err
		}
		if got == n {
			return payload, nil
		}
		grown := make([]byte, min(2*len(payload), n))
		copy(grown, payload)
		payload = grown
	}
}

// readStep is the first allocation for a frame's payload.
const readStep = 1 << 20

// DefaultMaxQueuedBytes is the default of Server.MaxQueuedBytes.
const DefaultMaxQueuedBytes = 512 << 20
