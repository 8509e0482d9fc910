package logstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	dir := mountFull(t)
	ts := openTestStore(t, dir, nil)
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "full", 0, PartitionConfig{SegmentBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	// A filler file takes space to give back later.
	filler := filepath.Join(dir, "logs", "filler")
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

// mountFull mounts a 4 MiB tmpfs at dir/logs, where openTestStore keeps
// the logs (the catalog stays outside it), and returns dir.
func mountFull(t *testing.T) string {
	t.Helper()
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
	t.Cleanup(func() { _ = unix.Unmount(logs, unix.MNT_DETACH) })
	return dir
}

// TestDiskFullIndexStores fills the disk at the one moment a store into a
// mmap'd index meets it: the log's next batch still fits in the log's last,
// partly written page, while the offset index needs a page it has not
// touched yet. Without blocks allocated ahead (mmapIndex.reserve), that
// store faults on a hole the filesystem cannot fill, the kernel raises
// SIGBUS, and the process dies with every partition on it.
func TestDiskFullIndexStores(t *testing.T) {
	dir := mountFull(t)
	ts := openTestStore(t, dir, func(o *Options) { o.IndexIntervalBytes = 1 }) // an entry per batch
	defer ts.close(t)
	if err := ts.CreatePartition(context.Background(), "full", 0, PartitionConfig{SegmentBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	const perPage = 4096 / offsetEntryWidth
	tiny := len(logtest.Filler(0, 1, 20, 0))
	// The first batch (never indexed) pads the log so that after it and
	// perPage-2 tiny ones the log's last page has room for a dozen more.
	first := -1
	for v := 0; v < 8192 && first < 0; v++ {
		n := len(logtest.Filler(0, 1, v, 0))
		if r := (n + (perPage-2)*tiny) % 4096; r > 0 && r <= 4096-12*tiny {
			first = v
		}
	}
	produce(t, ts.Store, "full", 0, logtest.Filler(1000, 1, first, 1))
	acked := int64(1)
	for i := 0; i < perPage-2; i++ { // offset index entries 0..perPage-3
		produce(t, ts.Store, "full", 0, logtest.Filler(int64(1001+i), 1, 20, byte(i)))
		acked++
	}
	// Fill what is left of the tmpfs.
	f, err := os.Create(filepath.Join(dir, "logs", "filler"))
	if err != nil {
		t.Fatal(err)
	}
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			break
		}
	}
	f.Close()
	// Entries perPage-2 and perPage-1 end the index's first page; the
	// next one is the first store into its second.
	for i := 0; i < 4; i++ {
		if _, err := ts.Produce(context.Background(), &ProduceRequest{Topic: "full", Partition: 0, Acks: -1,
			Records: logtest.Filler(int64(2000+i), 1, 20, byte(i))}); err != nil {
			t.Fatalf("produce %d on the full disk, into the log's last page: %v", i, err)
		}
		acked++
	}
	// A new partition's first batch finds no block for its indexes: the
	// append fails, before writing anything, with ErrStorage.
	if err := ts.CreatePartition(context.Background(), "full", 1, PartitionConfig{SegmentBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Produce(context.Background(), &ProduceRequest{Topic: "full", Partition: 1, Acks: -1,
		Records: logtest.Filler(3000, 1, 20, 0)}); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "reserve") {
		t.Fatalf("the first produce to a new partition on the full disk: %v, want ErrStorage from reserving index blocks", err)
	}
	if got := readAll(t, ts.Store, "full", 1, 0); len(got) != 0 {
		t.Fatalf("the failed produce left %d batches", len(got))
	}
	var records int64
	for _, b := range readAll(t, ts.Store, "full", 0, 0) {
		_, n, err := ValidateBatches(b)
		if err != nil {
			t.Fatal(err)
		}
		records += n
	}
	if records != acked {
		t.Fatalf("the log holds %d records, %d were acknowledged", records, acked)
	}
}
