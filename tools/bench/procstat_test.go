package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	a, err := readProc("self")
	if err != nil {
		t.Fatal(err)
	}
	if a.rssBytes <= 0 {
		t.Fatalf("rss %d", a.rssBytes)
	}
	// Burn CPU for a while; the sample must see it.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	b, err := readProc("self")
	if err != nil {
		t.Fatal(err)
	}
	if pct := cpuPercent(a, b); pct < 30 || pct > float64(100*runtime.NumCPU())+10 {
		t.Fatalf("busy loop measured at %.1f%% CPU", pct)
	}
}

func TestProcWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	w := newProcWatch(os.Getpid())
	w.sample(false) // warmup: not counted
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	w.sample(true)
	w.sample(true)
	if w.failed != nil {
		t.Fatal(w.failed)
	}
	s := w.stats
	if s.PID != os.Getpid() || s.Samples != 2 || s.RSSPeakBytes <= 0 || s.RSSAvgBytes <= 0 || s.CPUAvgPercent <= 0 {
		t.Fatalf("stats %+v", s)
	}
	if gone := newProcWatch(1 << 30); gone.failed == nil {
		t.Fatal("watching a pid that cannot exist did not fail")
	}
}
