package gateways

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// lineProto is a toy protocol: a frame is a 4-byte big-endian length and
// that many bytes; the answer echoes it, framed the same way. Frames
// "panic", "slow" and "file" behave specially.
type lineProto struct {
	file *os.File
	// parked, if set, is sent to when a "slow" request starts to wait.
	parked chan struct{}
}

type lineSession struct {
	p *lineProto
	c *Conn
}

func (p *lineProto) NewSession(c *Conn) Session { return &lineSession{p: p, c: c} }

func (s *lineSession) ReadFrame(r *FrameReader, maxBytes int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[:]))
	if n > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	return r.Body(n, nil, nil)
}

func (s *lineSession) Handle(ctx context.Context, frame []byte) (*Response, error) {
	switch string(frame) {
	case "panic":
		panic("boom")
	case "slow":
		if s.p.parked != nil {
			s.p.parked <- struct{}{}
		}
		<-ctx.Done() // a long poll cut short by the drain
		return framed([]byte("drained")), nil
	case "file":
		st, _ := s.p.file.Stat()
		r := framed(nil)
		binary.BigEndian.PutUint32(r.parts[0].b, uint32(st.Size()))
		r.AddFile(s.p.file, 0, int(st.Size()))
		return r, nil
	case "bad":
		return nil, fmt.Errorf("%w: bad request", ErrMalformedFrame)
	case "whoami":
		p := s.c.Principal()
		return framed([]byte(p.Mechanism + "/" + p.Name)), nil
	case "parts":
		r := framed(nil)
		want := 0
		for _, b := range partsAnswer(s.p.file) {
			if f, ok := b.(*os.File); ok {
				st, _ := f.Stat()
				r.AddFile(f, 0, int(st.Size()))
				want += int(st.Size())
				continue
			}
			r.AddBytes(b.([]byte))
			want += len(b.([]byte))
		}
		binary.BigEndian.PutUint32(r.parts[0].b, uint32(want))
		return r, nil
	}
	return framed(frame), nil
}

func (s *lineSession) Close() {}

// partsAnswer is the "parts" frame's answer, in parts: runs of byte parts
// larger than the write buffer (sent with writev) and smaller, around a
// file part, as a cold Fetch response mixes partitions' headers and cache
// chunk slices with hot file ranges.
func partsAnswer(f *os.File) []any {
	fill := func(n int, c byte) []byte { return []byte(strings.Repeat(string(c), n)) }
	return []any{fill(10, 'a'), fill(300<<10, 'b'), fill(7, 'c'), fill(100<<10, 'd'), f,
		fill(5, 'e'), fill(20, 'f'), fill(1<<20, 'g'), fill(3, 'h'), f, fill(200<<10, 'i')}
}

func framed(b []byte) *Response {
	h := make([]byte, 4)
	binary.BigEndian.PutUint32(h, uint32(len(b)))
	r := NewResponse(h)
	r.AddBytes(b)
	return r
}

type client struct {
	t  *testing.T
	nc net.Conn
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &client{t, nc}
}

func (c *client) send(b []byte) {
	h := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(h, uint32(len(b)))
	if _, err := c.nc.Write(append(h, b...)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() (string, error) {
	var h [4]byte
	if _, err := io.ReadFull(c.nc, h[:]); err != nil {
		return "", err
	}
	b := make([]byte, binary.BigEndian.Uint32(h[:]))
	_, err := io.ReadFull(c.nc, b)
	return string(b), err
}

func startServer(t *testing.T, s *Server) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, s, ln)
}

