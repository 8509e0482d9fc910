package logstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/topicconfig"
)

// TestRetentionFloor: while Options.RetentionFloor guards a partition,
// retention keeps every segment that ends above the floor (records an
// Iceberg table does not hold yet); once the floor moves, they go.
func TestRetentionFloor(t *testing.T) {
	var floor atomic.Int64
	ts := openTestStore(t, t.TempDir(), func(o *Options) {
		o.RetentionCheckInterval = time.Hour
		o.RetentionFloor = func(topic string, partition int32) (int64, bool) {
			return floor.Load(), topic == "g"
		}
	})
	defer func() { ts.close(t) }()
	ctx := context.Background()
	cfg, err := PartitionConfigOf(map[string]string{
		topicconfig.RetentionMs: "0", topicconfig.RetentionBytes: "-1", topicconfig.SegmentBytes: "4096",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.CreatePartition(ctx, "g", 0, cfg); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	for i := 0; i < 40; i++ {
		produce(t, ts.Store, "g", 0, logtest.Filler(written.UnixMilli(), 4, 200, byte(i)))
	}
	info, _ := ts.DescribePartition(ctx, "g", 0)
	if info.Segments < 5 {
		t.Fatalf("expected rolls, have %d segments", info.Segments)
	}
	retain := func() PartitionInfo {
		runOnShard(t, ts.Store, "g", 0, func(s *shard, p *partition) {
			if _, err := p.applyRetention(s, written.Add(time.Millisecond)); err != nil {
				t.Error(err)
			}
		})
		after, _ := ts.DescribePartition(ctx, "g", 0)
		return after
	}
	if after := retain(); after.Segments != info.Segments || after.LogStartOffset != 0 {
		t.Fatalf("floor 0 let retention delete: %d segments (was %d), log start %d", after.Segments, info.Segments, after.LogStartOffset)
	}
	floor.Store(info.HighWatermark / 2)
	after := retain()
	if after.LogStartOffset == 0 || after.LogStartOffset > info.HighWatermark/2 {
		t.Fatalf("floor %d: log start %d; want records below the floor deleted and none above", info.HighWatermark/2, after.LogStartOffset)
	}
	floor.Store(info.HighWatermark)
	if after := retain(); after.Segments != 1 {
		t.Fatalf("floor at the high watermark left %d segments, want the active one", after.Segments)
	}
}
