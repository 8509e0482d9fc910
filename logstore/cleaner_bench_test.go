package logstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// fillCompacted writes about mb MiB to a compacted partition, 1 KiB values
// over 2,000 keys, 16 records a batch, and seals it.
func fillCompacted(b *testing.B, s *Store, topic string, mb int) int64 {
	b.Helper()
	ctx := context.Background()
	if err := s.CreatePartition(ctx, topic, 0, compactConfig2()); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 1024)
	ts := time.Now().Add(-time.Hour).UnixMilli()
	var total int64
	for i := 0; total < int64(mb)<<20; i++ {
		recs := make([]logtest.Record, 16)
		for j := range recs {
			recs[j] = logtest.Record{Key: []byte(fmt.Sprintf("key-%d", (i*16+j)%2000)), Value: val}
		}
		batch := logtest.Batch(ts, recs...)
		total += int64(len(batch))
		if _, err := s.Produce(ctx, &ProduceRequest{Topic: topic, Partition: 0, Acks: 1, Records: batch}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.RollPartition(ctx, topic, 0); err != nil {
		b.Fatal(err)
	}
	return total
}

func compactConfig2() PartitionConfig {
	c := compactConfig()
	c.SegmentBytes = 8 << 20
	return c
}

// BenchmarkCleaner measures the cleaner's throughput over the bytes it
// reads, with no I/O bound: 16 MiB a pass, 2,000 keys.
func BenchmarkCleaner(b *testing.B) {
	dir := b.TempDir()
	ts := openTestStore(b, dir, func(o *Options) { o.Cleaner = CleanerOptions{Disabled: true, BytesPerSecond: -1} })
	defer ts.close(b)
	ctx := context.Background()
	var in int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		topic := fmt.Sprintf("c%d", i)
		in = fillCompacted(b, ts.Store, topic, 16)
		settle(ts.Store)
		b.StartTimer()
		if err := ts.CleanNow(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := ts.DeletePartition(ctx, topic, 0); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.SetBytes(in)
}

// BenchmarkProduceWhileCleaning measures produce latency (acks=1, 1 KiB
// batches) on one partition, idle and while the cleaner cleans another
// partition of the same store over and over at its default I/O bound;
// it reports p50, p99 and p99.9.
func BenchmarkProduceWhileCleaning(b *testing.B) {
	for _, mode := range []string{"idle", "cleaning"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			ts := openTestStore(b, dir, func(o *Options) { o.Cleaner = CleanerOptions{Disabled: true} })
			defer ts.close(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := ts.CreatePartition(ctx, "hot", 0, PartitionConfig{}); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			if mode == "cleaning" {
				fillCompacted(b, ts.Store, "cold", 32)
				settle(ts.Store)
				dirCold := ts.PartitionDir("cold", 0)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						// Everything dirty again, so each pass cleans it all.
						_ = os.Remove(filepath.Join(dirCold, cleanerCheckpoint))
						_ = ts.CleanNow(ctx)
					}
				}()
			}
			batch := logtest.Filler(time.Now().UnixMilli(), 1, 1024, 1)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "hot", Partition: 0, Acks: 1, Records: append([]byte(nil), batch...)}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p99.9-µs")
		})
	}
}
