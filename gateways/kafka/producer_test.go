package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/logtest"
)

func initProducerID(t *testing.T, e *testEnv) int64 {
	t.Helper()
	cl := newClient(t, e.addr)
	resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("InitProducerID: %+v %v", resp, err)
	}
	return resp.ProducerID
}

// TestProducerIDsNeverRepeat: ids are unique, also after a restart.
func TestProducerIDsNeverRepeat(t *testing.T) {
	e := newTestEnv(t)
	seen := map[int64]bool{}
	for i := 0; i < 5; i++ {
		id := initProducerID(t, e)
		if seen[id] || id < 0 {
			t.Fatalf("producer id %d handed out twice (or negative)", id)
		}
		seen[id] = true
	}
	e.stopGateway()
	e.start()
	for i := 0; i < 5; i++ {
		id := initProducerID(t, e)
		if seen[id] {
			t.Fatalf("producer id %d handed out again after a restart", id)
		}
		seen[id] = true
	}
	// A transactional id draws from the same blocks (txn_coordinator.go);
	// a timeout beyond transaction.max.timeout.ms is refused.
	cl := newClient(t, e.addr)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr("txn")
	req.TransactionTimeoutMillis = 16 * 60 * 1000
	resp, err := cl.Broker(int(e.gw.opts.NodeID)).Request(testCtx(t), req)
	if err != nil || resp.(*kmsg.InitProducerIDResponse).ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("transactional InitProducerID with a 16 minute timeout: %+v %v", resp, err)
	}
	pid, _ := initTxnProducer(t, cl, "txn", 60000)
	if seen[pid] {
		t.Fatalf("transactional producer id %d handed out twice", pid)
	}
}

// TestIdempotentDuplicate: a retried idempotent batch is acknowledged with
// its original offset and stored once; a sequence gap is refused.
func TestIdempotentDuplicate(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "idem", 1)
	pid := initProducerID(t, e)
	ctx := testCtx(t)

	batch := func(seq int32, n int) []byte {
		recs := make([]logtest.Record, n)
		for i := range recs {
			recs[i] = logtest.Record{Value: bytes.Repeat([]byte{byte(seq)}, 8), TimestampDelta: int64(i)}
		}
		return logtest.WithProducer(logtest.Batch(1, recs...), pid, 0, seq)
	}
	produce := func(records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "idem"
		topic, _ := e.cluster.Topic(ctx, "idem")
		rt.TopicID = topic.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	first := produce(batch(0, 3))
	second := produce(batch(3, 2))
	if first.ErrorCode != 0 || second.ErrorCode != 0 || first.BaseOffset != 0 || second.BaseOffset != 3 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	again := produce(batch(3, 2)) // the retry of the second batch
	if again.ErrorCode != 0 || again.BaseOffset != 3 {
		t.Fatalf("duplicate answered %+v, want offset 3 and no error", again)
	}
	gap := produce(batch(10, 1))
	if gap.ErrorCode == 0 {
		t.Fatalf("a sequence gap was accepted: %+v", gap)
	}
	info, err := e.backend.DescribePartition(ctx, "idem", 0)
	if err != nil || info.HighWatermark != 5 {
		t.Fatalf("partition holds %d records (%v), want 5", info.HighWatermark, err)
	}
}
