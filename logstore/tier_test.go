package logstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// fakeTier is an in-memory stand-in for tierd and fetchcache: it "uploads"
// by copying the log file, serves cold reads from the copy, and records
// deletions. Uploads happen when the test calls upload(), so the test
// controls the order of events.
type fakeTier struct {
	mu      sync.Mutex
	sealed  []catalog.Segment
	deleted []catalog.Segment
	objects map[string][]byte
}

func newFakeTier() *fakeTier { return &fakeTier{objects: map[string][]byte{}} }

func (f *fakeTier) Sealed(seg catalog.Segment) {
	f.mu.Lock()
	f.sealed = append(f.sealed, seg)
	f.mu.Unlock()
}

func (f *fakeTier) DeleteRemote(seg catalog.Segment) {
	f.mu.Lock()
	f.deleted = append(f.deleted, seg)
	delete(f.objects, seg.ObjectKey)
	f.mu.Unlock()
}

func (f *fakeTier) upload(t *testing.T, s *Store) int {
	settle(s)
	f.mu.Lock()
	todo := f.sealed
	f.sealed = nil
	f.mu.Unlock()
	for _, seg := range todo {
		b, err := os.ReadFile(seg.LocalPath)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s/%d/%020d-%s.log", seg.Topic, seg.Partition, seg.BaseOffset, seg.SegmentID)
		f.mu.Lock()
		f.objects[key] = b
		f.mu.Unlock()
		seg.ObjectKey, seg.ObjectSize, seg.UploadedAt = key, int64(len(b)), time.Now().UnixNano()
		if err := s.SetRemote(context.Background(), seg); err != nil {
			t.Fatal(err)
		}
	}
	return len(todo)
}

// ReadRemote hands the range over in two parts, split inside the first
// batch, as fetchcache does with a batch across two chunks: a fetch through
// the store must send them back to back.
func (f *fakeTier) ReadRemote(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int) ([][]byte, error) {
	f.mu.Lock()
	b := f.objects[seg.ObjectKey]
	f.mu.Unlock()
	if b == nil {
		return nil, fmt.Errorf("no object %s", seg.ObjectKey)
	}
	pos := 0
	for pos < len(b) {
		h, err := ParseBatchHeader(b[pos:])
		if err != nil {
			return nil, err
		}
		if h.LastOffset() >= offset {
			end := pos + maxBytes
			if end < pos+int(h.Length) {
				end = pos + int(h.Length)
			}
			if end > len(b) {
				end = len(b)
			}
			mid := pos + int(h.Length)/2
			return [][]byte{b[pos:mid:mid], b[mid:end:end]}, nil
		}
		pos += int(h.Length)
	}
	return nil, nil
}

