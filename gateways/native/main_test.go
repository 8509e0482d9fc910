package native_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// gateway's connections and the SDK's readers must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
