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

// TestRetentionBytesZeroAndNegative: retention.bytes = 0, which Kafka
// accepts, deletes every sealed segment and keeps the active one, across a
// restart; a negative value other than -1 is unlimited, as in Kafka.
func TestRetentionBytesZeroAndNegative(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.RetentionCheckInterval = time.Hour })
	defer func() { ts.close(t) }() // ts is reopened below
	ctx := context.Background()
	for _, tc := range []struct {
		topic, bytes string
	}{{"zero", "0"}, {"neg", "-7"}} {
		cfg, err := PartitionConfigOf(map[string]string{
			topicconfig.RetentionBytes: tc.bytes, topicconfig.RetentionMs: "-1", topicconfig.SegmentBytes: "4096",
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.CreatePartition(ctx, tc.topic, 0, cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 40; i++ {
			produce(t, ts.Store, tc.topic, 0, logtest.Filler(time.Now().UnixMilli(), 4, 200, byte(i)))
		}
	}
	before := map[string]PartitionInfo{}
	for _, topic := range []string{"zero", "neg"} {
		info, _ := ts.DescribePartition(ctx, topic, 0)
		if info.Segments < 5 {
			t.Fatalf("%s: expected rolls, have %d segments", topic, info.Segments)
		}
		before[topic] = info
	}
	ts = ts.reopen(t)
	for _, topic := range []string{"zero", "neg"} {
		runOnShard(t, ts.Store, topic, 0, func(s *shard, p *partition) {
			if _, err := p.applyRetention(s, time.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	zero, _ := ts.DescribePartition(ctx, "zero", 0)
	if zero.Segments != 1 || zero.LogStartOffset == 0 || zero.HighWatermark != before["zero"].HighWatermark {
		t.Errorf("retention.bytes=0 left %d segments, log start %d, hw %d (before: %d segments, hw %d); want the active segment alone",
			zero.Segments, zero.LogStartOffset, zero.HighWatermark, before["zero"].Segments, before["zero"].HighWatermark)
	}
	neg, _ := ts.DescribePartition(ctx, "neg", 0)
	if neg.Segments != before["neg"].Segments || neg.LogStartOffset != 0 {
		t.Errorf("retention.bytes=-7 deleted data: %d segments of %d, log start %d", neg.Segments, before["neg"].Segments, neg.LogStartOffset)
	}
}