func TestTierSeam(t *testing.T) {
	dir := t.TempDir()
	tier := newFakeTier()
	mod := func(o *Options) { o.Tier = tier; o.Cold = tier; o.RetentionCheckInterval = time.Hour }
	ts := openTestStore(t, dir, mod)
	ctx := context.Background()
	cfg := PartitionConfig{SegmentBytes: 4096, LocalRetentionBytes: new(int64(8192)), RetentionMs: -1, RetentionBytes: -1}
	if err := ts.CreatePartition(ctx, "tier", 0, cfg); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := 0; i < 60; i++ {
		b := logtest.Filler(int64(i), 2, 400, byte(i))
		sent = append(sent, append([]byte(nil), b...))
		produce(t, ts.Store, "tier", 0, b)
	}
	// Nothing is evicted before it is uploaded.
	runOnShard(t, ts.Store, "tier", 0, func(s *shard, p *partition) { p.applyRetention(s, time.Now()) })
	if got := readAll(t, ts.Store, "tier", 0, 0); len(got) != len(sent) {
		t.Fatalf("read %d batches before upload", len(got))
	}
	if n := tier.upload(t, ts.Store); n < 10 {
		t.Fatalf("only %d segments sealed", n)
	}
	runOnShard(t, ts.Store, "tier", 0, func(s *shard, p *partition) { p.applyRetention(s, time.Now()) })
	info, _ := ts.DescribePartition(ctx, "tier", 0)
	if info.Size > 8192+4096 {
		t.Fatalf("local size %d after eviction", info.Size)
	}
	if info.LogStartOffset != 0 {
		t.Fatalf("eviction moved the log start to %d", info.LogStartOffset)
	}
	local, _ := ts.ListOffsets(ctx, "tier", 0, TimestampEarliestLocal)
	tiered, _ := ts.ListOffsets(ctx, "tier", 0, TimestampLatestTiered)
	if local.Offset == 0 || tiered.Offset != local.Offset-1 {
		t.Fatalf("earliest local %d, latest tiered %d", local.Offset, tiered.Offset)
	}
	// Offset 0 reads the same bytes through the cold tier.
	checkBatches(t, sent, readAll(t, ts.Store, "tier", 0, 0))

	// Restart: the catalog knows what is remote.
	ts = ts.reopen(t)
	checkBatches(t, sent, readAll(t, ts.Store, "tier", 0, 0))

	// Rehydrate the newest remote segment.
	recs, _ := ts.Segments(ctx, "tier", 0)
	var newestRemote catalog.Segment
	for _, r := range recs {
		if r.State == catalog.StateRemote {
			newestRemote = r
		}
	}
	tmp := filepath.Join(t.TempDir(), "rehydrate.log")
	os.WriteFile(tmp, tier.objects[newestRemote.ObjectKey], 0o644)
	if err := ts.AdoptSegment(ctx, "tier", 0, newestRemote.BaseOffset, tmp); err != nil {
		t.Fatal(err)
	}
	local2, _ := ts.ListOffsets(ctx, "tier", 0, TimestampEarliestLocal)
	if local2.Offset != newestRemote.BaseOffset {
		t.Fatalf("after rehydrate earliest local %d, want %d", local2.Offset, newestRemote.BaseOffset)
	}
	checkBatches(t, sent, readAll(t, ts.Store, "tier", 0, 0))

	// Remote retention: DeleteRecords past the first remote segments asks
	// the tier to delete them; the records go when it reports back.
	start, err := ts.DeleteRecords(ctx, "tier", 0, recs[2].EndOffset)
	if err != nil {
		t.Fatal(err)
	}
	tier.mu.Lock()
	deleted := append([]catalog.Segment(nil), tier.deleted...)
	tier.mu.Unlock()
	if len(deleted) != 3 {
		t.Fatalf("%d remote deletions, want 3 (log start %d)", len(deleted), start)
	}
	// Crash before RemoteDeleted: the deletions are replayed at restart.
	ts = ts.reopen(t)
	tier.mu.Lock()
	replayed := len(tier.deleted) - len(deleted)
	tier.mu.Unlock()
	if replayed != 3 {
		t.Fatalf("%d deletions replayed after restart, want 3", replayed)
	}
	for _, d := range deleted {
		if err := ts.RemoteDeleted(ctx, d.Topic, d.Partition, d.BaseOffset); err != nil {
			t.Fatal(err)
		}
	}
	recs2, _ := ts.Segments(ctx, "tier", 0)
	if len(recs2) != len(recs)-3 {
		t.Fatalf("%d records after remote deletion, want %d", len(recs2), len(recs)-3)
	}
	got := readAll(t, ts.Store, "tier", 0, start)
	checkBatches(t, sent[len(sent)-len(got):], got)
	ts.close(t)

	// Restore on an empty node from the remote records alone.
	var remote []catalog.Segment
	for _, r := range recs2 {
		if r.ObjectKey != "" {
			remote = append(remote, r)
		}
	}
	fresh := openTestStore(t, t.TempDir(), mod)
	defer fresh.close(t)
	if err := fresh.RestorePartition(ctx, "tier", 0, cfg, start, remote); err != nil {
		t.Fatal(err)
	}
	restored := readAll(t, fresh.Store, "tier", 0, start)
	last := remote[len(remote)-1].EndOffset
	n := 0
	for _, b := range restored {
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset < last {
			n++
		}
	}
	if n == 0 || !bytes.Equal(restored[0][12:], got[0][12:]) {
		t.Fatalf("restore returned %d batches", n)
	}
	res := produce(t, fresh.Store, "tier", 0, logtest.Batch(1, logtest.Record{Value: []byte("after restore")}))
	if res.BaseOffset != last {
		t.Fatalf("first offset after restore %d, want %d", res.BaseOffset, last)
	}
}
