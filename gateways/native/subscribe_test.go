package native_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// TestSubscribePushes: a push consumer gets what is there and what comes,
// in order, with a credit window far smaller than the data, so it only
// gets it all if the credit it gives back works.
func TestSubscribePushes(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "s", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{BatchBytes: 4096})
	produce := func(from, to int) error {
		for i := from; i < to; i++ {
			p.Produce(ctx, &client.Record{Topic: "s", Partition: int32(i % 2), Value: fmt.Appendf(nil, "%06d-%0500d", i, 0)}, nil)
		}
		return p.Flush(ctx)
	}
	if err := produce(0, 500); err != nil {
		t.Fatal(err)
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "s", Start: client.StartEarliest, Push: true, CreditBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	next := map[int32]int{0: 0, 1: 1}
	got := 0
	read := func(want int) {
		for got < want {
			msgs, err := co.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				var i int
				fmt.Sscanf(string(m.Value[:6]), "%d", &i)
				if i != next[m.Partition] {
					t.Fatalf("partition %d: got %d, want %d", m.Partition, i, next[m.Partition])
				}
				next[m.Partition] += 2
				got++
			}
		}
	}
	read(500)
	produced := make(chan error, 1)
	go func() { produced <- produce(500, 600) }()
	read(600)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
}

// TestCreditNeverGivenBack: a subscriber that never gives credit back is
// told why (THROTTLING_QUOTA_EXCEEDED) and its connection closes after
// StallTimeout; another client carries on.
func TestCreditNeverGivenBack(t *testing.T) {
	e := newEnv(t, func(o *native.Options) { o.StallTimeout = 200 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti, err := cl.CreateTopic(ctx, "c", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	if err := p.ProduceSync(ctx, &client.Record{Topic: "c", Partition: 0, Value: make([]byte, 1000)}); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	frame := func(op wire.Opcode, corr uint32, fill func([]byte) []byte) []byte {
		b := wire.AppendHeader(nil, op, 0)
		b = wire.AppendU32(b, corr)
		b = fill(b)
		wire.PutLength(b)
		return b
	}
	hs := wire.Handshake{Version: 1}
	sub := wire.Subscribe{MaxBytes: 1 << 20, CreditBytes: 1, Partitions: []wire.SubscribePartition{{TopicID: ti.ID, Partition: 0}}}
	if _, err := nc.Write(append(frame(wire.OpHandshake, 1, hs.Append), frame(wire.OpSubscribe, 2, sub.Append)...)); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	var ops []wire.Opcode
	var last wire.Head
	for len(all) > 0 {
		op, payload, rest, err := wire.SplitFrame(all, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		r := wire.NewReader(payload)
		last = wire.ReadHead(&r)
		ops = append(ops, op)
		all = rest
	}
	// Handshake, the Subscribe's answer, one push (the first batch exceeds
	// the window: a push always carries a whole batch), then the Error.
	if len(ops) != 4 || ops[3] != wire.OpError || last.Code != kerr.ThrottlingQuotaExceeded.Code || last.Corr != 2 {
		t.Fatalf("frames %v, last %+v", ops, last)
	}
	if _, err := cl.ListTopics(ctx); err != nil {
		t.Fatalf("the other client: %v", err)
	}
	_ = p.Close(ctx)
}
