package bytebudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBudget: a reservation past the limit waits for a release, one larger
// than the whole budget passes when nothing else is held, and a waiter
// gives up when its ctx ends.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	b := New(100)
	if err := b.Acquire(ctx, 500); err != nil {
		t.Fatalf("oversized reservation on an empty budget: %v", err)
	}
	b.Release(500)
	if err := b.Acquire(ctx, 80); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Acquire(ctx, 40) }()
	for b.Waits() == 0 {
		time.Sleep(time.Millisecond) // polling observable state: the waiter has counted itself
	}
	select {
	case err := <-got:
		t.Fatalf("reservation past the limit did not wait: %v", err)
	default:
	}
	b.Release(80)
	if err := <-got; err != nil {
		t.Fatalf("waiter after release: %v", err)
	}
	if n := b.InUse(); n != 40 {
		t.Fatalf("in use %d, want 40", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Acquire(cctx, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: got %v, want context.Canceled", err)
	}
	if n := b.InUse(); n != 40 {
		t.Fatalf("in use %d after a cancelled wait, want 40", n)
	}
}
