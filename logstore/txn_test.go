package logstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// txnBatch is a transactional batch of n records of producer pid.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	b := idemBatch(pid, epoch, seq, n)
	binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrTransactional)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crcTable))
	return b
}

func fetchIso(t *testing.T, s *Store, topic string, from int64, iso int8) FetchPartitionResult {
	t.Helper()
	res, err := s.Fetch(context.Background(), &FetchRequest{IsolationLevel: iso,
		Partitions: []FetchPartition{{Topic: topic, Partition: 0, Offset: from, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	pr := res.Partitions[0]
	if pr.Err != nil {
		t.Fatalf("fetch at %d: %v", from, pr.Err)
	}
	b, err := pr.Records.ReadAll(nil)
	res.Release()
	if err != nil {
		t.Fatal(err)
	}
	pr.Records = Records{Bytes: b}
	return pr
}

// lastOffsetIn is the last offset of the whole batches in b, -1 if none.
func lastOffsetIn(b []byte) int64 {
	last := int64(-1)
	for len(b) >= BatchHeaderSize {
		h, err := ParseBatchHeader(b)
		if err != nil || int(h.Length) > len(b) {
			break
		}
		last = h.LastOffset()
		b = b[h.Length:]
	}
	return last
}

func TestTxnLSOAndAbortedIndex(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{SegmentBytes: 2048}); err != nil {
		t.Fatal(err)
	}
	// offsets 0-1: plain; 2-4: txn of producer 10 (to abort); 5: plain;
	// 6-7: txn of producer 11 (to commit), interleaved with 10's.
	produce(t, ts.Store, "t", 0, logtest.Filler(1, 2, 20, 1))
	produce(t, ts.Store, "t", 0, txnBatch(10, 0, 0, 3))
	produce(t, ts.Store, "t", 0, logtest.Filler(1, 1, 20, 2))
	produce(t, ts.Store, "t", 0, txnBatch(11, 0, 0, 2))

	pr := fetchIso(t, ts.Store, "t", 0, ReadCommitted)
	if pr.LastStableOffset != 2 || pr.HighWatermark != 8 {
		t.Fatalf("open txns: lso %d hw %d, want 2 and 8", pr.LastStableOffset, pr.HighWatermark)
	}
	if got := lastOffsetIn(pr.Records.Bytes); got != 1 {
		t.Fatalf("read_committed read to offset %d, want 1 (below the open transaction)", got)
	}
	if got := lastOffsetIn(fetchIso(t, ts.Store, "t", 0, ReadUncommitted).Records.Bytes); got != 7 {
		t.Fatalf("read_uncommitted read to %d, want 7", got)
	}

	abort, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 10, ProducerEpoch: 0})
	if err != nil || abort != 8 {
		t.Fatalf("abort marker at %d, %v; want 8", abort, err)
	}
	pr = fetchIso(t, ts.Store, "t", 0, ReadCommitted)
	if pr.LastStableOffset != 6 {
		t.Fatalf("lso %d after the abort, want 6 (producer 11 still open)", pr.LastStableOffset)
	}
	want := []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 8}}
	if !reflect.DeepEqual(pr.AbortedTransactions, want) {
		t.Fatalf("aborted %+v, want %+v", pr.AbortedTransactions, want)
	}
	commit, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 11, ProducerEpoch: 0, Commit: true})
	if err != nil || commit != 9 {
		t.Fatalf("commit marker at %d, %v; want 9", commit, err)
	}
	pr = fetchIso(t, ts.Store, "t", 0, ReadCommitted)
	if pr.LastStableOffset != 10 || lastOffsetIn(pr.Records.Bytes) != 9 {
		t.Fatalf("after both markers: lso %d, read to %d; want 10 and 9", pr.LastStableOffset, lastOffsetIn(pr.Records.Bytes))
	}
	// The marker batches read back as control batches with the right type.
	for _, b := range readAll(t, ts.Store, "t", 0, 8) {
		h, _ := ParseBatchHeader(b)
		typ, err := controlType(b)
		if !h.IsControl() || err != nil || (h.BaseOffset == 8) != (typ == controlAbort) {
			t.Fatalf("marker at %d: control %v type %d err %v", h.BaseOffset, h.IsControl(), typ, err)
		}
	}
	// A read from past the aborted transaction does not get it.
	if pr := fetchIso(t, ts.Store, "t", 0+9, ReadCommitted); len(pr.AbortedTransactions) != 0 {
		t.Fatalf("aborted list from 9: %+v", pr.AbortedTransactions)
	}

	// Bad input: a marker with nothing to end is not written; one with an
	// old epoch is refused; a client's control batch is refused. Nothing
	// changes in the log.
	before, _ := ts.DescribePartition(ctx, "t", 0)
	if off, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 99, ProducerEpoch: 3, Commit: true}); err != nil || off != -1 {
		t.Fatalf("marker for an unknown producer: %d, %v", off, err)
	}
	produce(t, ts.Store, "t", 0, txnBatch(12, 5, 0, 1))
	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 12, ProducerEpoch: 4}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale marker: %v", err)
	}
	ctrl := buildMarker(&TxnMarker{ProducerID: 12, ProducerEpoch: 5, Commit: true}, 1)
	ctrl = logtest.WithProducer(ctrl, 12, 5, 1) // a sequence, as a client would send
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "t", Partition: 0, Acks: -1, Records: ctrl}); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("client control batch: %v", err)
	}
	after, _ := ts.DescribePartition(ctx, "t", 0)
	if after.LogEndOffset != before.LogEndOffset+1 {
		t.Fatalf("log end %d -> %d, want one record (producer 12's batch)", before.LogEndOffset, after.LogEndOffset)
	}

	// Producer 12's transaction is open across a restart; the abort of 10
	// is remembered.
	for i := 0; i < 20; i++ { // enough to roll, so a snapshot holds the state
		produce(t, ts.Store, "t", 0, logtest.Filler(1, 1, 200, byte(i)))
	}
	ts = ts.reopen(t)
	defer func() { ts.close(t) }()
	pr = fetchIso(t, ts.Store, "t", 0, ReadCommitted)
	if pr.LastStableOffset != 10 || !reflect.DeepEqual(pr.AbortedTransactions, want) {
		t.Fatalf("after restart: lso %d aborted %+v; want 10 and %+v", pr.LastStableOffset, pr.AbortedTransactions, want)
	}
	// An epoch bump by the coordinator (abort with epoch 6) fences epoch 5.
	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 12, ProducerEpoch: 6}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "t", Partition: 0, Acks: -1, Records: txnBatch(12, 5, 1, 1)}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced producer: %v", err)
	}
	pr = fetchIso(t, ts.Store, "t", 0, ReadCommitted)
	if pr.LastStableOffset != pr.HighWatermark || len(pr.AbortedTransactions) != 2 {
		t.Fatalf("after aborting 12: lso %d hw %d aborted %+v", pr.LastStableOffset, pr.HighWatermark, pr.AbortedTransactions)
	}
}

