package fetchcache

import (
	"context"
	"os"
	"sync"
)

// reserve holds chunk buffers allocated, and their pages touched, when the
// cache is created (Options.Prealloc), for the chunks fetched first.
//
// Why: a chunk fetched into memory the process has never touched pays a
// page fault per 4 KiB page as the GET's bytes land. On the CI VM that is
// about 0.3 CPU-s per GiB, a third of what a fresh node's cold pass cost
// (about 1 CPU-s per GiB): reading 1 GiB of 4 MiB range GETs from MinIO
// took 0.70 CPU-s into fresh buffers and 0.38-0.46 into one reused
// buffer. A node that has been serving cold reads for a while does not pay
// it: evicted chunks go back to the Go heap, and new chunks reuse that
// memory. The reserve gives a fresh node the same, by paying the faults at
// start instead of during its first cold reads.
//
// Buffers are handed out once and never come back: a chunk's memory may be
// held by responses after it leaves the cache (reads are zero copy), so
// only the garbage collector knows when it is free.
//
// A goroutine fills the reserve after New returns: touching the whole
// budget takes a sizeable fraction of a CPU-second, and a restarted node
// must not wait for it before it serves.
type reserve struct {
	size   int // every buffer's length: the chunk size
	cancel context.CancelFunc
	done   chan struct{} // closed when the filler has returned
	mu     sync.Mutex
	bufs   [][]byte // filled and not taken yet
	owed   int      // buffers the filler has still to add
}

// newReserve starts filling n buffers of size bytes, each with every page
// touched so that the kernel maps them now.
func newReserve(n, size int) *reserve {
	ctx, cancel := context.WithCancel(context.Background())
	r := &reserve{size: size, cancel: cancel, done: make(chan struct{}), owed: n}
	go r.fill(ctx)
	return r
}

// fill allocates and touches the owed buffers one by one until none is
// owed or ctx ends.
func (r *reserve) fill(ctx context.Context) {
	defer close(r.done)
	page := os.Getpagesize()
	for ctx.Err() == nil {
		r.mu.Lock()
		owed := r.owed
		r.mu.Unlock()
		if owed == 0 {
			return
		}
		b := make([]byte, r.size)
		for p := 0; p < len(b); p += page {
			b[p] = 0
		}
		r.mu.Lock()
		if r.owed > 0 { // take may have settled the debt meanwhile
			r.owed--
			r.bufs = append(r.bufs, b)
		}
		r.mu.Unlock()
	}
}

// take returns a buffer of n bytes: a reserved one when n is a whole chunk
// and one is filled, otherwise a new one. A whole chunk taken before the
// filler got to it counts against the reserve all the same, so that the
// reserve and the chunks taken never hold more than the budget. A reserved
// buffer is never cut to a shorter length, so the budget (which counts
// len) matches the memory.
func (r *reserve) take(n int64) []byte {
	if r != nil && n == int64(r.size) {
		r.mu.Lock()
		if k := len(r.bufs); k > 0 {
			b := r.bufs[k-1]
			r.bufs[k-1] = nil
			r.bufs = r.bufs[:k-1]
			r.mu.Unlock()
			return b
		}
		if r.owed > 0 {
			r.owed--
		}
		r.mu.Unlock()
	}
	return make([]byte, n)
}

// drop stops the filler, waits for it, and lets the buffers not taken go,
// for Close.
func (r *reserve) drop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
	r.mu.Lock()
	r.bufs, r.owed = nil, 0
	r.mu.Unlock()
}

// left is how many reserved buffers have not been taken yet, filled or
// still owed.
func (r *reserve) left() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bufs) + r.owed
}
