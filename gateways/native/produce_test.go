package native_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// TestProduceManySamePartitionTwice: a request naming one partition twice
// is appended in one backend call, in the request's order, without
// waiting for itself; the next request to the partition lands after both.
func TestProduceManySamePartitionTwice(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti, err := cl.CreateTopic(ctx, "twice", 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(v string) []byte {
		var bb wire.BatchBuilder
		bb.Add(1, nil, []byte(v), nil)
		b, err := bb.AppendBatch(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rc := dialRaw(t, e.addr)
	req := wire.ProduceMany{Acks: 1, TimeoutMs: 10000, Partitions: []wire.ManyPart{
		{TopicID: ti.ID, Partition: 0, Records: batch("a")},
		{TopicID: ti.ID, Partition: 1, Records: batch("x")},
		{TopicID: ti.ID, Partition: 0, Records: batch("b")},
	}}
	rc.send(wire.OpProduceMany, 7, req.Append)
	req.Partitions = req.Partitions[:1]
	req.Partitions[0].Records = batch("c")
	rc.send(wire.OpProduceMany, 8, req.Append)
	want := map[uint32][]int64{7: {0, 0, 1}, 8: {2}}
	for range want {
		_, corr, r := rc.readCorr()
		var out wire.ProduceManyResponse
		if err := out.Decode(r); err != nil {
			t.Fatal(err)
		}
		offs, ok := want[corr]
		if !ok || len(out.Partitions) != len(offs) {
			t.Fatalf("corr %d answered with %+v", corr, out.Partitions)
		}
		for i, res := range out.Partitions {
			if res.Code != 0 || res.BaseOffset != offs[i] {
				t.Errorf("corr %d result %d: %+v, want base offset %d", corr, i, res, offs[i])
			}
		}
	}
}

// BenchmarkProduceManyPartitions: the SDK producer writing 1 KiB records
// round robin over 32 partitions with acks=1 (the seed's workload), so
// each ProduceMany carries many partitions and the gateway's per-request
// cost of fanning them out to the store shows; with one request out per
// connection (the producer before pipelining) and with five, as the
// bench's producers run.
func BenchmarkProduceManyPartitions(b *testing.B) {
	for _, inflight := range []int{1, 5} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) { benchProduceMany(b, inflight) })
	}
}

func benchProduceMany(b *testing.B, inflight int) {
	e := newEnv(b)
	ctx := context.Background()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	const partitions = 32
	if _, err := cl.CreateTopic(ctx, "bench", partitions, 1, nil); err != nil {
		b.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{NotIdempotent: true, Acks: 1, MaxInFlight: inflight})
	defer p.Close(ctx)
	value := bytes.Repeat([]byte("v"), 1024)
	var failed error
	var mu sync.Mutex
	done := func(_ *client.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = err
			mu.Unlock()
		}
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.Produce(ctx, &client.Record{Topic: "bench", Partition: int32(i % partitions), Value: value}, done)
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		b.Fatal(failed)
	}
}

// BenchmarkProduceManyRequest: one ProduceMany of 32 partitions, a 1 KiB
// record each, acks=1, per op, each answered before the next is sent, so
// the gateway's cost per request (its fan-out to the store) is not
// diluted across pipelined records.
func BenchmarkProduceManyRequest(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	const partitions = 32
	ti, err := cl.CreateTopic(ctx, "benchreq", partitions, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	var h [wire.HeaderSize]byte
	var p, out []byte
	roundTrip := func(op wire.Opcode, fill func([]byte) []byte) *wire.Reader {
		out = wire.AppendHeader(out[:0], op, 0)
		out = wire.AppendU32(out, 1)
		out = fill(out)
		wire.PutLength(out)
		if _, err := nc.Write(out); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, h[:]); err != nil {
			b.Fatal(err)
		}
		_, n, err := wire.ParseHeader(h[:], 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		if cap(p) < n {
			p = make([]byte, n)
		}
		p = p[:n]
		if _, err := io.ReadFull(br, p); err != nil {
			b.Fatal(err)
		}
		r := wire.NewReader(p)
		if hd := wire.ReadHead(&r); hd.Code != 0 {
			b.Fatalf("%v: code %d: %s", op, hd.Code, hd.Message)
		}
		return &r
	}
	roundTrip(wire.OpHandshake, (&wire.Handshake{Version: 1}).Append)
	var bb wire.BatchBuilder
	bb.Add(1, nil, bytes.Repeat([]byte("v"), 1024), nil)
	batch, err := bb.AppendBatch(nil)
	if err != nil {
		b.Fatal(err)
	}
	req := wire.ProduceMany{Acks: 1, TimeoutMs: 10000}
	for i := range int32(partitions) {
		req.Partitions = append(req.Partitions, wire.ManyPart{TopicID: ti.ID, Partition: i, Records: batch})
	}
	var resp wire.ProduceManyResponse
	b.SetBytes(partitions * 1024)
	b.ReportAllocs()
	for b.Loop() {
		if err := resp.Decode(roundTrip(wire.OpProduceMany, req.Append)); err != nil {
			b.Fatal(err)
		}
		for _, res := range resp.Partitions {
			if res.Code != 0 {
				b.Fatalf("partition %d: code %d: %s", res.Partition, res.Code, res.Message)
			}
		}
	}
}
