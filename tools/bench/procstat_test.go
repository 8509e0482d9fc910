package bench

import (
	"os"
	"runtime"
	"syscall"
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
	// Burn CPU until the kernel has charged 200 ms (a busy machine may
	// take longer to give them), then compare with getrusage.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if b, err := readProc("self"); err != nil || b.cpuTicks >= a.cpuTicks+20 {
			break
		}
	}
	b, err := readProc("self")
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	rusage := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	ticks := time.Duration(b.cpuTicks) * time.Second / clockTicks
	if d := rusage - ticks; d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("/proc says %s of CPU, getrusage %s", ticks, rusage)
	}
	if pct := cpuPercent(a, b); pct <= 0 || pct > float64(100*runtime.NumCPU())+10 {
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

func TestMachineStats(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	a, err := readMachine()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	b, err := readMachine()
	if err != nil {
		t.Fatal(err)
	}
	self := &ProcStats{CPUAvgPercent: 30}
	m := machineStats(a, b, runtime.NumCPU(), self, nil)
	if m == nil {
		t.Fatal("no machine stats over 200 ms")
	}
	if m.CPUBusyPercent <= 0 || m.CPUBusyPercent > float64(100*runtime.NumCPU())+1 {
		t.Fatalf("machine busy %.1f%% with a busy loop running", m.CPUBusyPercent)
	}
	if m.OtherCPUPercent < 0 || m.OtherCPUPercent > m.CPUBusyPercent {
		t.Fatalf("others %.1f%% of %.1f%%", m.OtherCPUPercent, m.CPUBusyPercent)
	}
	if machineStats(machineSample{}, b, 2) != nil {
		t.Fatal("stats from a missing first sample")
	}
}
