package controller

import (
	"path/filepath"
	"testing"
	"time"
)

// A single voter has no one to wait for: it must lead as soon as it starts,
// not after its election timeout, so that a restarted single node takes
// writes at once. The hour-long Raft timeout makes any wait for an election
// show as a failure.
func TestSingleVoterLeadsAtOnce(t *testing.T) {
	nd := &netNode{id: 1, dir: filepath.Join(t.TempDir(), "raft")}
	hour := func(o *Options) { o.RaftTimeout = time.Hour }
	for i, bootstrap := range []bool{true, false, false} {
		start := time.Now()
		startNetNode(t, nd, bootstrap, nil, hour)
		waitFor(t, 20*time.Second, "leadership of the single voter", nd.c.IsLeader)
		t.Logf("start %d (bootstrap %v): leader %v after Open began", i, bootstrap, time.Since(start).Round(time.Millisecond))
		mustCreate(t, nd.c, "t"+string(rune('a'+i)))
		if err := nd.c.Close(); err != nil {
			t.Fatal(err)
		}
		nd.c = nil
	}
}
