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
	"github.com/hamba/avro/v2"

	"github.com/aerostream/aerostream/iceberg/internal/recbatch"
	"github.com/aerostream/aerostream/iceberg/valuecodec"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// BenchmarkTranslate measures translation end to end: decode RecordBatch
// v2, build rows in steps, stream them to Parquet files (iceberg-go over
// arrow-go, zstd) in a local warehouse and commit snapshots through the
// SQL catalog, over 8 MiB of log per op. SetBytes counts the log's batch
// bytes, so MB/s is log throughput; cpu-ms/MiB is the process's CPU (the
// writer goroutine's too) per MiB of log. Run with -cpu 1 for a core's
// worth.
//
// Modes: value=NB is key_value with N-byte values as aerostream bench
// sends them; avro=100B is value_schema_id_prefix with framed Avro values
// of about 100 bytes (seven typed columns). Shapes: the default is
// batches of 100 records and one commit per op with steps of stepRows;
// /broker is what the broker does with a 1 s commit interval at 20,000
// msg/s over 8 partitions: batches of 4 records, a step per 256 KiB and a
// commit per 2 MiB.
func BenchmarkTranslate(b *testing.B) {
	for _, mc := range []struct {
		name  string
		typed bool
		size  int
	}{{"value=100B", false, 100}, {"value=1000B", false, 1000}, {"avro=100B", true, 100}} {
		b.Run(mc.name, func(b *testing.B) { benchTranslate(b, mc.typed, mc.size, 100, 0, 0) })
		if mc.size == 100 {
			b.Run(mc.name+"/broker", func(b *testing.B) { benchTranslate(b, mc.typed, mc.size, 4, 256<<10, 2<<20) })
		}
	}
}

// benchOrder is the Avro schema of avro=100B's values.
const benchOrder = `{"type":"record","name":"Order","fields":[
 {"name":"id","type":"long"},
 {"name":"customer","type":"string"},
 {"name":"amount","type":"double"},
 {"name":"currency","type":"string"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"created","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"note","type":["null","string"],"default":null}]}`

// benchValues returns a function making the i-th value of a mode.
func benchValues(b *testing.B, typed bool, size int, now int64) func(i int) []byte {
	if !typed {
		// Values as aerostream bench sends them: a distinct 8-byte head
		// (its send time) and random bytes that are the same in every
		// record.
		filler := make([]byte, size)
		_, _ = rand.NewChaCha8([32]byte{1}).Read(filler)
		return func(i int) []byte {
			value := bytes.Clone(filler)
			binary.BigEndian.PutUint64(value, uint64(now)*1000+uint64(i))
			return value
		}
	}
	sch := avro.MustParse(benchOrder)
	notes := []string{"leave at the door", "gift wrap, no invoice in the parcel", "call before delivery"}
	return func(i int) []byte {
		v := map[string]any{
			"id": int64(i), "customer": fmt.Sprintf("customer-%06d", i%50000), "amount": float64(i%100000) / 100,
			"currency": []string{"EUR", "USD", "GBP"}[i%3], "status": []string{"NEW", "PAID", "SHIPPED"}[i%3],
			"created": time.UnixMilli(now + int64(i)), "note": nil,
		}
		if i%4 != 0 {
			v["note"] = notes[i%len(notes)]
		}
		p, err := avro.Marshal(sch, v)
		if err != nil {
			b.Fatal(err)
		}
		return append([]byte{0, 0, 0, 0, 7}, p...) // schema id 7
	}
}

// benchTranslate translates 8 MiB of log in batches of batchRecs records
// per op, flushing a step every stepBytes (0: every stepRows rows) and
// committing every commitBytes (0: once, at the end).
func benchTranslate(b *testing.B, typed bool, valueSize, batchRecs, stepBytes, commitBytes int) {
	ctx := context.Background()
	cfg := testConfig(b.TempDir())
	cat, err := OpenCatalog(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseCatalog(cat)
	var mode Mode = keyValue{}
	if typed {
		src := &fakeSchemas{subject: "bench-value", versions: []valuecodec.Schema{{ID: 7, Type: valuecodec.TypeAvro, Text: benchOrder}}}
		if mode, err = NewMode(ModeContext{Topic: "bench", Configs: map[string]string{ConfigMode: ModeValueSchemaIDPrefix}, Registry: src}); err != nil {
			b.Fatal(err)
		}
	}
	want, err := mode.Schema(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := ensureTable(ctx, cat, DefaultNamespace, "bench", "bench", want, DefaultPartitionSpec)
	if err != nil {
		b.Fatal(err)
	}
	var batches [][]byte
	total := 0
	now := time.Now().UnixMilli()
	value := benchValues(b, typed, valueSize, now)
	for off := 0; total < 8<<20; off += batchRecs {
		recs := make([]logtest.Record, batchRecs)
		for j := range recs {
			recs[j] = logtest.Record{Key: fmt.Appendf(nil, "key-%d", off+j), Value: value(off + j), TimestampDelta: int64(j)}
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
		rows, err := mode.NewBuilder(tbl.Schema(), memory.DefaultAllocator)
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
		commit := func(next int64, n int) {
			flush()
			if stream == nil {
				return
			}
			files, err := stream.finish()
			if err != nil {
				b.Fatal(err)
			}
			stream = nil
			if tbl, err = c.commitFiles(ctx, tbl, files, Offsets{0: next}, n, 0); err != nil {
				b.Fatal(err)
			}
		}
		n, stepped, committed := 0, 0, 0
		var next int64
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
			next = bt.Next()
			stepped += len(raw)
			committed += len(raw)
			switch {
			case commitBytes > 0 && committed >= commitBytes:
				commit(next, n)
				stepped, committed = 0, 0
			case stepBytes > 0 && stepped >= stepBytes, stepBytes == 0 && rows.Rows() >= stepRows:
				flush()
				stepped = 0
			}
		}
		commit(next, n)
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
