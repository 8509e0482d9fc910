package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		live, held  int64
		floor, want int64
	}{
		{"no collection yet", 0, 0, 256 * mib, 200},
		{"no cache", 100 * mib, 0, 0, 200},
		{"a 300 MiB cache on a 10 MiB heap, no floor", 310 * mib, 300 * mib, 0, 6},
		{"a cache half the heap, no floor", 200 * mib, 100 * mib, 0, 100},
		{"the cache holds more than was live (chunks set since)", 100 * mib, 120 * mib, 0, 1},
		{"the default cache: the floor decides", 266 * mib, 256 * mib, 256 * mib, 96},
		{"a 2 GiB cache", 2058 * mib, 2048 * mib, 256 * mib, 12},
		{"a large heap outside the cache: its share decides", 1280 * mib, 256 * mib, 256 * mib, 160},
		{"a small cache: never above the percent", 30 * mib, 16 * mib, 256 * mib, 200},
	} {
		if got := gcPercentFor(tc.live, tc.held, 200, tc.floor); int64(got) != tc.want {
			t.Errorf("%s: live %d MiB, held %d MiB, floor %d MiB: percent %d, want %d",
				tc.name, tc.live/mib, tc.held/mib, tc.floor/mib, got, tc.want)
		}
	}
}

// gcPercent reads the GC percent in force.
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestGCTuner: after a collection, the percent in force is the one for the
// heap outside what held reports; with GOGC set, the tuner leaves it alone.
func TestGCTuner(t *testing.T) {
	orig := debug.SetGCPercent(200)
	defer debug.SetGCPercent(orig)
	if v, set := os.LookupEnv("GOGC"); set {
		defer os.Setenv("GOGC", v)
		os.Unsetenv("GOGC")
	}
	cache := make([]byte, 1<<30) // stands for the cache's memory
	stop := startGCTuner(200, func() int64 { return int64(len(cache)) })
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() == 200 {
		if time.Now().After(deadline) {
			t.Fatal("the GC percent is still 200 10 s after a collection with a 1 GiB cache")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	// This test binary's heap outside the cache is a few MiB, so the floor
	// decides: a growth of 256 MiB is about 25% of the heap.
	if p := gcPercent(); p < 20 || p > 30 {
		t.Errorf("GC percent %d with a 1 GiB cache on a heap of a few MiB, want about 25", p)
	}
	stop()
	runtime.KeepAlive(cache)

	debug.SetGCPercent(200)
	t.Setenv("GOGC", "200")
	stop = startGCTuner(200, func() int64 { return int64(len(cache)) })
	defer stop()
	runtime.GC()
	// What is checked is that nothing happens, which no state shows: the
	// sleep gives a tuner's cleanup, had one been armed, time to run.
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	if p := gcPercent(); p != 200 {
		t.Errorf("GC percent %d with GOGC set, want it left at 200", p)
	}
	runtime.KeepAlive(cache)
}
