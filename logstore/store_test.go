package logstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type testStore struct {
	*Store
	cat  *catalog.Catalog
	dir  string
	opts Options
}

func openTestStore(t testing.TB, dir string, mod func(*Options)) *testStore {
	t.Helper()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quietLogger()}
	if mod != nil {
		mod(&opts)
	}
	s, err := Open(opts)
	if err != nil {
		cat.Close()
		t.Fatal(err)
	}
	return &testStore{Store: s, cat: cat, dir: dir, opts: opts}
}

func (ts *testStore) close(t testing.TB) {
	t.Helper()
	if err := ts.Store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.cat.Close(); err != nil {
		t.Fatal(err)
	}
}

func (ts *testStore) reopen(t testing.TB) *testStore {
	ts.close(t)
	return openTestStore(t, ts.dir, func(o *Options) {
		c := o.Catalog
		*o = ts.opts
		o.Catalog = c
	})
}

func produce(t testing.TB, s *Store, topic string, p int32, batch []byte) ProduceResult {
	t.Helper()
	res, err := s.Produce(context.Background(), &ProduceRequest{Topic: topic, Partition: p, Acks: -1, Records: batch})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return res
}

// readAll fetches from offset to the high watermark and returns the batches.
func readAll(t testing.TB, s *Store, topic string, p int32, from int64) [][]byte {
	t.Helper()
	var out [][]byte
	off := from
	for i := 0; i < 100000; i++ {
		res, err := s.Fetch(context.Background(), &FetchRequest{Partitions: []FetchPartition{{Topic: topic, Partition: p, Offset: off, MaxBytes: 1 << 20}}})
		if err != nil {
			t.Fatal(err)
		}
		pr := res.Partitions[0]
		if pr.Err != nil {
			t.Fatalf("fetch at %d: %v", off, pr.Err)
		}
		b, err := pr.Records.ReadAll(nil)
		res.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			return out
		}
		for len(b) >= BatchHeaderSize {
			h, err := ParseBatchHeader(b)
			if err != nil || int(h.Length) > len(b) {
				break // partial trailing batch
			}
			if h.LastOffset() >= off {
				out = append(out, append([]byte(nil), b[:h.Length]...))
				off = h.NextOffset()
			}
			b = b[h.Length:]
		}
	}
	t.Fatal("fetch did not end")
	return nil
}

func TestProduceFetchRoundTrip(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushNone, FlushInterval, FlushAlways} {
		t.Run(string(policy), func(t *testing.T) {
			ts := openTestStore(t, t.TempDir(), func(o *Options) { o.Flush = policy; o.FlushInterval = 5 * time.Millisecond })
			defer func() { ts.close(t) }() // ts is reopened below
			ctx := context.Background()
			if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); err != nil {
				t.Fatal(err)
			}
			var sent [][]byte
			for i := 0; i < 50; i++ {
				b := logtest.Filler(int64(1000+i), 1+i%5, 100, byte(i))
				sent = append(sent, append([]byte(nil), b...))
				res := produce(t, ts.Store, "t", 0, b)
				if i == 0 && res.BaseOffset != 0 {
					t.Fatalf("first base offset %d", res.BaseOffset)
				}
			}
			if policy == FlushInterval {
				waitHW(t, ts.Store, "t", 0)
			}
			got := readAll(t, ts.Store, "t", 0, 0)
			checkBatches(t, sent, got)
			// Restart: everything is still there and offsets continue.
			ts = ts.reopen(t)
			got = readAll(t, ts.Store, "t", 0, 0)
			checkBatches(t, sent, got)
			res := produce(t, ts.Store, "t", 0, logtest.Filler(5000, 1, 10, 0))
			if want := nextOffset(got[len(got)-1]); res.BaseOffset != want {
				t.Fatalf("after restart base offset %d, want %d", res.BaseOffset, want)
			}
		})
	}
}

func waitHW(t testing.TB, s *Store, topic string, p int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		info, err := s.DescribePartition(context.Background(), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if info.HighWatermark == info.LogEndOffset {
			return
		}
	}
	t.Fatal("high watermark never reached the log end")
}

func nextOffset(b []byte) int64 {
	h, _ := ParseBatchHeader(b)
	return h.NextOffset()
}

