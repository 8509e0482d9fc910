package kafka

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMaxMessageBytesOneCheck: max.message.bytes is enforced once, by the
// store, with the partition's effective value. The gateway used to check
// it too, against the topic's own config or the static default only, so a
// dynamic cluster default (message.max.bytes) above 1 MiB still refused a
// 1.5 MiB batch.
func TestMaxMessageBytesOneCheck(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr, kgo.DefaultProduceTopic("big"), kgo.RecordRetries(1),
		kgo.ProducerBatchMaxBytes(4<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))

	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "message.max.bytes", kmsg.StringPtr("2097152")
	r.Configs = append(r.Configs, c)
	ia.Resources = append(ia.Resources, r)
	if resp, err := ia.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter message.max.bytes: %+v %v", resp, err)
	}
	if _, err := e.cluster.CreateTopic(ctx, CreateTopic{Name: "big", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}

	value := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b) // incompressible
		return b
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(1536 << 10)}).FirstErr(); err != nil {
		t.Fatalf("1.5 MiB under a 2 MiB cluster default: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(2560 << 10)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("2.5 MiB over a 2 MiB cluster default: %v", err)
	}
}
