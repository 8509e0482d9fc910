package logstore

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// memTier is a fakeTier that keeps some objects "in memory": ReadCached
// serves those and misses the others, and every call is recorded.
type memTier struct {
	*fakeTier
	inMemory map[string]bool // by topic name

	mu             sync.Mutex
	cached, remote []string // topics, one entry per call
}

var _ ColdCache = (*memTier)(nil)

func (m *memTier) ReadCached(seg catalog.Segment, offset int64, maxBytes int) ([][]byte, bool, error) {
	m.mu.Lock()
	m.cached = append(m.cached, seg.Topic)
	m.mu.Unlock()
	if !m.inMemory[seg.Topic] {
		return nil, false, nil
	}
	parts, err := m.fakeTier.ReadRemote(context.Background(), seg, offset, maxBytes)
	return parts, true, err
}

func (m *memTier) ReadRemote(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int) ([][]byte, error) {
	m.mu.Lock()
	m.remote = append(m.remote, seg.Topic)
	m.mu.Unlock()
	return m.fakeTier.ReadRemote(ctx, seg, offset, maxBytes)
}

// TestFetchReadsCachedColdFirst: a fetch over several cold partitions
// reads those the tier holds in memory with ReadCached, and goes to
// ReadRemote only for the others; every partition gets its bytes.
func TestFetchReadsCachedColdFirst(t *testing.T) {
	tier := &memTier{fakeTier: newFakeTier(), inMemory: map[string]bool{"warm": true, "warm2": true}}
	mod := func(o *Options) { o.Tier = tier; o.Cold = tier; o.RetentionCheckInterval = time.Hour }
	ts := openTestStore(t, t.TempDir(), mod)
	defer ts.close(t)
	ctx := context.Background()
	cfg := PartitionConfig{SegmentBytes: 4096, LocalRetentionBytes: new(int64(0)), RetentionMs: -1, RetentionBytes: -1}
	topics := []string{"warm", "cold", "warm2"}
	first := map[string][]byte{}
	for _, topic := range topics {
		if err := ts.CreatePartition(ctx, topic, 0, cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			b := logtest.Filler(int64(i), 2, 400, byte(i))
			if i == 0 {
				first[topic] = append([]byte(nil), b...)
			}
			produce(t, ts.Store, topic, 0, b)
		}
	}
	if n := tier.upload(t, ts.Store); n < 3 {
		t.Fatalf("only %d segments sealed", n)
	}
	for _, topic := range topics {
		runOnShard(t, ts.Store, topic, 0, func(s *shard, p *partition) { p.applyRetention(s, time.Now()) })
	}

	req := &FetchRequest{}
	for _, topic := range topics {
		req.Partitions = append(req.Partitions, FetchPartition{Topic: topic, Partition: 0, Offset: 0, MaxBytes: 1 << 20})
	}
	res, err := ts.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	for i, topic := range topics {
		p := res.Partitions[i]
		if p.Err != nil {
			t.Fatalf("%s: %v", topic, p.Err)
		}
		got, err := p.Records.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		// Offset 0 is the first batch, from the cold tier: the bytes
		// after the base offset, which the store patched, are the same.
		if want := first[topic]; len(got) < len(want) || !bytes.Equal(got[12:len(want)], want[12:]) {
			t.Fatalf("%s: got %d bytes, not the first batch produced", topic, len(got))
		}
	}
	tier.mu.Lock()
	defer tier.mu.Unlock()
	slices.Sort(tier.cached)
	if want := []string{"cold", "warm", "warm2"}; !slices.Equal(tier.cached, want) {
		t.Errorf("ReadCached for %v, want %v", tier.cached, want)
	}
	if want := []string{"cold"}; !slices.Equal(tier.remote, want) {
		t.Errorf("ReadRemote for %v, want %v (only the partition not in memory)", tier.remote, want)
	}
}