// checkBatches compares sent batches with read ones, ignoring the base
// offset (assigned by the store) and checking that offsets are contiguous.
func checkBatches(t testing.TB, sent, got [][]byte) {
	t.Helper()
	if len(sent) != len(got) {
		t.Fatalf("sent %d batches, read %d", len(sent), len(got))
	}
	next := int64(-1)
	for i := range sent {
		h, err := ValidateBatch(got[i])
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if next >= 0 && h.BaseOffset != next {
			t.Fatalf("batch %d base %d, want %d", i, h.BaseOffset, next)
		}
		next = h.NextOffset()
		if !bytes.Equal(sent[i][12:], got[i][12:]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

func TestBadInput(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{MaxMessageBytes: 4096}); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); !errors.Is(err, ErrPartitionExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	good := logtest.Batch(1, logtest.Record{Value: []byte("v")})
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	badMagic := append([]byte(nil), good...)
	badMagic[16] = 1
	cases := []struct {
		name  string
		topic string
		p     int32
		b     []byte
		want  error
	}{
		{"crc", "t", 0, badCRC, ErrBadCRC},
		{"magic", "t", 0, badMagic, ErrBadMagic},
		{"short", "t", 0, good[:30], ErrCorruptBatch},
		{"truncated", "t", 0, good[:len(good)-1], ErrCorruptBatch},
		{"empty", "t", 0, nil, ErrCorruptBatch},
		{"unknown partition", "t", 7, good, ErrUnknownPartition},
		{"too large", "t", 0, logtest.Filler(1, 1, 5000, 0), ErrMessageTooLarge},
	}
	for _, c := range cases {
		_, err := ts.Produce(ctx, &ProduceRequest{Topic: c.topic, Partition: c.p, Records: append([]byte(nil), c.b...)})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// The partition still works and lost nothing.
	produce(t, ts.Store, "t", 0, append([]byte(nil), good...))
	if got := readAll(t, ts.Store, "t", 0, 0); len(got) != 1 {
		t.Fatalf("read %d batches", len(got))
	}
	res, err := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "t", Partition: 0, Offset: 99}}})
	if err != nil || !errors.Is(res.Partitions[0].Err, ErrOffsetOutOfRange) {
		t.Fatalf("fetch beyond end: %v %v", err, res.Partitions[0].Err)
	}
	if _, err := ts.ListOffsets(ctx, "nope", 0, TimestampLatest); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("list offsets unknown: %v", err)
	}
	if err := ts.CreatePartition(ctx, "../x", 0, PartitionConfig{}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad topic name: %v", err)
	}
}

func TestRollRetentionDeleteRecords(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.RetentionCheckInterval = time.Hour })
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	cfg := PartitionConfig{SegmentBytes: 4096, RetentionBytes: 3 * 4096, RetentionMs: -1}
	if err := ts.CreatePartition(ctx, "r", 0, cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		produce(t, ts.Store, "r", 0, logtest.Filler(int64(i), 4, 200, byte(i)))
	}
	info, _ := ts.DescribePartition(ctx, "r", 0)
	if info.Segments < 10 {
		t.Fatalf("expected rolls, have %d segments", info.Segments)
	}
	// Run retention now, on the owning shard.
	runOnShard(t, ts.Store, "r", 0, func(s *shard, p *partition) {
		if _, err := p.applyRetention(s, time.Now()); err != nil {
			t.Error(err)
		}
	})
	info2, _ := ts.DescribePartition(ctx, "r", 0)
	if info2.Size > 4*4096 || info2.LogStartOffset == 0 {
		t.Fatalf("retention.bytes not applied: %+v", info2)
	}
	// The files and records of the deleted segments go on the chore
	// goroutine, after the deleting marks are synced.
	settle(ts.Store)
	logs, _ := filepath.Glob(filepath.Join(partitionDir(ts.dir, "r", 0), "*.log"))
	recs, _ := ts.cat.Segments("r", 0)
	if len(logs) != info2.Segments || len(recs) != info2.Segments {
		t.Fatalf("%d segments left, but %d log files and %d records", info2.Segments, len(logs), len(recs))
	}
	res, _ := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "r", Partition: 0, Offset: 0}}})
	if !errors.Is(res.Partitions[0].Err, ErrOffsetOutOfRange) {
		t.Fatalf("fetch below log start: %v", res.Partitions[0].Err)
	}
	// DeleteRecords moves the start forward, and survives a restart.
	target := info2.LogStartOffset + 10
	start, err := ts.DeleteRecords(ctx, "r", 0, target)
	if err != nil || start != target {
		t.Fatalf("delete records: %d %v", start, err)
	}
	ts = ts.reopen(t)
	info3, _ := ts.DescribePartition(ctx, "r", 0)
	if info3.LogStartOffset != target || info3.HighWatermark != info2.HighWatermark {
		t.Fatalf("after restart %+v, want start %d hw %d", info3, target, info2.HighWatermark)
	}
	got := readAll(t, ts.Store, "r", 0, target)
	if len(got) == 0 {
		t.Fatal("nothing readable after log start")
	}
	if _, err := ts.DeleteRecords(ctx, "r", 0, info3.HighWatermark+1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past hw: %v", err)
	}
}

