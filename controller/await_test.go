package controller_test

import (
	"context"
	"testing"
	"time"
)

// TestAwaitSoleLeadership: serve logs "running" after this returns, so a
// fresh single voter must lead by then, not some milliseconds later.
func TestAwaitSoleLeadership(t *testing.T) {
	c := startVoter(t)
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
