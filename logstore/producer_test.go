package logstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
	"time"

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
	defer func() { ts.close(t) }() // ts is reopened below
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

// TestProducerExpiration checks that a producer idle for longer than
// ProducerIDExpiration is forgotten at the next retention check, so its
// next batch is taken as a new producer's, while a recent one keeps its
// sequence checks; and that the append time survives a snapshot.
func TestProducerExpiration(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) {
		o.ProducerIDExpiration = time.Hour
		o.RetentionCheckInterval = time.Hour // the test runs the check itself
	})
	defer ts.close(t)
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "i", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int64{7, 8} {
		for seq := int32(0); seq < 3; seq++ {
			if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Acks: -1, Records: idemBatch(pid, 0, seq, 1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Now()
	runOnShard(t, ts.Store, "i", 0, func(s *shard, p *partition) {
		if st := p.producers[7]; st == nil || now.UnixMilli()-st.lastTs > time.Minute.Milliseconds() {
			t.Errorf("producer 7's last append time: %+v", st)
			return
		}
		p.producers[7].lastTs = now.Add(-2 * time.Hour).UnixMilli()
		s.retention(now)
		if p.producers[7] != nil || p.producers[8] == nil {
			t.Errorf("after the check: producer 7 %v (want gone), producer 8 %v (want kept)", p.producers[7], p.producers[8])
		}
	})
	// Forgotten: a batch past a gap is a new producer's, as in Kafka.
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Acks: -1, Records: idemBatch(7, 0, 10, 1)}); err != nil {
		t.Fatalf("expired producer's next batch: %v", err)
	}
	// Kept: its sequence is still checked.
	if _, err := ts.Produce(ctx, &ProduceRequest{Topic: "i", Partition: 0, Acks: -1, Records: idemBatch(8, 0, 10, 1)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("recent producer's gap: %v", err)
	}

	m := map[int64]*producerState{1: {epoch: 2, n: 1, recent: [producerWindow]seqEntry{{0, 4, 10, 14}}, lastTs: 12345}}
	if got, err := decodeProducers(encodeProducers(m), 999); err != nil || got[1].lastTs != 12345 {
		t.Fatalf("snapshot round trip: %+v %v", got[1], err)
	}
	v1 := encodeProducersV1(m)
	if got, err := decodeProducers(v1, 999); err != nil || got[1].lastTs != 999 || got[1].n != 1 || got[1].recent[0] != m[1].recent[0] {
		t.Fatalf("version 1 snapshot: %+v %v", got[1], err)
	}
}

// encodeProducersV1 writes the version 1 snapshot layout (no append
// times), as the last release did.
func encodeProducersV1(m map[int64]*producerState) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
	for id, st := range m {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(st.epoch))
		b = appendEntries(b, st)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	m := map[int64]*producerState{1: {epoch: 2, n: 1, recent: [producerWindow]seqEntry{{0, 4, 10, 14}}, lastTs: 1700000000000}}
	f.Add(encodeProducers(m))
	f.Add(encodeProducersV1(m))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeProducers(b, 0)
		if err != nil {
			return
		}
		if m2, err := decodeProducers(encodeProducers(m), 0); err != nil || len(m2) != len(m) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeProducerSnapshotBody fuzzes what the checksum guards, which
// random bytes almost never get past: the body is given its CRC32C, and
// whatever decodes must encode to a snapshot that decodes to the same
// bytes again, producers and transaction state alike.
func FuzzDecodeProducerSnapshotBody(f *testing.F) {
	m := map[int64]*producerState{1: {epoch: 2, n: 1, recent: [producerWindow]seqEntry{{0, 4, 10, 14}}, lastTs: 1700000000000}}
	txn := &txnState{ongoing: map[int64]int64{1: 10}, aborted: []AbortedTxn{{ProducerID: 3, FirstOffset: 5, LastOffset: 9}}}
	for _, b := range [][]byte{encodeSnapshot(m, txn), encodeProducers(m), encodeProducersV1(m)} {
		f.Add(b[:len(b)-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.BigEndian.AppendUint32(slices.Clip(body), crc32.Checksum(body, crcTable))
		m, txn, err := decodeSnapshot(b, 7)
		if err != nil {
			if !errors.Is(err, ErrCorruptSegment) {
				t.Fatalf("error without ErrCorruptSegment: %v", err)
			}
			return
		}
		once := encodeSnapshot(m, &txn)
		m2, txn2, err := decodeSnapshot(once, 0)
		if err != nil {
			t.Fatalf("re-encoded snapshot: %v", err)
		}
		if twice := encodeSnapshot(m2, &txn2); !bytes.Equal(once, twice) {
			t.Fatalf("encode(decode(x)) is no fixed point:\n%x\n%x", once, twice)
		}
	})
}