// TestTxnRecoveryWithoutSnapshot rebuilds the state from the log alone.
func TestTxnRecoveryWithoutSnapshot(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "r", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, ts.Store, "r", 0, txnBatch(1, 0, 0, 2))
	produce(t, ts.Store, "r", 0, txnBatch(2, 0, 0, 2))
	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "r", Partition: 0, ProducerID: 1}); err != nil {
		t.Fatal(err)
	}
	ts = ts.reopen(t)
	defer func() { ts.close(t) }()
	pr := fetchIso(t, ts.Store, "r", 0, ReadCommitted)
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 4}}
	if pr.LastStableOffset != 2 || !reflect.DeepEqual(pr.AbortedTransactions, want) {
		t.Fatalf("lso %d aborted %+v; want 2 and %+v", pr.LastStableOffset, pr.AbortedTransactions, want)
	}
}

func TestTxnSnapshotRoundTrip(t *testing.T) {
	m := map[int64]*producerState{4: {epoch: 2, lastTs: 7}}
	st := txnState{ongoing: map[int64]int64{4: 100, 9: 50}, aborted: []AbortedTxn{{1, 2, 3}, {4, 5, 6}}}
	gotM, gotT, err := decodeSnapshot(encodeSnapshot(m, &st), 0)
	if err != nil || len(gotM) != 1 || !reflect.DeepEqual(gotT, st) {
		t.Fatalf("round trip: %v %+v %v", gotM, gotT, err)
	}
}

