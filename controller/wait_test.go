package controller_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// TestWaitReportsADeadAcceptLoop: when the loop that accepts on the
// controller's port dies (here its listener is closed under it), Wait
// says so, naming the listener, so that the process stops instead of
// running with nothing served.
func TestWaitReportsADeadAcceptLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(controller.Options{
		NodeID: 1, Dir: t.TempDir(), Listener: ln, Bootstrap: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Serving: Wait returns when its ctx ends, with nothing wrong.
	ended, end := context.WithCancel(ctx)
	end()
	if err := c.Wait(ended); err != nil {
		t.Fatalf("Wait while serving: %v", err)
	}
	ln.Close()
	err = c.Wait(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Wait after the accept loop died: %v (ctx %v)", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "controller listener "+ln.Addr().String()) {
		t.Fatalf("Wait's error %q does not name the listener", err)
	}
}
