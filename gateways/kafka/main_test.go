package kafka

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// background loop here must stop through its ctx and be waited for.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
