package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// gcTuner keeps the fetch cache's memory from multiplying the garbage
// collector's growth target on a tiering node.
//
// Why: Go starts the next collection when the heap has grown by GOGC
// percent of what the last one left live. The cache's memory (all of its
// budget from the start, with cache_prealloc) is live heap that does not
// come and go with requests, yet at daemonGCPercent it let the heap grow by
// up to twice itself again before a collection. A node with a 1 GiB cache
// had its next collection due at 1.99 GB of heap (1.27 GB with the tuner);
// one with the default 256 MiB, at 490 to 635 MiB.
//
// After each collection the tuner lowers the GC percent so that the heap
// may grow by daemonGCPercent of the live heap outside the cache, or by
// gcGrowthFloor if that is more, never by more than the percent itself
// allows. The floor is there because collections cost a tiering node's
// produce latency more than the memory they save is worth: in make
// measure-tiered's produce rounds (2 cores shared with MinIO, 10 s each, a
// fresh node each), letting such a node grow by only twice its heap
// outside the cache (about 10 MiB) made it collect 7 to 9 times a round
// (5 or 6 with tiering off), and its produce p99 was 1.52 and 1.40 times
// tiering off's, against 1.15 and 1.22 without the tuner in the same run.
// With floors of 64, 256 and 512 MiB it did not collect in a round, and
// the ratios (1.36 and 1.16, 1.20 and 1.16, 1.19 and 1.12) were within the
// measure's spread of those without the tuner. 256 MiB is the default
// cache's size: such a node collects about as often as before the tuner
// (its next collection was due 190 to 335 MiB above its heap in use).
// Tiering off, the 256 MiB floor changed nothing (1.03 and 1.01), so nodes
// without a cache keep plain daemonGCPercent.
type gcTuner struct {
	percent int          // GC percent for the heap outside the cache
	held    func() int64 // the cache's bytes on the heap
	stopped atomic.Bool
	last    int // the percent set last; only the cleanup goroutine touches it
}

// gcGrowthFloor is the least the tuner lets a tiering node's heap grow by
// between collections (gcTuner says why).
const gcGrowthFloor = 256 << 20

// startGCTuner starts tuning after every collection, unless the operator
// set GOGC (then the runtime's own pacing stands). The function returned
// stops it; the GC percent then stays where it was last set.
func startGCTuner(percent int, held func() int64) (stop func()) {
	if gogcSet() {
		return func() {}
	}
	t := &gcTuner{percent: percent, held: held, last: percent}
	t.arm()
	// A collection now, so that the first tuning counts the cache's
	// reserve, allocated just before: otherwise the target that the
	// reserve's allocation left would stand until the heap reached it, and
	// the tuner would not run before then.
	runtime.GC()
	return func() { t.stopped.Store(true) }
}

// arm registers a cleanup on a fresh object that nothing references: it
// runs after the next collection finds the object unreachable, tunes, and
// arms again. This is how a program learns that a collection has happened.
func (t *gcTuner) arm() {
	// Not under 16 bytes: tiny allocations share a block, and a cleanup
	// waits for the whole block.
	sentinel := new([32]byte)
	runtime.AddCleanup(sentinel, func(t *gcTuner) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	}, t)
}

// tune sets the percent for the live heap the last collection left.
func (t *gcTuner) tune() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := gcPercentFor(int64(s[0].Value.Uint64()), t.held(), t.percent, gcGrowthFloor)
	if p != t.last {
		debug.SetGCPercent(p)
		t.last = p
	}
}

// gcPercentFor is the GC percent that lets a heap of live bytes, held of
// them the cache's, grow by percent of the rest or by floor, whichever is
// more: never more than percent, never less than 1.
func gcPercentFor(live, held int64, percent int, floor int64) int {
	if live <= 0 {
		return percent
	}
	growth := max(max(live-held, 0)*int64(percent)/100, floor)
	return int(min(max(growth*100/live, 1), int64(percent)))
}
