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

// machineSample is one reading of the whole machine's CPU time
// (/proc/stat, in clock ticks) and CPU pressure (/proc/pressure/cpu, the
// "some" total in microseconds; -1 where the kernel has no PSI).
type machineSample struct {
	at         time.Time
	busy, all  uint64
	pressureUs int64
}

func readMachine() (machineSample, error) {
	m := machineSample{at: time.Now(), pressureUs: -1}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return m, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return m, fmt.Errorf("/proc/stat: first line %q", line)
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/stat: %q", line)
		}
		// guest and guest_nice (9, 10) are already inside user and nice.
		if i >= 8 {
			break
		}
		m.all += v
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v
		}
	}
	if psi, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		for line := range strings.SplitSeq(string(psi), "\n") {
			if rest, ok := strings.CutPrefix(line, "some "); ok {
				if i := strings.Index(rest, "total="); i >= 0 {
					if v, err := strconv.ParseInt(strings.TrimSpace(rest[i+len("total="):]), 10, 64); err == nil {
						m.pressureUs = v
					}
				}
			}
		}
	}
	return m, nil
}

// MachineStats is the whole machine over a run's measured phase: how busy
// its CPUs were, and how much of the time some task waited for a CPU. On a
// shared machine these say how far other work disturbed the figures.
type MachineStats struct {
	Cores int `json:"cores"`
	// CPUBusyPercent is in percent of one core, summed over all of them
	// (200 = two cores busy), as ProcStats are.
	CPUBusyPercent float64 `json:"cpu_busy_percent"`
	// OtherCPUPercent is what neither the broker nor the bench used.
	OtherCPUPercent float64 `json:"other_cpu_percent"`
	// CPUPressurePercent is PSI's "some": the share of time at least one
	// runnable task waited for a CPU; -1 without PSI.
	CPUPressurePercent float64 `json:"cpu_pressure_percent"`
}

func machineStats(a, b machineSample, cores int, procs ...*ProcStats) *MachineStats {
	dt := b.at.Sub(a.at).Seconds()
	if a.all == 0 || dt <= 0 || b.all <= a.all {
		return nil
	}
	ms := &MachineStats{Cores: cores, CPUPressurePercent: -1}
	ms.CPUBusyPercent = float64(b.busy-a.busy) / float64(b.all-a.all) * float64(cores) * 100
	ms.OtherCPUPercent = ms.CPUBusyPercent
	for _, p := range procs {
		if p != nil {
			ms.OtherCPUPercent -= p.CPUAvgPercent
		}
	}
	ms.OtherCPUPercent = max(ms.OtherCPUPercent, 0)
	if a.pressureUs >= 0 && b.pressureUs >= a.pressureUs {
		ms.CPUPressurePercent = float64(b.pressureUs-a.pressureUs) / 1e6 / dt * 100
	}
	return ms
}
