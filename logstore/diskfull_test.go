package logstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// TestDiskFullLosesNothing fills the log's filesystem (a 4 MiB tmpfs) while
// producing. The append that does not fit must fail with ErrStorage, and
// the log must hold exactly the batches acknowledged before it, each one
// whole: a short write taken for a whole one once left a hole that
// consumers read as batches failing their CRC. Once space is freed,
// produce goes on where it stopped.
func TestDiskFullLosesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it mounts a 4 MiB tmpfs to fill")
	}
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", logs, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(logs, unix.MNT_DETACH)
	// No sparse index entries after the first page, whose page is taken
	// before the disk is full: a store on a disk this small would otherwise
	// fault on its mmap'd indexes, which is a different problem.
	ts := openTestStore(t, dir, func(o *Options) { o.IndexIntervalBytes = 1 << 30; o.MaxIndexBytes = 4096 })
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "full", 0, PartitionConfig{SegmentBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	// A filler file takes space to give back later.
	filler := filepath.Join(logs, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	var acked int64
	var failed error
	for i := 0; i < 1000 && failed == nil; i++ {
		res, err := ts.Produce(ctx, &ProduceRequest{Topic: "full", Partition: 0, Acks: -1,
			Records: logtest.Filler(int64(i), 4, 7000, byte(i))}) // ~28 KiB: a write that fills the disk is cut short
		if err != nil {
			failed = err
			break
		}
		if res.BaseOffset != acked {
			t.Fatalf("batch %d got offset %d, want %d", i, res.BaseOffset, acked)
		}
		acked += 4
	}
	if !errors.Is(failed, ErrStorage) {
		t.Fatalf("a produce to a full disk: %v, want ErrStorage", failed)
	}
	check := func(want int64) {
		t.Helper()
		var records int64
		for _, b := range readAll(t, ts.Store, "full", 0, 0) {
			if _, n, err := ValidateBatches(b); err != nil {
				t.Fatalf("after %d records: %v", records, err)
			} else {
				records += n
			}
		}
		if records != want {
			t.Fatalf("the log holds %d records, %d were acknowledged", records, want)
		}
	}
	check(acked)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if res := produce(t, ts.Store, "full", 0, logtest.Filler(int64(i), 4, 7000, byte(i))); res.BaseOffset != acked {
			t.Fatalf("after the disk had room again: offset %d, want %d", res.BaseOffset, acked)
		}
		acked += 4
	}
	check(acked)
}
