package gateways

import "errors"

// Sentinel errors of the plumbing. A Session returns (or wraps) them from
// ReadFrame so the server can tell a misbehaving client, logged as a
// protocol error, from one that simply went away.
var (
	// ErrFrameTooLarge: a frame's declared size exceeds MaxFrameBytes. The
	// rest of the stream cannot be trusted, so the connection is closed.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrMalformedFrame: the bytes do not form a frame or a request of the
	// protocol (a negative size, a header that does not parse, an unknown
	// request type the protocol cannot answer).
	ErrMalformedFrame = errors.New("malformed frame")
	// ErrTooManyConnections: the server is at MaxConns; the new connection
	// is closed at once.
	ErrTooManyConnections = errors.New("too many connections")
)
