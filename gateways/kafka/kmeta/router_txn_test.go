package kmeta

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// txnBatch is a transactional batch of producer pid: its records stay
// above the last stable offset until a marker ends its transaction.
func txnBatch(pid int64) []byte {
	b := logtest.WithProducer(logtest.Filler(1, 1, 16, byte(pid)), pid, 0, 0)
	const attrs, crc, transactional = 21, 17, 0x10
	binary.BigEndian.PutUint16(b[attrs:], binary.BigEndian.Uint16(b[attrs:])|transactional)
	binary.BigEndian.PutUint32(b[crc:], crc32.Checksum(b[attrs:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A read_committed fetch over partitions led by different stores reads
// each one up to its last stable offset, as one store would: the
// records of an open transaction are not returned.
func TestRouterFanOutFetchReadCommitted(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2), bothStores)
	for p := int32(0); p < 2; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
		_, err := ts.r.Produce(rctx(t), &ring.ProduceRequest{Topic: "t", Partition: p, Acks: 1, Records: txnBatch(int64(10 + p))})
		if err != nil {
			t.Fatalf("produce t/%d: %v", p, err)
		}
	}
	for _, level := range []int8{ring.ReadUncommitted, ring.ReadCommitted} {
		res, err := ts.r.Fetch(rctx(t), &ring.FetchRequest{IsolationLevel: level, Partitions: []ring.FetchPartition{
			{Topic: "t", Partition: 0, MaxBytes: 1 << 20},
			{Topic: "t", Partition: 1, MaxBytes: 1 << 20},
		}})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res.Partitions {
			if r.Err != nil || r.HighWatermark != 1 || r.LastStableOffset != 0 {
				t.Fatalf("isolation %d, t/%d: err %v, high watermark %d, last stable %d; want 1 and 0",
					level, i, r.Err, r.HighWatermark, r.LastStableOffset)
			}
			if got := r.Records.Size() > 0; got != (level == ring.ReadUncommitted) {
				t.Errorf("isolation %d, t/%d: %d bytes of an open transaction returned", level, i, r.Records.Size())
			}
		}
		res.Release()
	}
}
