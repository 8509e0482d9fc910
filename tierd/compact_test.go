package tierd

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/objstore/filesystem"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// replacingProxy is tierProxy with the cleaner's seam.
type replacingProxy struct{ tierProxy }

func (p *replacingProxy) Replaced(seg catalog.Segment) {
	if p.d != nil {
		p.d.Replaced(seg)
	}
}

var _ logstore.ReplacedTier = (*replacingProxy)(nil)

// bucketSegments lists the segment objects under topic/0/ in the bucket.
func bucketSegments(t *testing.T, b objstore.Bucket, topic string) []string {
	t.Helper()
	var keys []string
	for info, err := range b.List(context.Background(), topic+"/0/") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, "manifest.json") {
			keys = append(keys, info.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// TestCompactedTopicInBucket: segments of a compacted topic are uploaded,
// cleaned, the cleaned segments uploaded under new names and the replaced
// objects deleted after the grace period, so the bucket holds exactly
// what the catalog names; once the local copies are evicted, a reader from
// offset 0 gets each live key's latest value from the bucket, and no
// deleted key.
func TestCompactedTopicInBucket(t *testing.T) {
	ctx := context.Background()
	b, err := filesystem.New(filesystem.Config{RootPath: t.TempDir()}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	proxy := &replacingProxy{}
	st, err := logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quiet, Tier: proxy,
		Cold: bucketReader{b}, RetentionCheckInterval: time.Hour,
		Cleaner: logstore.CleanerOptions{Disabled: true, BytesPerSecond: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := New(Options{Bucket: b, Store: st, Catalog: cat, Logger: quiet, ManifestInterval: 5 * time.Millisecond,
		ReplacedGrace: time.Millisecond,
		Retry:         objstore.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	proxy.d = d
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(rctx) }()
	defer func() { cancel(); <-done }()

	zero, ratio := time.Duration(0), 0.0
	cfg := logstore.PartitionConfig{CleanupPolicy: "compact", SegmentBytes: 8 << 10, DeleteRetentionMs: &zero, MinCleanableDirtyRatio: &ratio}
	if err := st.CreatePartition(ctx, "cmp", 0, cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	ts := time.Now().Add(-time.Hour).UnixMilli()
	for v := 0; v < 300; v++ {
		recs := make([]logtest.Record, 10)
		for k := range recs {
			key, val := fmt.Sprintf("k%d", k), []byte(fmt.Sprintf("v%d", v))
			if k < 3 && v == 299 {
				val = nil
				delete(want, key)
			} else {
				want[key] = string(val)
			}
			recs[k] = logtest.Record{Key: []byte(key), Value: val}
		}
		if _, err := st.Produce(ctx, &logstore.ProduceRequest{Topic: "cmp", Partition: 0, Acks: -1, Records: logtest.Batch(ts, recs...)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RollPartition(ctx, "cmp", 0); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	before := bucketSegments(t, b, "cmp")
	if len(before) < 3 {
		t.Fatalf("%d segments in the bucket", len(before))
	}

	if err := st.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Settle(ctx, "cmp", 0); err != nil {
		t.Fatal(err)
	}
	drain(t, d)
	// The replaced objects go once their grace has passed; the bucket
	// then holds what the catalog names and nothing else.
	var named, held []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		recs, err := st.Segments(ctx, "cmp", 0)
		if err != nil {
			t.Fatal(err)
		}
		named = named[:0]
		for _, r := range recs {
			if r.ObjectKey != "" {
				named = append(named, segobj.Objects(r.ObjectKey)...)
			}
		}
		sort.Strings(named)
		held = bucketSegments(t, b, "cmp")
		if strings.Join(named, ",") == strings.Join(held, ",") && d.PendingReplaced() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket holds %v\ncatalog names %v", held, named)
		}
		time.Sleep(10 * time.Millisecond) // polling the bucket, an outside observer
	}
	for _, k := range held {
		for _, old := range before {
			if k == old {
				t.Errorf("replaced object %s still in the bucket", k)
			}
		}
	}

	// Only the bucket's copies left: read from offset 0 through it.
	zeroMs := time.Duration(0)
	cfg.LocalRetentionMs = &zeroMs
	if err := st.SetPartitionConfig(ctx, "cmp", 0, cfg); err != nil {
		t.Fatal(err)
	}
	if err := st.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := st.DescribePartition(ctx, "cmp", 0); info.Segments != 1 {
		t.Fatalf("%d local segments after eviction", info.Segments)
	}
	got, n := map[string]string{}, 0
	for _, batch := range readAllBatches(t, st, "cmp", 0, 0) {
		h, err := logstore.ValidateStoredBatch(batch)
		if err != nil {
			t.Fatal(err)
		}
		dense := append([]byte(nil), batch...)
		for _, r := range logtest.Records(dense[:h.Length]) {
			n++
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = string(r.Value)
			}
		}
	}
	if n != len(want) {
		t.Errorf("read %d records from the bucket, want the %d live keys' latest", n, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s = %q, want %q", k, got[k], v)
		}
	}
}
