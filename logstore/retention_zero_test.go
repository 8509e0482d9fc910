package logstore

import (
	"context"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/topicconfig"
)

// TestRetentionMsZero: retention.ms = 0, which Kafka accepts, deletes each
// sealed segment whose newest record is in the past; the active segment
// stays. It is not the store's default (a zero RetentionMs means that),
// and it is kept across a restart. The records carry the current time, so
// the default retention (7 days) would keep them all.
func TestRetentionMsZero(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.RetentionCheckInterval = time.Hour })
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	cfg, err := PartitionConfigOf(map[string]string{
		topicconfig.RetentionMs: "0", topicconfig.RetentionBytes: "-1", topicconfig.SegmentBytes: "4096",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.CreatePartition(ctx, "z", 0, cfg); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	for i := 0; i < 40; i++ {
		produce(t, ts.Store, "z", 0, logtest.Filler(written.UnixMilli(), 4, 200, byte(i)))
	}
	info, _ := ts.DescribePartition(ctx, "z", 0)
	if info.Segments < 5 {
		t.Fatalf("expected rolls, have %d segments", info.Segments)
	}
	ts = ts.reopen(t)
	// A millisecond later every sealed segment's newest record is older
	// than 0 ms.
	runOnShard(t, ts.Store, "z", 0, func(s *shard, p *partition) {
		if _, err := p.applyRetention(s, written.Add(time.Millisecond)); err != nil {
			t.Error(err)
		}
	})
	after, _ := ts.DescribePartition(ctx, "z", 0)
	if after.Segments != 1 || after.LogStartOffset == 0 || after.HighWatermark != info.HighWatermark {
		t.Fatalf("retention.ms=0 left %d segments, log start %d, hw %d (before: %d segments, hw %d); want the active segment alone",
			after.Segments, after.LogStartOffset, after.HighWatermark, info.Segments, info.HighWatermark)
	}
}