// settle waits until every shard's chores handed over so far have run:
// the seal notices of rolls, and the removal of evicted files.
func settle(s *Store) {
	for _, sh := range s.shards {
		r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
		r.hook = func(sh *shard) { sh.drainChores() }
		sh.reqs <- r
		<-r.done
	}
}

// runOnShard runs f on the shard goroutine that owns the partition.
func runOnShard(t testing.TB, s *Store, topic string, id int32, f func(*shard, *partition)) {
	t.Helper()
	sh := s.shardFor(topic, id)
	r := &request{kind: reqTestHook, topic: topic, partition: id, done: make(chan struct{}, 1)}
	r.hook = func(sh *shard) {
		p, err := sh.lookup(topic, id)
		if err != nil {
			t.Error(err)
			return
		}
		f(sh, p)
	}
	sh.reqs <- r
	<-r.done
}

func TestListOffsets(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "l", 0, PartitionConfig{SegmentBytes: 2048}); err != nil {
		t.Fatal(err)
	}
	// Timestamps 1000, 2000, ... with one out-of-order max at batch 5.
	for i := 0; i < 20; i++ {
		tsv := int64(1000 * (i + 1))
		if i == 5 {
			tsv = 999999
		}
		produce(t, ts.Store, "l", 0, logtest.Filler(tsv, 2, 300, 0))
	}
	check := func(ts0 int64, wantOff int64) {
		t.Helper()
		r, err := ts.ListOffsets(ctx, "l", 0, ts0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != wantOff {
			t.Fatalf("ListOffsets(%d) = %+v, want offset %d", ts0, r, wantOff)
		}
	}
	check(TimestampEarliest, 0)
	check(TimestampLatest, 40)
	check(TimestampEarliestLocal, 0)
	check(TimestampLatestTiered, -1)
	check(TimestampMaxTimestamp, 10) // the first record holding the max timestamp, not its batch's last (KIP-734)
	check(3000, 4)
	check(2500, 4)
	check(5500, 10) // batch 5 (999999) is the first with ts >= 5500
	check(1000000, -1)
	check(0, 0)
}

func TestLongPoll(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	for p := int32(0); p < 4; p++ {
		if err := ts.CreatePartition(ctx, "w", p, PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	req := &FetchRequest{MinBytes: 1, MaxWait: 5 * time.Second}
	for p := int32(0); p < 4; p++ {
		req.Partitions = append(req.Partitions, FetchPartition{Topic: "w", Partition: p})
	}
	go func() {
		// Nothing outside the shard shows that the fetch has parked; the
		// delay makes the wake-up the likely path, and the checks below
		// hold on either.
		time.Sleep(100 * time.Millisecond)
		produce(t, ts.Store, "w", 3, logtest.Batch(1, logtest.Record{Value: []byte("wake")}))
	}()
	start := time.Now()
	res, err := ts.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("long poll was not woken by the produce (%v)", el)
	}
	if res.Partitions[3].Records.Size() == 0 {
		t.Fatal("woken fetch returned no data")
	}
	// Timeout path.
	start = time.Now()
	res2, err := ts.Fetch(ctx, &FetchRequest{MinBytes: 1, MaxWait: 200 * time.Millisecond,
		Partitions: []FetchPartition{{Topic: "w", Partition: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	res2.Release()
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("fetch returned after %v, before max wait", el)
	}
}

func TestRecoveryTornTailAndIndexes(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, func(o *Options) { o.IndexIntervalBytes = 256 })
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "c", 0, PartitionConfig{SegmentBytes: 8192}); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := 0; i < 90; i++ {
		b := logtest.Filler(int64(i), 3, 100, byte(i))
		sent = append(sent, append([]byte(nil), b...))
		produce(t, ts.Store, "c", 0, b)
	}
	ts.close(t)
	pdir := partitionDir(dir, "c", 0)
	entries, _ := os.ReadDir(pdir)
	var logs []string
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".log" {
			logs = append(logs, filepath.Join(pdir, e.Name()))
		}
	}
	if len(logs) < 4 {
		t.Fatalf("want several segments, have %d", len(logs))
	}
	// Corrupt the first segment's index, delete the second's, tear the tail
	// of the last (a partial batch of garbage).
	first := logs[0][:len(logs[0])-4]
	if err := os.WriteFile(first+".index", []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	second := logs[1][:len(logs[1])-4]
	os.Remove(second + ".index")
	os.Remove(second + ".timeindex")
	// The third's indexes were sealed but never shrunk (a crash before the
	// chore that shrinks them ran): zero entries past the used ones.
	third := logs[2][:len(logs[2])-4]
	for _, ext := range []string{".index", ".timeindex"} {
		if err := os.Truncate(third+ext, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(logs[len(logs)-1], os.O_WRONLY|os.O_APPEND, 0)
	f.Write(sent[0][:40])
	f.Close()
	ts = openTestStore(t, dir, func(o *Options) { o.IndexIntervalBytes = 256 })
	defer ts.close(t)
	got := readAll(t, ts.Store, "c", 0, 0)
	checkBatches(t, sent, got)
	// Random reads through the rebuilt indexes land on the right batch.
	for off := int64(0); off < int64(3*len(sent)); off += 7 {
		res, err := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "c", Partition: 0, Offset: off, MaxBytes: 1}}})
		if err != nil || res.Partitions[0].Err != nil {
			t.Fatal(err, res.Partitions[0].Err)
		}
		b, _ := res.Partitions[0].Records.ReadAll(nil)
		res.Release()
		h, err := ParseBatchHeader(b)
		if err != nil || off < h.BaseOffset || off > h.LastOffset() {
			t.Fatalf("fetch %d returned batch %d..%d (%v)", off, h.BaseOffset, h.LastOffset(), err)
		}
	}
	if st, err := os.Stat(third + ".index"); err != nil || st.Size() >= 1<<20 {
		t.Fatalf("the unshrunk index was not rebuilt: %v %v", st.Size(), err)
	}
}

