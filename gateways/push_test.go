package gateways

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
)

// pushProto answers "sub" with nothing and then pushes n frames from a
// goroutine of its own, as a subscription does; Close stops the pusher.
type pushProto struct{ n int }

type pushSession struct {
	lineSession
	wg     sync.WaitGroup
	cancel context.CancelFunc
	p      *pushProto
}

func (p *pushProto) NewSession(c *Conn) Session {
	return &pushSession{lineSession: lineSession{p: &lineProto{}, c: c}, p: p}
}

func (s *pushSession) Handle(ctx context.Context, frame []byte) (*Response, error) {
	if string(frame) != "sub" {
		return s.lineSession.Handle(ctx, frame)
	}
	pctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for i := range s.p.n {
			if err := s.c.Push(pctx, framed(fmt.Appendf(nil, "push %d", i))); err != nil {
				return
			}
		}
	}()
	return nil, nil
}

func (s *pushSession) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// TestPushBesideResponses: pushed frames reach the client in the order
// pushed, interleaved with the responses to its requests, and a session
// whose client hangs up mid-stream stops its pusher and leaks nothing.
func TestPushBesideResponses(t *testing.T) {
	s := &Server{Protocol: &pushProto{n: 200}, Logger: quiet()}
	addr, stop := startServer(t, s)
	defer stop()
	c := dial(t, addr)
	c.send([]byte("sub"))
	c.send([]byte("echo"))
	next, echoed := 0, false
	for next < 200 || !echoed {
		got, err := c.recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case got == "echo":
			echoed = true
		case got == fmt.Sprintf("push %d", next):
			next++
		default:
			t.Fatalf("got %q, want push %d or the echo", got, next)
		}
	}
	// A second stream that the client walks away from: the pusher blocks
	// on a full queue until the connection closes, then stops.
	s2 := &Server{Protocol: &pushProto{n: 1 << 20}, Logger: quiet(), QueueDepth: 2}
	addr2, stop2 := startServer(t, s2)
	c2 := dial(t, addr2)
	c2.send([]byte("sub"))
	if _, err := c2.recv(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	c2.nc.Close()
	stop2() // waits for the connection, so its pusher must have stopped
}
