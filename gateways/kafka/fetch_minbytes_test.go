package kafka

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// enteringBackend reports each Fetch as it reaches the store, so a test
// can act while a fetch is long-polling.
type enteringBackend struct {
	ring.Backend
	entered chan struct{}
}

func (b *enteringBackend) Fetch(ctx context.Context, req *ring.FetchRequest) (ring.FetchResult, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	return b.Backend.Fetch(ctx, req)
}

// TestFetchWaitsForMinBytes: a fetch finding less than MinBytes waits up
// to MaxWait for more, rather than answering with the little there is, and
// answers as soon as enough has arrived; sessionless and within a KIP-227
// session alike.
func TestFetchWaitsForMinBytes(t *testing.T) {
	eb := &enteringBackend{entered: make(chan struct{}, 1)}
	e := newTestEnv(t, func(o *Options) { eb.Backend = o.Backend; o.Backend = eb })
	// Uncompressed, so the bytes produced are the bytes a fetch counts.
	cl := newClient(t, e.addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t)
	createTopic(t, cl, "mb", 1)
	topic, err := e.cluster.Topic(ctx, "mb")
	if err != nil {
		t.Fatal(err)
	}
	produce := func(value []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "mb", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(bytes.Repeat([]byte("s"), 100))

	const minBytes = 64 << 10
	fetch := func(sessionID, epoch int32, offset int64, maxWait time.Duration) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SessionID, req.SessionEpoch = sessionID, epoch
		req.MinBytes, req.MaxWaitMillis, req.MaxBytes = minBytes, int32(maxWait/time.Millisecond), 4<<20
		if epoch <= 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "mb", topic.ID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes = offset, 4<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	size := func(resp *kmsg.FetchResponse) int {
		n := 0
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("partition error %d", rp.ErrorCode)
				}
				n += len(rp.RecordBatches)
			}
		}
		return n
	}

	// Too little data and none coming: the answer, with what there is,
	// comes when MaxWait is up, not before.
	for _, c := range []struct {
		name           string
		session, epoch int32
	}{{"sessionless", 0, -1}, {"new session", 0, 0}} {
		const wait = 300 * time.Millisecond
		start := time.Now()
		resp := fetch(c.session, c.epoch, 0, wait)
		if took := time.Since(start); took < wait {
			t.Errorf("%s: a fetch short of MinBytes answered after %v, before MaxWait %v", c.name, took, wait)
		}
		if n := size(resp); n == 0 {
			t.Errorf("%s: the answer at MaxWait left out the records there were", c.name)
		}
	}

	// Enough data arrives while the fetch waits: the answer carries it.
	waitFor := func(id, epoch int32, offset int64, want int) {
		t.Helper()
		for len(eb.entered) > 0 {
			<-eb.entered
		}
		got := make(chan *kmsg.FetchResponse, 1)
		go func() { got <- fetch(id, epoch, offset, 30*time.Second) }()
		select {
		case <-eb.entered:
		case <-ctx.Done():
			t.Fatal("the fetch never reached the store")
		}
		produce(bytes.Repeat([]byte("b"), minBytes))
		resp := <-got
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch error %d", resp.ErrorCode)
		}
		if n := size(resp); n < want {
			t.Errorf("session %d epoch %d: answered with %d bytes, short of MinBytes %d", id, epoch, n, want)
		}
	}
	waitFor(0, -1, 0, minBytes) // 100 bytes at offset 0, then a big record
	// In a session, the incremental fetch resumes at offset 2, where a
	// small record waits.
	produce(bytes.Repeat([]byte("s"), 100))
	open := fetch(0, 0, 2, 0)
	if open.SessionID == 0 || size(open) == 0 {
		t.Fatalf("no fetch session opened, or it skipped offset 2: %+v", open)
	}
	waitFor(open.SessionID, 1, 2, minBytes)
}
