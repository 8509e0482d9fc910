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
	"github.com/aerostream/aerostream/controller/controllertest"
)

// openVoter starts a single-voter controller on loopback, with its Raft
// state in pebble, and waits until it leads and has its cluster id.
func openVoter(t *testing.T) *controller.Controller {
	t.Helper()
	c := startVoter(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := c.ClusterInfo(context.Background())
		if err == nil && info.State == "Leader" && info.ClusterID != "" {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader with a cluster id within 20s: %+v %v", info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startVoter is openVoter without the wait.
func startVoter(t *testing.T) *controller.Controller {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(controller.Options{
		NodeID: 1, Dir: filepath.Join(t.TempDir(), "raft"), Listener: ln, Bootstrap: true,
		SessionTimeout: 5 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// The controller in process, as serve's gateways and store use it.
func TestConformanceController(t *testing.T) {
	controllertest.Run(t, func(t *testing.T) controller.API { return openVoter(t) })
}

// The network client, as separate gateways, stores and the CLI use it.
func TestConformanceClient(t *testing.T) {
	controllertest.Run(t, func(t *testing.T) controller.API {
		c := openVoter(t)
		cl := controller.NewClient([]string{c.Addr()}, controller.ClientOptions{Timeout: 20 * time.Second})
		t.Cleanup(cl.Close)
		return cl
	})
}
