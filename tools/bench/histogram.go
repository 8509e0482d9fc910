package bench

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 60 s at 3 significant digits, as OMB records
// latencies. Values outside are clamped, so a stall still counts as the
// longest latency rather than vanishing.
const (
	histLowestMicros  = 1
	histHighestMicros = 60 * 1000 * 1000
	histSigFigs       = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestMicros, histHighestMicros, histSigFigs)
}

// Recorder collects one kind of latency for one producer or consumer. The
// owner records; the reporter swaps the histogram out once an interval.
type Recorder struct {
	mu struct {
		sync.Mutex
		cur *hdrhistogram.Histogram
	}
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	r := &Recorder{}
	r.mu.cur = newHistogram()
	return r
}

// Record adds one latency.
func (r *Recorder) Record(d time.Duration) {
	us := d.Microseconds()
	if us < histLowestMicros {
		us = histLowestMicros
	} else if us > histHighestMicros {
		us = histHighestMicros
	}
	r.mu.Lock()
	_ = r.mu.cur.RecordValue(us) // in range: cannot fail
	r.mu.Unlock()
}

// Swap installs spare (which must be empty) and returns what was recorded
// since the last Swap.
func (r *Recorder) Swap(spare *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	r.mu.Lock()
	old := r.mu.cur
	r.mu.cur = spare
	r.mu.Unlock()
	return old
}

// Latency is a latency distribution summary, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Summarize reads a histogram of microseconds as a Latency.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   ms(h.ValueAtQuantile(50)),
		P95:   ms(h.ValueAtQuantile(95)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// collector drains a set of recorders of one kind into an interval
// histogram and a run total. It belongs to the reporter goroutine.
type collector struct {
	recorders []*Recorder
	spare     *hdrhistogram.Histogram
	interval  *hdrhistogram.Histogram
	total     *hdrhistogram.Histogram
}

func newCollector(recorders []*Recorder) *collector {
	return &collector{
		recorders: recorders,
		spare:     newHistogram(),
		interval:  newHistogram(),
		total:     newHistogram(),
	}
}

// collect moves everything recorded since the last call into the interval
// histogram (emptied first) and, when keep is set, into the total too.
func (c *collector) collect(keep bool) {
	c.interval.Reset()
	for _, r := range c.recorders {
		old := r.Swap(c.spare)
		c.interval.Merge(old)
		old.Reset()
		c.spare = old
	}
	if keep {
		c.total.Merge(c.interval)
	}
}
