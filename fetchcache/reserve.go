package fetchcache

import (
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
type reserve struct {
	size int // every buffer's length: the chunk size
	mu   sync.Mutex
	bufs [][]byte
}

// newReserve allocates n buffers of size bytes and touches every page of
// them, so the kernel maps them now.
func newReserve(n, size int) *reserve {
	r := &reserve{size: size, bufs: make([][]byte, n)}
	page := os.Getpagesize()
	for i := range r.bufs {
		b := make([]byte, size)
		for p := 0; p < len(b); p += page {
			b[p] = 0
		}
		r.bufs[i] = b
	}
	return r
}

// take returns a buffer of n bytes: a reserved one when n is a whole chunk
// and one is left, otherwise a new one. A reserved buffer is never cut to
// a shorter length, so the budget (which counts len) matches the memory.
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
		r.mu.Unlock()
	}
	return make([]byte, n)
}

// drop lets the buffers not taken go, for Close.
func (r *reserve) drop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.bufs = nil
	r.mu.Unlock()
}

// left is how many reserved buffers have not been taken yet.
func (r *reserve) left() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bufs)
}
