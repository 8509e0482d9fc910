package logstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

const (
	cleanKeys     = 10
	cleanVersions = 1000
)

// compactConfig cleans whenever asked, removes tombstones at once and
// rolls every few hundred batches, so the log has many sealed segments.
func compactConfig() PartitionConfig {
	zero, ratio := time.Duration(0), 0.0
	return PartitionConfig{CleanupPolicy: "compact", SegmentBytes: 16 << 10, DeleteRetentionMs: &zero, MinCleanableDirtyRatio: &ratio}
}

func openCleanerStore(t *testing.T, dir string, mod func(*Options)) *testStore {
	return openTestStore(t, dir, func(o *Options) {
		o.Cleaner = CleanerOptions{Disabled: true, BytesPerSecond: -1}
		if mod != nil {
			mod(o)
		}
	})
}

// compressBatch re-encodes an uncompressed batch's records with codec.
var testEncoder encoder

func compressBatch(t *testing.T, b []byte, codec int) []byte {
	t.Helper()
	enc := &testEncoder
	z, err := enc.compress(codec, b[BatchHeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:BatchHeaderSize]...), z...)
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-batchLogOverhead))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crcTable))
	return out
}

// produceVersions writes cleanKeys keys x cleanVersions versions, one
// batch per version, compressed with each codec in turn when codecs is
// set (the race detector makes the codecs slow). Keys 0-2 end
// with a tombstone; key 3 has one in the middle and lives on. It returns
// the live keys' last values.
func produceVersions(t *testing.T, s *Store, topic string, ts int64, codecs bool) map[string]string {
	t.Helper()
	want := map[string]string{}
	var pending []byte // several versions to a produce: the test is about the cleaner
	for v := 0; v < cleanVersions; v++ {
		recs := make([]logtest.Record, cleanKeys)
		for k := range recs {
			key := fmt.Sprintf("k%d", k)
			val := []byte(fmt.Sprintf("v%d-%s", v, key))
			if k < 3 && v == cleanVersions-1 || k == 3 && v == cleanVersions/2 {
				val = nil
			}
			recs[k] = logtest.Record{Key: []byte(key), Value: val}
			if val == nil {
				delete(want, key)
			} else {
				want[key] = string(val)
			}
		}
		b := logtest.Batch(ts, recs...)
		if c := v % 5; c != 0 && codecs {
			b = compressBatch(t, b, c)
		}
		pending = append(pending, b...)
		if v%50 == 49 {
			if res := produce(t, s, topic, 0, pending); res.BaseOffset != int64((v-49)*cleanKeys) {
				t.Fatalf("version %d at offset %d", v-49, res.BaseOffset)
			}
			pending = nil
		}
	}
	return want
}

// readKeys reads the partition from offset 0 and returns each record's
// key, value (absent for a tombstone) and offset, in log order.
type keyRead struct {
	key       string
	tombstone bool
	offset    int64
}

func readKeys(t *testing.T, s *Store, topic string) []keyRead {
	t.Helper()
	var out []keyRead
	for _, b := range readAll(t, s, topic, 0, 0) {
		h, err := ValidateStoredBatch(b)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		recs, _, err := batchRecords(b, &h, nil, nil)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			out = append(out, keyRead{key: string(r.key), tombstone: r.tombstone, offset: h.BaseOffset + r.offDelta})
		}
	}
	return out
}

// recordsUncompressed returns batch b's records, decompressed.
func recordsUncompressed(t *testing.T, b []byte, h *BatchHeader) []byte {
	recs, _, err := batchRecords(b, h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, r := range recs {
		out = append(out, r.raw...)
	}
	return out
}

// latest reads the partition from offset 0 as a consumer of a compacted
// topic would: the value of each key after the last record of it.
func latest(t *testing.T, s *Store, topic string) (map[string]string, int) {
	t.Helper()
	return latestOf(t, readAll(t, s, topic, 0, 0))
}

func latestOf(t *testing.T, batches [][]byte) (map[string]string, int) {
	t.Helper()
	got := map[string]string{}
	n := 0
	for _, b := range batches {
		h, err := ValidateStoredBatch(b)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		dense := append(append([]byte(nil), b[:BatchHeaderSize]...), recordsUncompressed(t, b, &h)...)
		binary.BigEndian.PutUint32(dense[offRecordCount:], uint32(h.RecordCount))
		for _, r := range logtest.Records(dense) {
			n++
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = string(r.Value)
			}
		}
	}
	return got, n
}

func checkLatest(t *testing.T, s *Store, topic string, want map[string]string) {
	t.Helper()
	got, n := latest(t, s, topic)
	if n != len(want) {
		t.Errorf("read %d records from offset 0, want exactly the %d live keys' latest", n, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("deleted key %s is back with %q", k, got[k])
		}
	}
}

