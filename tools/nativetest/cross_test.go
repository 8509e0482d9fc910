package nativetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// nativeFetchRaw reads a partition's stored bytes from offset 0 through the
// native protocol, without decoding them: what the wire carried.
func nativeFetchRaw(t *testing.T, addr, topic string, partition int32, want int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ti, err := cl.Topic(ctx, topic)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	roundTrip := func(op wire.Opcode, fill func([]byte) []byte) wire.Reader {
		b := wire.AppendHeader(nil, op, 0)
		b = wire.AppendU32(b, 1)
		b = fill(b)
		wire.PutLength(b)
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
		var h [wire.HeaderSize]byte
		if _, err := ioReadFull(nc, h[:]); err != nil {
			t.Fatal(err)
		}
		_, n, err := wire.ParseHeader(h[:], 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, n)
		if _, err := ioReadFull(nc, p); err != nil {
			t.Fatal(err)
		}
		r := wire.NewReader(p)
		if hd := wire.ReadHead(&r); hd.Code != 0 {
			t.Fatalf("%v: code %d %s", op, hd.Code, hd.Message)
		}
		return r
	}
	hs := wire.Handshake{Version: 1}
	roundTrip(wire.OpHandshake, hs.Append)
	f := wire.Fetch{MaxWaitMs: 100, MinBytes: 1, MaxBytes: 4 << 20,
		Partitions: []wire.FetchPartition{{TopicID: ti.ID, Partition: partition, Offset: 0, MaxBytes: 4 << 20}}}
	r := roundTrip(wire.OpFetch, f.Append)
	var resp wire.FetchResponse
	if err := resp.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if c := resp.Partitions[0].Code; c != 0 {
		t.Fatalf("native fetch: code %d", c)
	}
	recs := resp.Partitions[0].Records
	if len(recs) < want {
		t.Fatalf("native fetch returned %d bytes, want at least %d", len(recs), want)
	}
	return recs
}

// kafkaFetchRaw reads the same through the Kafka protocol (Fetch's records
// field: the stored batches as the Kafka gateway sent them). The topic is
// named by the id the native lookup gave: the two protocols share ids.
func kafkaFetchRaw(t *testing.T, addr, topic string, id [16]byte, partition int32) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 4<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, 0, 4<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// The Fetch goes to the partition's leader gateway, as a client's would.
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	p := fr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("kafka fetch: code %d", p.ErrorCode)
	}
	return p.RecordBatches
}

// wholeBatches cuts a fetch's bytes to whole batches (a fetch may end inside
// one).
func wholeBatches(t *testing.T, b []byte) []byte {
	t.Helper()
	rest, n := b, 0
	for {
		_, one, next, ok, err := wire.NextBatch(rest)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return b[:n]
		}
		n += len(one)
		rest = next
	}
}

// TestOneLogTwoProtocols: batches a Kafka client (kcat, librdkafka) wrote
// are read through the native port byte for byte as the Kafka port serves
// them, and batches the native SDK wrote are read by kcat and served by the
// Kafka port byte for byte as the native port serves them.
func TestOneLogTwoProtocols(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is needed on the Kafka side (apt-get install kcat): %v", err)
	}
	nativeAddr, kafkaAddr := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, nativeAddr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"from-kafka", "from-native"} {
		if _, err := cl.CreateTopic(ctx, topic, 1, 1, nil); err != nil {
			t.Fatal(err)
		}
	}

	// Kafka -> native: kcat produces, compressed and not.
	for _, codec := range []string{"none", "snappy", "zstd"} {
		in := ""
		for i := range 20 {
			in += fmt.Sprintf("k%d:%s-%d\n", i, codec, i)
		}
		cmd := exec.CommandContext(ctx, "kcat", "-P", "-b", kafkaAddr, "-t", "from-kafka", "-p", "0", "-K", ":", "-z", codec)
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P -z %s: %v\n%s", codec, err, out)
		}
	}
	ids := map[string][16]byte{}
	for _, topic := range []string{"from-kafka", "from-native"} {
		ti, err := cl.Topic(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ids[topic] = ti.ID
	}
	nb := wholeBatches(t, nativeFetchRaw(t, nativeAddr, "from-kafka", 0, 1))
	kb := wholeBatches(t, kafkaFetchRaw(t, kafkaAddr, "from-kafka", ids["from-kafka"], 0))
	if len(nb) == 0 || !bytes.Equal(nb, kb) {
		t.Fatalf("kcat's batches differ between the ports: native %d bytes, kafka %d bytes", len(nb), len(kb))
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "from-kafka", Start: client.StartEarliest})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 60 {
		msgs, err := co.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, string(m.Key)+":"+string(m.Value))
		}
	}
	co.Close()
	if got[0] != "k0:none-0" || got[59] != "k19:zstd-19" {
		t.Fatalf("native consumer read %q ... %q", got[0], got[59])
	}

	// native -> Kafka.
	p := client.NewProducer(cl, client.ProducerOptions{Compression: client.CompressionGzip})
	var recs []*client.Record
	for i := range 30 {
		recs = append(recs, &client.Record{Topic: "from-native", Partition: 0, Key: fmt.Appendf(nil, "n%d", i), Value: fmt.Appendf(nil, "native-%d", i)})
	}
	if err := p.ProduceSync(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
	nb = wholeBatches(t, nativeFetchRaw(t, nativeAddr, "from-native", 0, 1))
	kb = wholeBatches(t, kafkaFetchRaw(t, kafkaAddr, "from-native", ids["from-native"], 0))
	if len(nb) == 0 || !bytes.Equal(nb, kb) {
		t.Fatalf("the SDK's batches differ between the ports: native %d bytes, kafka %d bytes", len(nb), len(kb))
	}
	out, err := exec.CommandContext(ctx, "kcat", "-C", "-b", kafkaAddr, "-t", "from-native", "-p", "0", "-o", "beginning", "-e", "-q",
		"-f", "%k=%s\n").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 30 || lines[0] != "n0=native-0" || lines[29] != "n29=native-29" {
		t.Fatalf("kcat read %d lines: %q", len(lines), lines)
	}
}