func FuzzControlType(f *testing.F) {
	f.Add(buildMarker(&TxnMarker{ProducerID: 1, Commit: true}, 0))
	f.Add(buildMarker(&TxnMarker{ProducerID: 1}, 0)[:BatchHeaderSize+3])
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = controlType(b)
		m, st, err := decodeSnapshot(b, 0)
		if err == nil {
			if _, st2, err := decodeSnapshot(encodeSnapshot(m, &st), 0); err != nil || len(st2.aborted) != len(st.aborted) {
				t.Fatalf("re-encoded snapshot: %v", err)
			}
		}
	})
}

// TestTxnColdReadStopsAtLSO: a read_committed fetch served from the cold
// tier stops at the LSO as a hot one does, and gets the aborted
// transactions of the range, while a transaction stays open across
// segments that were sealed, uploaded and evicted.
func TestTxnColdReadStopsAtLSO(t *testing.T) {
	tier := newFakeTier()
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.Tier = tier; o.Cold = tier; o.RetentionCheckInterval = time.Hour })
	defer func() { ts.close(t) }()
	ctx := context.Background()
	cfg := PartitionConfig{SegmentBytes: 1024, LocalRetentionBytes: new(int64(0)), RetentionMs: -1, RetentionBytes: -1}
	if err := ts.CreatePartition(ctx, "cold", 0, cfg); err != nil {
		t.Fatal(err)
	}
	// 0-1 plain; 2-4 producer 12, aborted at 5; 6-8 producer 10, left
	// open; then plain batches enough for several segments.
	produce(t, ts.Store, "cold", 0, logtest.Filler(1, 2, 20, 1))
	produce(t, ts.Store, "cold", 0, txnBatch(12, 0, 0, 3))
	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "cold", Partition: 0, ProducerID: 12}); err != nil {
		t.Fatal(err)
	}
	produce(t, ts.Store, "cold", 0, txnBatch(10, 0, 0, 3))
	for i := 0; i < 12; i++ {
		produce(t, ts.Store, "cold", 0, logtest.Filler(int64(9+i), 1, 300, byte(i)))
	}
	if n := tier.upload(t, ts.Store); n < 3 {
		t.Fatalf("only %d segments sealed", n)
	}
	runOnShard(t, ts.Store, "cold", 0, func(s *shard, p *partition) { p.applyRetention(s, time.Now()) })
	if local, _ := ts.ListOffsets(ctx, "cold", 0, TimestampEarliestLocal); local.Offset <= 8 {
		t.Fatalf("the open transaction is still local (earliest local %d)", local.Offset)
	}

	pr := fetchIso(t, ts.Store, "cold", 0, ReadCommitted)
	if pr.LastStableOffset != 6 {
		t.Fatalf("lso %d, want 6", pr.LastStableOffset)
	}
	if got := lastOffsetIn(pr.Records.Bytes); got != 5 {
		t.Fatalf("cold read_committed read to offset %d, want 5 (below the open transaction)", got)
	}
	if want := []AbortedTxn{{ProducerID: 12, FirstOffset: 2, LastOffset: 5}}; !reflect.DeepEqual(pr.AbortedTransactions, want) {
		t.Fatalf("aborted %+v, want %+v", pr.AbortedTransactions, want)
	}
	if got := lastOffsetIn(fetchIso(t, ts.Store, "cold", 0, ReadUncommitted).Records.Bytes); got < 8 {
		t.Fatalf("cold read_uncommitted read to %d, want past the open transaction", got)
	}
	if pr := fetchIso(t, ts.Store, "cold", 6, ReadCommitted); pr.Records.Size() != 0 {
		t.Fatalf("read_committed at the LSO got %d bytes", pr.Records.Size())
	}

	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "cold", Partition: 0, ProducerID: 10, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if pr := fetchIso(t, ts.Store, "cold", 6, ReadCommitted); lastOffsetIn(pr.Records.Bytes) < 8 {
		t.Fatalf("after the commit read_committed from 6 read to %d", lastOffsetIn(pr.Records.Bytes))
	}
}

