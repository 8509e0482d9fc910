package ring_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/ring"
)

// These tests speak the wire format by hand, from the layouts documented in
// frame.go and message.go, so they also pin the format down.

func frame(op byte, payload []byte) []byte {
	f := []byte{0xAE, 0x04, op, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[3:], uint32(len(payload)))
	return append(f, payload...)
}

// req is a request payload: corr, timeout 0, body.
func req(corr uint32, body ...[]byte) []byte {
	p := binary.BigEndian.AppendUint32(nil, corr)
	p = binary.BigEndian.AppendUint64(p, 0)
	for _, b := range body {
		p = append(p, b...)
	}
	return p
}

func str(s string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(s))), s...)
}

func i32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

type rawFrame struct {
	op   byte
	corr uint32
	code int16
	msg  string
	body []byte
}

func readRaw(t *testing.T, c net.Conn) (rawFrame, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h [7]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return rawFrame{}, err
	}
	if h[0] != 0xAE || h[1] != 0x04 {
		t.Fatalf("server frame header % x", h)
	}
	p := make([]byte, binary.BigEndian.Uint32(h[3:]))
	if _, err := io.ReadFull(c, p); err != nil {
		return rawFrame{}, err
	}
	f := rawFrame{op: h[2], corr: binary.BigEndian.Uint32(p), code: int16(binary.BigEndian.Uint16(p[4:]))}
	p = p[6:]
	if f.code != 0 {
		n := binary.BigEndian.Uint16(p)
		f.msg = string(p[2 : 2+n])
	} else {
		f.body = p
	}
	return f, nil
}

// expectClosed checks that the server closed the connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("connection still open after an error frame: read %d, %v", n, err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func hello(t *testing.T, c net.Conn, shard int32) {
	t.Helper()
	c.Write(frame(0x81, req(1, i32(shard), i64(1))))
	f, err := readRaw(t, c)
	if err != nil || f.op != 0x81 || f.code != 0 {
		t.Fatalf("hello: %+v, %v", f, err)
	}
}

