package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestScheduleDueAgreesWithAt(t *testing.T) {
	start := time.Unix(1_700_000_000, 123)
	for _, tc := range []struct {
		rate          float64
		stride, phase int
	}{
		{1, 1, 0}, {3, 1, 0}, {50_000, 1, 0}, {50_000, 4, 3}, {33_333.3, 7, 2}, {1e6, 2, 1}, {12_500, 4, 0},
	} {
		s := NewSchedule(start, tc.rate, tc.stride, tc.phase)
		if got := s.Due(start.Add(-time.Second)); got != 0 {
			t.Errorf("%+v: Due before start = %d", tc, got)
		}
		for n := int64(0); n < 20_000; n += 1 + n/7 {
			at := s.At(n)
			if got := s.Due(at); got != n+1 {
				t.Fatalf("%+v: Due(At(%d)) = %d, want %d", tc, n, got, n+1)
			}
			if n > 0 && at.After(s.At(n-1)) {
				if got := s.Due(at.Add(-time.Nanosecond)); got != n {
					t.Fatalf("%+v: Due(At(%d)-1ns) = %d, want %d", tc, n, got, n)
				}
			}
		}
	}
}

// Sharers of one rate interleave evenly and add up to the rate exactly.
func TestScheduleSharersAddUp(t *testing.T) {
	start := time.Unix(0, 0)
	const rate, sharers = 50_000, 4
	var scheds []Schedule
	for i := 0; i < sharers; i++ {
		scheds = append(scheds, NewSchedule(start, rate, sharers, i))
	}
	for _, el := range []time.Duration{time.Millisecond, 333 * time.Millisecond, time.Second, 30 * time.Second} {
		var total int64
		for _, s := range scheds {
			total += s.Due(start.Add(el))
		}
		want := int64(el.Seconds()*rate) + 1 // token 0 is due at start
		if total != want {
			t.Errorf("after %s: %d tokens due over %d sharers, want %d", el, total, sharers, want)
		}
	}
	// Token n of sharer i is global token n*sharers+i: 20 µs apart.
	var prev time.Time
	for n := int64(0); n < 100; n++ {
		for i, s := range scheds {
			at := s.At(n)
			if g := n*sharers + int64(i); g > 0 {
				if gap := at.Sub(prev); gap < 19*time.Microsecond || gap > 21*time.Microsecond {
					t.Fatalf("global token %d is %s after the previous one, want 20µs", g, gap)
				}
			}
			prev = at
		}
	}
}

// A pacer that finds tokens due hands them all out on one clock read,
// without sleeping: that is what keeps 50,000 msg/s precise.
func TestPacerBurstsWithoutSleeping(t *testing.T) {
	start := time.Unix(100, 0)
	clock := start.Add(10 * time.Millisecond)
	var reads int
	p := NewPacer(NewSchedule(start, 50_000, 1, 0))
	p.now = func() time.Time { reads++; return clock }
	stop := make(chan struct{})
	for n := int64(0); n <= 500; n++ { // tokens 0..500 are due at 10 ms
		due, err := p.Wait(context.Background(), stop)
		if err != nil {
			t.Fatal(err)
		}
		if want := p.sched.At(n); !due.Equal(want) {
			t.Fatalf("token %d due %v, want %v", n, due, want)
		}
	}
	if reads != 1 || p.timer != nil {
		t.Fatalf("501 due tokens took %d clock reads and timer %v; want 1 read, no sleep", reads, p.timer)
	}
	close(stop)
	if _, err := p.Wait(context.Background(), stop); err != errStopped {
		t.Fatalf("Wait after stop with nothing due: %v, want errStopped", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx, make(chan struct{})); err != context.Canceled {
		t.Fatalf("Wait with a cancelled ctx and nothing due: %v", err)
	}
}

// On the real clock, 50,000 msg/s shared by 4 goroutines is met within
// 1% over a second and a half, however coarse the sleeps.
func TestPacerRealClock50k(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test: skipped under -short; it measures the pacer on the wall clock for 1.5s")
	}
	const rate, sharers = 50_000, 4
	const run = 1500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	start := time.Now()
	var taken atomic.Int64
	var early atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < sharers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := NewPacer(NewSchedule(start, rate, sharers, i))
			for {
				due, err := p.Wait(ctx, stop)
				if err != nil {
					return
				}
				if time.Now().Before(due) {
					early.Add(1)
				}
				taken.Add(1)
			}
		}()
	}
	time.Sleep(run) // the window measured: the pacers run on the wall clock meanwhile
	close(stop)
	elapsed := time.Since(start)
	wg.Wait()
	want := elapsed.Seconds() * rate
	got := float64(taken.Load())
	if got < want*0.99 || got > want*1.01 {
		t.Fatalf("%0.f tokens in %s, want %.0f ±1%% (%.0f/s)", got, elapsed, want, got/elapsed.Seconds())
	}
	if early.Load() > 0 {
		t.Fatalf("%d tokens handed out before they were due", early.Load())
	}
	t.Logf("%.0f tokens in %s: %.0f/s", got, elapsed, got/elapsed.Seconds())
}

// A shared rate's change reaches the pacer at its next clock read, and what
// the pacer owed under the old rate is forgiven, not sent in a burst.
func TestSharedPacerFollowsChanges(t *testing.T) {
	start := time.Unix(100, 0)
	clock := start
	rate := NewSharedRate(start, 1000) // a token a millisecond
	p := NewSharedPacer(rate, 1, 0)
	p.now = func() time.Time { return clock }
	stop := make(chan struct{})
	take := func() time.Time {
		t.Helper()
		due, err := p.Wait(context.Background(), stop)
		if err != nil {
			t.Fatal(err)
		}
		return due
	}
	clock = start.Add(10 * time.Millisecond) // 11 tokens due; take 3
	for range 3 {
		take()
	}
	// The rate drops to 100/s at 10 ms: the 8 tokens still owed are
	// dropped once the pacer runs out of those it knew due, and the next
	// is token 0 of the new schedule, due at the change.
	rate.Set(clock, 100)
	for range 8 {
		take() // known due before the change: handed out without a clock read
	}
	if due := take(); !due.Equal(clock) {
		t.Fatalf("first token after the change due %v, want %v", due, clock)
	}
	clock = clock.Add(10 * time.Millisecond) // one more token at 100/s
	if due := take(); !due.Equal(clock) {
		t.Fatalf("second token after the change due %v, want %v", due, clock)
	}
	if rate.Rate() != 100 {
		t.Fatalf("Rate() = %v", rate.Rate())
	}
}
