package controller_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// TestAwaitSoleLeadership: serve logs "running" after this returns, so a
// fresh single voter must lead by then, not some milliseconds later.
func TestAwaitSoleLeadership(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(controller.Options{
		NodeID: 1, Dir: filepath.Join(t.TempDir(), "raft"), Listener: ln, Bootstrap: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !c.AwaitSoleLeadership(ctx) {
		t.Fatal("a fresh single voter did not lead within 20 s")
	}
	info, err := c.ClusterInfo(ctx)
	if err != nil || info.State != "Leader" {
		t.Fatalf("right after AwaitSoleLeadership: state %q, err %v", info.State, err)
	}
}
