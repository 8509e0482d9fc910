package ringtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// BackendSuite runs the conformance suite. newBackend must return a Backend
// over a fresh, empty store with the default flush policy (so the high
// watermark follows each produce) and register its own cleanup; the suite
// calls Close only where it tests Close.
func BackendSuite(t *testing.T, newBackend func(t *testing.T) ring.Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ring.Backend)
	}{
		{"Partitions", testPartitions},
		{"ProduceFetchRoundTrip", testRoundTrip},
		{"ContiguousOffsets", testContiguousOffsets},
		{"LongPollTimeout", testLongPollTimeout},
		{"LongPollWakes", testLongPollWakes},
		{"ListOffsets", testListOffsets},
		{"DeleteRecords", testDeleteRecords},
		{"UnknownPartition", testUnknownPartition},
		{"InvalidRequest", testInvalidRequest},
		{"BadCRCKeepsServing", testBadCRC},
		{"FetchMaxBytes", testFetchMaxBytes},
		{"MultiPartitionFetch", testMultiPartitionFetch},
		{"ConcurrentProduce", testConcurrentProduce},
		{"ProduceBatch", testProduceBatch},
		{"ContextCanceled", testContextCanceled},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBackend(t))
		})
	}
}

// ctx bounds every call so a hung transport fails the test instead of
// stalling the run.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func create(t *testing.T, b ring.Backend, topic string, partition int32) {
	t.Helper()
	if err := b.CreatePartition(ctx(t), topic, partition, ring.PartitionConfig{}); err != nil {
		t.Fatalf("create %s/%d: %v", topic, partition, err)
	}
}

// batch is a valid uncompressed RecordBatch v2 of n records whose values
// are derived from seed, with timestamps ts, ts+1, ...
func batch(ts int64, n int, seed byte) []byte {
	recs := make([]logtest.Record, n)
	for i := range recs {
		recs[i] = logtest.Record{
			Key:            []byte(fmt.Sprintf("k%d-%d", seed, i)),
			Value:          bytes.Repeat([]byte{seed + byte(i)}, 16+i),
			TimestampDelta: int64(i),
		}
	}
	return logtest.Batch(ts, recs...)
}

func produce(t *testing.T, b ring.Backend, topic string, partition int32, records []byte) ring.ProduceResult {
	t.Helper()
	// The in-process transport patches offsets into the buffer; keep the
	// caller's copy pristine for later comparison.
	res, err := b.Produce(ctx(t), &ring.ProduceRequest{
		Topic: topic, Partition: partition, Acks: -1, Records: bytes.Clone(records),
	})
	if err != nil {
		t.Fatalf("produce %s/%d: %v", topic, partition, err)
	}
	return res
}

// fetch reads one partition once and returns its records as bytes, with
// the partition's result; err is the call's or the partition's error.
func fetch(t *testing.T, b ring.Backend, c context.Context, req *ring.FetchRequest) ([]byte, ring.FetchPartitionResult, error) {
	t.Helper()
	res, err := b.Fetch(c, req)
	if err != nil {
		return nil, ring.FetchPartitionResult{}, err
	}
	defer res.Release()
	if len(res.Partitions) != len(req.Partitions) {
		t.Fatalf("fetch returned %d partitions, asked for %d", len(res.Partitions), len(req.Partitions))
	}
	p := res.Partitions[0]
	if p.Err != nil {
		return nil, p, p.Err
	}
	data, err := p.Records.ReadAll(nil)
	if err != nil {
		t.Fatalf("reading fetched records: %v", err)
	}
	p.Records = ring.Records{}
	return data, p, nil
}

func fetchAt(t *testing.T, b ring.Backend, topic string, partition int32, offset int64, maxBytes int32) ([]byte, ring.FetchPartitionResult, error) {
	t.Helper()
	return fetch(t, b, ctx(t), &ring.FetchRequest{
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: partition, Offset: offset, MaxBytes: maxBytes}},
	})
}

