package logstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// openFilesUnder counts the descriptors this process holds on files below
// dir.
func openFilesUnder(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors without /proc: %v", err)
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(p, dir) {
			n++
		}
	}
	return n
}

// TestLogFileCacheBoundsDescriptors: with room for four open logs, fifty
// partitions (each rolled into sealed segments) are written, read back
// whole and restarted, while the store holds no more than four log
// descriptors and none for the indexes. Three descriptors held per
// partition for its life ran a node out of them at a third of its file
// limit.
func TestLogFileCacheBoundsDescriptors(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, func(o *Options) { o.MaxOpenLogs = 4 })
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	const parts = 50
	sent := make([][][]byte, parts)
	for p := int32(0); p < parts; p++ {
		if err := ts.CreatePartition(ctx, "c", p, PartitionConfig{SegmentBytes: 600}); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 4; round++ {
		for p := int32(0); p < parts; p++ {
			b := logtest.Filler(int64(round), 2, 100, byte(p)+byte(round))
			sent[p] = append(sent[p], append([]byte(nil), b...))
			produce(t, ts.Store, "c", p, b)
		}
	}
	logs := filepath.Join(dir, "logs")
	for p := int32(0); p < parts; p++ {
		if err := ts.Settle(ctx, "c", p); err != nil { // the rolls' index shrinks hold files until they run
			t.Fatal(err)
		}
	}
	if n := openFilesUnder(t, logs); n > 4 {
		t.Fatalf("%d descriptors open on segment files after writes, want at most 4", n)
	}
	for p := int32(0); p < parts; p++ {
		checkBatches(t, sent[p], readAll(t, ts.Store, "c", p, 0))
	}
	if n := openFilesUnder(t, logs); n > 4 {
		t.Fatalf("%d descriptors open on segment files after reads, want at most 4", n)
	}
	info, err := ts.DescribePartition(ctx, "c", 7)
	if err != nil {
		t.Fatal(err)
	}
	if info.Segments < 2 {
		t.Fatalf("partition has %d segments, the test wants sealed ones too", info.Segments)
	}
	ts = ts.reopen(t)
	if n := openFilesUnder(t, logs); n > 4 {
		t.Fatalf("%d descriptors open on segment files after a restart, want at most 4", n)
	}
	for p := int32(0); p < parts; p++ {
		b := logtest.Filler(99, 1, 10, 0)
		sent[p] = append(sent[p], append([]byte(nil), b...))
		produce(t, ts.Store, "c", p, b)
		checkBatches(t, sent[p], readAll(t, ts.Store, "c", p, 0))
	}
}

// TestCreateBeyondBudgetRefused: a create past the budget fails with
// ErrTooManyPartitions and writes nothing, the store carries on, and a
// restart loads what was there.
func TestCreateBeyondBudgetRefused(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.MaxPartitions = 3 })
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	for p := int32(0); p < 3; p++ {
		if err := ts.CreatePartition(ctx, "b", p, PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	err := ts.CreatePartition(ctx, "b", 3, PartitionConfig{})
	if !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("fourth create: %v, want ErrTooManyPartitions", err)
	}
	if _, err := ts.cat.GetPartition("b", 3); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a refused create left a catalog record: %v", err)
	}
	if _, err := os.Stat(partitionDir(ts.dir, "b", 3)); !os.IsNotExist(err) {
		t.Fatalf("a refused create left a directory: %v", err)
	}
	produce(t, ts.Store, "b", 0, logtest.Filler(0, 1, 10, 0))
	ts = ts.reopen(t)
	if err := ts.CreatePartition(ctx, "b", 3, PartitionConfig{}); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("after a restart: %v, want ErrTooManyPartitions", err)
	}
	if err := ts.DeletePartition(ctx, "b", 0); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreatePartition(ctx, "b", 3, PartitionConfig{}); err != nil {
		t.Fatalf("a create after a delete made room: %v", err)
	}
}

// TestFailedCreateLeavesNoRecord: a create that fails after its catalog
// record is written (here its directory cannot be made) takes the record
// back out, so the next start does not fail on the half-made partition.
func TestFailedCreateLeavesNoRecord(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	// A file where the partition's directory goes.
	if err := os.WriteFile(partitionDir(ts.dir, "f", 0), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreatePartition(ctx, "f", 0, PartitionConfig{}); err == nil {
		t.Fatal("create over a file succeeded")
	}
	if _, err := ts.cat.GetPartition("f", 0); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a failed create left its catalog record: %v", err)
	}
	ts = ts.reopen(t)
	if err := ts.CreatePartition(ctx, "f", 0, PartitionConfig{}); err != nil {
		t.Fatalf("create after the restart: %v", err)
	}
	produce(t, ts.Store, "f", 0, logtest.Filler(0, 1, 10, 0))
}

