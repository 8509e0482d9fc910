package cli

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/tools/config"
)

// TestControllerStopsWhenItsPortDies: `aerostream controller` supervises
// the voter's serving loops. When its listener dies under it, the process
// logs which part failed and why and returns the error, so that it exits
// non-zero instead of lingering with nothing served.
func TestControllerStopsWhenItsPortDies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	c, err := openController(cfg, ln, logger, true, nil)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer c.Close()
	ln.Close()
	// Bounded, so that a death that goes unnoticed fails the test
	// rather than hanging it.
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	err = superviseController(ctx, stop, c, logger)
	if err == nil || !strings.Contains(err.Error(), "controller listener") {
		t.Fatalf("superviseController = %v, want the death of the controller's listener", err)
	}
	for _, want := range []string{`reason="part failed" part=controller`, "controller listener"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}