// Malformed frames close their own connection, with an Error frame and a
// log line, while a well-behaved client on the same server carries on.
func TestServerRejectsBadFrames(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	var logs syncBuffer
	srv := serve(t, s, ln, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	good := dial(t, addr)
	if err := good.CreatePartition(bg(t), "ok", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	goodErr := make(chan error, 1)
	var goodRounds int
	go func() {
		defer close(goodErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := good.DescribePartition(bg(t), "ok", 0); err != nil {
				goodErr <- err
				return
			}
			goodRounds++
		}
	}()

	cases := []struct {
		name string
		send []byte
		corr uint32
		code int16
		half bool // close our write side after sending
		// version: the message must name the protocol versions, so an
		// operator mixing releases sees why.
		version bool
	}{
		{name: "http", send: []byte("GET / HTTP/1.1\r\nHost: ring\r\n\r\n"), code: 32},
		{name: "wrong magic", send: append([]byte{0xAF, 0x02, 0x80, 0, 0, 0, 12}, req(1)...), code: 32},
		// A peer of the release before the follower fields (version 1)
		// is refused at its first frame, not misread.
		{name: "old version", send: append([]byte{0xAE, 0x01, 0x80, 0, 0, 0, 12}, req(1)...), code: 32, version: true},
		// A store of the release before ProduceBatch (version 3) would
		// answer every produce "unsupported"; it is refused at once.
		{name: "release before ProduceBatch", send: append([]byte{0xAE, 0x03, 0x80, 0, 0, 0, 12}, req(1)...), code: 32, version: true},
		{name: "newer version", send: append([]byte{0xAE, 0x05, 0x80, 0, 0, 0, 12}, req(1)...), code: 32, version: true},
		{name: "oversized", send: []byte{0xAE, 0x04, 0x82, 0xFF, 0xFF, 0xFF, 0xFF}, code: 33},
		{name: "oversized by one", send: []byte{0xAE, 0x04, 0x82, 0x08, 0x00, 0x00, 0x01}, code: 33},
		{name: "no correlation id", send: frame(0x80, []byte{1, 2}), code: 32},
		{name: "negative string length", send: frame(0x87, req(7, []byte{0xFF, 0xFE}, i32(0))), corr: 7, code: 32},
		{name: "trailing bytes", send: frame(0x80, req(8, []byte{0})), corr: 8, code: 32},
		{name: "before hello", send: frame(0x87, req(9, str("ok"), i32(0))), corr: 9, code: 32},
		{name: "truncated", send: append([]byte{0xAE, 0x04, 0x80, 0, 0, 0, 100}, req(1)...), code: 32, half: true},
		{name: "hello shard out of range", send: frame(0x81, req(5, i32(99), i64(1))), corr: 5, code: 34},
		{name: "hello stale ring", send: frame(0x81, req(6, i32(0), i64(42))), corr: 6, code: 35},
		{name: "second hello", send: append(frame(0x81, req(1, i32(0), i64(1))), frame(0x81, req(2, i32(1), i64(1)))...), corr: 2, code: 32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.half {
				c.(*net.TCPConn).CloseWrite()
			}
			f, err := readRaw(t, c)
			if err != nil {
				t.Fatalf("no error frame: %v", err)
			}
			if f.op == 0x81 && f.code == 0 { // the first of two hellos
				f, err = readRaw(t, c)
				if err != nil {
					t.Fatalf("no error frame: %v", err)
				}
			}
			if f.op != 0xFF || f.code != tc.code || f.corr != tc.corr || f.msg == "" {
				t.Fatalf("got frame op 0x%02X corr %d code %d %q, want Error frame corr %d code %d", f.op, f.corr, f.code, f.msg, tc.corr, tc.code)
			}
			if tc.version && (!strings.Contains(f.msg, fmt.Sprintf("ring protocol version %d, this node speaks 4", tc.send[1])) ||
				!strings.Contains(f.msg, "same release")) {
				t.Fatalf("version refusal does not name the versions: %q", f.msg)
			}
			expectClosed(t, c)
		})
	}

	close(stop)
	if err := <-goodErr; err != nil {
		t.Fatalf("good client failed while bad frames arrived: %v", err)
	}
	if goodRounds == 0 {
		t.Fatal("good client made no progress")
	}
	produceFetch(t, good, "ok", 0, 5)

	if got := srv.Stats().ProtocolErrors; got != int64(len(cases)) {
		t.Fatalf("%d protocol errors counted, want %d", got, len(cases))
	}
	if n := strings.Count(logs.String(), `msg="ring protocol error, closing connection"`); n != len(cases) {
		t.Fatalf("%d protocol error log lines, want %d:\n%s", n, len(cases), logs.String())
	}
	if !strings.Contains(logs.String(), "bad magic 0x47") || !strings.Contains(logs.String(), "remote=127.0.0.1:") {
		t.Fatalf("log lines do not say what and who:\n%s", logs.String())
	}
}

// Well-formed requests the server cannot serve on this connection get an
// error response and leave the connection open.
func TestServerAnswersWithoutClosing(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	serve(t, s, ln, nil, nil)
	good := dial(t, addr)
	if err := good.CreatePartition(bg(t), "ws", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	owner := int32(ring.ShardFor("ws", 0, 4))
	other := (owner + 1) % 4

	c := rawDial(t, addr)
	hello(t, c, other)

	// Unknown opcode: answered with ErrUnsupported (36) under its own opcode.
	c.Write(frame(0x9A, req(11)))
	f, err := readRaw(t, c)
	if err != nil || f.op != 0x9A || f.corr != 11 || f.code != 36 {
		t.Fatalf("unknown opcode: %+v, %v", f, err)
	}
	// Partition of another shard: ErrWrongShard (34).
	c.Write(frame(0x87, req(12, str("ws"), i32(0))))
	f, err = readRaw(t, c)
	if err != nil || f.op != 0x87 || f.corr != 12 || f.code != 34 {
		t.Fatalf("wrong shard: %+v, %v", f, err)
	}
	// A store error crosses as its code: unknown partition (7).
	var missing int32
	for ring.ShardFor("nope", missing, 4) != int(other) {
		missing++
	}
	c.Write(frame(0x87, req(13, str("nope"), i32(missing))))
	f, err = readRaw(t, c)
	if err != nil || f.corr != 13 || f.code != 7 || !strings.Contains(f.msg, "unknown topic or partition") {
		t.Fatalf("unknown partition: %+v, %v", f, err)
	}
	// Describe works on a shard connection and reports the ring.
	c.Write(frame(0x80, req(14)))
	f, err = readRaw(t, c)
	if err != nil || f.op != 0x80 || f.corr != 14 || f.code != 0 || len(f.body) != 16 {
		t.Fatalf("describe: %+v, %v", f, err)
	}
	if v, n, max := int64(binary.BigEndian.Uint64(f.body)), int32(binary.BigEndian.Uint32(f.body[8:])), binary.BigEndian.Uint32(f.body[12:]); v != 1 || n != 4 || max != ring.DefaultMaxPayloadBytes {
		t.Fatalf("describe says version %d, %d shards, max %d", v, n, max)
	}
	// A Cancel for an id not in flight is ignored, silently.
	c.Write(frame(0x8A, req(99)))
	// Pipelined requests are all answered, each under its own id.
	var batch []byte
	for i := uint32(0); i < 50; i++ {
		batch = append(batch, frame(0x88, req(100+i))...)
	}
	c.Write(batch)
	seen := map[uint32]bool{}
	for i := 0; i < 50; i++ {
		f, err := readRaw(t, c)
		if err != nil || f.op != 0x88 || f.code != 0 {
			t.Fatalf("pipelined ListPartitions: %+v, %v", f, err)
		}
		seen[f.corr] = true
	}
	if len(seen) != 50 {
		t.Fatalf("%d distinct ids answered, want 50", len(seen))
	}
	produceFetch(t, good, "ws", 0, 1)
}

// A client that never reads its responses does not keep the server from
// stopping: the drain gives up after DrainTimeout.
func TestServerStopsWithUnreadResponses(t *testing.T) {
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := ring.NewServer(s, quiet())
	srv.DrainTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	good, err := ring.Dial(bg(t), addr, ring.DialOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := good.CreatePartition(bg(t), "big", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		produceFetch(t, good, "big", 0, 900) // ~100 KiB a batch
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello(t, c, int32(ring.ShardFor("big", 0, 4)))
	body := append(append(append([]byte{}, i32(0)...), i32(0)...), i64(0)...) // min, max bytes, max wait
	body = append(body, 0)                                                    // isolation level
	body = append(body, i32(1)...)
	body = append(body, str("big")...)
	body = append(body, i32(0)...)
	body = append(body, i64(0)...)
	body = append(body, i32(1<<30)...)
	body = append(body, i32(0)...) // follower id
	body = append(body, i32(0)...) // leader epoch
	var pile []byte
	for i := uint32(0); i < 64; i++ {
		pile = append(pile, frame(0x83, req(10+i, body))...)
	}
	before := srv.Stats().Requests
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(pile) // and never read: the server's writes back up
	}()
	// Every fetch decoded and answered: their responses now sit with the
	// writer, far more than the socket takes from a client that never reads.
	waitUntil(t, "the server to answer every fetch", func() bool {
		st := srv.Stats()
		return st.Requests >= before+64 && st.InFlight == 0
	})
	if st := srv.Stats(); st.SendfileBytes+st.CopiedBytes >= 64*800<<10 {
		t.Fatalf("server wrote everything to a client that reads nothing? %+v", st)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve hung on a client that does not read")
	}
	c.Close()
	<-wrote
}

// TestServerQueuedBytes: a frame header claiming a large payload reserves
// that much of the server's budget before the payload is read, and a
// second claim past the budget waits for the first to go, while frames
// that fit are served; nothing is allocated for a claim's unsent bytes.
func TestServerQueuedBytes(t *testing.T) {
	const claim = 100 << 20
	s := newStore(t)
	ln, addr := listenTCP(t)
	srv := serve(t, s, ln, nil, func(srv *ring.Server) { srv.MaxQueuedBytes = claim + claim/2 })
	claimOnly := func(n int) net.Conn {
		c := rawDial(t, addr)
		h := []byte{0xAE, 0x04, 0x82, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[3:], uint32(n))
		if _, err := c.Write(append(h, 0, 0, 0, 9)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := claimOnly(claim)
	waitUntil(t, "the first claim reserved", func() bool { return srv.Stats().QueuedBytes == claim })
	b := claimOnly(claim - 1)
	waitUntil(t, "the second claim waiting", func() bool { return srv.Stats().QueueWaits == 1 })

	// A frame that fits is served beside the first claim.
	good := dial(t, addr)
	if err := good.CreatePartition(bg(t), "q", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	// The served frame may not have given its bytes back yet: only the
	// second claim's reservation would show that it did not wait.
	if st := srv.Stats(); st.QueuedBytes >= claim+claim-1 {
		t.Fatalf("the second claim did not wait: %+v", st)
	}
	a.Close()
	waitUntil(t, "the second claim reserved", func() bool { return srv.Stats().QueuedBytes == claim-1 })
	b.Close()
	waitUntil(t, "all given back", func() bool { return srv.Stats().QueuedBytes == 0 })
}
