//go:build measure

package tiertest

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The measure's "cores apart" rounds give MinIO a CPU of its own and leave
// the rest to the node and its clients, as a bucket on other machines
// would. On a 2-core machine MinIO shares the node's cores otherwise, and
// its work per PUT (about 1.6 ms of CPU per request plus 7 ms per MiB here:
// copying the body into the page cache and hashing it with MD5 for the
// ETag) lands on the cores the node's produce path runs on.

// storeCPU is the CPU the object store gets in the cores-apart rounds: the
// last one. The node, its clients and the test take the others.
func storeCPU() int { return runtime.NumCPU() - 1 }

// cpuSet is a set of the CPUs from lo to hi.
func cpuSet(lo, hi int) unix.CPUSet {
	var s unix.CPUSet
	for c := lo; c <= hi; c++ {
		s.Set(c)
	}
	return s
}

// setAffinity gives every thread of process pid (0: this one) the set. A
// thread inherits its creator's set, so threads created later follow; the
// listing repeats until no thread is new, for those created meanwhile.
func setAffinity(pid int, set unix.CPUSet) error {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			// A thread that ended since the listing is no error.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("sched_setaffinity %d: %w", tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// coresApart moves the object store (process storePID) onto storeCPU and
// this test process, with the nodes it starts from now on, onto the other
// CPUs. The function returned gives both every CPU back.
func coresApart(t *testing.T, storePID int) (undo func()) {
	t.Helper()
	all := cpuSet(0, runtime.NumCPU()-1)
	if err := setAffinity(storePID, cpuSet(storeCPU(), storeCPU())); err != nil {
		t.Fatalf("pin MinIO (pid %d): %v", storePID, err)
	}
	if err := setAffinity(0, cpuSet(0, storeCPU()-1)); err != nil {
		_ = setAffinity(storePID, all)
		t.Fatalf("pin the test process: %v", err)
	}
	return func() {
		for _, pid := range []int{0, storePID} {
			if err := setAffinity(pid, all); err != nil {
				t.Errorf("unpin pid %d: %v", pid, err)
			}
		}
	}
}

// storePID reads MinIO's pid from the environment testservers.sh writes;
// 0 and a reason when the cores-apart rounds cannot run.
func storePID() (int, string) {
	if runtime.NumCPU() < 2 {
		return 0, "one CPU: nothing to keep apart"
	}
	v := strings.TrimSpace(os.Getenv("AEROSTREAM_TEST_S3_PID"))
	pid, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Sprintf("AEROSTREAM_TEST_S3_PID is %q (tierd/objstore/testservers.sh start writes it)", v)
	}
	if err := unix.Kill(pid, 0); err != nil {
		return 0, fmt.Sprintf("MinIO pid %d: %v", pid, err)
	}
	return pid, ""
}
