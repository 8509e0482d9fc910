package ratelog

import (
	"testing"
	"time"
)

// TestLimiter: one line per key per interval; the next one counts what
// was held back.
func TestLimiter(t *testing.T) {
	l := New(time.Second)
	t0 := time.Unix(1000, 0)
	if ok, _ := l.Allow("a", t0); !ok {
		t.Fatal("first line held back")
	}
	for i := 0; i < 5; i++ {
		if ok, _ := l.Allow("a", t0.Add(time.Duration(i)*100*time.Millisecond)); ok {
			t.Fatalf("line %d within the interval let through", i)
		}
	}
	if ok, _ := l.Allow("b", t0); !ok {
		t.Fatal("another key held back")
	}
	if ok, n := l.Allow("a", t0.Add(time.Second)); !ok || n != 5 {
		t.Fatalf("after the interval: let through %v, suppressed %d; want true, 5", ok, n)
	}
}
