package gateways

import (
	"bufio"
	"context"
	"errors"
	"io"

	"github.com/aerostream/aerostream/internal/bytebudget"
)

// Request memory. A frame's length prefix is a claim, not bytes: a client
// that sends a 4-byte length of 100 MB and nothing more must not cost
// 100 MB. Two bounds follow from that.
//
//   - A frame's buffer grows with the bytes that arrive (FrameReader.Body),
//     so a claim costs memory only once it is backed by data.
//   - The request bytes read and in service over all of a Server's
//     connections are bounded (Server.MaxQueuedBytes, Kafka's
//     queued.max.request.bytes). A frame reserves its size before its body
//     is read and gives it back once handled; while the budget is spent a
//     connection waits before reading the body, and TCP pushes back on its
//     client, as Kafka mutes a channel when its memory pool is empty.

// DefaultMaxQueuedBytes is the default of Server.MaxQueuedBytes: a few
// frames of the largest default size at once.
const DefaultMaxQueuedBytes = 512 << 20

// frameStep is the first allocation for a frame body larger than it; most
// requests fit, so they are read in one piece.
const frameStep = 1 << 20

// FrameReader is what a Session reads frames from: the connection's
// buffered bytes for the header, and Body for the rest, which is read
// within the server's budget of request bytes.
type FrameReader struct {
	*bufio.Reader
	ctx    context.Context
	budget *bytebudget.Budget
	held   int64 // reserved for the frame being read or served
}

// Body reads the n-byte body of the frame whose header was just read,
// after reserving n bytes of the server's budget (which the server gives
// back once the frame is handled). The buffer comes from get, starting at
// most frameStep bytes and growing as bytes arrive; each outgrown buffer
// goes to put (nil: to the collector). A stream that ends early gives
// io.ErrUnexpectedEOF.
func (r *FrameReader) Body(n int, get func(int) []byte, put func([]byte)) ([]byte, error) {
	if r.budget != nil {
		if err := r.budget.Acquire(r.ctx, int64(n)); err != nil {
			return nil, err
		}
		r.held += int64(n)
	}
	return readGrowing(r.Reader, n, get, put)
}

// readGrowing reads n bytes from rd into a buffer that grows fourfold as
// it fills, so memory follows the bytes that arrive while a frame of any
// size costs at most a third more copying.
func readGrowing(rd io.Reader, n int, get func(int) []byte, put func([]byte)) ([]byte, error) {
	if get == nil {
		get = func(n int) []byte { return make([]byte, n) }
	}
	buf := get(min(n, frameStep))
	got := 0
	for {
		k, err := io.ReadFull(rd, buf[got:])
		got += k
		if err != nil {
			if put != nil {
				put(buf)
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if got == n {
			return buf, nil
		}
		grown := get(min(4*len(buf), n))
		copy(grown, buf)
		if put != nil {
			put(buf)
		}
		buf = grown
	}
}

// done gives back what the frame just handled reserved.
func (r *FrameReader) done() {
	if r.held > 0 {
		r.budget.Release(r.held)
		r.held = 0
	}
}
