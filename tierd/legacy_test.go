package tierd

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// TestLegacyLayout: a bucket written by a version that uploaded a segment
// as three objects (.log, .index, .timeindex) stays readable. A node
// restores from its manifests, and from its objects alone, serves every
// batch, verifies it, finds no orphans, rehydrates it, and deletes all
// three objects of a segment.
func TestLegacyLayout(t *testing.T) {
	b := objstore.NewMemBucket()
	ctx := context.Background()
	n := startNode(t, t.TempDir(), b)
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}
	const topic = "old"
	if err := n.store.CreatePartition(ctx, topic, 0, cfg); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := range 100 {
		batch := logtest.Filler(int64(i), 4, 1000, byte(i))
		sent = append(sent, append([]byte(nil), batch...))
		if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: topic, Partition: 0, Records: batch}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, n.tier)
	recs, err := n.store.Segments(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.stop()

	// Rewrite the bucket as the earlier version left it.
	var legacy []catalog.Segment
	for _, r := range recs {
		if r.ObjectKey == "" {
			continue
		}
		obj, err := readAll(ctx, b, r.ObjectKey)
		if err != nil {
			t.Fatal(err)
		}
		idx, tidx, err := segobj.SplitTail(obj[r.Bytes:], r.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		log, bundle := obj[:r.Bytes], r.ObjectKey
		r.ObjectKey = segmentKey(topic, 0, r.BaseOffset, r.SegmentID, ".log")
		r.ObjectSize, r.Checksum, r.ETag = r.Bytes, objstore.FormatCRC32C(crc32.Checksum(log, castagnoli)), ""
		for key, body := range map[string][]byte{r.ObjectKey: log, segobj.LegacyIndexKey(r.ObjectKey): idx,
			segmentKey(topic, 0, r.BaseOffset, r.SegmentID, ".timeindex"): tidx} {
			if _, err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Delete(ctx, bundle); err != nil {
			t.Fatal(err)
		}
		legacy = append(legacy, r)
	}
	if len(legacy) < 3 {
		t.Fatalf("%d segments uploaded, the test needs 3", len(legacy))
	}
	last := legacy[len(legacy)-1]
	// The manifest lists all but the last, which restore must find by
	// listing.
	m, err := jsonIndent(buildManifest(topic, 0, 0, legacy[:len(legacy)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, manifestKey(topic, 0), bytes.NewReader(m), int64(len(m))); err != nil {
		t.Fatal(err)
	}

	ms, err := ReadManifests(ctx, b, topic)
	if err != nil || len(ms) != 1 {
		t.Fatalf("manifests: %d %v", len(ms), err)
	}
	if ms[0].Unlisted != 1 {
		t.Errorf("%d unlisted segments, want 1", ms[0].Unlisted)
	}
	got := ms[0].Records()
	if len(got) != len(legacy) {
		t.Fatalf("%d segments restored, want %d", len(got), len(legacy))
	}
	for i, w := range legacy {
		g := got[i]
		if g.ObjectKey != w.ObjectKey || g.ObjectSize != w.ObjectSize || g.Bytes != w.Bytes || g.Checksum != w.Checksum || g.EndOffset != w.EndOffset {
			t.Errorf("segment %d:\n got %+v\nwant %+v", i, g, w)
		}
	}

	fresh := startNode(t, t.TempDir(), b)
	defer fresh.stop()
	if err := fresh.store.RestorePartition(ctx, topic, 0, cfg, ms[0].LogStartOffset, got); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		read := readAllBatches(t, fresh.store, topic, 0, 0)
		if len(read) < 10 {
			t.Fatalf("%s: read %d batches", when, len(read))
		}
		for i, g := range read {
			h, _ := logstore.ParseBatchHeader(g)
			if h.BaseOffset >= last.EndOffset {
				break
			}
			if !bytes.Equal(g[12:], sent[i][12:]) {
				t.Fatalf("%s: batch %d differs", when, i)
			}
		}
	}
	check("restored")
	res, err := fresh.tier.Verify(ctx, "", nil)
	if err != nil || len(res) != len(legacy) {
		t.Fatalf("verify: %d results, %v", len(res), err)
	}
	for _, r := range res {
		if !r.OK {
			t.Errorf("verify: %+v", r)
		}
	}
	if orphans, err := fresh.tier.GC(ctx, true, 0); err != nil || len(orphans) != 0 {
		t.Fatalf("gc found %v %v", orphans, err)
	}
	if n, err := fresh.tier.Rehydrate(ctx, fresh.store, topic, 0, last.BaseOffset, nil); err != nil || n != 1 {
		t.Fatalf("rehydrate: %d segments, %v", n, err)
	}
	check("rehydrated")
	// A legacy segment's deletion removes its three objects.
	if err := fresh.tier.deleteObjects(ctx, legacy[0].ObjectKey); err != nil {
		t.Fatal(err)
	}
	for _, key := range segobj.Objects(legacy[0].ObjectKey) {
		if _, err := b.Head(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("%s after deletion: %v", key, err)
		}
	}
}

// TestRehydrateBundle: a bundle comes back to local disk as its log alone,
// checked against the catalog and its trailer, and the partition reads the
// same.
func TestRehydrateBundle(t *testing.T) {
	b := objstore.NewMemBucket()
	ctx := context.Background()
	n := startNode(t, t.TempDir(), b)
	defer n.stop()
	cfg := logstore.PartitionConfig{SegmentBytes: 32 << 10, LocalRetentionBytes: new(int64(1)), RetentionMs: -1, RetentionBytes: -1}
	if err := n.store.CreatePartition(ctx, "r", 0, cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "r", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i))}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, n.tier)
	if err := n.store.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	before := readAllBatches(t, n.store, "r", 0, 0)
	got, err := n.tier.Rehydrate(ctx, n.store, "r", 0, 0, nil)
	if err != nil || got < 2 {
		t.Fatalf("rehydrate: %d segments, %v", got, err)
	}
	recs, _ := n.store.Segments(ctx, "r", 0)
	for _, r := range recs {
		if r.State == catalog.StateRemote {
			t.Errorf("segment %d still remote only", r.BaseOffset)
		}
	}
	after := readAllBatches(t, n.store, "r", 0, 0)
	if len(after) != len(before) {
		t.Fatalf("%d batches after rehydrate, %d before", len(after), len(before))
	}
	for i := range after {
		if !bytes.Equal(after[i], before[i]) {
			t.Fatalf("batch %d differs after rehydrate", i)
		}
	}
}