// split cuts fetched bytes into whole batches, dropping a partial batch at
// the end as Kafka clients do.
func split(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(data[8:])))
		if n < 61 {
			t.Fatalf("fetched batch with length %d", n)
		}
		if n > len(data) {
			break
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

func baseOffset(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// sameBatch checks that got is want with base offset off: everything else,
// the CRC included, must be byte-identical.
func sameBatch(t *testing.T, got, want []byte, off int64) {
	t.Helper()
	if baseOffset(got) != off {
		t.Fatalf("base offset %d, want %d", baseOffset(got), off)
	}
	if !bytes.Equal(got[8:], want[8:]) {
		t.Fatalf("fetched batch differs from produced batch beyond the base offset (%d vs %d bytes)", len(got), len(want))
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func testPartitions(t *testing.T, b ring.Backend) {
	cfg := ring.PartitionConfig{SegmentBytes: 1 << 20, RetentionBytes: 1 << 30, MaxMessageBytes: 1 << 16}
	if err := b.CreatePartition(ctx(t), "orders", 0, cfg); err != nil {
		t.Fatal(err)
	}
	create(t, b, "orders", 1)
	create(t, b, "audit", 0)

	err := b.CreatePartition(ctx(t), "orders", 0, ring.PartitionConfig{})
	wantErr(t, "duplicate create", err, ring.ErrPartitionExists)

	info, err := b.DescribePartition(ctx(t), "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Topic != "orders" || info.Partition != 0 || info.LogStartOffset != 0 || info.HighWatermark != 0 || info.LogEndOffset != 0 {
		t.Fatalf("new partition described as %+v", info)
	}
	if info.Config.SegmentBytes != cfg.SegmentBytes || info.Config.MaxMessageBytes != cfg.MaxMessageBytes || info.Config.RetentionBytes != cfg.RetentionBytes {
		t.Fatalf("config %+v, created with %+v", info.Config, cfg)
	}
	if info.Config.RetentionMs == 0 || info.Config.SegmentMs == 0 {
		t.Fatalf("zero config fields did not take defaults: %+v", info.Config)
	}

	list, err := b.ListPartitions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range list {
		seen[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = true
	}
	if len(list) != 3 || !seen["orders/0"] || !seen["orders/1"] || !seen["audit/0"] {
		t.Fatalf("ListPartitions = %+v", list)
	}

	if err := b.DeletePartition(ctx(t), "orders", 1); err != nil {
		t.Fatal(err)
	}
	_, err = b.DescribePartition(ctx(t), "orders", 1)
	wantErr(t, "describe deleted", err, ring.ErrUnknownPartition)
	err = b.DeletePartition(ctx(t), "orders", 1)
	wantErr(t, "delete deleted", err, ring.ErrUnknownPartition)
	list, err = b.ListPartitions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("after delete ListPartitions = %+v", list)
	}
	// A deleted partition can be created again, empty.
	create(t, b, "orders", 1)
	info, err = b.DescribePartition(ctx(t), "orders", 1)
	if err != nil || info.LogEndOffset != 0 {
		t.Fatalf("recreated partition: %+v, %v", info, err)
	}
}

func testRoundTrip(t *testing.T, b ring.Backend) {
	create(t, b, "rt", 0)
	want := batch(1_700_000_000_000, 5, 7)
	res := produce(t, b, "rt", 0, want)
	if res.BaseOffset != 0 {
		t.Fatalf("first produce got base offset %d", res.BaseOffset)
	}
	data, p, err := fetchAt(t, b, "rt", 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if p.HighWatermark != 5 || p.LogStartOffset != 0 || p.Topic != "rt" || p.Partition != 0 {
		t.Fatalf("fetch result %+v", p)
	}
	if len(data) != len(want) {
		t.Fatalf("fetched %d bytes, produced %d", len(data), len(want))
	}
	sameBatch(t, data, want, 0)

	want2 := batch(1_700_000_000_100, 3, 9)
	if res := produce(t, b, "rt", 0, want2); res.BaseOffset != 5 {
		t.Fatalf("second produce got base offset %d", res.BaseOffset)
	}
	data, _, err = fetchAt(t, b, "rt", 0, 5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	sameBatch(t, data, want2, 5)

	// Fetching at the high watermark without MaxWait returns at once, empty.
	data, p, err = fetchAt(t, b, "rt", 0, 8, 1<<20)
	if err != nil || len(data) != 0 || p.HighWatermark != 8 {
		t.Fatalf("fetch at HW: %d bytes, %+v, %v", len(data), p, err)
	}
	// Past the high watermark is out of range.
	_, _, err = fetchAt(t, b, "rt", 0, 9, 1<<20)
	wantErr(t, "fetch past HW", err, ring.ErrOffsetOutOfRange)

	info, err := b.DescribePartition(ctx(t), "rt", 0)
	if err != nil || info.HighWatermark != 8 || info.LogEndOffset != 8 || info.Size != int64(len(want)+len(want2)) {
		t.Fatalf("describe after produce: %+v, %v", info, err)
	}
}

func testContiguousOffsets(t *testing.T, b ring.Backend) {
	create(t, b, "seq", 3)
	var batches [][]byte
	var bases []int64
	next := int64(0)
	for i := 0; i < 60; i++ {
		n := 1 + i%7
		bt := batch(int64(1000+i), n, byte(i))
		res := produce(t, b, "seq", 3, bt)
		if res.BaseOffset != next {
			t.Fatalf("produce %d: base offset %d, want %d", i, res.BaseOffset, next)
		}
		batches = append(batches, bt)
		bases = append(bases, next)
		next += int64(n)
	}
	// Read everything back in small fetches.
	var got [][]byte
	for off := int64(0); off < next; {
		data, _, err := fetchAt(t, b, "seq", 3, off, 700)
		if err != nil {
			t.Fatal(err)
		}
		bs := split(t, data)
		if len(bs) == 0 {
			t.Fatalf("fetch at %d returned no whole batch (%d bytes)", off, len(data))
		}
		got = append(got, bs...)
		last := bs[len(bs)-1]
		off = baseOffset(last) + int64(binary.BigEndian.Uint32(last[23:])) + 1
	}
	if len(got) != len(batches) {
		t.Fatalf("read %d batches, produced %d", len(got), len(batches))
	}
	for i := range got {
		sameBatch(t, got[i], batches[i], bases[i])
	}
}

func testLongPollTimeout(t *testing.T, b ring.Backend) {
	create(t, b, "lp", 0)
	produce(t, b, "lp", 0, batch(1, 2, 1))
	const wait = 300 * time.Millisecond
	start := time.Now()
	data, p, err := fetch(t, b, ctx(t), &ring.FetchRequest{
		MinBytes: 1, MaxWait: wait,
		Partitions: []ring.FetchPartition{{Topic: "lp", Partition: 0, Offset: 2, MaxBytes: 1 << 20}},
	})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 0 || p.HighWatermark != 2 {
		t.Fatalf("long poll with nothing new returned %d bytes, %+v", len(data), p)
	}
	if elapsed < wait*9/10 {
		t.Fatalf("long poll returned after %v, before MaxWait %v", elapsed, wait)
	}
	if elapsed > wait+10*time.Second {
		t.Fatalf("long poll took %v for MaxWait %v", elapsed, wait)
	}
}

func testLongPollWakes(t *testing.T, b ring.Backend) {
	create(t, b, "wake", 0)
	const wait = 20 * time.Second
	want := batch(5, 3, 3)
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(200 * time.Millisecond)
		// Same partition, so over the network the same shard connection
		// as the parked fetch: the connection must not be blocked by it.
		_, err := b.Produce(ctx(t), &ring.ProduceRequest{Topic: "wake", Partition: 0, Acks: 1, Records: bytes.Clone(want)})
		errc <- err
	}()
	start := time.Now()
	c, cancel := context.WithTimeout(context.Background(), wait+10*time.Second)
	defer cancel()
	data, p, err := fetch(t, b, c, &ring.FetchRequest{
		MinBytes: 1, MaxWait: wait,
		Partitions: []ring.FetchPartition{{Topic: "wake", Partition: 0, Offset: 0, MaxBytes: 1 << 20}},
	})
	elapsed := time.Since(start)
	wg.Wait()
	if perr := <-errc; perr != nil {
		t.Fatalf("produce during long poll: %v", perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if elapsed > wait/2 {
		t.Fatalf("long poll woke after %v; a produce came at 200ms", elapsed)
	}
	if p.HighWatermark != 3 {
		t.Fatalf("woken fetch: %+v", p)
	}
	sameBatch(t, data, want, 0)
}

func testListOffsets(t *testing.T, b ring.Backend) {
	create(t, b, "lo", 0)
	// Offsets 0-1 at ts 1000-1001, 2-3 at 2000-2001, 4-5 at 3000-3001.
	for i := int64(1); i <= 3; i++ {
		produce(t, b, "lo", 0, batch(1000*i, 2, byte(i)))
	}
	check := func(ts, wantOff, wantTs int64) {
		t.Helper()
		got, err := b.ListOffsets(ctx(t), "lo", 0, ts)
		if err != nil {
			t.Fatalf("ListOffsets(%d): %v", ts, err)
		}
		if got.Offset != wantOff || (wantTs != 0 && got.Timestamp != wantTs) {
			t.Fatalf("ListOffsets(%d) = %+v, want offset %d timestamp %d", ts, got, wantOff, wantTs)
		}
	}
	check(ring.TimestampEarliest, 0, 0)
	check(ring.TimestampLatest, 6, 0)
	check(ring.TimestampMaxTimestamp, 5, 3001)
	// By time: the first offset whose timestamp is at or after the target.
	// The targets sit at batch boundaries and the returned timestamp is only
	// bounded, because the store answers per batch (base offset, batch max
	// timestamp) where Kafka answers per record.
	for _, c := range []struct{ ts, off, lo, hi int64 }{
		{0, 0, 1000, 1001},
		{1500, 2, 2000, 2001},
		{2500, 4, 3000, 3001},
	} {
		got, err := b.ListOffsets(ctx(t), "lo", 0, c.ts)
		if err != nil {
			t.Fatalf("ListOffsets(%d): %v", c.ts, err)
		}
		if got.Offset != c.off || got.Timestamp < c.lo || got.Timestamp > c.hi {
			t.Fatalf("ListOffsets(%d) = %+v, want offset %d with a timestamp in [%d, %d]", c.ts, got, c.off, c.lo, c.hi)
		}
	}
	check(9999, -1, -1) // no record that late: Kafka's "unknown offset"

	_, err := b.ListOffsets(ctx(t), "lo", 0, -99)
	wantErr(t, "ListOffsets with a bad timestamp", err, ring.ErrInvalidRequest)
}

func testDeleteRecords(t *testing.T, b ring.Backend) {
	create(t, b, "dr", 0)
	for i := 0; i < 4; i++ {
		produce(t, b, "dr", 0, batch(int64(i), 3, byte(i)))
	}
	lso, err := b.DeleteRecords(ctx(t), "dr", 0, 6)
	if err != nil || lso != 6 {
		t.Fatalf("DeleteRecords(6) = %d, %v", lso, err)
	}
	_, _, err = fetchAt(t, b, "dr", 0, 2, 1<<20)
	wantErr(t, "fetch below log start", err, ring.ErrOffsetOutOfRange)
	data, p, err := fetchAt(t, b, "dr", 0, 6, 1<<20)
	if err != nil || len(data) == 0 || p.LogStartOffset != 6 {
		t.Fatalf("fetch at new log start: %d bytes, %+v, %v", len(data), p, err)
	}
	off, err := b.ListOffsets(ctx(t), "dr", 0, ring.TimestampEarliest)
	if err != nil || off.Offset != 6 {
		t.Fatalf("earliest after DeleteRecords: %+v, %v", off, err)
	}
	// Moving backwards is a no-op; past the high watermark is an error;
	// -1 means the high watermark.
	if lso, err := b.DeleteRecords(ctx(t), "dr", 0, 3); err != nil || lso != 6 {
		t.Fatalf("DeleteRecords(3) after 6 = %d, %v", lso, err)
	}
	_, err = b.DeleteRecords(ctx(t), "dr", 0, 13)
	wantErr(t, "DeleteRecords past HW", err, ring.ErrOffsetOutOfRange)
	if lso, err := b.DeleteRecords(ctx(t), "dr", 0, -1); err != nil || lso != 12 {
		t.Fatalf("DeleteRecords(-1) = %d, %v", lso, err)
	}
	info, err := b.DescribePartition(ctx(t), "dr", 0)
	if err != nil || info.LogStartOffset != 12 || info.HighWatermark != 12 {
		t.Fatalf("describe after DeleteRecords: %+v, %v", info, err)
	}
}

func testUnknownPartition(t *testing.T, b ring.Backend) {
	create(t, b, "known", 0)
	c := ctx(t)
	_, err := b.Produce(c, &ring.ProduceRequest{Topic: "known", Partition: 1, Acks: 1, Records: batch(1, 1, 1)})
	wantErr(t, "produce", err, ring.ErrUnknownPartition)
	_, err = b.Produce(c, &ring.ProduceRequest{Topic: "nope", Partition: 0, Acks: 1, Records: batch(1, 1, 1)})
	wantErr(t, "produce", err, ring.ErrUnknownPartition)
	_, _, err = fetchAt(t, b, "nope", 0, 0, 1<<20)
	wantErr(t, "fetch", err, ring.ErrUnknownPartition)
	_, err = b.ListOffsets(c, "nope", 0, ring.TimestampLatest)
	wantErr(t, "ListOffsets", err, ring.ErrUnknownPartition)
	_, err = b.DescribePartition(c, "nope", 0)
	wantErr(t, "DescribePartition", err, ring.ErrUnknownPartition)
	err = b.DeletePartition(c, "nope", 0)
	wantErr(t, "DeletePartition", err, ring.ErrUnknownPartition)
	_, err = b.DeleteRecords(c, "nope", 0, 0)
	wantErr(t, "DeleteRecords", err, ring.ErrUnknownPartition)
}

func testInvalidRequest(t *testing.T, b ring.Backend) {
	c := ctx(t)
	err := b.CreatePartition(c, "bad/topic", 0, ring.PartitionConfig{})
	wantErr(t, "create with a slash", err, ring.ErrInvalidRequest)
	err = b.CreatePartition(c, "t", -1, ring.PartitionConfig{})
	wantErr(t, "create partition -1", err, ring.ErrInvalidRequest)
	create(t, b, "t", 0)
	for name, records := range map[string][]byte{
		"empty":     nil,
		"truncated": batch(1, 2, 2)[:40],
	} {
		_, err := b.Produce(c, &ring.ProduceRequest{Topic: "t", Partition: 0, Acks: 1, Records: records})
		wantErr(t, "produce "+name, err, ring.ErrCorruptBatch)
	}
	bad := batch(1, 2, 2)
	bad[16] = 1 // magic
	_, err = b.Produce(c, &ring.ProduceRequest{Topic: "t", Partition: 0, Acks: 1, Records: bad})
	wantErr(t, "produce magic 1", err, ring.ErrBadMagic)
}

func testBadCRC(t *testing.T, b ring.Backend) {
	create(t, b, "crc", 0)
	bad := batch(1, 4, 4)
	bad[len(bad)-1] ^= 0xFF
	_, err := b.Produce(ctx(t), &ring.ProduceRequest{Topic: "crc", Partition: 0, Acks: 1, Records: bad})
	wantErr(t, "produce with a bad CRC", err, ring.ErrBadCRC)
	// Nothing was written, and the backend carries on.
	good := batch(2, 4, 5)
	if res := produce(t, b, "crc", 0, good); res.BaseOffset != 0 {
		t.Fatalf("produce after a bad CRC got base offset %d", res.BaseOffset)
	}
	data, _, err := fetchAt(t, b, "crc", 0, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	sameBatch(t, data, good, 0)
}

func testFetchMaxBytes(t *testing.T, b ring.Backend) {
	create(t, b, "mb", 0)
	var sizes []int
	for i := 0; i < 5; i++ {
		bt := batch(int64(i), 20, byte(i)) // ~1 KiB each
		sizes = append(sizes, len(bt))
		produce(t, b, "mb", 0, bt)
	}
	// A limit below one batch still returns that whole batch (KIP-74).
	data, _, err := fetchAt(t, b, "mb", 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if bs := split(t, data); len(bs) != 1 || len(data) != sizes[0] {
		t.Fatalf("MaxBytes 100: got %d bytes in %d whole batches, want exactly the first batch (%d bytes)", len(data), len(bs), sizes[0])
	}
	// Otherwise the limit holds; the range may end inside a batch.
	limit := sizes[0] + sizes[1] + sizes[2]/2
	data, _, err = fetchAt(t, b, "mb", 0, 0, int32(limit))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > limit || len(data) < sizes[0]+sizes[1] {
		t.Fatalf("MaxBytes %d: got %d bytes", limit, len(data))
	}
	if bs := split(t, data); len(bs) != 2 {
		t.Fatalf("MaxBytes %d: %d whole batches, want 2", limit, len(bs))
	}
	// The request-level limit applies too.
	data, _, err = fetch(t, b, ctx(t), &ring.FetchRequest{
		MaxBytes:   int32(sizes[0] + 10),
		Partitions: []ring.FetchPartition{{Topic: "mb", Partition: 0, Offset: 0, MaxBytes: 1 << 20}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > sizes[0]+10 || len(split(t, data)) != 1 {
		t.Fatalf("request MaxBytes %d: got %d bytes", sizes[0]+10, len(data))
	}
}

func testMultiPartitionFetch(t *testing.T, b ring.Backend) {
	const parts = 8
	want := make([][]byte, parts)
	req := &ring.FetchRequest{}
	for p := int32(0); p < parts; p++ {
		create(t, b, "multi", p)
		want[p] = batch(int64(p), int(p)+1, byte(p))
		produce(t, b, "multi", p, want[p])
		req.Partitions = append(req.Partitions, ring.FetchPartition{Topic: "multi", Partition: parts - 1 - p, Offset: 0, MaxBytes: 1 << 20})
	}
	// One unknown partition in the middle fails alone.
	req.Partitions = append(req.Partitions[:4], append([]ring.FetchPartition{{Topic: "multi", Partition: 99}}, req.Partitions[4:]...)...)
	res, err := b.Fetch(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Partitions) != len(req.Partitions) {
		t.Fatalf("%d results for %d partitions", len(res.Partitions), len(req.Partitions))
	}
	for i, fp := range req.Partitions {
		r := res.Partitions[i]
		if r.Topic != fp.Topic || r.Partition != fp.Partition {
			t.Fatalf("result %d is %s/%d, asked for %s/%d", i, r.Topic, r.Partition, fp.Topic, fp.Partition)
		}
		if fp.Partition == 99 {
			wantErr(t, "unknown partition in a multi-partition fetch", r.Err, ring.ErrUnknownPartition)
			if r.Records.Size() != 0 {
				t.Fatalf("failed partition carries %d bytes", r.Records.Size())
			}
			continue
		}
		if r.Err != nil {
			t.Fatalf("partition %d: %v", fp.Partition, r.Err)
		}
		data, err := r.Records.ReadAll(nil)
		if err != nil {
			t.Fatal(err)
		}
		sameBatch(t, data, want[fp.Partition], 0)
	}
}

func testConcurrentProduce(t *testing.T, b ring.Backend) {
	const (
		parts   = 4
		workers = 8
		each    = 25
	)
	for p := int32(0); p < parts; p++ {
		create(t, b, "conc", p)
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	var mu sync.Mutex
	seen := map[[2]int64]bool{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p := int32((w + i) % parts)
				res, err := b.Produce(ctx(t), &ring.ProduceRequest{Topic: "conc", Partition: p, Acks: 1, Records: batch(int64(i), 2, byte(w))})
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				key := [2]int64{int64(p), res.BaseOffset}
				if seen[key] {
					mu.Unlock()
					errc <- fmt.Errorf("offset %d of partition %d assigned twice", res.BaseOffset, p)
					return
				}
				seen[key] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	var total int64
	for p := int32(0); p < parts; p++ {
		info, err := b.DescribePartition(ctx(t), "conc", p)
		if err != nil {
			t.Fatal(err)
		}
		total += info.HighWatermark
	}
	if total != workers*each*2 {
		t.Fatalf("%d records across partitions, produced %d", total, workers*each*2)
	}
}

func testContextCanceled(t *testing.T, b ring.Backend) {
	create(t, b, "cc", 0)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.DescribePartition(c, "cc", 0)
	wantErr(t, "describe with a canceled ctx", err, context.Canceled)

	// A long poll abandoned by its caller returns promptly with the
	// context's error, and the backend serves the next call.
	c, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = b.Fetch(c, &ring.FetchRequest{
		MinBytes: 1, MaxWait: 20 * time.Second,
		Partitions: []ring.FetchPartition{{Topic: "cc", Partition: 0, Offset: 0, MaxBytes: 1 << 20}},
	})
	if err != nil {
		wantErr(t, "canceled long poll", err, context.Canceled)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("canceled long poll returned after %v", el)
	}
	c, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-c.Done()
	_, err = b.ListPartitions(c)
	wantErr(t, "ListPartitions past its deadline", err, context.DeadlineExceeded)
	if _, err := b.DescribePartition(ctx(t), "cc", 0); err != nil {
		t.Fatalf("describe after cancellations: %v", err)
	}
}

func testClose(t *testing.T, b ring.Backend) {
	create(t, b, "cl", 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := b.DescribePartition(ctx(t), "cl", 0)
	wantErr(t, "call after Close", err, ring.ErrClosed)
	_, err = b.Produce(ctx(t), &ring.ProduceRequest{Topic: "cl", Partition: 0, Acks: 1, Records: batch(1, 1, 1)})
	wantErr(t, "produce after Close", err, ring.ErrClosed)
}

// testProduceBatch: one ProduceBatch over partitions of several shards
// gives each part what its own Produce would: offsets that follow the
// partition's, and its own error (an unknown partition, a bad CRC) while
// the other parts are written. Two parts for one partition land in order.
func testProduceBatch(t *testing.T, b ring.Backend) {
	const n = 8
	for p := int32(0); p < n; p++ {
		create(t, b, "pb", p)
	}
	if res := produce(t, b, "pb", 3, batch(1, 2, 1)); res.BaseOffset != 0 {
		t.Fatalf("first produce at %d", res.BaseOffset)
	}
	var parts []ring.ProducePart
	want := map[int][]byte{}
	for p := int32(0); p < n; p++ {
		recs := batch(10, 3, byte(p))
		want[len(parts)] = recs
		parts = append(parts, ring.ProducePart{ProduceRequest: ring.ProduceRequest{Topic: "pb", Partition: p, Acks: 1, Records: bytes.Clone(recs)}})
	}
	bad := batch(11, 2, 9)
	bad[len(bad)-1] ^= 0xFF
	parts = append(parts,
		ring.ProducePart{ProduceRequest: ring.ProduceRequest{Topic: "pb", Partition: 99, Acks: 1, Records: batch(12, 1, 1)}},
		ring.ProducePart{ProduceRequest: ring.ProduceRequest{Topic: "pb", Partition: 1, Acks: 1, Records: bad}},
		ring.ProducePart{ProduceRequest: ring.ProduceRequest{Topic: "pb", Partition: 0, Acks: -1, Records: batch(13, 2, 7)}},
	)
	b.ProduceBatch(ctx(t), parts)
	for i := 0; i < n; i++ {
		p := parts[i]
		wantBase := int64(0)
		if p.Partition == 3 {
			wantBase = 2
		}
		if p.Err != nil || p.Result.BaseOffset != wantBase {
			t.Fatalf("part %d (pb/%d): base offset %d, err %v; want %d", i, p.Partition, p.Result.BaseOffset, p.Err, wantBase)
		}
		data, _, err := fetchAt(t, b, "pb", p.Partition, wantBase, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		sameBatch(t, data[:len(want[i])], want[i], wantBase)
	}
	wantErr(t, "batch part for an unknown partition", parts[n].Err, ring.ErrUnknownPartition)
	wantErr(t, "batch part with a bad CRC", parts[n+1].Err, ring.ErrBadCRC)
	if p := parts[n+2]; p.Err != nil || p.Result.BaseOffset != 3 {
		t.Fatalf("second part for pb/0: base offset %d, err %v; want 3 (after the first part's 3 records)", p.Result.BaseOffset, p.Err)
	}
}
