//go:build measure

package iceberg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// TestMeasureIcebergFiles is issue 26's Parquet file-size figure, with the
// hour-long run at 5 MB/s scaled down: the run lasts 60 min / SCALE, and
// the commit interval and commit size, the snapshot age kept and the
// compaction sizes (target file size, small-file bound, smallest size
// class) are divided by SCALE, so a run sees as many commits and maintenance passes as the
// hour would, on files SCALE times smaller. It reports the data files'
// count and size distribution as a reader sees the table at the end, and
// after one more maintenance pass; the visibility lag of the records
// against the commit interval; and the translation throughput of a
// backlog caught up at full speed, in MB per CPU-second of the process.
//
// Run through deploy/bench/iceberg-files.sh. Knobs (environment):
// ICEBERG_MEASURE_SCALE (6), ICEBERG_MEASURE_MBPS (5),
// ICEBERG_MEASURE_VALUE (1000 bytes), ICEBERG_MEASURE_BACKLOG_MB (128).
func TestMeasureIcebergFiles(t *testing.T) {
	scale := envInt(t, "ICEBERG_MEASURE_SCALE", 6)
	mbps := envInt(t, "ICEBERG_MEASURE_MBPS", 5)
	valueSize := envInt(t, "ICEBERG_MEASURE_VALUE", 1000)
	backlogMB := envInt(t, "ICEBERG_MEASURE_BACKLOG_MB", 128)
	const parts = int32(3)
	run := time.Hour / time.Duration(scale)
	cfg := Config{Catalog: "sql", DataDir: t.TempDir(), CommitInterval: time.Minute / time.Duration(scale),
		CommitBytes: DefaultCommitBytes / int64(scale)}
	cfg.Maintain = MaintainOptions{
		MaxSnapshotAge: DefaultMaxSnapshotAge / time.Duration(scale),
		TargetFileSize: DefaultTargetFileSize / int64(scale),
		SmallFileSize:  DefaultSmallFileSize / int64(scale),
		tierBase:       tierBase / int64(scale),
	}
	t.Logf("scale 1/%d: %v at %d MB/s, %d B values, 3 partitions; commit interval %v or %d B pending, maintenance every %v, target file %d B, small files < %d B, snapshots kept %v",
		scale, run, mbps, valueSize, cfg.CommitInterval, cfg.CommitBytes, 10*cfg.CommitInterval, cfg.Maintain.TargetFileSize, cfg.Maintain.SmallFileSize, cfg.Maintain.MaxSnapshotAge)

	const topic, backlog = "steady", "backlog"
	l := newTestLog(t, topic, parts)
	for p := int32(0); p < parts; p++ {
		if err := l.st.CreatePartition(context.Background(), backlog, p, logstore.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	cat := openTestCatalog(t, cfg)
	m := NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet()})
	m.Update([]TopicState{{Name: topic, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = m.Run(ctx, l.backend) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	defer stop()

	// Steady phase: a tick every 20 ms appends a batch to each partition;
	// each tick's end offsets and time are kept, and a watcher polling
	// the table every 100 ms takes a tick as visible once the table's
	// offsets cover it.
	type tick struct {
		at  time.Time
		end [parts]int64
	}
	var (
		mu    sync.Mutex
		ticks []tick
		lags  []time.Duration
	)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		next := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			o, err := loadOffsets(ctx, cat, topic)
			if err != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			for ; next < len(ticks); next++ {
				tk := ticks[next]
				covered := true
				for p := range parts {
					if o[p] < tk.end[p] {
						covered = false
					}
				}
				if !covered {
					break
				}
				lags = append(lags, now.Sub(tk.at))
			}
			mu.Unlock()
		}
	}()
	const tickEvery = 20 * time.Millisecond
	perTick := max(1, mbps<<20/int(time.Second/tickEvery)/(valueSize+16)/int(parts))
	gen := newValues(valueSize)
	start := time.Now()
	var producedBytes int64
	for next := start; time.Since(start) < run; next = next.Add(tickEvery) {
		time.Sleep(time.Until(next))
		var tk tick
		for p := range parts {
			b := gen.batch(perTick)
			res, err := l.backend.Produce(context.Background(), &ring.ProduceRequest{Topic: topic, Partition: p, Acks: -1, Records: b})
			if err != nil {
				t.Fatal(err)
			}
			tk.end[p] = res.BaseOffset + int64(perTick)
			producedBytes += int64(perTick * (valueSize + 16))
		}
		tk.at = time.Now()
		mu.Lock()
		ticks = append(ticks, tk)
		mu.Unlock()
	}
	elapsed := time.Since(start)
	end := Offsets{}
	mu.Lock()
	for p := range parts {
		end[p] = ticks[len(ticks)-1].end[p]
	}
	mu.Unlock()
	behind := int64(0)
	if o, err := loadOffsets(context.Background(), cat, topic); err == nil {
		for p := range parts {
			behind += end[p] - o[p]
		}
	}
	caught := time.Now()
	tbl := waitOffsetsFor(t, cat, topic, end, 15*time.Minute)
	t.Logf("steady: the table was %d records (%.1f MB) behind when producing stopped; it caught up %v later",
		behind, float64(behind*int64(valueSize+16))/1e6, time.Since(caught).Round(100*time.Millisecond))
	t.Logf("steady: produced %.1f MB in %v (%.2f MB/s of keys and values), %d records per partition",
		float64(producedBytes)/1e6, elapsed.Round(time.Second), float64(producedBytes)/1e6/elapsed.Seconds(), end[0])
	mu.Lock()
	sorted := slices.Clone(lags)
	mu.Unlock()
	slices.Sort(sorted)
	if len(sorted) > 0 {
		q := func(f float64) time.Duration {
			return sorted[int(f*float64(len(sorted)-1))].Round(10 * time.Millisecond)
		}
		t.Logf("visibility lag over %d ticks (commit interval %v; the 100 ms poll adds up to 0.1 s): p50 %v, p90 %v, p99 %v, max %v",
			len(sorted), cfg.CommitInterval, q(0.5), q(0.9), q(0.99), q(1))
	}
	st := m.Status(topic)
	if len(st) == 1 {
		t.Logf("steady: %d commits by the committer, %d snapshots of the table now", st[0].Commits, len(tbl.Metadata().Snapshots()))
	}
	t.Logf("files at the end of the run: %s", fileStats(t, tbl))

	// Backlog phase: the steady topic's committer idles (no new records)
	// while backlogMB of records wait in a second topic; its committer
	// then catches up as fast as it can.
	for written := 0; written < backlogMB<<20; {
		for p := range parts {
			b := gen.batch(500)
			if _, err := l.backend.Produce(context.Background(), &ring.ProduceRequest{Topic: backlog, Partition: p, Acks: -1, Records: b}); err != nil {
				t.Fatal(err)
			}
			written += 500 * (valueSize + 16)
		}
	}
	bend, err := logEnds(l, backlog, parts)
	if err != nil {
		t.Fatal(err)
	}
	cpu0, t0 := procCPU(), time.Now()
	m.Update([]TopicState{
		{Name: topic, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true},
		{Name: backlog, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true},
	})
	waitOffsetsFor(t, cat, backlog, bend, 10*time.Minute)
	cpu, wall := procCPU()-cpu0, time.Since(t0)
	mb := float64(backlogMB<<20) / 1e6
	t.Logf("translation: %.0f MB of backlog (keys and values) in %v wall, %.1f CPU-s: %.1f MB/s wall, %.1f MB per CPU-second (GOMAXPROCS %s)",
		mb, wall.Round(10*time.Millisecond), cpu.Seconds(), mb/wall.Seconds(), mb/cpu.Seconds(), gomaxprocs())

	// One more maintenance pass on the steady table, the committer
	// stopped so that nothing races it.
	stop()
	<-watchDone
	tbl, err = cat.LoadTable(context.Background(), table.Identifier{DefaultNamespace, topic})
	if err != nil {
		t.Fatal(err)
	}
	mo := cfg.Maintain
	mo.Logger = quiet()
	if tbl, err = Maintain(context.Background(), tbl, mo); err != nil {
		t.Fatal(err)
	}
	t.Logf("files after one more maintenance pass: %s", fileStats(t, tbl))
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// values makes record batches: keys "key-N", values of printable random
// bytes (hex, so Parquet's zstd halves them about as it would JSON).
type values struct {
	size int
	n    int
	buf  []byte
}

func newValues(size int) *values { return &values{size: size} }

func (v *values) batch(n int) []byte {
	raw := make([]byte, n*v.size/2+1)
	_, _ = rand.Read(raw)
	v.buf = hex.AppendEncode(v.buf[:0], raw)
	recs := make([]logtest.Record, n)
	for i := range recs {
		recs[i] = logtest.Record{Key: fmt.Appendf(nil, "key-%012d", v.n), Value: v.buf[i*v.size : (i+1)*v.size]}
		v.n++
	}
	return logtest.Batch(time.Now().UnixMilli(), recs...)
}

func loadOffsets(ctx context.Context, cat catalog.Catalog, topic string) (Offsets, error) {
	tbl, err := cat.LoadTable(ctx, table.Identifier{DefaultNamespace, topic})
	if err != nil {
		return nil, err
	}
	return TableOffsets(tbl.Metadata())
}

// waitOffsetsFor waits until every partition of the table reaches want.
func waitOffsetsFor(t *testing.T, cat catalog.Catalog, topic string, want Offsets, timeout time.Duration) *table.Table {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tbl, err := cat.LoadTable(context.Background(), table.Identifier{DefaultNamespace, topic})
		if err == nil {
			o, err := TableOffsets(tbl.Metadata())
			done := err == nil
			for p, w := range want {
				if o[p] < w {
					done = false
				}
			}
			if done {
				return tbl
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s did not reach %v in %v", topic, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func logEnds(l *testLog, topic string, parts int32) (Offsets, error) {
	o := Offsets{}
	for p := range parts {
		res, err := l.backend.ListOffsets(context.Background(), topic, p, ring.TimestampLatest)
		if err != nil {
			return nil, err
		}
		o[p] = res.Offset
	}
	return o, nil
}

// fileStats summarizes the current snapshot's data files.
func fileStats(t *testing.T, tbl *table.Table) string {
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	var total, rows int64
	for _, tk := range tasks {
		sizes = append(sizes, tk.File.FileSizeBytes())
		total += tk.File.FileSizeBytes()
		rows += tk.File.Count()
	}
	if len(sizes) == 0 {
		return "no files"
	}
	slices.Sort(sizes)
	q := func(f float64) string { return mib(sizes[int(f*float64(len(sizes)-1))]) }
	bounds := []int64{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}
	hist := make([]int, len(bounds)+1)
	for _, s := range sizes {
		i, _ := slices.BinarySearch(bounds, s)
		hist[i]++
	}
	return fmt.Sprintf("%d files, %s in all, %d rows; min %s, p50 %s, p90 %s, max %s; <256K:%d 256K-1M:%d 1-4M:%d 4-16M:%d 16-64M:%d >=64M:%d",
		len(sizes), mib(total), rows, q(0), q(0.5), q(0.9), q(1), hist[0], hist[1], hist[2], hist[3], hist[4], hist[5])
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func procCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func gomaxprocs() string {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		return v
	}
	return "default"
}
