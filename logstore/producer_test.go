package logstore

import (
	"context"
	"errors"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

func idemBatch(pid int64, epoch int16, seq int32, n int) []byte {
	return logtest.WithProducer(logtest.Filler(1, n, 50, byte(seq)), pid, epoch, seq)
}

func TestIdempotentProducer(t *testing.T) {
	dir := t.TempDir()
	ts := openTestStore(t, dir, nil)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "i", 0, PartitionConfig{SegmentBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	try := func(b []byte) (ProduceResult, error) {
		return ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Acks: -1, Records: b})
	}
	var seq int32
	var offsets []int64
	for i := 0; i < 12; i++ { // enough to roll several times, so snapshots are written
		res, err := try(idemBatch(7, 0, seq, 3))
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, res.BaseOffset)
		seq += 3
	}
	// A retry of one of the last five batches gets its original offset and
	// appends nothing.
	before, _ := ts.DescribePartition(ctx, "i", 0)
	res, err := try(idemBatch(7, 0, seq-6, 3))
	if err != nil || res.BaseOffset != offsets[len(offsets)-2] {
		t.Fatalf("duplicate: %+v %v, want offset %d", res, err, offsets[len(offsets)-2])
	}
	after, _ := ts.DescribePartition(ctx, "i", 0)
	if after.LogEndOffset != before.LogEndOffset {
		t.Fatal("duplicate was appended")
	}
	if _, err := try(idemBatch(7, 0, seq+1, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	// Other producers are independent; a non-idempotent batch is unaffected.
	if _, err := try(idemBatch(8, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	produce(t, ts.Store, "i", 0, logtest.Batch(1, logtest.Record{Value: []byte("plain")}))

	// The state survives a restart, rebuilt from snapshots and the tail.
	ts = ts.reopen(t)
	defer ts.close(t)
	res, err = ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 0, seq-3, 3)})
	if err != nil || res.BaseOffset != offsets[len(offsets)-1] {
		t.Fatalf("duplicate after restart: %+v %v, want %d", res, err, offsets[len(offsets)-1])
	}
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 0, seq+5, 1)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after restart: %v", err)
	}
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 0, seq, 1)}); err != nil {
		t.Fatalf("next in sequence after restart: %v", err)
	}
	// A bumped epoch must restart at 0; then the old epoch is fenced.
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 1, 4, 1)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch not at 0: %v", err)
	}
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Records: idemBatch(7, 0, seq+1, 1)}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced epoch: %v", err)
	}
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	f.Add(encodeProducers(map[int64]*producerState{1: {epoch: 2, n: 1, recent: [producerWindow]seqEntry{{0, 4, 10, 14}}}}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeProducers(b)
		if err != nil {
			return
		}
		if m2, err := decodeProducers(encodeProducers(m)); err != nil || len(m2) != len(m) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
