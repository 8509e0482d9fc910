package fetchcache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// uploader stands in for tierd: it collects sealed segments, and upload
// puts their .log and .index files in the bucket under the DESIGN §4 keys
// and records the cloud pointer.
type uploader struct {
	mu     sync.Mutex
	sealed []catalog.Segment
}

func (u *uploader) Sealed(seg catalog.Segment) {
	u.mu.Lock()
	u.sealed = append(u.sealed, seg)
	u.mu.Unlock()
}

func (u *uploader) DeleteRemote(catalog.Segment) {}

func (u *uploader) upload(t *testing.T, st *logstore.Store, b objstore.Bucket) int {
	t.Helper()
	u.mu.Lock()
	todo := u.sealed
	u.sealed = nil
	u.mu.Unlock()
	ctx := context.Background()
	for _, seg := range todo {
		key := fmt.Sprintf("tiered/%s/%d/%020d-%s.log", seg.Topic, seg.Partition, seg.BaseOffset, seg.SegmentID)
		for k, path := range map[string]string{key: seg.LocalPath, IndexKey(key): strings.TrimSuffix(seg.LocalPath, ".log") + ".index"} {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Put(ctx, k, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			if k == key {
				seg.ObjectSize = int64(len(data))
			}
		}
		seg.ObjectKey, seg.UploadedAt = key, time.Now().UnixNano()
		if err := st.SetRemote(ctx, seg); err != nil {
			t.Fatal(err)
		}
	}
	return len(todo)
}

// TestStoreColdFetch runs the cache behind a real logstore.Store: segments
// are sealed, uploaded with their indexes, evicted from local disk, and a
// consumer reading from offset 0 gets every batch back, byte for byte.
func TestStoreColdFetch(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	bucket := objstore.NewMemBucket()
	cache := newCache(t, bucket, Options{ChunkSize: 16 << 10, MaxBytes: 4 << 20})
	up := &uploader{}
	st, err := logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quietLogger(),
		Tier: up, Cold: cache, RetentionCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, LocalRetentionBytes: new(int64(64 << 10)), RetentionMs: -1, RetentionBytes: -1}
	if err := st.CreatePartition(ctx, "cold", 0, cfg); err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := 0; i < 500; i++ {
		b := logtest.Filler(int64(i), 1+i%4, 50+(i*37)%1500, byte(i))
		sent = append(sent, bytes.Clone(b))
		if _, err := st.Produce(ctx, &logstore.ProduceRequest{Topic: "cold", Partition: 0, Acks: -1, Records: b}); err != nil {
			t.Fatal(err)
		}
	}
	// Seal notices go out after the store's seal chores, off the produce
	// path: without this the count below raced them (seen once in four
	// runs).
	if err := st.Settle(ctx, "cold", 0); err != nil {
		t.Fatal(err)
	}
	if n := up.upload(t, st, bucket); n < 5 {
		t.Fatalf("only %d segments sealed", n)
	}
	if err := st.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	local, err := st.ListOffsets(ctx, "cold", 0, logstore.TimestampEarliestLocal)
	if err != nil || local.Offset == 0 {
		t.Fatalf("nothing evicted: earliest local offset %d, %v", local.Offset, err)
	}

	// Consume from 0, as a client would, through the store's fetch path.
	var off int64
	for i := 0; i < len(sent); {
		res, err := st.Fetch(ctx, &logstore.FetchRequest{MaxBytes: 1 << 20,
			Partitions: []logstore.FetchPartition{{Topic: "cold", Partition: 0, Offset: off, MaxBytes: 20 << 10}}})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Partitions[0]
		if p.Err != nil {
			t.Fatalf("offset %d: %v", off, p.Err)
		}
		b, err := p.Records.ReadAll(nil)
		res.Release()
		if err != nil || len(b) == 0 {
			t.Fatalf("offset %d: %d bytes, %v", off, len(b), err)
		}
		for len(b) >= logstore.BatchHeaderSize {
			h, err := logstore.ParseBatchHeader(b)
			if err != nil {
				t.Fatalf("offset %d: %v", off, err)
			}
			if int(h.Length) > len(b) {
				break // a partial batch at the end of a local read
			}
			// The store patched the base offset (outside the CRC); every
			// other byte is the producer's.
			if h.BaseOffset != off || !bytes.Equal(b[8:h.Length], sent[i][8:]) {
				t.Fatalf("batch %d at offset %d differs from what was produced", i, off)
			}
			off, i, b = h.NextOffset(), i+1, b[h.Length:]
		}
	}
	s := cache.Stats()
	if s.Hits+s.Misses == 0 || s.IndexMisses == 0 {
		t.Fatalf("the cold path was not used: %+v", s)
	}
	t.Logf("read %d batches; earliest local offset %d; cache %+v", len(sent), local.Offset, s)
}
