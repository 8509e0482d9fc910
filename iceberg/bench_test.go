package iceberg

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/aerostream/aerostream/iceberg/internal/recbatch"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// BenchmarkTranslate measures translation end to end for one commit:
// decode RecordBatch v2, build key_value rows in steps, stream them to
// the Parquet file (iceberg-go over arrow-go, zstd) in a local warehouse
// and commit the snapshot through the SQL catalog. SetBytes counts the log's batch
// bytes, so MB/s is log throughput; run with -cpu 1 for a core's worth.
func BenchmarkTranslate(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("value=%dB", size), func(b *testing.B) { benchTranslate(b, size) })
	}
}

func benchTranslate(b *testing.B, valueSize int) {
	ctx := context.Background()
	cfg := testConfig(b.TempDir())
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseCatalog(cat)
	tbl, err := ensureTable(ctx, cat, DefaultNamespace, "bench", "bench", KeyValueSchema(), DefaultPartitionSpec)
	if err != nil {
		b.Fatal(err)
	}
	// 8 MiB of log in batches of 100 records, as a commit would gather.
	var batches [][]byte
	total := 0
	now := time.Now().UnixMilli()
	// Values as aerostream bench sends them: a distinct 8-byte head (its
	// send time) and random bytes that are the same in every record.
	filler := make([]byte, valueSize)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(filler)
	for off := 0; total < 8<<20; off += 100 {
		recs := make([]logtest.Record, 100)
		for j := range recs {
			value := bytes.Clone(filler)
			binary.BigEndian.PutUint64(value, uint64(now)*1000+uint64(off+j))
			recs[j] = logtest.Record{Key: fmt.Appendf(nil, "key-%d", off+j), Value: value, TimestampDelta: int64(j)}
		}
		bt := logtest.Batch(now, recs...)
		// Assign the base offset, as the store does.
		for k := 0; k < 8; k++ {
			bt[k] = byte(uint64(off) >> (56 - 8*k))
		}
		batches = append(batches, bt)
		total += len(bt)
	}
	m := &Manager{met: newMetrics()}
	c := &committer{m: m, run: &topicRun{}, topic: "bench", log: quiet()}
	dec := recbatch.NewDecoder()
	b.SetBytes(int64(total))
	// CPU per MiB as well as wall time: on a shared machine the wall
	// time counts other processes' turns.
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := keyValue{}.NewBuilder(tbl.Schema(), memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		var stream *fileStream
		flush := func() {
			if rows.Rows() == 0 {
				return
			}
			rec := rows.Build()
			if stream == nil {
				stream = newFileStream(ctx, tbl, rec.Schema())
			}
			if err := stream.send(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
		n := 0
		for _, raw := range batches {
			bt, _, ok, err := recbatch.NextBatch(raw)
			if err != nil || !ok {
				b.Fatal(err)
			}
			recs, err := dec.Records(0, &bt)
			if err != nil {
				b.Fatal(err)
			}
			for j := range recs {
				if err := rows.Append(&recs[j]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if rows.Rows() >= stepRows {
				flush()
			}
		}
		flush()
		files, err := stream.finish()
		if err != nil {
			b.Fatal(err)
		}
		if tbl, err = c.commitFiles(ctx, tbl, files, Offsets{0: int64(n)}, n, int64(total)); err != nil {
			b.Fatal(err)
		}
		rows.Release()
	}
	b.StopTimer()
	mib := float64(b.N) * float64(total) / (1 << 20)
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/mib, "cpu-ms/MiB")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