func TestDeletePartitionAndOrphans(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	for p := int32(0); p < 3; p++ {
		if err := ts.CreatePartition(ctx, "d", p, PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
		produce(t, ts.Store, "d", p, logtest.Batch(1, logtest.Record{Value: []byte(fmt.Sprint(p))}))
	}
	if err := ts.DeletePartition(ctx, "d", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partitionDir(dir, "d", 1)); !os.IsNotExist(err) {
		t.Fatalf("partition dir still there: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, "logs", "ghost-0"), 0o755)
	ts = ts.reopen(t)
	defer func() { ts.close(t) }() // ts is reopened below
	parts, _ := ts.ListPartitions(ctx)
	if len(parts) != 2 {
		t.Fatalf("partitions after restart: %+v", parts)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "ghost-0")); !os.IsNotExist(err) {
		t.Fatal("orphan directory not removed")
	}
}

// TestCatalogReconcile damages the agreement between catalog and files in
// the ways a crash can, and checks that Open settles each one.
func TestCatalogReconcile(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "k", 0, PartitionConfig{SegmentBytes: 2048}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		produce(t, ts.Store, "k", 0, logtest.Filler(int64(i), 2, 300, byte(i)))
	}
	ts.Store.Close()
	recs, err := ts.cat.Segments("k", 0)
	if err != nil || len(recs) < 5 {
		t.Fatalf("segments: %d %v", len(recs), err)
	}
	// 1: a deletion interrupted after the catalog said "deleting".
	r0 := recs[0]
	r0.State = catalog.StateDeleting
	if err := ts.cat.PutSegment(r0); err != nil {
		t.Fatal(err)
	}
	// 2: a file the catalog lost track of (crash before its record).
	if err := ts.cat.DeleteSegment("k", 0, recs[2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	// 3: a record whose local file vanished and that has no cloud copy.
	os.Remove(recs[1].LocalPath)
	ts.cat.Close()

	ts = openTestStore(t, dir, nil)
	defer ts.close(t)
	after, err := ts.cat.Segments("k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].BaseOffset != recs[2].BaseOffset {
		t.Fatalf("first segment after reconcile is %d, want %d (adopted)", after[0].BaseOffset, recs[2].BaseOffset)
	}
	if _, err := os.Stat(r0.LocalPath); !os.IsNotExist(err) {
		t.Fatal("interrupted deletion was not finished")
	}
	if len(after) != len(recs)-2 {
		t.Fatalf("%d records after reconcile, want %d", len(after), len(recs)-2)
	}
	info, _ := ts.DescribePartition(ctx, "k", 0)
	if info.LogStartOffset != recs[2].BaseOffset {
		t.Fatalf("log start %d, want %d", info.LogStartOffset, recs[2].BaseOffset)
	}
	if got := readAll(t, ts.Store, "k", 0, info.LogStartOffset); len(got) == 0 {
		t.Fatal("nothing readable")
	}
}

// TestListOffsetsPerRecord: inside an uncompressed batch the exact record
// is found, with its own timestamp, as Kafka answers.
func TestListOffsetsPerRecord(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "pr", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, ts.Store, "pr", 0, logtest.Batch(1000,
		logtest.Record{Value: []byte("a")}, logtest.Record{Value: []byte("b"), TimestampDelta: 1}, logtest.Record{Value: []byte("c"), TimestampDelta: 5}))
	for _, c := range []struct{ ts, off, at int64 }{{0, 0, 1000}, {1000, 0, 1000}, {1001, 1, 1001}, {1002, 2, 1005}, {1005, 2, 1005}} {
		r, err := ts.ListOffsets(ctx, "pr", 0, c.ts)
		if err != nil || r.Offset != c.off || r.Timestamp != c.at {
			t.Errorf("ListOffsets(%d) = %+v %v, want offset %d timestamp %d", c.ts, r, err, c.off, c.at)
		}
	}
	if r, _ := ts.ListOffsets(ctx, "pr", 0, 1006); r.Offset != -1 {
		t.Errorf("ListOffsets after the last record = %+v", r)
	}
}

// TestFetchWholeBatches checks a hot fetch's cut: whole batches only, as
// many as fit in the partition's max bytes (the next one would not), or the
// first batch alone when it is larger than that.
func TestFetchWholeBatches(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.IndexIntervalBytes = 2048 })
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	var bases []int64
	for i := 0; i < 80; i++ {
		b := logtest.Filler(int64(1000+i), 1+(i*7)%23, 300, byte(i))
		res := produce(t, ts.Store, "t", 0, b)
		sent = append(sent, append([]byte(nil), b...))
		bases = append(bases, res.BaseOffset)
	}
	for first := 0; first < len(sent); first += 3 {
		for _, max := range []int{100, 2000, 5000, 12000, 40000} {
			res, err := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "t", Partition: 0, Offset: bases[first], MaxBytes: int32(max)}}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := res.Partitions[0].Records.ReadAll(nil)
			res.Release()
			if err != nil {
				t.Fatal(err)
			}
			// What fits: whole batches from first on, at least one.
			want, n := 0, 0
			for i := first; i < len(sent) && (n == 0 || want+len(sent[i]) <= max); i++ {
				want += len(sent[i])
				n++
			}
			if len(got) != want {
				t.Fatalf("offset %d max %d: %d bytes, want %d (%d whole batches)", bases[first], max, len(got), want, n)
			}
			for i := first; i < first+n; i++ {
				b := got[:len(sent[i])]
				got = got[len(b):]
				if string(b[12:]) != string(sent[i][12:]) { // past the base offset the store assigns
					t.Fatalf("offset %d max %d: batch %d differs", bases[first], max, i)
				}
			}
		}
	}
}

