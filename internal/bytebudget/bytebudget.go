package bytebudget

import (
	"context"
	"sync"
	"sync/atomic"
)

// Budget bounds bytes held at once across goroutines. A reservation
// larger than the whole budget is granted when nothing else is held, so a
// frame within the server's frame bound never waits forever.
type Budget struct {
	limit int64
	waits atomic.Int64
	mu    struct {
		sync.Mutex
		used    int64
		waiters int
		wake    chan struct{} // closed when bytes come back and someone waits
	}
}

// New returns a budget of limit bytes.
func New(limit int64) *Budget {
	b := &Budget{limit: limit}
	b.mu.wake = make(chan struct{})
	return b
}

// Acquire reserves n bytes, waiting until they are free or ctx ends.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
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

// Release gives back n bytes. It allocates only when someone waits.
func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.mu.used -= n
	if b.mu.waiters > 0 {
		close(b.mu.wake)
		b.mu.wake = make(chan struct{})
	}
	b.mu.Unlock()
}

// InUse is the bytes reserved right now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// Waits is how many reservations have had to wait.
func (b *Budget) Waits() int64 { return b.waits.Load() }
