package ring

import (
	"context"
	"errors"
)

// Sentinel errors of the ring itself. Store errors are the logstore
// sentinels re-exported in backend.go.
var (
	// ErrProtocol: a frame or message broke the ring protocol (wrong magic or
	// version, a truncated or over-long message, a request before the hello).
	// The connection that carried it is closed.
	ErrProtocol = errors.New("ring protocol error")
	// ErrFrameTooLarge: a frame's payload exceeds the receiver's limit. The
	// connection is closed, since the rest of the stream cannot be trusted.
	ErrFrameTooLarge = errors.New("ring frame too large")
	// ErrConnClosed: the connection to a shard broke or was closed while a
	// request was in flight. The request may or may not have been applied;
	// the next call redials the shard.
	ErrConnClosed = errors.New("ring connection closed")
	// ErrWrongShard: a request reached a shard connection that does not own
	// its partition, which means the client's view of the ring is wrong.
	ErrWrongShard = errors.New("partition not owned by this shard")
	// ErrStaleRing: the hello named a ring version the server is not on.
	ErrStaleRing = errors.New("stale ring version")
	// ErrUnsupported: the peer does not know the request's opcode.
	ErrUnsupported = errors.New("unsupported ring opcode")
	// ErrRemote: the server failed with an error that wraps no sentinel the
	// ring knows; the message says what it was.
	ErrRemote = errors.New("ring remote error")
	// ErrTLSRequired: a client spoke plaintext to a ring listener that
	// serves mutual TLS; the server answers it with this and hangs up.
	ErrTLSRequired = errors.New("ring listener requires mutual TLS")
)

// Error codes on the wire. The table is the single mapping between errors
// and codes, in both directions; codes are stable and never reused.
//
//	code  error
//	   0  (none)
//	  -1  ErrRemote (an error wrapping no known sentinel)
//	   1  ErrCorruptBatch
//	   2  ErrBadMagic
//	   3  ErrBadCRC
//	   4  ErrInvalidProducer
//	   5  ErrMessageTooLarge
//	   6  ErrOffsetOutOfRange
//	   7  ErrUnknownPartition
//	   8  ErrPartitionExists
//	   9  ErrCorruptSegment
//	  10  ErrCorruptIndex
//	  11  ErrNotLocal
//	  12  ErrInvalidRequest
//	  13  ErrClosed
//	  16  ErrOutOfOrderSequence
//	  17  ErrInvalidProducerEpoch
//	  18  ErrColdTier
//	  19  ErrStorage
//	  20  ErrTooManyPartitions
//	  21  ErrNotLeader
//	  22  ErrNotEnoughReplicas
//	  23  ErrFencedLeaderEpoch
//	  24  ErrUnknownLeaderEpoch
//	  25  ErrCompactedNoKey
//	  14  context.Canceled
//	  15  context.DeadlineExceeded
//	  32  ErrProtocol
//	  33  ErrFrameTooLarge
//	  34  ErrWrongShard
//	  35  ErrStaleRing
//	  36  ErrUnsupported
//	  37  ErrTLSRequired
const (
	codeNone    int16 = 0
	codeUnknown int16 = -1
)

var errorCodes = []struct {
	code int16
	err  error
}{
	// Order matters only for errors wrapping several sentinels: the first
	// match wins, so the more specific ring errors come before ErrClosed.
	{32, ErrProtocol},
	{33, ErrFrameTooLarge},
	{34, ErrWrongShard},
	{35, ErrStaleRing},
	{36, ErrUnsupported},
	{37, ErrTLSRequired},
	{1, ErrCorruptBatch},
	{2, ErrBadMagic},
	{3, ErrBadCRC},
	{4, ErrInvalidProducer},
	{5, ErrMessageTooLarge},
	{6, ErrOffsetOutOfRange},
	{7, ErrUnknownPartition},
	{8, ErrPartitionExists},
	{9, ErrCorruptSegment},
	{10, ErrCorruptIndex},
	{11, ErrNotLocal},
	{12, ErrInvalidRequest},
	{16, ErrOutOfOrderSequence},
	{17, ErrInvalidProducerEpoch},
	{18, ErrColdTier},
	{19, ErrStorage},
	{20, ErrTooManyPartitions},
	{21, ErrNotLeader},
	{22, ErrNotEnoughReplicas},
	{23, ErrFencedLeaderEpoch},
	{24, ErrUnknownLeaderEpoch},
	{25, ErrCompactedNoKey},
	{13, ErrClosed},
	{14, context.Canceled},
	{15, context.DeadlineExceeded},
}

// codeOf maps an error to its wire code.
func codeOf(err error) int16 {
	if err == nil {
		return codeNone
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return codeUnknown
}

// maxErrorMessage bounds the message text sent with an error code; the rest
// is cut, since a message is for people and the code is for programs.
const maxErrorMessage = 4096

// errorFor rebuilds an error from a wire code and message. The result's
// text is the server's message and it unwraps to the code's sentinel, so
// errors.Is behaves as it would have on the server.
func errorFor(code int16, msg string) error {
	if code == codeNone {
		return nil
	}
	sentinel := ErrRemote
	for _, e := range errorCodes {
		if e.code == code {
			sentinel = e.err
			break
		}
	}
	return &remoteError{code: code, msg: msg, sentinel: sentinel}
}

// remoteError is an error that crossed the wire.
type remoteError struct {
	code     int16
	msg      string
	sentinel error
}

func (e *remoteError) Error() string {
	if e.msg == "" {
		return e.sentinel.Error()
	}
	return e.msg
}
func (e *remoteError) Unwrap() error { return e.sentinel }
