package logstore

import (
	"context"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// TestWritebackHold checks which pages paced writeback drops: everything
// behind the writer when nobody reads, nothing above a tailing reader's
// lowest position (in its segment or any later one) while the reader was
// seen within readerHold and is within holdWindows windows of the writer,
// everything behind the writer once it is further behind, and everything
// again once the hold lapsed.
func TestWritebackHold(t *testing.T) {
	const w = 8 << 20
	p := &partition{fresh: readHold{base: -1}, hold: readHold{base: -1}}
	seg := &segment{base: 100}
	now := time.Now().UnixNano()
	var dropped, synced int64
	// step writes a window and checks the drop: up to limit (-1: up to
	// what was synced before); a limit more than holdWindows behind holds
	// nothing.
	step := func(what string, limit int64) {
		t.Helper()
		seg.size += w
		j, ok := p.writebackStep(seg, w, now)
		if !ok {
			t.Fatalf("%s: no step with a full window behind the writer", what)
		}
		end := limit
		if end < 0 || end > synced {
			end = synced
		}
		if floor := synced - holdWindows*w; end < floor {
			end = synced
		}
		var from, n int64
		if end > dropped {
			from, n, dropped = dropped, end-dropped, end
		}
		if j.dropFrom != from || j.dropLen != n {
			t.Fatalf("%s: drop [%d,+%d), want [%d,+%d)", what, j.dropFrom, j.dropLen, from, n)
		}
		synced = seg.size
	}
	if _, ok := p.writebackStep(seg, w, now); ok {
		t.Fatal("a step before a full window")
	}
	step("first window", -1)
	step("no reader", -1)
	p.noteRead(100, w+4096)
	p.noteRead(100, w+1024) // the lowest read counts
	step("reader in this segment", w+1024)
	now += int64(readerHold / 2)
	step("reader not seen this window, still held", w+1024)
	p.noteRead(50, 0)
	for i := 0; i < holdWindows+2; i++ {
		step("reader in an earlier segment", 0)
	}
	if dropped <= w+1024 {
		t.Fatal("the hold was never bounded")
	}
	p.noteRead(100, w+1024)
	step("reader in this segment, out of reach", w+1024)
	if dropped != synced-w {
		t.Fatalf("a reader out of reach kept [%d,%d) cached", dropped, synced-w)
	}
	now += int64(readerHold) + 1
	step("hold lapsed", -1)
}

// TestFetchUncachesDroppedRanges checks that a fetch of bytes writeback
// had dropped from the page cache (a reader far behind the writer) is
// marked to drop them again once sent, and a fetch of the cached tail is
// not.
func TestFetchUncachesDroppedRanges(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.WritebackBytes, o.CacheTailBytes = 64<<10, -1 })
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	var last ProduceResult
	for i := 0; i < 200; i++ {
		last = produce(t, ts.Store, "t", 0, logtest.Filler(int64(i), 16, 1000, byte(i)))
	}
	fetch := func(off int64) Records {
		t.Helper()
		res, err := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "t", Partition: 0, Offset: off, MaxBytes: 64 << 10}}})
		if err != nil || res.Partitions[0].Err != nil {
			t.Fatalf("fetch at %d: %v %v", off, err, res.Partitions[0].Err)
		}
		r := res.Partitions[0].Records
		if r.File == nil || r.Len == 0 {
			t.Fatalf("fetch at %d: no file range", off)
		}
		b, err := r.ReadAll(nil)
		if err != nil || len(b) != r.Len {
			t.Fatalf("fetch at %d: read %d of %d bytes: %v", off, len(b), r.Len, err)
		}
		res.Release()
		return r
	}
	if r := fetch(0); r.uncache != r.Len {
		t.Fatalf("fetch far behind the writer: uncache %d of %d bytes", r.uncache, r.Len)
	}
	if r := fetch(last.BaseOffset); r.uncache != 0 {
		t.Fatalf("fetch of the tail: uncache %d bytes", r.uncache)
	}
}

// TestCacheTailKeepsLastWritten checks that writeback leaves the last
// CacheTailBytes written in the page cache even with no reader near the
// writer: a backlog replayed within that reach is read from memory (not
// marked to drop again once sent), and only what lies beyond it was dropped.
func TestCacheTailKeepsLastWritten(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) {
		o.Shards, o.WritebackBytes, o.CacheTailBytes = 1, 64<<10, 3<<20
	})
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	const batches = 400 // about 6.4 MB of 16 KB batches
	offsets := make([]int64, 0, batches)
	for i := 0; i < batches; i++ {
		offsets = append(offsets, produce(t, ts.Store, "t", 0, logtest.Filler(int64(i), 16, 1000, byte(i))).BaseOffset)
	}
	fetch := func(off int64) Records {
		t.Helper()
		res, err := ts.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: "t", Partition: 0, Offset: off, MaxBytes: 64 << 10}}})
		if err != nil || res.Partitions[0].Err != nil {
			t.Fatalf("fetch at %d: %v %v", off, err, res.Partitions[0].Err)
		}
		r := res.Partitions[0].Records
		if r.File == nil || r.Len == 0 {
			t.Fatalf("fetch at %d: no file range", off)
		}
		res.Release()
		return r
	}
	// About 1.6 MB behind the writer: past a reader hold's reach, within
	// the tail.
	if r := fetch(offsets[batches*3/4]); r.uncache != 0 {
		t.Fatalf("fetch within the cache tail: uncache %d of %d bytes (dropped from the page cache)", r.uncache, r.Len)
	}
	if r := fetch(0); r.uncache != r.Len {
		t.Fatalf("fetch beyond the cache tail: uncache %d of %d bytes", r.uncache, r.Len)
	}
}

// TestCacheTailAdmit checks the tail's queue: ranges leave it oldest first,
// only once the bytes held pass the budget, and a zero budget passes each
// range straight through.
func TestCacheTailAdmit(t *testing.T) {
	c := cacheTail{budget: 100}
	seg := &segment{}
	admit := func(from, n int64) []tailRange {
		j := wbJob{dropFrom: from, dropLen: n}
		out := c.admit(nil, seg, &j)
		if j.dropLen != 0 {
			t.Fatalf("admit left the drop [%d,+%d) in the job", j.dropFrom, j.dropLen)
		}
		return out
	}
	if out := admit(0, 60); len(out) != 0 {
		t.Fatalf("under budget: dropped %v", out)
	}
	if out := admit(60, 30); len(out) != 0 {
		t.Fatalf("at 90 of 100: dropped %v", out)
	}
	out := admit(90, 50) // 140 held: the oldest (60) goes
	if len(out) != 1 || out[0].from != 0 || out[0].size != 60 || c.held != 80 {
		t.Fatalf("over budget: dropped %+v, held %d; want [0,+60), 80", out, c.held)
	}
	for i := int64(0); i < 100; i++ { // compaction keeps the order
		admit(140+i*10, 10)
	}
	if c.held > c.budget || len(c.q)-c.head != 10 || c.q[c.head].from != 140+90*10 {
		t.Fatalf("after many: held %d, queue %d from %d", c.held, len(c.q)-c.head, c.q[c.head].from)
	}
	z := cacheTail{}
	j := wbJob{dropFrom: 5, dropLen: 7}
	if out := z.admit(nil, seg, &j); len(out) != 1 || out[0].from != 5 || out[0].size != 7 || z.held != 0 {
		t.Fatalf("zero budget: dropped %+v, held %d", out, z.held)
	}
}