func createCompacted(t *testing.T, s *Store, topic string) {
	t.Helper()
	if err := s.CreatePartition(context.Background(), topic, 0, compactConfig()); err != nil {
		t.Fatal(err)
	}
}

// TestCleanerKeepsLatest: 10 keys x 1,000 versions with tombstones, in
// batches of every codec; after cleaning, a reader from offset 0 sees
// exactly the latest value of each live key, at its original offset, and
// no deleted key, before and after a restart; the log is smaller.
func TestCleanerKeepsLatest(t *testing.T) {
	dir := t.TempDir()
	ts := openCleanerStore(t, dir, nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	createCompacted(t, ts.Store, "c")
	want := produceVersions(t, ts.Store, "c", time.Now().Add(-time.Hour).UnixMilli(), true)
	if err := ts.RollPartition(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	before, _ := ts.DescribePartition(ctx, "c", 0)
	if before.Segments < 5 {
		t.Fatalf("only %d segments; the test needs several", before.Segments)
	}
	if err := ts.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	settle(ts.Store)
	checkLatest(t, ts.Store, "c", want)
	after, _ := ts.DescribePartition(ctx, "c", 0)
	if after.Size >= before.Size/10 || after.LogStartOffset != 0 || after.LogEndOffset != before.LogEndOffset {
		t.Errorf("before %+v\nafter %+v", before, after)
	}
	st := ts.CleanerStats()
	if st.Cleanings != 1 || st.RecordsRemoved != cleanKeys*cleanVersions-int64(len(want)) || len(st.Failed) > 0 {
		t.Errorf("stats %+v", st)
	}
	// Offsets are kept: each live key's record is where it was written.
	for _, kr := range readKeys(t, ts.Store, "c") {
		var k int
		fmt.Sscanf(kr.key, "k%d", &k)
		if kr.offset != int64((cleanVersions-1)*cleanKeys+k) {
			t.Errorf("key %s at offset %d", kr.key, kr.offset)
		}
	}
	// No cleaner file is left behind.
	if left, _ := filepath.Glob(filepath.Join(ts.PartitionDir("c", 0), "*.cleaned")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(ts.PartitionDir("c", 0), "*.swap")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	// A restart reads the cleaned segments back, and the catalog agrees.
	ts = ts.reopen(t)
	checkLatest(t, ts.Store, "c", want)
	recs, err := ts.Segments(ctx, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	var catBytes int64
	for _, r := range recs {
		catBytes += r.Bytes
	}
	if info, _ := ts.DescribePartition(ctx, "c", 0); catBytes != info.Size || len(recs) != info.Segments {
		t.Errorf("catalog holds %d records of %d bytes, the log %d segments of %d", len(recs), catBytes, info.Segments, info.Size)
	}
	// More versions, cleaned again on top of the clean part.
	for v := 0; v < 3; v++ {
		produce(t, ts.Store, "c", 0, logtest.Batch(time.Now().Add(-time.Hour).UnixMilli(), logtest.Record{Key: []byte("k9"), Value: []byte(fmt.Sprintf("again%d", v))}))
	}
	want["k9"] = "again2"
	if err := ts.RollPartition(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	if err := ts.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	settle(ts.Store)
	checkLatest(t, ts.Store, "c", want)
	// Empty batches hold offsets only where needed: at the end of a
	// cleaned segment (producer ids are not used here), not pass after
	// pass.
	empty := 0
	for _, b := range readAll(t, ts.Store, "c", 0, 0) {
		if h, _ := ParseBatchHeader(b); h.RecordCount == 0 {
			empty++
		}
	}
	if info, _ := ts.DescribePartition(ctx, "c", 0); empty > info.Segments {
		t.Errorf("%d empty batches in %d segments", empty, info.Segments)
	}
}

// TestCleanerPolicies: a delete-only topic is never cleaned; compact
// alone keeps old segments that retention.ms would delete; the dirty
// ratio and min.compaction.lag.ms hold the cleaner back.
func TestCleanerPolicies(t *testing.T) {
	ts := openCleanerStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	cfgs := map[string]PartitionConfig{}
	del := compactConfig()
	del.CleanupPolicy = "delete"
	cfgs["del"] = del
	comp := compactConfig()
	comp.RetentionMs = time.Hour
	cfgs["comp"] = comp
	ratio := compactConfig()
	r := 0.99
	ratio.MinCleanableDirtyRatio = &r
	cfgs["ratio"] = ratio
	lag := compactConfig()
	lag.MinCompactionLagMs = 72 * time.Hour
	cfgs["lag"] = lag
	for name, cfg := range cfgs {
		if err := ts.CreatePartition(ctx, name, 0, cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			produce(t, ts.Store, name, 0, logtest.Batch(old, logtest.Record{Key: []byte("k"), Value: []byte{byte(i)}}))
			if err := ts.RollPartition(ctx, name, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Half of "ratio" is clean already: below 0.99 dirty.
	if err := os.WriteFile(filepath.Join(ts.PartitionDir("ratio", 0), cleanerCheckpoint), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ts.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ts.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	settle(ts.Store)
	for name, n := range map[string]int{"del": 3, "comp": 1, "ratio": 3, "lag": 3} {
		_, got := latest(t, ts.Store, name)
		if got != n {
			t.Errorf("%s: %d records left, want %d", name, got, n)
		}
	}
}

// TestCleanerCorruptSegment: a segment that fails its CRC stops the
// cleaning of its partition with an error and a metric, and no byte of it
// is rewritten; other partitions are cleaned.
func TestCleanerCorruptSegment(t *testing.T) {
	ts := openCleanerStore(t, t.TempDir(), nil)
	defer ts.close(t)
	ctx := context.Background()
	old := time.Now().Add(-time.Hour).UnixMilli()
	for _, topic := range []string{"bad", "good"} {
		createCompacted(t, ts.Store, topic)
		for i := 0; i < 4; i++ {
			produce(t, ts.Store, topic, 0, logtest.Batch(old, logtest.Record{Key: []byte("k"), Value: []byte(strings.Repeat("x", 100))}))
			if err := ts.RollPartition(ctx, topic, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(ts.Store)
	dir := ts.PartitionDir("bad", 0)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	victim := logs[1]
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-5] ^= 0xff // inside a value: only the CRC notices
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := map[string][]byte{}
	for _, l := range logs {
		snapshot[l], _ = os.ReadFile(l)
	}
	err = ts.CleanNow(ctx)
	if !errors.Is(err, ErrCorruptSegment) || !strings.Contains(err.Error(), "bad/0") {
		t.Fatalf("clean: %v, want ErrCorruptSegment naming bad/0", err)
	}
	settle(ts.Store)
	st := ts.CleanerStats()
	if len(st.Failed) != 1 || st.Failed["bad/0"] == "" {
		t.Errorf("failed partitions %v", st.Failed)
	}
	for l, want := range snapshot {
		if got, _ := os.ReadFile(l); !bytes.Equal(got, want) {
			t.Errorf("%s was rewritten", l)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.cleaned")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, n := latest(t, ts.Store, "good"); n != 1 {
		t.Errorf("good partition has %d records after cleaning, want 1", n)
	}
	// The stopped partition is not tried again.
	if err := ts.CleanNow(ctx); err != nil {
		t.Errorf("second pass: %v", err)
	}
}

// crashAt stops a cleaning at one step, as a crash there would, for the
// recovery tests.
func crashAt(t *testing.T, step string) {
	cleanerCrashAt = step
	t.Cleanup(func() { cleanerCrashAt = "" })
}

// TestCleanerCrashSafety: a crash before the swap leaves the old segments;
// one after the rename of the cleaned log leaves the new ones once the
// next start finishes the swap. Either way a reader sees every key's
// latest value and the catalog matches the files.
func TestCleanerCrashSafety(t *testing.T) {
	for _, step := range []string{"before-swap", "after-rename"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			ts := openCleanerStore(t, dir, nil)
			ctx := context.Background()
			createCompacted(t, ts.Store, "c")
			want := map[string]string{}
			for v := 0; v < 200; v++ {
				k := fmt.Sprintf("k%d", v%7)
				val := fmt.Sprintf("%d%s", v, strings.Repeat("y", 400))
				want[k] = val
				produce(t, ts.Store, "c", 0, logtest.Batch(time.Now().Add(-time.Hour).UnixMilli(), logtest.Record{Key: []byte(k), Value: []byte(val)}))
			}
			if err := ts.RollPartition(ctx, "c", 0); err != nil {
				t.Fatal(err)
			}
			before, _ := ts.DescribePartition(ctx, "c", 0)
			crashAt(t, step)
			if err := ts.CleanNow(ctx); !errors.Is(err, errCrashed) {
				t.Fatalf("clean: %v", err)
			}
			cleanerCrashAt = ""
			ts = ts.reopen(t)
			defer ts.close(t)
			checkLatestValues(t, ts.Store, "c", want)
			info, _ := ts.DescribePartition(ctx, "c", 0)
			switch step {
			case "before-swap":
				if info.Segments != before.Segments || info.Size != before.Size {
					t.Errorf("old set changed: %+v, was %+v", info, before)
				}
			case "after-rename":
				if info.Size >= before.Size {
					t.Errorf("swap not finished: %d bytes, was %d", info.Size, before.Size)
				}
			}
			recs, _ := ts.Segments(ctx, "c", 0)
			if len(recs) != info.Segments {
				t.Errorf("catalog has %d records for %d segments", len(recs), info.Segments)
			}
			for _, pat := range []string{"*.cleaned", "*.swap"} {
				if left, _ := filepath.Glob(filepath.Join(ts.PartitionDir("c", 0), pat)); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
			}
			// And it cleans from there.
			if err := ts.CleanNow(ctx); err != nil {
				t.Fatal(err)
			}
			settle(ts.Store)
			checkLatest(t, ts.Store, "c", want)
		})
	}
}

// checkLatestValues is checkLatest without the count: an uncleaned log
// holds older versions too.
func checkLatestValues(t *testing.T, s *Store, topic string, want map[string]string) {
	t.Helper()
	got, _ := latest(t, s, topic)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s = %.10q, want %.10q", k, got[k], v)
		}
	}
}

// replacingTier is fakeTier that also hears of replaced objects.
type replacingTier struct {
	*fakeTier
	mu       sync.Mutex
	replaced []catalog.Segment
}

func (r *replacingTier) Replaced(old catalog.Segment) {
	r.mu.Lock()
	r.replaced = append(r.replaced, old)
	r.mu.Unlock()
}

// TestCleanerTiered: cleaning segments that are in the cold tier seals
// the cleaned one for upload under a new segment id and hands the tier
// every replaced object, so the bucket holds the compacted log only.
func TestCleanerTiered(t *testing.T) {
	tier := &replacingTier{fakeTier: newFakeTier()}
	ts := openCleanerStore(t, t.TempDir(), func(o *Options) { o.Tier = tier; o.Cold = tier.fakeTier })
	defer ts.close(t)
	ctx := context.Background()
	createCompacted(t, ts.Store, "c")
	want := produceVersions(t, ts.Store, "c", time.Now().Add(-time.Hour).UnixMilli(), false)
	if err := ts.RollPartition(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	uploaded := tier.upload(t, ts.Store)
	if uploaded < 5 {
		t.Fatalf("uploaded %d", uploaded)
	}
	if err := ts.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	settle(ts.Store)
	tier.mu.Lock()
	nReplaced := len(tier.replaced)
	tier.mu.Unlock()
	if nReplaced != uploaded {
		t.Errorf("%d objects replaced, want all %d", nReplaced, uploaded)
	}
	// Groups are made by the size of what they replace, as in Kafka, so
	// this first pass keeps the boundaries; later passes merge.
	if n := tier.upload(t, ts.Store); n != uploaded {
		t.Errorf("%d cleaned segments uploaded, had %d", n, uploaded)
	}
	recs, _ := ts.Segments(ctx, "c", 0)
	for _, r := range recs {
		if r.State != catalog.StateActive && r.ObjectKey == "" {
			t.Errorf("segment %d not uploaded: %+v", r.BaseOffset, r)
		}
	}
	checkLatest(t, ts.Store, "c", want)
}

// TestCleanerNewFollower: a follower that starts from nothing replicates
// a leader's compacted log, gaps and compacted batches included, and ends
// with the same keys.
func TestCleanerNewFollower(t *testing.T) {
	off := func(o *Options) { o.Cleaner = CleanerOptions{Disabled: true, BytesPerSecond: -1} }
	ctx := context.Background()
	a := newReplNode(t, storeA, off)
	if err := a.SetPartitionConfig(ctx, replTopic, 0, compactConfig()); err != nil {
		t.Fatal(err)
	}
	a.lead(t, 1, []int32{storeA}, 1)
	want := map[string]string{}
	for v := 0; v < 300; v++ {
		k := fmt.Sprintf("k%d", v%5)
		val := fmt.Sprintf("v%d%s", v, strings.Repeat("z", 200))
		want[k] = val
		produce(t, a.Store, replTopic, 0, logtest.Batch(time.Now().Add(-time.Hour).UnixMilli(), logtest.Record{Key: []byte(k), Value: []byte(val)}))
	}
	if err := a.RollPartition(ctx, replTopic, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	settle(a.Store)
	b := newReplNode(t, storeB, off)
	// The topic's configs reach every replica, as the controller applies
	// them.
	if err := b.SetPartitionConfig(ctx, replTopic, 0, compactConfig()); err != nil {
		t.Fatal(err)
	}
	b.follow(t, storeA, 1)
	for i := 0; b.info(t).LogEndOffset < a.info(t).LogEndOffset; i++ {
		if i > 1000 {
			t.Fatalf("follower stuck at %d of %d", b.info(t).LogEndOffset, a.info(t).LogEndOffset)
		}
		mustReplicate(t, a, b, 1)
	}
	got, n := latestOf(t, readAllRaw(t, b, 0))
	if n != len(want) {
		t.Errorf("follower holds %d records, want %d", n, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("follower: key %s = %.8q, want %.8q", k, got[k], v)
		}
	}
}