// TestWaitAny checks the long poll's wait on a fetch's partitions, in the
// fixed-array select and in the reflect.Select one beyond waitSlots: any
// channel wakes it, and the timeout, the context and the store's close end
// it with false.
func TestWaitAny(t *testing.T) {
	for _, n := range []int{1, 3, waitSlots, waitSlots + 5} {
		for _, fire := range []int{0, n - 1} {
			waits := make([]chan struct{}, n)
			for i := range waits {
				waits[i] = make(chan struct{})
			}
			close(waits[fire])
			if !waitAny(context.Background(), waits, time.Minute, make(chan struct{})) {
				t.Fatalf("%d channels, #%d closed: not woken", n, fire)
			}
		}
		waits := make([]chan struct{}, n)
		for i := range waits {
			waits[i] = make(chan struct{})
		}
		if waitAny(context.Background(), waits, 10*time.Millisecond, make(chan struct{})) {
			t.Fatalf("%d channels: woken with none closed", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if waitAny(ctx, waits, time.Minute, make(chan struct{})) {
			t.Fatalf("%d channels: canceled context reported as a wakeup", n)
		}
		closed := make(chan struct{})
		close(closed)
		if waitAny(context.Background(), waits, time.Minute, closed) {
			t.Fatalf("%d channels: store close reported as a wakeup", n)
		}
	}
}
