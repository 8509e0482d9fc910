package controller

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain silences the default logger, which FSMs built without one use;
// CONTROLLER_TEST_LOG=1 shows everything.
func TestMain(m *testing.M) {
	if os.Getenv("CONTROLLER_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}
