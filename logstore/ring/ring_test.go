package ring_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/logstore/ring/ringtest"
)

// TestMain fails the run if a server, client or store goroutine outlives
// its Close (DESIGN §6.6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newStore opens a 4-shard store over a fresh directory, closed at cleanup.
func newStore(t testing.TB) *logstore.Store {
	t.Helper()
	dir := t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 4, Logger: quiet()})
	if err != nil {
		cat.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := cat.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// waitUntil polls cond until it holds, failing the test after 10 s, so that
// a test waits on state it can observe rather than on a guessed delay.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve runs a Server for s on ln until cleanup, which checks that Serve
// returns nil once its ctx is done.
func serve(t *testing.T, s *logstore.Store, ln net.Listener, logger *slog.Logger, mod func(*ring.Server)) *ring.Server {
	t.Helper()
	if logger == nil {
		logger = quiet()
	}
	srv := ring.NewServer(s, logger)
	if mod != nil {
		mod(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
	})
	return srv
}

func listenTCP(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, ln.Addr().String()
}

// listenUnix listens on a socket in a short temporary directory: socket
// paths are limited to ~108 bytes and t.TempDir's can be longer.
func listenUnix(t *testing.T) (net.Listener, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ring")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return ln, "unix:" + path
}

func dial(t *testing.T, addr string) ring.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := ring.Dial(ctx, addr, ring.DialOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestInProcessSuite(t *testing.T) {
	ringtest.BackendSuite(t, func(t *testing.T) ring.Backend {
		b := ring.NewInProcess(newStore(t))
		t.Cleanup(func() { b.Close() })
		return b
	})
}

func TestNetworkTCPSuite(t *testing.T) {
	ringtest.BackendSuite(t, func(t *testing.T) ring.Backend {
		s := newStore(t)
		ln, addr := listenTCP(t)
		serve(t, s, ln, nil, nil)
		return dial(t, addr)
	})
}

func TestNetworkUnixSuite(t *testing.T) {
	ringtest.BackendSuite(t, func(t *testing.T) ring.Backend {
		s := newStore(t)
		ln, addr := listenUnix(t)
		serve(t, s, ln, nil, nil)
		return dial(t, addr)
	})
}

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func produceFetch(t *testing.T, b ring.Backend, topic string, partition int32, n int) {
	t.Helper()
	want := logtest.Filler(1, n, 100, byte(n))
	res, err := b.Produce(bg(t), &ring.ProduceRequest{Topic: topic, Partition: partition, Acks: 1, Records: bytes.Clone(want)})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	fr, err := b.Fetch(bg(t), &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: topic, Partition: partition, Offset: res.BaseOffset, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	defer fr.Release()
	if err := fr.Partitions[0].Err; err != nil {
		t.Fatalf("fetch: %v", err)
	}
	got, err := fr.Partitions[0].Records.ReadAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || !bytes.Equal(got[8:], want[8:]) {
		t.Fatalf("fetched %d bytes that differ from the %d produced", len(got), len(want))
	}
}

// The server sends hot ranges with sendfile, and the bytes arrive intact.
func TestNetworkFetchUsesSendfile(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := serve(t, s, ln, nil, nil)
	b := dial(t, addr)
	if err := b.CreatePartition(bg(t), "sf", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	produceFetch(t, b, "sf", 0, 500) // ~55 KiB
	// The writer counts after the bytes are on the socket, which can be
	// after the client has read them.
	waitUntil(t, "sendfile bytes to be counted", func() bool { return srv.Stats().SendfileBytes > 0 })
	st := srv.Stats()
	if st.CopiedBytes != 0 {
		t.Fatalf("hot records did not all go through sendfile: %+v", st)
	}
	if st.Connections != 1+4 { // the describe connection and one per shard
		t.Fatalf("%d connections for a 4-shard ring, want 5", st.Connections)
	}
}

func TestDialUnreachable(t *testing.T) {
	ln, addr := listenTCP(t)
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ring.Dial(ctx, addr, ring.DialOptions{Logger: quiet()}); err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
}

// A produce that cannot fit in one of the server's frames is refused by the
// client before it is sent, and the connection carries on.
func TestClientRefusesOversizedRequest(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	serve(t, s, ln, nil, func(srv *ring.Server) { srv.MaxPayloadBytes = 4096 })
	b := dial(t, addr)
	if err := b.CreatePartition(bg(t), "big", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Produce(bg(t), &ring.ProduceRequest{Topic: "big", Partition: 0, Acks: 1, Records: logtest.Filler(1, 10, 1000, 1)})
	if !errors.Is(err, ring.ErrMessageTooLarge) || !errors.Is(err, ring.ErrFrameTooLarge) {
		t.Fatalf("oversized produce: %v", err)
	}
	produceFetch(t, b, "big", 0, 3)
}

// A fetch whose response would exceed the server's frame limit fails with
// ErrFrameTooLarge rather than breaking the connection.
func TestFetchResponseOverFrameLimit(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	serve(t, s, ln, nil, func(srv *ring.Server) { srv.MaxPayloadBytes = 8 << 10 })
	b := dial(t, addr)
	if err := b.CreatePartition(bg(t), "fl", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, err := b.Produce(bg(t), &ring.ProduceRequest{Topic: "fl", Partition: 0, Acks: 1, Records: logtest.Filler(1, 3, 1000, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.Fetch(bg(t), &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: "fl", Partition: 0, MaxBytes: 1 << 20}}})
	if !errors.Is(err, ring.ErrFrameTooLarge) || errors.Is(err, ring.ErrConnClosed) {
		t.Fatalf("fetch over the frame limit: %v", err)
	}
	fr, err := b.Fetch(bg(t), &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: "fl", Partition: 0, MaxBytes: 4000}}})
	if err != nil || fr.Partitions[0].Err != nil || fr.Partitions[0].Records.Size() == 0 {
		t.Fatalf("fetch within the limit: %+v, %v", fr, err)
	}
}

// proxy forwards TCP connections to target until Break closes them all.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, _ := listenTCP(t)
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.Break()
		p.wg.Wait()
	})
	return p
}

