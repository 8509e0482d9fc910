package kafka

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// refusingBackend refuses the next refuse ProduceBatch calls as a store
// whose lease on leadership ran out does, and passes the rest on.
type refusingBackend struct {
	ring.Backend
	refuse atomic.Int32
}

func (b *refusingBackend) ProduceBatch(ctx context.Context, parts []ring.ProducePart) {
	if b.refuse.Add(-1) >= 0 {
		for i := range parts {
			parts[i].Err = ring.ErrNotLeader
		}
		return
	}
	b.Backend.ProduceBatch(ctx, parts)
}

// TestProduceRefusedSequenceHoldsLaterOnes: a producer new to a partition
// pipelines two batches; the first is refused for a retriable reason.
// The second must not be written ahead of it (the store, knowing nothing
// of the producer, would take any sequence, and the first one's retry
// would then be OUT_OF_ORDER_SEQUENCE_NUMBER): it is refused with
// OUT_OF_ORDER_SEQUENCE_NUMBER, and both go through, in order, once the
// first is retried.
func TestProduceRefusedSequenceHoldsLaterOnes(t *testing.T) {
	rb := &refusingBackend{}
	e := newTestEnv(t, func(o *Options) { rb.Backend = o.Backend; o.Backend = rb })
	ctx := context.Background()
	if _, err := e.cluster.CreateTopic(ctx, CreateTopic{Name: "seq", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	produce := func(epoch int16, seq int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "seq"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = logtest.WithProducer(logtest.Filler(1, 2, 20, byte(seq)), 42, epoch, seq)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := e.gw.handleProduce(ctx, &reqCtx{version: req.Version, req: req})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	want := func(what string, got kmsg.ProduceResponseTopicPartition, code int16, offset int64) {
		t.Helper()
		if got.ErrorCode != code || code == 0 && got.BaseOffset != offset {
			t.Fatalf("%s: code %d (%v), base offset %d; want code %d, offset %d",
				what, got.ErrorCode, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, code, offset)
		}
	}

	rb.refuse.Store(1)
	want("first batch, refused", produce(0, 0), kerr.NotLeaderForPartition.Code, -1)
	want("second batch, ahead of the first", produce(0, 2), kerr.OutOfOrderSequenceNumber.Code, -1)
	want("first batch, retried", produce(0, 0), 0, 0)
	want("second batch, retried", produce(0, 2), 0, 2)
	want("third batch", produce(0, 4), 0, 4)

	// A refusal at one epoch does not hold back the next epoch, which
	// starts again at 0.
	rb.refuse.Store(1)
	want("epoch 0, refused", produce(0, 6), kerr.NotLeaderForPartition.Code, -1)
	want("epoch 1, first batch", produce(1, 0), 0, 6)
	want("epoch 1, second batch", produce(1, 2), 0, 8)
	if n := e.gw.seqs.holds(); n != 0 {
		t.Fatalf("%d holds left after the writes", n)
	}
}

// holds counts the guard's holds.
func (g *seqGuard) holds() int {
	n := 0
	for i := range g.shards {
		n += int(g.shards[i].n.Load())
	}
	return n
}
