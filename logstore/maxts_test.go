package logstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// compressed re-encodes the uncompressed batch b with codec (1 gzip, 2
// snappy in the Java client's xerial framing, 3 lz4, 4 zstd; 5 stands for
// snappy as one raw block, codec 2 on the wire).
func compressed(t *testing.T, b []byte, codec int) []byte {
	t.Helper()
	recs := b[BatchHeaderSize:]
	var body bytes.Buffer
	switch codec {
	case 1:
		w := gzip.NewWriter(&body)
		w.Write(recs)
		w.Close()
	case 2:
		body.Write(xerialHeader)
		body.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		blk := snappy.Encode(nil, recs)
		body.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
		body.Write(blk)
	case 3:
		w := lz4.NewWriter(&body)
		w.Write(recs)
		w.Close()
	case 4:
		w, err := zstd.NewWriter(&body)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(recs)
		w.Close()
	case 5:
		body.Write(snappy.Encode(nil, recs))
		codec = 2
	}
	out := append(append([]byte(nil), b[:BatchHeaderSize]...), body.Bytes()...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[21:], uint16(codec))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// TestListOffsetsMaxTimestampRecord: one batch of three records stamped
// t, t+10 and t+5 answers ListOffsets(MAX_TIMESTAMP) with offset 1 and
// t+10, whatever its compression, from the active segment, after a
// restart, sealed (also after a restart), and once the segment lives only in the cold tier (also after a
// restart). The batch's last offset (2) was the answer from a hot segment,
// the segment's last offset from a cold one.
func TestListOffsetsMaxTimestampRecord(t *testing.T) {
	const ts0 = int64(1_700_000_000_000)
	for codec, name := range []string{"none", "gzip", "snappy-xerial", "lz4", "zstd", "snappy-raw"} {
		t.Run(name, func(t *testing.T) {
			tier := newFakeTier()
			ts := openTestStore(t, t.TempDir(), func(o *Options) {
				o.Tier, o.Cold, o.RetentionCheckInterval = tier, tier, time.Hour
			})
			defer func() { ts.close(t) }() // ts is reopened below
			ctx := context.Background()
			cfg := PartitionConfig{SegmentBytes: 200, RetentionMs: -1, RetentionBytes: -1,
				LocalRetentionBytes: new(int64(0))}
			if err := ts.CreatePartition(ctx, "m", 0, cfg); err != nil {
				t.Fatal(err)
			}
			b := logtest.Batch(ts0, logtest.Record{Value: []byte("a")},
				logtest.Record{Value: []byte("b"), TimestampDelta: 10},
				logtest.Record{Value: []byte("c"), TimestampDelta: 5})
			if codec > 0 {
				b = compressed(t, b, codec)
			}
			produce(t, ts.Store, "m", 0, b)
			check := func(where string) {
				t.Helper()
				got, err := ts.ListOffsets(ctx, "m", 0, TimestampMaxTimestamp)
				if err != nil {
					t.Fatal(err)
				}
				if got.Offset != 1 || got.Timestamp != ts0+10 {
					t.Fatalf("%s: MAX_TIMESTAMP gives offset %d at %d, want 1 at %d", where, got.Offset, got.Timestamp, ts0+10)
				}
			}
			check("hot")
			ts = ts.reopen(t)
			check("hot after a restart")
			// Older timestamps after it roll the segment and change nothing.
			for i := 0; i < 3; i++ {
				produce(t, ts.Store, "m", 0, logtest.Filler(ts0-100, 2, 100, byte(i)))
			}
			check("sealed")
			settle(ts.Store)
			tier.mu.Lock()
			tier.sealed = nil // the restart tells the tier of them again
			tier.mu.Unlock()
			ts = ts.reopen(t)
			check("sealed after a restart") // from the time index's final entry
			if n := tier.upload(t, ts.Store); n == 0 {
				t.Fatal("nothing was sealed")
			}
			runOnShard(t, ts.Store, "m", 0, func(s *shard, p *partition) { p.applyRetention(s, time.Now()) })
			if local, _ := ts.ListOffsets(ctx, "m", 0, TimestampEarliestLocal); local.Offset <= 2 {
				t.Fatalf("the first segment is still local (earliest local offset %d)", local.Offset)
			}
			check("cold")
			ts = ts.reopen(t)
			check("cold after a restart")
		})
	}
}
