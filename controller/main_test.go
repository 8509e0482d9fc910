package controller

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain silences the default logger, which FSMs built without one use;
// CONTROLLER_TEST_LOG=1 shows everything. goleak then checks that no test
// left a goroutine behind (Raft loops, HTTP servers, leader duties).
func TestMain(m *testing.M) {
	if os.Getenv("CONTROLLER_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	goleak.VerifyTestMain(m)
}
