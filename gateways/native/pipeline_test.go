package native_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// faultBackend lets a test hold or fail the gateway's appends: each, when
// set, serves the n-th ProduceBatch call (from 1), with produce making
// the real call, which a connection's end does not cancel (a batch held
// past it may still land).
type faultBackend struct {
	ring.Backend
	mu    sync.Mutex
	calls int
	each  func(ctx context.Context, n int, parts []ring.ProducePart, produce func([]ring.ProducePart))
}

func (f *faultBackend) ProduceBatch(ctx context.Context, parts []ring.ProducePart) {
	f.mu.Lock()
	f.calls++
	n, each := f.calls, f.each
	f.mu.Unlock()
	produce := func(ps []ring.ProducePart) { f.Backend.ProduceBatch(context.WithoutCancel(ctx), ps) }
	if each == nil {
		produce(parts)
		return
	}
	each(ctx, n, parts, produce)
}

// produceExcept appends the parts not of partition skip and fails those
// of it with err, unwritten; it reports whether it failed any.
func produceExcept(parts []ring.ProducePart, skip int32, err error, produce func([]ring.ProducePart)) bool {
	var rest []ring.ProducePart
	var at []int
	hit := false
	for i := range parts {
		if parts[i].Partition == skip {
			parts[i].Err, hit = err, true
			continue
		}
		rest, at = append(rest, parts[i]), append(at, i)
	}
	if len(rest) > 0 {
		produce(rest)
		for k, i := range at {
			parts[i].Result, parts[i].Err = rest[k].Result, rest[k].Err
		}
	}
	return hit
}

// frameProxy stands between SDK clients and a gateway and reads the
// frames going through: it counts each connection's ProduceMany requests
// not yet answered, and cuts every connection at once on demand.
type frameProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	maxOut int // the most ProduceMany requests a connection had unanswered
	dials  int
}

func newFrameProxy(t *testing.T, target string) *frameProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp := &frameProxy{ln: ln, target: target}
	go fp.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		fp.cut()
	})
	return fp
}

func (fp *frameProxy) addr() string { return fp.ln.Addr().String() }

func (fp *frameProxy) accept() {
	for {
		cn, err := fp.ln.Accept()
		if err != nil {
			return
		}
		sn, err := net.Dial("tcp", fp.target)
		if err != nil {
			_ = cn.Close()
			continue
		}
		fp.mu.Lock()
		fp.conns = append(fp.conns, cn, sn)
		fp.dials++
		fp.mu.Unlock()
		out := 0 // this connection's unanswered ProduceMany
		go fp.pipe(cn, sn, func() { out++; fp.maxOut = max(fp.maxOut, out) })
		go fp.pipe(sn, cn, func() { out-- })
	}
}

// pipe copies frames from src to dst, calling seen (under fp.mu) for each
// ProduceMany before it is passed on.
func (fp *frameProxy) pipe(src, dst net.Conn, seen func()) {
	defer func() {
		_ = src.Close()
		_ = dst.Close()
	}()
	h := make([]byte, wire.HeaderSize)
	for {
		if _, err := io.ReadFull(src, h); err != nil {
			return
		}
		if wire.Opcode(h[2]) == wire.OpProduceMany {
			fp.mu.Lock()
			seen()
			fp.mu.Unlock()
		}
		if _, err := dst.Write(h); err != nil {
			return
		}
		if _, err := io.CopyN(dst, src, int64(binary.BigEndian.Uint32(h[3:]))); err != nil {
			return
		}
	}
}

// waitOut waits until a connection has had n ProduceMany requests out at
// once, and fails the test if none gets there.
func (fp *frameProxy) waitOut(t *testing.T, n int) {
	t.Helper()
	got := 0
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		fp.mu.Lock()
		got = fp.maxOut
		fp.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("no connection had %d produce requests out at once (at most %d)", n, got)
}

func (fp *frameProxy) cut() {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	for _, c := range fp.conns {
		_ = c.Close()
	}
	fp.conns = nil
}

