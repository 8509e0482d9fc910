package fetchcache

import "testing"

// A restarted node must not wait for its reserve before it serves:
// newReserve returns before it allocates, a goroutine fills the buffers
// afterwards, and drop stops that goroutine. A reserve of 2^40 chunks, far
// more than any machine holds, could never be allocated up front.
func TestReserveFillsAfterNew(t *testing.T) {
	const chunk, n = 4 << 10, 1 << 40
	r := newReserve(n, chunk)
	if got := r.left(); got != n {
		t.Fatalf("a new reserve owes %d chunks, want %d", got, n)
	}
	if b := r.take(chunk); len(b) != chunk {
		t.Fatalf("took %d bytes, want a chunk of %d", len(b), chunk)
	}
	if got := r.left(); got != n-1 {
		t.Errorf("%d chunks left after taking one, want %d", got, n-1)
	}
	r.drop()
	if got := r.left(); got != 0 {
		t.Errorf("%d chunks left after drop", got)
	}
	r.drop() // Close may come twice
}

// The filler stops once it has filled every chunk owed, and the chunks it
// filled are the ones take hands out.
func TestReserveFillsEveryChunk(t *testing.T) {
	const chunk, n = 4 << 10, 8
	r := newReserve(n, chunk)
	<-r.done
	r.mu.Lock()
	filled := len(r.bufs)
	r.mu.Unlock()
	if filled != n || r.left() != n {
		t.Fatalf("filled %d chunks, %d left, want %d", filled, r.left(), n)
	}
	for i := range n {
		if b := r.take(chunk); len(b) != chunk {
			t.Fatalf("take %d: %d bytes, want %d", i, len(b), chunk)
		}
	}
	if got := r.left(); got != 0 {
		t.Errorf("%d chunks left after taking all %d", got, n)
	}
	r.drop()
}