// Break cuts every proxied connection, as a network failure would.
func (p *proxy) Break() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A broken connection fails the requests in flight with ErrConnClosed, and
// the next call redials the shard.
func TestRedialAfterBrokenConnection(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := serve(t, s, ln, nil, nil)
	px := newProxy(t, addr)
	b := dial(t, px.ln.Addr().String())
	if err := b.CreatePartition(bg(t), "rd", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	before := srv.Stats().Requests
	errc := make(chan error, 1)
	go func() {
		_, err := b.Fetch(bg(t), &ring.FetchRequest{MinBytes: 1, MaxWait: 20 * time.Second,
			Partitions: []ring.FetchPartition{{Topic: "rd", Partition: 0, Offset: 0, MaxBytes: 1 << 20}}})
		errc <- err
	}()
	waitUntil(t, "the fetch to reach the server", func() bool { return srv.Stats().Requests > before })
	px.Break()
	select {
	case err := <-errc:
		if !errors.Is(err, ring.ErrConnClosed) {
			t.Fatalf("in-flight fetch on a broken connection: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight fetch not failed by the broken connection")
	}
	produceFetch(t, b, "rd", 0, 2)
}

// Stopping the server ends parked long polls promptly, and Serve returns
// with every connection closed (goleak checks the rest).
func TestServerShutdownEndsLongPolls(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := ring.NewServer(s, quiet())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b := dial(t, addr)
	if err := b.CreatePartition(bg(t), "sd", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	before := srv.Stats().Requests
	fetched := make(chan error, 1)
	go func() {
		res, err := b.Fetch(bg(t), &ring.FetchRequest{MinBytes: 1, MaxWait: 30 * time.Second,
			Partitions: []ring.FetchPartition{{Topic: "sd", Partition: 0, Offset: 0, MaxBytes: 1 << 20}}})
		if err == nil && res.Partitions[0].Records.Size() != 0 {
			err = errors.New("records from an empty partition")
		}
		fetched <- err
	}()
	waitUntil(t, "the fetch to reach the server", func() bool { return srv.Stats().Requests > before })
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("shutdown took %v with a parked long poll", el)
	}
	select {
	case err := <-fetched:
		// Either the parked fetch was answered (empty) before the close,
		// or it saw the connection go.
		if err != nil && !errors.Is(err, ring.ErrConnClosed) && !errors.Is(err, ring.ErrClosed) {
			t.Fatalf("parked fetch at shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked fetch not ended by shutdown")
	}
	_, err := b.DescribePartition(bg(t), "sd", 0)
	if !errors.Is(err, ring.ErrConnClosed) {
		t.Fatalf("call after the server stopped: %v", err)
	}
}

// A caller that gives up on a long poll sends a Cancel, and the server
// stops serving it at once rather than at MaxWait.
func TestCanceledCallIsCanceledOnServer(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := serve(t, s, ln, nil, nil)
	b := dial(t, addr)
	if err := b.CreatePartition(bg(t), "cx", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := b.Fetch(ctx, &ring.FetchRequest{MinBytes: 1, MaxWait: 60 * time.Second,
		Partitions: []ring.FetchPartition{{Topic: "cx", Partition: 0, Offset: 0, MaxBytes: 1 << 20}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled fetch: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("server still serving the canceled fetch: %+v", srv.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The client's deadline travels too: the server gives up when it does.
	ctx, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	res, err := b.Fetch(ctx, &ring.FetchRequest{MinBytes: 1, MaxWait: 60 * time.Second,
		Partitions: []ring.FetchPartition{{Topic: "cx", Partition: 0, Offset: 0, MaxBytes: 1 << 20}}})
	// Either side may end it first: the client with DeadlineExceeded, or
	// the store, which answers a long poll whose ctx ended with what it has.
	if err != nil && !errors.Is(err, context.DeadlineExceeded) || err == nil && res.Partitions[0].Records.Size() != 0 {
		t.Fatalf("fetch past its deadline: %+v, %v", res, err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("fetch with a 300ms deadline took %v", el)
	}
	for srv.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("server still serving the expired fetch: %+v", srv.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInProcessReplicationSuite(t *testing.T) {
	ringtest.ReplicationSuite(t, func(t *testing.T) (ring.Backend, *logstore.Store) {
		s := newStore(t)
		b := ring.NewInProcess(s)
		t.Cleanup(func() { b.Close() })
		return b, s
	})
}

func TestNetworkReplicationSuite(t *testing.T) {
	ringtest.ReplicationSuite(t, func(t *testing.T) (ring.Backend, *logstore.Store) {
		s := newStore(t)
		ln, addr := listenTCP(t)
		serve(t, s, ln, nil, nil)
		return dial(t, addr), s
	})
}
