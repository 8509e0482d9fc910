package gateways

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
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

// byteBudget bounds bytes held at once across goroutines. A reservation
// larger than the whole budget is granted when nothing else is held, so a
// frame within MaxFrameBytes is never refused for want of budget.
type byteBudget struct {
	limit int64
	waits atomic.Int64 // reservations that had to wait
	mu    struct {
		sync.Mutex
		used    int64
		waiters int
		wake    chan struct{} // closed when bytes come back and someone waits
	}
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.mu.wake = make(chan struct{})
	return b
}

// acquire reserves n bytes, waiting until they are free or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.mu.used > 0 && b.mu.used+n > b.limit {
		b.waits.Add(1)
	}
	for b.mu.used > 0 && b.mu.used+n > b.limit {
		wake := b.mu.wake
		b.mu.waiters++
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			b.mu.Lock()
			b.mu.waiters--
			b.mu.Unlock()
			return ctx.Err()
		}
		b.mu.Lock()
		b.mu.waiters--
	}
	b.mu.used += n
	b.mu.Unlock()
	return nil
}

// release gives back n bytes. It allocates only when someone waits.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.mu.used -= n
	if b.mu.waiters > 0 {
		close(b.mu.wake)
		b.mu.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// inUse is the bytes reserved right now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// FrameReader is what a Session reads frames from: the connection's
// buffered bytes for the header, and Body for the rest, which is read
// within the server's budget of request bytes.
type FrameReader struct {
	*bufio.Reader
	ctx    context.Context
	budget *byteBudget
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
		if err := r.budget.acquire(r.ctx, int64(n)); err != nil {
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
		r.budget.release(r.held)
		r.held = 0
	}
}