// pipelineRun produces n records to each of two partitions through a
// proxy, in batches of a few records so that many requests go out, and
// returns the proxy and a finish that closes the producer and checks that
// every record i of a partition was acknowledged at offset i, where a
// consumer then reads it: once each and in order.
func pipelineRun(t *testing.T, e *env, n int) (*frameProxy, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	fp := newFrameProxy(t, e.addr)
	cl, err := client.Dial(ctx, fp.addr(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	if _, err := cl.CreateTopic(ctx, "pipe", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{Connections: 1, BatchBytes: 1024, Linger: time.Millisecond})
	recs := make([][]*client.Record, 2)
	errs := make(chan error, 2*n)
	done := func(r *client.Record, err error) {
		if err != nil {
			errs <- fmt.Errorf("%s: %w", r.Value, err)
		}
	}
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		for i := range n {
			for part := range int32(2) {
				r := &client.Record{Topic: "pipe", Partition: part, Value: fmt.Appendf(nil, "p%d-%05d-%064d", part, i, 0)}
				recs[part] = append(recs[part], r)
				p.Produce(ctx, r, done)
			}
		}
	}()
	return fp, func() {
		t.Helper()
		<-queued
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		check, err := client.Dial(ctx, e.addr, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer check.Close()
		for part := range int32(2) {
			for i, r := range recs[part] {
				if r.Offset != int64(i) {
					t.Fatalf("partition %d: record %d acknowledged at offset %d", part, i, r.Offset)
				}
			}
			co, err := client.NewConsumer(ctx, check, client.ConsumerOptions{Topic: "pipe", Partitions: []int32{part}, Start: 0, StartSet: true, MaxWait: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for len(got) < n+1 {
				msgs, err := co.Poll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) == 0 && len(got) == n {
					break // nothing after the n records
				}
				for _, m := range msgs {
					got = append(got, string(m.Value))
				}
			}
			_ = co.Close()
			if len(got) != n {
				t.Fatalf("partition %d holds %d records, want %d", part, len(got), n)
			}
			for i, v := range got {
				if v != string(recs[part][i].Value) {
					t.Fatalf("partition %d offset %d holds %.9s, want %.9s", part, i, v, recs[part][i].Value)
				}
			}
		}
	}
}

// gate holds appends until released; a test that fails first releases
// them in its cleanup, before the gateway's, which waits for them.
type gate struct {
	C    chan struct{}
	once sync.Once
}

func (g *gate) release() { g.once.Do(func() { close(g.C) }) }

func newGate(t *testing.T) *gate {
	g := &gate{C: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

// TestProducerPipelineKeepsOrderThroughFailures: an idempotent producer
// with several requests out on one connection, where the gateway fails a
// partition's batch without writing it while the batches behind it are
// already sent (the store then refuses those as a gap), and later answers
// a written batch as failed. Every record must still land once, in the
// order produced.
func TestProducerPipelineKeepsOrderThroughFailures(t *testing.T) {
	fb := &faultBackend{}
	e := newEnv(t, func(o *native.Options) {
		fb.Backend = o.Backend
		o.Backend = fb
	})
	hold := newGate(t)
	var gapAt, dupAt int // the calls that failed a batch unwritten, and a written one
	fb.each = func(ctx context.Context, n int, parts []ring.ProducePart, produce func([]ring.ProducePart)) {
		if n == 1 {
			select {
			case <-hold.C:
			case <-ctx.Done():
			}
		}
		fb.mu.Lock()
		defer fb.mu.Unlock()
		switch {
		case n >= 2 && gapAt == 0:
			if produceExcept(parts, 0, ring.ErrNotLeader, produce) {
				gapAt = n
			}
		case gapAt > 0 && dupAt == 0 && n >= gapAt+3:
			produce(parts)
			for i := range parts {
				if parts[i].Partition == 1 && parts[i].Err == nil {
					parts[i].Err, dupAt = ring.ErrNotLeader, n
				}
			}
		default:
			produce(parts)
		}
	}
	fp, finish := pipelineRun(t, e, 400)
	fp.waitOut(t, 3)
	hold.release()
	finish()
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if gapAt == 0 || dupAt == 0 {
		t.Fatalf("faults not injected: unwritten at call %d, written at call %d", gapAt, dupAt)
	}
}

// TestProducerResendsAfterConnectionLoss: the connection drops with
// several requests out, one of them in the store; the producer redials
// and resends them, in order, and the store acknowledges what had landed
// as duplicates.
func TestProducerResendsAfterConnectionLoss(t *testing.T) {
	fb := &faultBackend{}
	e := newEnv(t, func(o *native.Options) {
		fb.Backend = o.Backend
		o.Backend = fb
	})
	hold := newGate(t)
	fb.each = func(_ context.Context, n int, parts []ring.ProducePart, produce func([]ring.ProducePart)) {
		if n == 2 {
			// Held past the cut: the batch lands, its answer is lost.
			<-hold.C
		}
		produce(parts)
	}
	fp, finish := pipelineRun(t, e, 400)
	fp.waitOut(t, 3)
	fp.cut()
	hold.release()
	finish()
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.dials < 2 {
		t.Fatalf("the producer did not dial again after the cut (%d connections)", fp.dials)
	}
}
