package iceberg

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	aecatalog "github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testLog is a store with one topic, read through the in-process ring.
type testLog struct {
	st      *logstore.Store
	backend ring.Backend
}

func newTestLog(t *testing.T, topic string, parts int32) *testLog {
	t.Helper()
	dir := t.TempDir()
	cat, err := aecatalog.Open(filepath.Join(dir, "catalog"), aecatalog.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	l := &testLog{st: st, backend: ring.NewInProcess(st)}
	t.Cleanup(func() { l.backend.Close(); st.Close(); cat.Close() })
	for p := int32(0); p < parts; p++ {
		if err := st.CreatePartition(context.Background(), topic, p, logstore.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// produce appends n records to each partition, in batches of 10, with
// keys and values naming partition and offset order.
func (l *testLog) produce(t *testing.T, topic string, parts int32, n int, tag string) {
	t.Helper()
	now := time.Now().UnixMilli()
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i += 10 {
			var recs []logtest.Record
			for j := i; j < min(i+10, n); j++ {
				recs = append(recs, logtest.Record{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "%s-%d-%d", tag, p, j)})
			}
			if _, err := l.backend.Produce(context.Background(), &ring.ProduceRequest{Topic: topic, Partition: p, Acks: -1,
				Records: logtest.Batch(now, recs...)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func testConfig(dir string) Config {
	return Config{Catalog: "sql", DataDir: dir, CommitInterval: 100 * time.Millisecond, CommitBytes: 1 << 20}
}

func openTestCatalog(t *testing.T, cfg Config) catalog.Catalog {
	t.Helper()
	cat, err := OpenCatalog(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = CloseCatalog(cat) })
	return cat
}

// startManager runs a manager committing topic until the test ends or
// stop is called.
func startManager(t *testing.T, cat catalog.Catalog, cfg Config, l *testLog, topic string, parts int32) (stop func()) {
	m := NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet()})
	m.Update([]TopicState{{Name: topic, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = m.Run(ctx, l.backend) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// waitOffsets waits until the table's offsets reach want.
func waitOffsets(t *testing.T, cat catalog.Catalog, topic string, want Offsets) *table.Table {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tbl, err := cat.LoadTable(context.Background(), table.Identifier{DefaultNamespace, topic})
		if err == nil {
			o, err := TableOffsets(tbl.Metadata())
			if err != nil {
				t.Fatal(err)
			}
			if o.String() == want.String() {
				return tbl
			}
			if time.Now().After(deadline) {
				t.Fatalf("table offsets %s, want %s", o, want)
			}
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // polling the catalog: the commit is in another goroutine
	}
}

// scanRows counts the table's rows by (partition, offset) and returns the
// values by the same key.
func scanRows(t *testing.T, tbl *table.Table) (map[[2]int64]int, map[[2]int64]string) {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	counts, values := map[[2]int64]int{}, map[[2]int64]string{}
	meta, val := at.Column(0).Data().Chunks(), at.Column(1).Data().Chunks()
	for i, ch := range meta {
		st := ch.(*array.Struct)
		ps, os := st.Field(0).(*array.Int32), st.Field(1).(*array.Int64)
		vs := val[i].(*array.Binary)
		for r := 0; r < st.Len(); r++ {
			k := [2]int64{int64(ps.Value(r)), os.Value(r)}
			counts[k]++
			values[k] = string(vs.Value(r))
		}
	}
	return counts, values
}

func checkExact(t *testing.T, counts map[[2]int64]int, parts int32, n int) {
	t.Helper()
	if len(counts) != int(parts)*n {
		t.Errorf("table holds %d distinct (partition, offset), want %d", len(counts), int(parts)*n)
	}
	for k, c := range counts {
		if c != 1 {
			t.Errorf("(partition %d, offset %d) is in the table %d times", k[0], k[1], c)
		}
		if k[0] < 0 || k[0] >= int64(parts) || k[1] < 0 || k[1] >= int64(n) {
			t.Errorf("unexpected row (partition %d, offset %d)", k[0], k[1])
		}
	}
}

func offsetsAll(parts int32, n int64) Offsets {
	o := Offsets{}
	for p := int32(0); p < parts; p++ {
		o[p] = n
	}
	return o
}

// TestCommitterResumesExactly: a committer translates every record once;
// a new one (a restart) resumes from the snapshot's offsets, so the table
// holds exactly the log.
func TestCommitterResumesExactly(t *testing.T) {
	const topic, parts = "orders", int32(3)
	l := newTestLog(t, topic, parts)
	cfg := testConfig(t.TempDir())
	cat := openTestCatalog(t, cfg)
	l.produce(t, topic, parts, 200, "a")
	stop := startManager(t, cat, cfg, l, topic, parts)
	waitOffsets(t, cat, topic, offsetsAll(parts, 200))
	stop()

	l.produce(t, topic, parts, 100, "b")
	startManager(t, cat, cfg, l, topic, parts)
	tbl := waitOffsets(t, cat, topic, offsetsAll(parts, 300))
	counts, values := scanRows(t, tbl)
	checkExact(t, counts, parts, 300)
	if v := values[[2]int64{2, 250}]; v != "b-2-50" {
		t.Errorf("partition 2 offset 250 has value %q, want b-2-50", v)
	}
}

// TestCommittersRacing: two committers of one topic against the same SQL
// catalog (two handles on one database, as two processes would have)
// never write a row twice nor skip one: a commit made on a stale table
// is refused and its committer restarts from the winner's offsets.
func TestCommittersRacing(t *testing.T) {
	const topic, parts = "race", int32(2)
	l := newTestLog(t, topic, parts)
	cfg := testConfig(t.TempDir())
	cat1, cat2 := openTestCatalog(t, cfg), openTestCatalog(t, cfg)
	startManager(t, cat1, cfg, l, topic, parts)
	startManager(t, cat2, cfg, l, topic, parts)
	for round := 1; round <= 5; round++ {
		l.produce(t, topic, parts, 40, fmt.Sprint(round))
	}
	tbl := waitOffsets(t, cat1, topic, offsetsAll(parts, 200))
	counts, _ := scanRows(t, tbl)
	checkExact(t, counts, parts, 200)
}

func TestOffsetsRoundTrip(t *testing.T) {
	o := Offsets{0: 10, 2: 7, 1: 0}
	if s := o.String(); s != `{"0":10,"1":0,"2":7}` {
		t.Fatalf("String = %s", s)
	}
	back, err := ParseOffsets(o.String())
	if err != nil || back.String() != o.String() {
		t.Fatalf("ParseOffsets = %v, %v", back, err)
	}
	for _, bad := range []string{`{"x":1}`, `{"0":-1}`, `[1]`, ``} {
		if _, err := ParseOffsets(bad); err == nil {
			t.Errorf("ParseOffsets(%q) accepted", bad)
		}
	}
}

// TestPartitionSpecEvolves: an AlterConfigs of iceberg.partition_spec
// (the manager's Update with the new configs) evolves the table's spec;
// rows committed before keep the old spec's files, new ones are written
// with the new spec, and the table still holds exactly the log.
func TestPartitionSpecEvolves(t *testing.T) {
	const topic, parts = "evolve", int32(2)
	l := newTestLog(t, topic, parts)
	cfg := testConfig(t.TempDir())
	cat := openTestCatalog(t, cfg)
	m := NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet()})
	state := func(spec string) []TopicState {
		c := map[string]string{ConfigEnabled: "true"}
		if spec != "" {
			c[ConfigPartitionSpec] = spec
		}
		return []TopicState{{Name: topic, Partitions: parts, Configs: c, Commit: true}}
	}
	m.Update(state(""))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx, l.backend) }()
	t.Cleanup(func() { cancel(); <-done })

	l.produce(t, topic, parts, 50, "a")
	tbl := waitOffsets(t, cat, topic, offsetsAll(parts, 50))
	first := tbl.Spec()
	if first.NumFields() != 1 || first.Field(0).Name != "aerostream_timestamp_hour" {
		t.Fatalf("initial spec %s, want hour(aerostream.timestamp)", first)
	}

	m.Update(state("aerostream.partition, day(aerostream.timestamp)"))
	l.produce(t, topic, parts, 50, "b")
	tbl = waitOffsets(t, cat, topic, offsetsAll(parts, 100))
	spec := tbl.Spec()
	var names []string
	for _, f := range spec.Fields() {
		names = append(names, f.Name+"="+f.Transform.String())
	}
	if got := strings.Join(names, ","); got != "aerostream_partition=identity,aerostream_timestamp_day=day" {
		t.Errorf("evolved spec fields %s, want aerostream_partition=identity,aerostream_timestamp_day=day", got)
	}
	if spec.ID() == first.ID() {
		t.Errorf("spec id %d unchanged", spec.ID())
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	specs := map[int32]int{}
	for _, task := range tasks {
		specs[task.File.SpecID()]++
	}
	if specs[int32(first.ID())] == 0 || specs[int32(spec.ID())] == 0 {
		t.Errorf("data files by spec id %v: want files of both specs %d and %d", specs, first.ID(), spec.ID())
	}
	counts, _ := scanRows(t, tbl)
	checkExact(t, counts, parts, 100)

	// A spec naming no column stops the committer with a clear error in
	// its status, and the table keeps its spec.
	m.Update(state("bucket[4](nosuch)"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := m.Status(topic)
		if len(st) == 1 && strings.Contains(st[0].LastError, `no column "nosuch"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %+v: want a last error naming the missing column", st)
		}
		time.Sleep(20 * time.Millisecond) // polling the committer's status
	}
}
