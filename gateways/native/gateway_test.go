package native_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

func TestProduceConsume(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "orders", 3, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, codec := range []int16{client.CompressionNone, client.CompressionZstd} {
		p := client.NewProducer(cl, client.ProducerOptions{Compression: codec})
		var recs []*client.Record
		for i := range 100 {
			recs = append(recs, &client.Record{Topic: "orders", Partition: -1, Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i)})
		}
		if err := p.ProduceSync(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "orders", Start: client.StartEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	got := map[string]int{}
	byKey := map[string]int32{}
	for len(got) < 100 || !co.CaughtUp() {
		msgs, err := co.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got[string(m.Value)]++
			if p, ok := byKey[string(m.Key)]; ok && p != m.Partition {
				t.Fatalf("key %s in partitions %d and %d", m.Key, p, m.Partition)
			}
			byKey[string(m.Key)] = m.Partition
		}
	}
	for i := range 100 {
		if n := got[fmt.Sprintf("v%d", i)]; n != 2 {
			t.Fatalf("v%d read %d times, want 2 (once per codec)", i, n)
		}
	}
	if err := cl.AlterConfigs(ctx, "orders", map[string]string{"retention.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	d, err := cl.Describe(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if d.Configs["retention.ms"] != "3600000" {
		t.Fatalf("configs after AlterConfigs: %v", d.Configs)
	}
	var total int64
	for _, p := range d.Partitions {
		total += p.HighWatermark
	}
	if total != 200 {
		t.Fatalf("high watermarks sum to %d, want 200", total)
	}
}

func TestFollowLongPoll(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "f", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "f", MaxWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	polled := make(chan []client.Message, 1)
	go func() {
		msgs, _ := co.Poll(ctx)
		polled <- msgs
	}()
	p := client.NewProducer(cl, client.ProducerOptions{Acks: 1})
	if err := p.ProduceSync(ctx, &client.Record{Topic: "f", Partition: 0, Value: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	msgs := <-polled
	if len(msgs) != 1 || string(msgs[0].Value) != "hello" {
		t.Fatalf("long poll got %+v", msgs)
	}
}

// TestBadFramesCloseOnlyTheirConnection sends frames a gateway must refuse
// and checks each gets an Error frame with a code, then EOF, while another
// client carries on.
func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	hs := func() []byte {
		m := wire.Handshake{Version: 1}
		b := wire.AppendHeader(nil, wire.OpHandshake, 0)
		b = wire.AppendU32(b, 1)
		b = m.Append(b)
		wire.PutLength(b)
		return b
	}
	cases := []struct {
		name  string
		bytes []byte
		code  int16
	}{
		{"bad magic", []byte{0x00, 1, 1, 0, 0, 0, 4, 0, 0, 0, 1}, kerr.InvalidRequest.Code},
		{"version 9", []byte{0xAE, 9, 1, 0, 0, 0, 4, 0, 0, 0, 1}, kerr.UnsupportedVersion.Code},
		{"oversized", []byte{0xAE, 1, 4, 0x7F, 0xFF, 0xFF, 0xFF}, kerr.InvalidRequest.Code},
		{"unknown opcode", append(hs(), 0xAE, 1, 0x55, 0, 0, 0, 4, 0, 0, 0, 2), kerr.InvalidRequest.Code},
		{"before handshake", []byte{0xAE, 1, byte(wire.OpListTopics), 0, 0, 0, 4, 0, 0, 0, 1}, kerr.IllegalSaslState.Code},
		{"truncated body", append(hs(), 0xAE, 1, byte(wire.OpProduce), 0, 0, 0, 6, 0, 0, 0, 2, 1, 2), kerr.InvalidRequest.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Write(c.bytes); err != nil {
				t.Fatal(err)
			}
			all, err := io.ReadAll(nc)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var last wire.Head
			for len(all) > 0 {
				_, payload, rest, err := wire.SplitFrame(all, 1<<20)
				if err != nil {
					t.Fatalf("response: %v", err)
				}
				r := wire.NewReader(payload)
				last = wire.ReadHead(&r)
				all = rest
			}
			if last.Code != c.code || last.Message == "" {
				t.Fatalf("last response code %d %q, want code %d with a message", last.Code, last.Message, c.code)
			}
		})
	}
	if _, err := good.ListTopics(ctx); err != nil {
		t.Fatalf("the good client after the bad ones: %v", err)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Topic(ctx, "nope"); !errors.Is(err, client.ErrUnknownTopic) || !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", err)
	}
	if _, err := cl.CreateTopic(ctx, "x", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateTopic(ctx, "x", 1, 1, nil); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	defer p.Close(ctx)
	if err := p.ProduceSync(ctx, &client.Record{Topic: "x", Partition: 5, Value: []byte("v")}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("partition 5 of 1: %v", err)
	}
}

// TestProducerBatchesStayUnderBatchBytes: records produced while a
// partition's batch is in flight go into batches of at most BatchBytes,
// not one that outgrows the topic's max.message.bytes (the bench met
// MESSAGE_TOO_LARGE at full speed when they piled into one).
func TestProducerBatchesStayUnderBatchBytes(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "big", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{BatchBytes: 256 << 10, MaxBufferedBytes: 64 << 20})
	recs := make([]*client.Record, 8000)
	for i := range recs {
		recs[i] = &client.Record{Topic: "big", Partition: 0, Value: make([]byte, 1024)}
	}
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, r.Offset)
		}
	}
}
