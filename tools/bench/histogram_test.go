package bench

import (
	"math"
	"testing"
	"time"
)

func TestRecorderSummary(t *testing.T) {
	r := NewRecorder()
	for us := 1; us <= 10_000; us++ { // uniform over 1 µs .. 10 ms
		r.Record(time.Duration(us) * time.Microsecond)
	}
	c := newCollector([]*Recorder{r})
	c.collect(true)
	l := Summarize(c.total)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*0.002 { // 3 significant digits
			t.Errorf("%s = %v ms, want %v ms", name, got, want)
		}
	}
	if l.Count != 10_000 {
		t.Errorf("count %d", l.Count)
	}
	near("p50", l.P50, 5.0)
	near("p95", l.P95, 9.5)
	near("p99", l.P99, 9.9)
	near("p99.9", l.P999, 9.99)
	near("max", l.Max, 10.0)
	near("mean", l.Mean, 5.0005)
}

func TestRecorderClamps(t *testing.T) {
	r := NewRecorder()
	r.Record(-time.Second)     // clock step: counted as the smallest value
	r.Record(0)                // below 1 µs
	r.Record(10 * time.Minute) // beyond 60 s: counted as 60 s
	h := r.Swap(newHistogram())
	if h.TotalCount() != 3 {
		t.Fatalf("count %d, want 3 (nothing dropped)", h.TotalCount())
	}
	if got := Summarize(h).Max; math.Abs(got-60_000) > 60 {
		t.Fatalf("max %v ms, want 60000", got)
	}
	if h.Min() != 1 {
		t.Fatalf("min %d µs, want 1", h.Min())
	}
}

// Intervals not kept (warmup) stay out of the total; each interval
// histogram holds only what came since the last collect.
func TestCollectorKeepsOnlyMeasured(t *testing.T) {
	a, b := NewRecorder(), NewRecorder()
	c := newCollector([]*Recorder{a, b})
	a.Record(100 * time.Millisecond) // warmup
	c.collect(false)
	if c.interval.TotalCount() != 1 || c.total.TotalCount() != 0 {
		t.Fatalf("after warmup: interval %d total %d", c.interval.TotalCount(), c.total.TotalCount())
	}
	a.Record(time.Millisecond)
	b.Record(2 * time.Millisecond)
	c.collect(true)
	if c.interval.TotalCount() != 2 || c.total.TotalCount() != 2 {
		t.Fatalf("after measuring: interval %d total %d", c.interval.TotalCount(), c.total.TotalCount())
	}
	c.collect(true)
	if c.interval.TotalCount() != 0 || c.total.TotalCount() != 2 {
		t.Fatalf("empty interval: interval %d total %d", c.interval.TotalCount(), c.total.TotalCount())
	}
	if max := Summarize(c.total).Max; max > 2.01 {
		t.Fatalf("warmup value leaked into the total: max %v ms", max)
	}
	if (Summarize(newHistogram()) != Latency{}) {
		t.Fatal("empty histogram summary not zero")
	}
}