// TestBatchesBefore cuts parts split inside batches and headers.
func TestBatchesBefore(t *testing.T) {
	var all []byte
	for i := int64(0); i < 4; i++ {
		b := logtest.Filler(1, 2, 10, byte(i))
		setBaseOffset(b, i*2, 0)
		all = append(all, b...)
	}
	for _, split := range []int{1, 5, 30, 61, 100, len(all) - 3} {
		parts := [][]byte{all[:split], all[split:]}
		for end, want := range map[int64]int64{0: -1, 1: 1, 2: 1, 5: 5, 7: 7, 100: 7} {
			var got []byte
			for _, p := range batchesBefore(parts, end) {
				got = append(got, p...)
			}
			if lastOffsetIn(got) != want || !bytes.HasPrefix(all, got) {
				t.Fatalf("split %d end %d: read to %d, want %d", split, end, lastOffsetIn(got), want)
			}
		}
	}
}

// FuzzBatchesBefore: cutting cold bytes at an offset never panics and
// keeps a prefix of them, whatever the bytes and however they are split.
func FuzzBatchesBefore(f *testing.F) {
	b := logtest.Filler(1, 2, 10, 1)
	f.Add(append(b, b...), 3, int64(1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0}, 5, int64(9))
	f.Fuzz(func(t *testing.T, data []byte, split int, end int64) {
		split = min(max(split, 0), len(data))
		var got []byte
		for _, p := range batchesBefore([][]byte{data[:split], data[split:]}, end) {
			got = append(got, p...)
		}
		if !bytes.HasPrefix(data, got) {
			t.Fatalf("cut %x is not a prefix of %x", got, data)
		}
	})
}

// TestTxnNewEpochStartsAtZero: after a marker that bumps the producer's
// epoch (transactions v2 end every transaction so), the partition knows
// the producer with no batch in the new epoch, and its next transaction
// must start at sequence 0, as in Kafka. A later batch of that
// transaction arriving first (its first batch was refused on the way) is
// OUT_OF_ORDER_SEQUENCE_NUMBER, not written, so the first one's retry
// still fits.
func TestTxnNewEpochStartsAtZero(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	produce(t, ts.Store, "t", 0, txnBatch(7, 0, 0, 2))
	if _, err := ts.WriteTxnMarker(ctx, TxnMarker{Topic: "t", Partition: 0, ProducerID: 7, ProducerEpoch: 1, Commit: true}); err != nil {
		t.Fatal(err)
	}
	before, _ := ts.DescribePartition(ctx, "t", 0)
	_, err := ts.Produce(ctx, &ProduceRequest{Topic: "t", Partition: 0, Acks: -1, Records: txnBatch(7, 1, 3, 2)})
	if !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 3 as the first batch of epoch 1: %v, want %v", err, ErrOutOfOrderSequence)
	}
	if after, _ := ts.DescribePartition(ctx, "t", 0); after.HighWatermark != before.HighWatermark {
		t.Fatalf("refused batch written: high watermark %d -> %d", before.HighWatermark, after.HighWatermark)
	}
	produce(t, ts.Store, "t", 0, txnBatch(7, 1, 0, 3))
	produce(t, ts.Store, "t", 0, txnBatch(7, 1, 3, 2))
}
