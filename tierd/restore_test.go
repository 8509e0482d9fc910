package tierd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// TestRestoreTakesSegmentsBeyondManifest: a node lost between uploads and
// the manifest rewrite that follows them leaves segments no manifest lists.
// ReadManifests must return them with what the catalog knew of them, note
// the offsets no segment holds, keep the topic's partition count, and
// refuse a segment it cannot read; restore then serves all of it.
func TestRestoreTakesSegmentsBeyondManifest(t *testing.T) {
	b := objstore.NewMemBucket()
	ctx := context.Background()
	n := startNode(t, t.TempDir(), b)
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}
	const topic = "lost"
	sent := map[int32][][]byte{}
	for _, p := range []int32{0, 2} { // partition 1 never gets a byte, so it has no object
		if err := n.store.CreatePartition(ctx, topic, p, cfg); err != nil {
			t.Fatal(err)
		}
		for i := range 120 {
			batch := logtest.Filler(int64(1000+i), 4, 1000, byte(i))
			sent[p] = append(sent[p], append([]byte(nil), batch...))
			if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: topic, Partition: p, Records: batch}); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain(t, n.tier)
	uploaded := map[int32][]catalog.Segment{}
	for _, p := range []int32{0, 2} {
		recs, err := n.store.Segments(ctx, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ObjectKey != "" {
				uploaded[p] = append(uploaded[p], r)
			}
		}
		if len(uploaded[p]) < 4 {
			t.Fatalf("partition %d: %d segments uploaded, the test needs 4", p, len(uploaded[p]))
		}
	}
	n.stop()

	// The loss: partition 0's manifest is the one written before its last
	// three uploads, and of those the first never finished (its object is
	// missing); partition 2 lost the node before its first manifest.
	p0 := uploaded[0]
	keep := len(p0) - 3
	stale, err := jsonIndent(buildManifest(topic, 0, 0, p0[:keep]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, manifestKey(topic, 0), bytes.NewReader(stale), int64(len(stale))); err != nil {
		t.Fatal(err)
	}
	missing := p0[keep]
	if err := b.Delete(ctx, missing.ObjectKey); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, manifestKey(topic, 2)); err != nil {
		t.Fatal(err)
	}

	// A segment that cannot be read is refused by name, not skipped: a
	// legacy one (three objects) and a bundle.
	junk := []byte("not a record batch, not at all, not at all, not at all")
	for _, bad := range []struct {
		key  string
		want error
	}{{segmentKey(topic, 2, 1<<40, "feedface", ".log"), ErrBadSegment}, {segmentKey(topic, 2, 1<<40, "feedface", ".seg"), segobj.ErrBadObject}} {
		for _, key := range segobj.Objects(bad.key) {
			if _, err := b.Put(ctx, key, bytes.NewReader(junk), int64(len(junk))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ReadManifests(ctx, b, topic); !errors.Is(err, bad.want) || !strings.Contains(err.Error(), bad.key) {
			t.Fatalf("a corrupt unlisted segment: %v", err)
		}
		for _, key := range segobj.Objects(bad.key) {
			b.Delete(ctx, key)
		}
	}

	ms, err := ReadManifests(ctx, b, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || len(ms[1].Segments) != 0 || ms[1].Partition != 1 {
		t.Fatalf("want partitions 0..2 with 1 empty, got %d manifests", len(ms))
	}
	want := map[int32][]catalog.Segment{0: slices.Concat(p0[:keep], p0[keep+1:]), 2: uploaded[2]}
	wantUnlisted := map[int32]int{0: 2, 2: len(uploaded[2])}
	for _, p := range []int32{0, 2} {
		m := ms[p]
		if m.Unlisted != wantUnlisted[p] {
			t.Errorf("partition %d: %d unlisted segments taken, want %d", p, m.Unlisted, wantUnlisted[p])
		}
		got := m.Records()
		if len(got) != len(want[p]) {
			t.Fatalf("partition %d: %d segments, want %d", p, len(got), len(want[p]))
		}
		for i, w := range want[p] {
			g := got[i]
			if g.BaseOffset != w.BaseOffset || g.EndOffset != w.EndOffset || g.Bytes != w.Bytes ||
				g.MinTimestamp != w.MinTimestamp || g.MaxTimestamp != w.MaxTimestamp || g.SegmentID != w.SegmentID ||
				g.ObjectKey != w.ObjectKey || g.ObjectSize != w.ObjectSize || g.Checksum != w.Checksum {
				t.Errorf("partition %d segment %d:\n got %+v\nwant %+v", p, i, g, w)
			}
		}
	}
	if g := ms[0].Gaps; len(g) != 1 || g[0] != (Gap{From: missing.BaseOffset, To: missing.EndOffset}) {
		t.Errorf("partition 0 gaps %v, want [%d,%d)", g, missing.BaseOffset, missing.EndOffset)
	}
	if len(ms[2].Gaps) != 0 || ms[2].LogStartOffset != 0 {
		t.Errorf("partition 2: gaps %v, log start %d", ms[2].Gaps, ms[2].LogStartOffset)
	}

	// Restored, the node serves every batch the bucket holds, and gc finds
	// nothing to delete: the unfinished upload left no object.
	fresh := startNode(t, t.TempDir(), b)
	defer fresh.stop()
	for _, m := range ms {
		if err := fresh.store.RestorePartition(ctx, m.Topic, m.Partition, cfg, m.LogStartOffset, m.Records()); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []int32{0, 2} {
		// Each batch sent holds 4 records, so batch i starts at offset 4i.
		// The active segment was never sealed, so never uploaded.
		var expect [][]byte
		end := want[p][len(want[p])-1].EndOffset
		for i, batch := range sent[p] {
			off := int64(4 * i)
			if off < end && (p != 0 || off < missing.BaseOffset || off >= missing.EndOffset) {
				expect = append(expect, batch)
			}
		}
		got := readAllBatches(t, fresh.store, topic, p, 0)
		if len(got) != len(expect) {
			t.Fatalf("partition %d: restored %d batches, want %d", p, len(got), len(expect))
		}
		for i := range got {
			if !bytes.Equal(got[i][12:], expect[i][12:]) {
				h, _ := logstore.ParseBatchHeader(got[i])
				t.Fatalf("partition %d: restored batch at offset %d differs from the one sent", p, h.BaseOffset)
			}
		}
	}
	orphans, err := fresh.tier.GC(ctx, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range orphans {
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	if len(keys) != 0 {
		t.Fatalf("gc after restore would delete %v", keys)
	}
}

// FuzzScanSegment: restore reads segment objects no manifest vouches for,
// so any bytes must get an error or a scan that accounts for all of them.
func FuzzScanSegment(f *testing.F) {
	seg := fuzzLog()
	f.Add(seg)
	f.Add(seg[:len(seg)-7])
	f.Add([]byte("not a batch"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := scanBody(t, ".log", body)
		if err != nil {
			return
		}
		if want := objstore.FormatCRC32C(crc32.Checksum(body, castagnoli)); s.Checksum != want || s.Bytes != int64(len(body)) {
			t.Fatalf("scan says %s over %d bytes; the object is %s over %d", s.Checksum, s.Bytes, want, len(body))
		}
		if s.EndOffset < s.BaseOffset || len(body) > 0 && s.EndOffset == s.BaseOffset {
			t.Fatalf("scan of %d bytes ends at offset %d", len(body), s.EndOffset)
		}
	})
}

// FuzzScanBundle is FuzzScanSegment for bundled objects: whatever the
// bytes, restore gets an error or a scan whose log, indexes and trailer
// account for the whole object.
func FuzzScanBundle(f *testing.F) {
	log := fuzzLog()
	idx, tidx := []byte{0, 0, 0, 2, 0, 0, 0, 90}, []byte("twelve bytes")
	obj := segobj.NewTrailer(int64(len(log)), idx, tidx).Append(slices.Concat(log, idx, tidx))
	f.Add(obj)
	f.Add(obj[1:])
	f.Add(segobj.NewTrailer(int64(len(log)-3), idx, tidx).Append(slices.Concat(log[:len(log)-3], idx, tidx)))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := scanBody(t, segobj.Ext, body)
		if err != nil {
			return
		}
		tr, err := segobj.ParseTrailer(body)
		if err != nil || tr.LogBytes != s.Bytes || tr.ObjectSize() != int64(len(body)) || s.ObjectSize != int64(len(body)) {
			t.Fatalf("scan took a %d-byte log from a %d-byte object with trailer %+v (%v)", s.Bytes, len(body), tr, err)
		}
		if want := objstore.FormatCRC32C(crc32.Checksum(body, castagnoli)); s.Checksum != want {
			t.Fatalf("scan says %s; the object is %s", s.Checksum, want)
		}
		if s.EndOffset < s.BaseOffset || s.Bytes > 0 && s.EndOffset == s.BaseOffset {
			t.Fatalf("scan of a %d-byte log ends at offset %d", s.Bytes, s.EndOffset)
		}
	})
}

// fuzzLog is a small valid log, the scan fuzzers' seed: three batches of
// two records, offsets 0 to 5.
func fuzzLog() []byte {
	var log []byte
	for i := range 3 {
		batch := logtest.Filler(int64(i), 2, 50, byte(i))
		binary.BigEndian.PutUint64(batch, uint64(2*i)) // outside the CRC
		log = append(log, batch...)
	}
	return log
}

// scanBody puts body in a fresh bucket as segment object of extension ext
// and scans it as restore does.
func scanBody(t *testing.T, ext string, body []byte) (ManifestSegment, error) {
	ctx := context.Background()
	b := objstore.NewMemBucket()
	key := segmentKey("t", 0, 0, "ab", ext)
	info, err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := parseKey(key)
	return scanSegment(ctx, b, objstore.ObjectInfo{Key: key, Size: info.Size}, k)
}
