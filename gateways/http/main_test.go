package http

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Serve
// must stop through its ctx and wait for what it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