// TestTwentyThousandPartitions creates 20,000 partitions on one store and
// writes to each, then restarts and writes to each again, all within the
// process's open file limit (20,000 on the machine this was written on,
// where three descriptors per partition failed at about 6,600).
func TestTwentyThousandPartitions(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("creates and restarts 20,000 partitions, minutes under -race or on a busy machine; " +
			"TestLogFileCacheBoundsDescriptors covers the same paths with a small cache")
	}
	const parts = 20000
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }() // ts is reopened below
	createAndWrite(t, ts.Store, "many", parts, 64)
	ts = ts.reopen(t)
	ctx := context.Background()
	forEach(t, parts, 64, func(p int32) error {
		res, err := ts.Produce(ctx, &ProduceRequest{Topic: "many", Partition: p, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)})
		if err == nil && res.BaseOffset != 1 {
			err = fmt.Errorf("partition %d: second write at offset %d, want 1", p, res.BaseOffset)
		}
		return err
	})
	if n := openFilesUnder(t, ts.dir); n > fileLimit()/2 {
		t.Fatalf("%d descriptors open under the data dir, more than half the limit %d", n, fileLimit())
	}
}

// createAndWrite creates parts partitions of topic and writes a batch to
// each, from workers goroutines.
func createAndWrite(t testing.TB, s *Store, topic string, parts, workers int) {
	t.Helper()
	ctx := context.Background()
	forEach(t, parts, workers, func(p int32) error {
		if err := s.CreatePartition(ctx, topic, p, PartitionConfig{}); err != nil {
			return err
		}
		_, err := s.Produce(ctx, &ProduceRequest{Topic: topic, Partition: p, Acks: 1, Records: logtest.Filler(0, 1, 10, 0)})
		return err
	})
}

// forEach runs fn for partitions 0..parts-1 on workers goroutines and
// fails the test with the first error.
func forEach(t testing.TB, parts, workers int, fn func(p int32) error) {
	t.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int32)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if err := fn(p); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for p := int32(0); p < int32(parts); p++ {
		next <- p
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// BenchmarkPartitionDensity measures creating b.N partitions with a first
// write to each (create-ms), closing the store (close-ms), then a restart
// until all of them have taken a second write (restart-ms), from 64
// clients.
func BenchmarkPartitionDensity(b *testing.B) {
	dir := b.TempDir()
	ts := openTestStore(b, dir, nil)
	start := time.Now()
	createAndWrite(b, ts.Store, "d", b.N, 64)
	created := time.Since(start)
	start = time.Now()
	ts.close(b)
	closed := time.Since(start)
	start = time.Now()
	ts = openTestStore(b, dir, nil)
	ctx := context.Background()
	forEach(b, b.N, 64, func(p int32) error {
		_, err := ts.Produce(ctx, &ProduceRequest{Topic: "d", Partition: p, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)})
		return err
	})
	restarted := time.Since(start)
	b.StopTimer()
	ts.close(b)
	b.ReportMetric(float64(created.Milliseconds()), "create-ms")
	b.ReportMetric(float64(restarted.Milliseconds()), "restart-ms")
	b.ReportMetric(float64(closed.Milliseconds()), "close-ms")
}

// TestRaiseFileLimit: the soft limit ends at the hard one.
func TestRaiseFileLimit(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max > 4096 {
		// Lowered for the test, then put back as it was.
		low := unix.Rlimit{Cur: 4096, Max: lim.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
			t.Fatal(err)
		}
		defer unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	if got := RaiseFileLimit(quietLogger()); got != lim.Max {
		t.Fatalf("RaiseFileLimit left the soft limit at %d, hard limit %d", got, lim.Max)
	}
}

// TestOpenContextStops: recovery gives up when its ctx ends, so a daemon
// told to stop while thousands of partitions load does not wait it out;
// the store opens normally afterwards.
func TestOpenContextStops(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	createAndWrite(t, ts.Store, "s", 20, 4)
	ts.close(t)
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = OpenContext(ctx, Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quietLogger()})
	cat.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("open with an ended ctx: %v, want context.Canceled", err)
	}
	ts = openTestStore(t, dir, nil)
	defer ts.close(t)
	if _, err := ts.DescribePartition(context.Background(), "s", 19); err != nil {
		t.Fatal(err)
	}
}