func startServerOn(t *testing.T, s *Server, ln net.Listener) (addr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return ln.Addr().String(), func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not return after cancel")
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// segmentFile is a file holding content, the "file" frame's answer; it is
// closed when the test ends.
func segmentFile(t *testing.T, content string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServerIsolationAndZeroCopy(t *testing.T) {
	defer goleak.VerifyNone(t)
	content := strings.Repeat("segment bytes ", 10000)
	f := segmentFile(t, content)
	s := &Server{Name: "test", Protocol: &lineProto{file: f}, Logger: quiet(), MaxFrameBytes: 1024}
	addr, stop := startServer(t, s)

	good := dial(t, addr)
	good.send([]byte("hello"))
	if got, err := good.recv(); err != nil || got != "hello" {
		t.Fatalf("echo: %q %v", got, err)
	}

	for _, bad := range []func(c *client){
		func(c *client) { c.send([]byte("panic")) },
		func(c *client) { c.send([]byte("bad")) },
		func(c *client) { c.send(make([]byte, 2048)) }, // over MaxFrameBytes
	} {
		c := dial(t, addr)
		bad(c)
		if got, err := c.recv(); err == nil {
			t.Fatalf("bad request answered %q, want the connection closed", got)
		}
		good.send([]byte("still there"))
		if got, err := good.recv(); err != nil || got != "still there" {
			t.Fatalf("other connection broke: %q %v", got, err)
		}
	}

	good.send([]byte("file"))
	if got, err := good.recv(); err != nil || got != content {
		t.Fatalf("file response: %d bytes, %v", len(got), err)
	}
	st := s.Stats()
	if st.SendfileBytes+st.CopiedBytes != int64(len(content)) || st.Panics != 1 || st.ProtocolErrors != 2 {
		t.Fatalf("stats %+v", st)
	}
	if st.SendfileBytes == 0 {
		t.Errorf("the file part was not sent with sendfile: %+v", st)
	}
	stop()
}

// TestServerByteRuns: a response whose byte parts overflow the write
// buffer goes out in order, whole, between file parts and other responses.
func TestServerByteRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := segmentFile(t, strings.Repeat("segment bytes ", 10000))
	s := &Server{Name: "test", Protocol: &lineProto{file: f}, Logger: quiet(), MaxFrameBytes: 1024}
	addr, stop := startServer(t, s)
	var want strings.Builder
	for _, b := range partsAnswer(f) {
		if _, ok := b.(*os.File); ok {
			want.WriteString(strings.Repeat("segment bytes ", 10000))
			continue
		}
		want.Write(b.([]byte))
	}
	c := dial(t, addr)
	for i := range 3 {
		c.send([]byte("parts"))
		c.send([]byte("small"))
		if got, err := c.recv(); err != nil || got != want.String() {
			t.Fatalf("round %d: parts answer of %d bytes (want %d), equal %v: %v", i, len(got), want.Len(), got == want.String(), err)
		}
		if got, err := c.recv(); err != nil || got != "small" {
			t.Fatalf("round %d: echo after it: %q %v", i, got, err)
		}
	}
	stop()
}

// TestServerPipelinedOrder: responses to pipelined requests, small ones
// and megabyte ones that go out with sendfile and fill the socket, come
// back in request order while the client keeps sending, through a write
// queue shorter than the requests in flight.
func TestServerPipelinedOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	content := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: queued, sendfile
	f := segmentFile(t, content)
	s := &Server{Name: "test", Protocol: &lineProto{file: f}, Logger: quiet(), QueueDepth: 4}
	addr, stop := startServer(t, s)
	c := dial(t, addr)
	const n = 200
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range n {
			if i%7 == 3 {
				c.send([]byte("file"))
			} else {
				c.send([]byte(fmt.Sprintf("m%d", i)))
			}
		}
	}()
	for i := range n {
		got, err := c.recv()
		want := fmt.Sprintf("m%d", i)
		if i%7 == 3 {
			want = content
		}
		if err != nil || got != want {
			t.Fatalf("response %d: %.20q (%d bytes), %v; want %.20q", i, got, len(got), err, want)
		}
	}
	<-sent
	st := s.Stats()
	if st.SendfileBytes == 0 {
		t.Errorf("no file response went out with sendfile: %+v", st)
	}
	stop()
}

// TestServerDrain: on shutdown a request in service is cut short through
// its context, its response is still delivered, and Serve returns.
func TestServerDrain(t *testing.T) {
	defer goleak.VerifyNone(t)
	parked := make(chan struct{}, 1)
	s := &Server{Name: "test", Protocol: &lineProto{parked: parked}, Logger: quiet()}
	addr, stop := startServer(t, s)
	c := dial(t, addr)
	c.send([]byte("slow"))
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request never reached its handler")
	}
	go stop()
	got, err := c.recv()
	if err != nil || got != "drained" {
		t.Fatalf("drained response: %q %v", got, err)
	}
	if _, err := c.recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the drain: %v, want EOF", err)
	}
	// A new connection is refused once the listener is closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting after the drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServerMaxConns(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &Server{Name: "test", Protocol: &lineProto{}, Logger: quiet(), MaxConns: 1}
	addr, stop := startServer(t, s)
	defer stop()
	a := dial(t, addr)
	a.send([]byte("one"))
	if got, err := a.recv(); err != nil || got != "one" {
		t.Fatalf("first connection: %q %v", got, err)
	}
	b := dial(t, addr)
	b.send([]byte("two"))
	if got, err := b.recv(); err == nil {
		t.Fatalf("connection over MaxConns answered %q", got)
	}
}

