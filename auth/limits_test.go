package auth

import (
	"slices"
	"testing"
	"time"
)

// TestFailureDelay: past a few failures from one address, each failure's
// answer waits longer, up to a bound; the window resets.
func TestFailureDelay(t *testing.T) {
	var f FailureDelay
	now := time.Unix(1_700_000_000, 0)
	var got []time.Duration
	for range FailFree + 3 {
		got = append(got, f.Fail(now, "10.0.0.1"))
	}
	want := []time.Duration{0, 0, 0, FailDelay, 2 * FailDelay, 3 * FailDelay}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	if d := f.Fail(now, "10.0.0.2"); d != 0 {
		t.Errorf("another address waits %v", d)
	}
	for range 100 {
		f.Fail(now, "10.0.0.1")
	}
	if d := f.Fail(now, "10.0.0.1"); d != FailMaxDelay {
		t.Errorf("after many failures: %v, want the bound %v", d, FailMaxDelay)
	}
	if d := f.Fail(now.Add(FailWindow), "10.0.0.1"); d != 0 {
		t.Errorf("a new window still waits %v", d)
	}
}

// TestAuditLimiter: a principal hammering a denied operation gets
// AuditBurst lines a window, and the next window's first line counts the
// ones suppressed.
func TestAuditLimiter(t *testing.T) {
	var l AuditLimiter
	now := time.Unix(1_700_000_000, 0)
	n := 0
	for range AuditBurst + 5 {
		if ok, _ := l.Allow(now, "User:x|h"); ok {
			n++
		}
	}
	if n != AuditBurst {
		t.Errorf("%d lines in a window, want %d", n, AuditBurst)
	}
	if ok, _ := l.Allow(now, "User:y|h"); !ok {
		t.Error("another principal is suppressed")
	}
	if ok, dropped := l.Allow(now.Add(AuditWindow), "User:x|h"); !ok || dropped != 5 {
		t.Errorf("next window: ok=%v suppressed=%d, want true and 5", ok, dropped)
	}
	if _, dropped := l.Allow(now.Add(AuditWindow), "User:x|h"); dropped != 0 {
		t.Errorf("suppressed counted twice: %d", dropped)
	}
}
