package kafka

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// instantBackend acknowledges every produce at once, so a benchmark over
// it measures the gateway's own work per request.
type instantBackend struct {
	ring.Backend
	calls, batches atomic.Int64
}

func (b *instantBackend) Produce(context.Context, *ring.ProduceRequest) (ring.ProduceResult, error) {
	b.calls.Add(1)
	return ring.ProduceResult{BaseOffset: 1, LogAppendTime: -1}, nil
}

func (b *instantBackend) ProduceBatch(ctx context.Context, parts []ring.ProducePart) {
	b.batches.Add(1)
	for i := range parts {
		parts[i].Result, parts[i].Err = ring.ProduceResult{BaseOffset: 1, LogAppendTime: -1}, nil
	}
}

// produceBench builds a gateway over an instantBackend with a 32-partition
// topic, and an acks=1 request carrying a batch for each partition.
func produceBench(tb testing.TB) (*Gateway, *instantBackend, *kmsg.ProduceRequest) {
	be := &instantBackend{}
	cl := newMemCluster(be)
	cl.mu.topics["bench"] = &Topic{Name: "bench", ID: [16]byte{1}, Partitions: 32, Configs: map[string]string{}}
	g, err := New(Options{Backend: be, Cluster: cl, Logger: quietLogger(), AdvertisedAddr: "127.0.0.1:9092"})
	if err != nil {
		tb.Fatal(err)
	}
	batch := logtest.Batch(1, logtest.Record{Value: make([]byte, 1024)})
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := int32(0); p < 32; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return g, be, req
}

// TestProduceIsOneBackendCall: a request over 32 partitions reaches the
// backend as one ProduceBatch, not as a call (and a goroutine) per
// partition.
func TestProduceIsOneBackendCall(t *testing.T) {
	g, be, req := produceBench(t)
	resp, err := g.handleProduce(context.Background(), &reqCtx{version: req.Version, req: req})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 || p.BaseOffset != 1 {
			t.Fatalf("partition %d: code %d, base offset %d", p.Partition, p.ErrorCode, p.BaseOffset)
		}
	}
	if n, b := be.calls.Load(), be.batches.Load(); n != 0 || b != 1 {
		t.Fatalf("%d Produce calls and %d ProduceBatch calls, want 0 and 1", n, b)
	}
}

// BenchmarkProduce32Partitions: one acks=1 produce request carrying a
// batch for each of 32 partitions, through the produce handler.
func BenchmarkProduce32Partitions(b *testing.B) {
	g, _, req := produceBench(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rc := &reqCtx{key: 0, version: req.Version, req: req}
		resp, err := g.handleProduce(ctx, rc)
		if err != nil {
			b.Fatal(err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[31]; p.ErrorCode != 0 || p.BaseOffset != 1 {
			b.Fatalf("partition 31: code %d, base offset %d", p.ErrorCode, p.BaseOffset)
		}
	}
}