func TestPrincipalHook(t *testing.T) {
	c := &Conn{}
	if c.Principal() != Anonymous {
		t.Fatalf("new connection is %+v", c.Principal())
	}
	c.SetPrincipal(Principal{Mechanism: "SCRAM-SHA-256", Name: "alice"})
	if p := c.Principal(); p.Name != "alice" {
		t.Fatalf("principal %+v", p)
	}
}

// TestReadGrowingFollowsArrivedBytes: a frame body's buffer is sized by
// the bytes that arrive, not by the length claimed: a 100 MB claim backed
// by 10 bytes asks for no more than the first step, and a real frame is
// read whole through buffers that grow toward its size.
func TestReadGrowingFollowsArrivedBytes(t *testing.T) {
	var asked []int
	get := func(n int) []byte { asked = append(asked, n); return make([]byte, n) }
	_, err := readGrowing(strings.NewReader("0123456789"), 100<<20, get, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short body: %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if len(asked) != 1 || asked[0] > frameStep {
		t.Fatalf("a 100 MB claim backed by 10 bytes asked for buffers of %v bytes", asked)
	}

	asked = nil
	body := strings.Repeat("x", 5<<20+3)
	b, err := readGrowing(strings.NewReader(body+"next"), len(body), get, nil)
	if err != nil || string(b) != body {
		t.Fatalf("a 5 MiB body: %d bytes, %v", len(b), err)
	}
	if last := asked[len(asked)-1]; last != len(body) || asked[0] != frameStep {
		t.Fatalf("buffers of %v bytes for a body of %d", asked, len(body))
	}
}

// TestServerQueuedBytes: frames whose length prefixes claim 100 MB and
// then stall take no memory for the claim; the bytes they reserve are
// bounded server-wide (MaxQueuedBytes), so a second large claim waits for
// the first to go, while small frames still fit and are served.
func TestServerQueuedBytes(t *testing.T) {
	const claim = 100 << 20
	s := &Server{Name: "q", Protocol: &lineProto{}, Logger: quiet(), MaxQueuedBytes: claim + claim/2}
	addr, stop := startServer(t, s)
	defer stop()
	waitFor := func(what string, cond func(Stats) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond(s.Stats()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stats %+v", what, s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	}
	claimOnly := func(n int) *client {
		c := dial(t, addr)
		h := binary.BigEndian.AppendUint32(nil, uint32(n))
		if _, err := c.nc.Write(append(h, "abcdefghij"...)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	a := claimOnly(claim)
	waitFor("the first claim reserved", func(st Stats) bool { return st.QueuedBytes == claim })
	b := claimOnly(claim - 1)
	waitFor("the second claim waiting", func(st Stats) bool { return st.QueueWaits == 1 })
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > claim/4 {
		t.Errorf("two stalled 100 MB claims grew the heap by %d bytes", grew)
	}

	// A small frame fits beside the first claim.
	c := dial(t, addr)
	c.send([]byte("hi"))
	if got, err := c.recv(); err != nil || got != "hi" {
		t.Fatalf("a small frame beside a stalled claim: %q, %v", got, err)
	}
	// The small frame may not have given its bytes back yet: only the
	// second claim's reservation would show that it did not wait.
	if st := s.Stats(); st.QueuedBytes >= claim+claim-1 {
		t.Fatalf("the second claim did not wait: %+v", st)
	}
	// The first claim's connection goes: the second gets its bytes.
	a.nc.Close()
	waitFor("the second claim reserved", func(st Stats) bool { return st.QueuedBytes == claim-1 })
	b.nc.Close()
	waitFor("all given back", func(st Stats) bool { return st.QueuedBytes == 0 })
}
