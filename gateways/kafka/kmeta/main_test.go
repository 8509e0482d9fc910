package kmeta

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (membership
// loops, the controller's Raft, the store's shards).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
