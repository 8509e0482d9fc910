package native_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// rawConn is a handshaken connection that writes frames by hand.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	rc := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	rc.send(wire.OpHandshake, 1, (&wire.Handshake{Version: 1}).Append)
	if op, _ := rc.read(); op != wire.OpHandshake {
		t.Fatalf("handshake answered with %v", op)
	}
	return rc
}

func (rc *rawConn) send(op wire.Opcode, corr uint32, fill func([]byte) []byte) {
	b := wire.AppendHeader(nil, op, 0)
	b = wire.AppendU32(b, corr)
	b = fill(b)
	wire.PutLength(b)
	if _, err := rc.nc.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// read returns a response's opcode and its reader past the head, failing
// on an error code.
func (rc *rawConn) read() (wire.Opcode, *wire.Reader) {
	op, _, r := rc.readCorr()
	return op, r
}

func (rc *rawConn) readCorr() (wire.Opcode, uint32, *wire.Reader) {
	rc.t.Helper()
	h := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(rc.br, h); err != nil {
		rc.t.Fatal(err)
	}
	op, n, err := wire.ParseHeader(h, 64<<20)
	if err != nil {
		rc.t.Fatal(err)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(rc.br, p); err != nil {
		rc.t.Fatal(err)
	}
	r := wire.NewReader(p)
	hd := wire.ReadHead(&r)
	if hd.Code != 0 {
		rc.t.Fatalf("%v corr %d: code %d: %s", op, hd.Corr, hd.Code, hd.Message)
	}
	return op, hd.Corr, &r
}

// TestProduceManyPipelined: a client sends many ProduceMany requests for
// the same partitions without waiting; every one is answered (in whatever
// order), and each partition holds the batches in the order they were
// sent on the connection, though the gateway serves the requests
// concurrently.
func TestProduceManyPipelined(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti, err := cl.CreateTopic(ctx, "pipe", 4, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, e.addr)
	const requests = 60
	for i := range requests {
		req := wire.ProduceMany{Acks: 1, TimeoutMs: 10000}
		for p := range int32(4) {
			var bb wire.BatchBuilder
			bb.Add(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "%d", i), nil)
			batch, err := bb.AppendBatch(nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Partitions = append(req.Partitions, wire.ManyPart{TopicID: ti.ID, Partition: p, Records: batch})
		}
		rc.send(wire.OpProduceMany, uint32(100+i), req.Append)
	}
	seen := map[uint32]bool{}
	for range requests {
		op, corr, r := rc.readCorr()
		if seen[corr] || corr < 100 || corr >= 100+requests {
			t.Fatalf("answer for corr %d (seen before: %v)", corr, seen[corr])
		}
		seen[corr] = true
		if op != wire.OpProduceMany {
			t.Fatalf("answer with opcode %v", op)
		}
		var out wire.ProduceManyResponse
		if err := out.Decode(r); err != nil {
			t.Fatal(err)
		}
		if len(out.Partitions) != 4 {
			t.Fatalf("%d results, want 4", len(out.Partitions))
		}
		for i, res := range out.Partitions {
			if res.Code != 0 || res.Partition != int32(i) || res.TopicID != ti.ID {
				t.Fatalf("result %d: %+v", i, res)
			}
		}
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: "pipe", Start: client.StartEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	got := map[int32][]string{}
	for n := 0; n < 4*requests || !co.CaughtUp(); {
		msgs, err := co.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got[m.Partition] = append(got[m.Partition], string(m.Value))
			n++
		}
	}
	var want []string
	for i := range requests {
		want = append(want, fmt.Sprint(i))
	}
	for p := range int32(4) {
		if !slices.Equal(got[p], want) {
			t.Fatalf("partition %d holds %v, want the order sent", p, got[p])
		}
	}
}

// TestProduceManyPartialFailure: one request's partitions fail and succeed
// on their own.
func TestProduceManyPartialFailure(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti, err := cl.CreateTopic(ctx, "pf", 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bb wire.BatchBuilder
	bb.Add(1, nil, []byte("x"), nil)
	batch, _ := bb.AppendBatch(nil)
	rc := dialRaw(t, e.addr)
	req := wire.ProduceMany{Acks: 1, Partitions: []wire.ManyPart{
		{TopicID: ti.ID, Partition: 1, Records: batch},
		{TopicID: ti.ID, Partition: 7, Records: batch},
		{TopicID: [16]byte{9}, Partition: 0, Records: batch},
		{TopicID: ti.ID, Partition: 0, Records: []byte("not a batch")},
	}}
	rc.send(wire.OpProduceMany, 5, req.Append)
	_, r := rc.read()
	var out wire.ProduceManyResponse
	if err := out.Decode(r); err != nil {
		t.Fatal(err)
	}
	codes := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.CorruptMessage.Code}
	for i, res := range out.Partitions {
		if res.Code != codes[i] {
			t.Errorf("partition %d of the request: code %d (%s), want %d", i, res.Code, res.Message, codes[i])
		}
	}
	if out.Partitions[0].BaseOffset != 0 {
		t.Errorf("base offset %d, want 0", out.Partitions[0].BaseOffset)
	}
}

// TestProducerTakesAllocatedID: an idempotent producer's batches carry the
// id the gateway's allocator handed out, not one of its own making.
func TestProducerTakesAllocatedID(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "pid", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	if err := p.ProduceSync(ctx, &client.Record{Topic: "pid", Partition: 0, Value: []byte("a")},
		&client.Record{Topic: "pid", Partition: 1, Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := cl.InitProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The harness's allocator counts up from 1<<16: the producer took
	// the first id, this call the second.
	if next != 1<<16+2 {
		t.Fatalf("InitProducerID gave %d, want %d", next, 1<<16+2)
	}
	rc := dialRaw(t, e.addr)
	ti, _ := cl.Topic(ctx, "pid")
	for part := range int32(2) {
		req := wire.Fetch{MaxBytes: 1 << 20, Partitions: []wire.FetchPartition{{TopicID: ti.ID, Partition: part, MaxBytes: 1 << 20}}}
		rc.send(wire.OpFetch, uint32(10+part), req.Append)
		_, r := rc.read()
		var out wire.FetchResponse
		if err := out.Decode(r); err != nil {
			t.Fatal(err)
		}
		info, _, _, ok, err := wire.NextBatch(out.Partitions[0].Records)
		if err != nil || !ok {
			t.Fatalf("partition %d: no batch (%v)", part, err)
		}
		if info.ProducerID != 1<<16+1 || info.ProducerEpoch != 0 {
			t.Fatalf("partition %d: batch of producer %d epoch %d, want %d epoch 0", part, info.ProducerID, info.ProducerEpoch, 1<<16+1)
		}
	}
}

// TestInitProducerIDWithoutAllocator: a gateway with no allocator says so
// with COORDINATOR_NOT_AVAILABLE, and an idempotent producer fails its
// records rather than invent an id.
func TestInitProducerIDWithoutAllocator(t *testing.T) {
	e := newEnv(t, func(o *native.Options) { o.ProducerIDs = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.InitProducerID(ctx); !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("InitProducerID: %v, want COORDINATOR_NOT_AVAILABLE", err)
	}
	if _, err := cl.CreateTopic(ctx, "np", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{Retries: 1})
	err = p.ProduceSync(ctx, &client.Record{Topic: "np", Partition: 0, Value: []byte("a")})
	if !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("idempotent produce without an allocator: %v", err)
	}
	_ = p.Close(ctx)
	// Not idempotent needs no id.
	p = client.NewProducer(cl, client.ProducerOptions{NotIdempotent: true})
	if err := p.ProduceSync(ctx, &client.Record{Topic: "np", Partition: 0, Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
}

// TestGroupDescribeListLag: the group operations the gateway answers
// itself: a native group's members and partitions, the groups known (by
// members or by commits), and the lag per partition.
func TestGroupDescribeListLag(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ti, err := cl.CreateTopic(ctx, "lag", 3, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	for i := range 30 {
		p.Produce(ctx, &client.Record{Topic: "lag", Partition: int32(i % 3), Value: []byte("v")}, nil)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.CommitOffsets(ctx, "committed-only", "lag", map[int32]int64{0: 4, 2: 10}); err != nil {
		t.Fatal(err)
	}
	gc, err := client.JoinGroup(ctx, cl, client.GroupOptions{Group: "live", Topic: "lag"})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close(ctx)

	d, err := cl.DescribeGroup(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	member, gen := gc.Member()
	if d.State != "Stable" || d.Topic != ti.ID || d.Generation != gen || len(d.Members) != 1 ||
		d.Members[0].MemberID != member || !slices.Equal(d.Members[0].Partitions, []int32{0, 1, 2}) {
		t.Fatalf("DescribeGroup(live) = %+v", d)
	}
	if d, err := cl.DescribeGroup(ctx, "committed-only"); err != nil || d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("DescribeGroup(committed-only) = %+v, %v", d, err)
	}
	if d, err := cl.DescribeGroup(ctx, "nobody"); err != nil || d.State != "Dead" {
		t.Fatalf("DescribeGroup(nobody) = %+v, %v", d, err)
	}

	ls, err := cl.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.GroupListing{{Group: "committed-only", Members: 0}, {Group: "live", Members: 1}}
	if !slices.Equal(ls, want) {
		t.Fatalf("ListGroups = %+v, want %+v", ls, want)
	}

	lag, err := cl.LagDetail(ctx, "committed-only", "lag")
	if err != nil {
		t.Fatal(err)
	}
	wantLag := []client.PartitionLag{
		{Partition: 0, Committed: 4, LogStartOffset: 0, HighWatermark: 10, Lag: 6},
		{Partition: 1, Committed: -1, LogStartOffset: 0, HighWatermark: 10, Lag: 10},
		{Partition: 2, Committed: 10, LogStartOffset: 0, HighWatermark: 10, Lag: 0},
	}
	if !slices.Equal(lag, wantLag) {
		t.Fatalf("LagDetail = %+v, want %+v", lag, wantLag)
	}
}

// TestCommitInsideFetch: a group member's commit rides on its next fetch;
// the gateway stores it before serving the fetch, and a commit the group
// refuses comes back as that poll's error.
func TestCommitInsideFetch(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "cf", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	for i := range 10 {
		p.Produce(ctx, &client.Record{Topic: "cf", Partition: int32(i % 2), Value: []byte("v")}, nil)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gc, err := client.JoinGroup(ctx, cl, client.GroupOptions{Group: "fc", Topic: "cf"})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close(ctx)
	if err := gc.CommitOnNextPoll(ctx, map[int32]int64{0: 3, 1: 2}); err != nil {
		t.Fatal(err)
	}
	if offs, _ := cl.FetchOffsets(ctx, "fc", "cf"); len(offs) != 0 {
		t.Fatalf("committed before the poll: %v", offs)
	}
	if _, err := gc.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := cl.FetchOffsets(ctx, "fc", "cf")
	if err != nil {
		t.Fatal(err)
	}
	if offs[0] != 3 || offs[1] != 2 || len(offs) != 2 {
		t.Fatalf("after the poll the group has %v, want map[0:3 1:2]", offs)
	}

	// A commit under a stale generation is refused inside the fetch.
	rc := dialRaw(t, e.addr)
	ti, _ := cl.Topic(ctx, "cf")
	member, gen := gc.Member()
	req := wire.Fetch{MaxBytes: 1 << 20, Partitions: []wire.FetchPartition{{TopicID: ti.ID, Partition: 0, MaxBytes: 1 << 20}},
		Commit: &wire.FetchCommit{Group: "fc", MemberID: member, Generation: gen - 1,
			Offsets: []wire.TopicOffset{{TopicID: ti.ID, Partition: 0, Offset: 9}}}}
	rc.send(wire.OpFetch, 7, req.Append)
	_, r := rc.read()
	var out wire.FetchResponse
	if err := out.Decode(r); err != nil {
		t.Fatal(err)
	}
	if !out.HasCommit || out.CommitCode != kerr.IllegalGeneration.Code {
		t.Fatalf("stale commit in a fetch: has %v code %d, want ILLEGAL_GENERATION", out.HasCommit, out.CommitCode)
	}
	if len(out.Partitions) != 1 || out.Partitions[0].Code != 0 || len(out.Partitions[0].Records) == 0 {
		t.Fatalf("the fetch itself was not served: %+v", out.Partitions)
	}
	if offs, _ := cl.FetchOffsets(ctx, "fc", "cf"); offs[0] != 3 {
		t.Fatalf("refused commit stored: %v", offs)
	}
}

// TestProducerNextEpochAfterFailure: after a batch fails for good, the
// partition's next batch goes out under the next epoch from sequence 0 (a
// failed batch leaves the sequence unknown), and lands.
func TestProducerNextEpochAfterFailure(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "epoch", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{BatchBytes: 8 << 20})
	defer p.Close(ctx)
	if err := p.ProduceSync(ctx, &client.Record{Topic: "epoch", Partition: 0, Value: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 3<<20) // over the default max.message.bytes
	if err := p.ProduceSync(ctx, &client.Record{Topic: "epoch", Partition: 0, Value: big}); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("an oversized batch: %v, want MESSAGE_TOO_LARGE", err)
	}
	after := &client.Record{Topic: "epoch", Partition: 0, Value: []byte("after")}
	if err := p.ProduceSync(ctx, after); err != nil {
		t.Fatalf("the batch after a failed one: %v", err)
	}
	if after.Offset != 1 {
		t.Fatalf("landed at %d, want 1", after.Offset)
	}
	rc := dialRaw(t, e.addr)
	ti, _ := cl.Topic(ctx, "epoch")
	req := wire.Fetch{MaxBytes: 1 << 20, Partitions: []wire.FetchPartition{{TopicID: ti.ID, Partition: 0, Offset: 1, MaxBytes: 1 << 20}}}
	rc.send(wire.OpFetch, 3, req.Append)
	_, r := rc.read()
	var out wire.FetchResponse
	if err := out.Decode(r); err != nil {
		t.Fatal(err)
	}
	rest := out.Partitions[0].Records
	for {
		info, _, next, ok, err := wire.NextBatch(rest)
		if err != nil || !ok {
			t.Fatalf("no batch at offset 1 (%v)", err)
		}
		if info.BaseOffset == 1 {
			if info.ProducerEpoch != 1 || info.BaseSequence != 0 {
				t.Fatalf("batch after the failure: epoch %d sequence %d, want 1 and 0", info.ProducerEpoch, info.BaseSequence)
			}
			break
		}
		rest = next
	}
}
