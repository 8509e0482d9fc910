package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// The kernel fixes it at 100 on every architecture Go runs Linux on
// (sysconf(_SC_CLK_TCK) needs cgo to ask).
const clockTicks = 100

// procSample is one reading of a process's CPU time and resident set.
type procSample struct {
	at       time.Time
	cpuTicks uint64 // utime + stime, all threads
	rssBytes int64
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status ("self" for this
// process).
func readProc(pid string) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%s/stat: no ')'", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%s/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	s.cpuTicks = ut + st
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return s, fmt.Errorf("/proc/%s/status: VmRSS %q", pid, v)
			}
			s.rssBytes = kb << 10
		}
	}
	return s, nil
}

// cpuPercent is the CPU used between two samples, in percent of one core.
func cpuPercent(a, b procSample) float64 {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 || b.cpuTicks < a.cpuTicks {
		return 0
	}
	return float64(b.cpuTicks-a.cpuTicks) / clockTicks / dt * 100
}

// ProcStats is what a run saw of one process during its measured phase.
type ProcStats struct {
	PID int `json:"pid"`
	// CPUAvgPercent is CPU time over wall time, in percent of one core
	// (200 = two cores busy); CPUMaxPercent the highest interval.
	CPUAvgPercent float64 `json:"cpu_avg_percent"`
	CPUMaxPercent float64 `json:"cpu_max_percent"`
	RSSPeakBytes  int64   `json:"rss_peak_bytes"`
	RSSAvgBytes   int64   `json:"rss_avg_bytes"`
	Samples       int     `json:"samples"`
}

// procWatch follows one process through a run. It belongs to the reporter.
type procWatch struct {
	pid        string
	stats      ProcStats
	first      procSample // at the start of the measured phase
	last       procSample
	rssSum     int64
	measuring  bool
	failed     error
	lastCPUPct float64 // of the last interval, for the progress line
}

func newProcWatch(pid int) *procWatch {
	w := &procWatch{pid: "self", stats: ProcStats{PID: os.Getpid()}}
	if pid != 0 {
		w.pid = strconv.Itoa(pid)
		w.stats.PID = pid
	}
	w.last, w.failed = readProc(w.pid)
	return w
}

// sample reads the process at the end of an interval; keep says the
// interval belongs to the measured phase.
func (w *procWatch) sample(keep bool) {
	if w.failed != nil {
		return
	}
	s, err := readProc(w.pid)
	if err != nil {
		w.failed = err
		return
	}
	w.lastCPUPct = cpuPercent(w.last, s)
	if keep {
		if !w.measuring {
			w.measuring = true
			w.first = w.last
		}
		w.stats.Samples++
		w.stats.CPUMaxPercent = max(w.stats.CPUMaxPercent, w.lastCPUPct)
		w.stats.RSSPeakBytes = max(w.stats.RSSPeakBytes, s.rssBytes)
		w.rssSum += s.rssBytes
		w.stats.CPUAvgPercent = cpuPercent(w.first, s)
		w.stats.RSSAvgBytes = w.rssSum / int64(w.stats.Samples)
	}
	w.last = s
}
