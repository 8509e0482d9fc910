package nativetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// sdkRoundTrip creates a topic, produces n records idempotently over all
// partitions and reads every one back once.
func sdkRoundTrip(t *testing.T, addr, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, addr, client.Options{ClientID: "nativetest"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, topic, 4, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{Compression: client.CompressionLZ4})
	recs := make([]*client.Record, n)
	for i := range recs {
		recs[i] = &client.Record{Topic: topic, Partition: -1, Key: fmt.Appendf(nil, "key-%d", i%13), Value: fmt.Appendf(nil, "value-%d", i)}
	}
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: topic, Start: client.StartEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	got := map[string]int64{}
	for len(got) < n || !co.CaughtUp() {
		msgs, err := co.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if _, dup := got[string(m.Value)]; dup {
				t.Fatalf("%s read twice", m.Value)
			}
			got[string(m.Value)] = m.Offset
		}
	}
	for _, r := range recs {
		if off, ok := got[string(r.Value)]; !ok || off != r.Offset {
			t.Fatalf("%s: acked at offset %d, read at %d (found %v)", r.Value, r.Offset, off, ok)
		}
	}
	d, err := cl.Describe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, ps := range d.Partitions {
		sum += ps.HighWatermark
	}
	if sum != int64(n) {
		t.Fatalf("high watermarks sum to %d, want %d", sum, n)
	}
}

func TestSDKAgainstServe(t *testing.T) {
	nativeAddr, _ := serve(t)
	sdkRoundTrip(t, nativeAddr, "sdk-serve", 2000)
	// Admin through the controller: a config set natively is the topic's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, nativeAddr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.AlterConfigs(ctx, "sdk-serve", map[string]string{"retention.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	d, err := cl.Describe(ctx, "sdk-serve")
	if err != nil {
		t.Fatal(err)
	}
	if d.Configs["retention.ms"] != "3600000" {
		t.Fatalf("configs after AlterConfigs: %v", d.Configs)
	}
	if at, err := cl.OffsetForTime(ctx, "sdk-serve", 0, time.Now().Add(-time.Hour)); err != nil || at != 0 {
		t.Fatalf("offset an hour ago: %d, %v", at, err)
	}
	if err := cl.DeleteTopic(ctx, "sdk-serve"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Topic(ctx, "sdk-serve"); !errors.Is(err, client.ErrUnknownTopic) {
		t.Fatalf("deleted topic: %v", err)
	}
}

// TestSDKSeparateProcesses runs a controller, a store and two `aerostream
// gateway native` processes: one routing by partition leader over every
// store the controller lists, one pinned to the store's ring
// (gateway.ring_addr).
func TestSDKSeparateProcesses(t *testing.T) {
	dir := t.TempDir()
	ctl, ringAddr := freeAddr(t), freeAddr(t)
	cp := startProc(t, "controller", nil, "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", ctl, "--controller.bootstrap")
	cp.waitLog(t, `msg=running`)
	sp := startProc(t, "store", nil, "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", ringAddr,
		"--controller.join", ctl, "--controller.node_id", "2", "--kafka-listen", "", "--native-listen", "", "--http-listen", "")
	sp.waitLog(t, `msg="registered with the controller"`)
	// A Kafka gateway: the native gateways reach the cluster's producer
	// id allocator and group coordinators through it.
	kafkaAddr := freeAddr(t)
	kg := startProc(t, "gateway kafka", nil, "gateway", "kafka", "--kafka-listen", kafkaAddr, "--native-listen", "", "--http-listen", "",
		"--controller.join", ctl, "--gateway.node_id", "1001", "--data-dir", filepath.Join(dir, "k"))
	kg.waitLog(t, `msg=running`)
	routed, pinned := freeAddr(t), freeAddr(t)
	g1 := startProc(t, "gateway native (routed)", nil, "gateway", "native", "--native-listen", routed,
		"--controller.join", ctl, "--gateway.node_id", "2001")
	g1.waitLog(t, `msg=running .*routing="by partition leader"`)
	g2 := startProc(t, "gateway native (pinned)", nil, "gateway", "native", "--native-listen", pinned, "--gateway.ring_addr", ringAddr,
		"--controller.join", ctl, "--gateway.node_id", "2002")
	g2.waitLog(t, `msg=running .*routing="ring_addr override"`)
	sdkRoundTrip(t, routed, "sdk-routed", 1000)
	sdkRoundTrip(t, pinned, "sdk-pinned", 1000)
	// Producer ids come from the Kafka gateway's allocator: its blocks
	// carry its node id in the low 16 bits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, routed, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.InitProducerID(ctx)
	cl.Close()
	if err != nil || id < 1<<16 || id&0xffff != 1001 {
		t.Fatalf("InitProducerID through gateway native: %d (node %d), %v; want an id of Kafka gateway 1001's blocks", id, id&0xffff, err)
	}
	for _, p := range []*proc{g1, g2, kg, sp, cp} {
		if code := p.stop(t); code != 0 {
			t.Errorf("%s exit %d:\n%s", p.name, code, p.text())
		}
	}
}
