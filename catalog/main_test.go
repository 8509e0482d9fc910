package catalog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if pebble or raft goroutines outlive their Close or
// Shutdown (DESIGN §6.6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
