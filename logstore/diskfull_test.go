package logstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/catalog"
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
	dir := t.TempDir()
	mountTmpfs(t, filepath.Join(dir, "logs"), "4m")
	return dir
}

// mountTmpfs mounts a tmpfs of size at path until the test ends. It needs
// root, and skips the test, saying so, without it.
func mountTmpfs(t *testing.T, path, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it mounts a tmpfs (make test runs as root in CI)")
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", path, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(path, unix.MNT_DETACH) })
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

// TestWritebackFailureTakesPartitionOffline puts the log on an ext4 whose
// device fails its writes: a loop device backed by a 16 MiB tmpfs, so once
// that fills, the backing file's ENOSPC reaches ext4 as I/O errors. There
// is no journal and errors=continue, so ext4 stays writable and pwrite
// goes on succeeding (into the page cache): only writeback, or fdatasync,
// can tell. Paced writeback used to start writeback without ever asking
// how it went, and a failed fdatasync was retried, and the retry
// succeeded with the bytes lost; either way the broker went on
// acknowledging, here 245 MB of records onto a device that had stopped
// taking them at 16 MiB. Now the first failure takes the partition
// offline: produce fails with ErrStorage, for good, soon after the device
// stopped. FlushNone finds the failure in paced
// writeback, FlushAlways in the flusher's fdatasync.
//
// It does not read the records back. On this device ext4 also loses
// metadata writes (an extent block, most likely), which no file-level
// check reports: a range writeback had reported written read back as
// zeros from a page boundary on. What the broker owes is to stop and say
// so, and not to drop pages whose write it knows failed.
func TestWritebackFailureTakesPartitionOffline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it mounts a tmpfs and a loop device (make test runs as root in CI)")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux, e2fsprogs; make disk-tools installs them): %v", tool, err)
		}
	}
	for _, policy := range []FlushPolicy{FlushNone, FlushAlways} {
		t.Run(string(policy), func(t *testing.T) { failingDevice(t, policy) })
	}
}

func failingDevice(t *testing.T, policy FlushPolicy) {
	base := t.TempDir()
	back := filepath.Join(base, "back")
	dir := filepath.Join(base, "store")
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, back, "16m")
	img := filepath.Join(back, "disk.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil { // sparse: ext4 thinks it has room
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-O", "^has_journal",
		"-E", "lazy_itable_init=1,nodiscard", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if err := unix.Mount(dev, logs, "ext4", 0, "errors=continue"); err != nil {
		t.Fatalf("mount %s: %v", dev, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(logs, unix.MNT_DETACH) })

	ts := openTestStore(t, dir, func(o *Options) { o.WritebackBytes = 1 << 20; o.Flush = policy })
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "wb", 0, PartitionConfig{SegmentBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	var acked int64
	var failed error
	for i := 0; i < 4000 && failed == nil; i++ { // 64 KiB each: up to 250 MiB
		_, failed = ts.Produce(ctx, &ProduceRequest{Topic: "wb", Partition: 0, Acks: -1,
			Records: logtest.Filler(int64(i), 8, 8000, byte(i))})
		if failed == nil {
			acked += 8
		}
	}
	// The failure must be the partition going offline, not a write
	// refused for another reason.
	if !errors.Is(failed, ErrStorage) || !strings.Contains(failed.Error(), "refuses produce") {
		t.Fatalf("producing onto a failing device: %v after %d records, want ErrStorage taking the partition offline", failed, acked)
	}
	t.Logf("after %d records: %v", acked, failed)
	// The store says so as a whole, so that a cluster store gives up its
	// leaderships.
	if err := ts.StorageFailure(); !errors.Is(err, ErrStorage) {
		t.Fatalf("StorageFailure after the partition went offline: %v, want ErrStorage", err)
	}
	// Offline stays offline: a later produce fails too, though its bytes
	// would fit in the page cache.
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "wb", Partition: 0, Acks: -1,
		Records: logtest.Filler(0, 1, 10, 0)}); !errors.Is(err, ErrStorage) {
		t.Fatalf("a produce after the failure: %v, want ErrStorage", err)
	}
	// The device holds 16 MiB, data and metadata. A failure shows when the
	// job that meets it runs, so acknowledged bytes may run past the
	// device by every queued window, plus what ext4 holds back before it
	// allocates. Without the checks produce went on until ext4 itself was
	// full, at about 245 MB.
	const device, ext4Held = 16 << 20, 16 << 20
	most := int64(device + ext4Held + (wbQueueDepth+2)*(1<<20))
	if bytes := acked / 8 * int64(len(logtest.Filler(0, 8, 8000, 0))); bytes > most {
		t.Fatalf("%d bytes acknowledged onto a device that holds 16 MiB", bytes)
	}
}

// TestOpenOnFullDiskFailsFast: recovery on a data disk without room (it
// rebuilds the active segment's indexes, which takes blocks) fails Open
// at once with ErrDiskFull wrapping ENOSPC, and Open succeeds with the log
// intact once space is freed.
func TestOpenOnFullDiskFailsFast(t *testing.T) {
	dir := mountFull(t)
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "full", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := 0; i < 5; i++ {
		b := logtest.Filler(int64(i), 2, 100, byte(i))
		sent = append(sent, append([]byte(nil), b...))
		produce(t, ts.Store, "full", 0, b)
	}
	ts.close(t)
	filler := filepath.Join(dir, "logs", "filler")
	f, err := os.Create(filler)
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

	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quietLogger()})
	cat.Close()
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("open on a full disk: %v, want ErrDiskFull wrapping ENOSPC", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ts = openTestStore(t, dir, nil)
	defer ts.close(t)
	checkBatches(t, sent, readAll(t, ts.Store, "full", 0, 0))
}
