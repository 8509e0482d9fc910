package logstore

import (
	"context"
	"os"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// TestHWCheckpoint: a cluster store restarts each partition at its
// checkpointed high watermark, not at its log end, which holds records
// the follower never confirmed; a single-node store writes no checkpoint.
func TestHWCheckpoint(t *testing.T) {
	cluster := func(o *Options) { o.RequireRole = true }
	a, b := newReplNode(t, storeA, cluster), newReplNode(t, storeB, cluster)
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	b.follow(t, storeA, 1)
	produceAcks1(t, a.Store, logtest.Filler(1, 3, 10, 1))
	mustReplicate(t, a, b, 1)
	mustReplicate(t, a, b, 1)
	produceAcks1(t, a.Store, logtest.Filler(1, 2, 10, 2))
	if got := a.info(t); got.HighWatermark != 3 || got.LogEndOffset != 5 {
		t.Fatalf("before restart: %+v", got)
	}
	ctx := context.Background()
	checkpoint := func(n *replNode) {
		for _, sh := range n.shards {
			r := &request{kind: reqTestHook, done: make(chan struct{}, 1), hook: func(s *shard) { s.checkpointHW() }}
			if err := n.call(ctx, sh, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkpoint(a)
	a.testStore = a.reopen(t) // closing runs the chores, which write the files
	if got := a.info(t); got.HighWatermark != 3 || got.LogEndOffset != 5 {
		t.Fatalf("after restart: hw %d log end %d; want 3 and 5", got.HighWatermark, got.LogEndOffset)
	}
	// As leader again, consumers see up to 3 until the follower confirms more.
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	if data, hw, err := consumerRead(t, a.Store, 3); err != nil || len(data) != 0 || hw != 3 {
		t.Fatalf("read at 3: %d bytes, hw %d, %v", len(data), hw, err)
	}

	// A single-node store ignores checkpoints: its high watermark is
	// its durable log end, as before replication.
	c := newReplNode(t, storeA, nil)
	produceAcks1(t, c.Store, logtest.Filler(1, 3, 10, 1))
	c.testStore.close(t)
	if err := os.WriteFile(hwCheckpointPath(c.dir, 0), []byte("0\n1\nr 0 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.testStore = openTestStore(t, c.dir, nil)
	if got := c.info(t); got.HighWatermark != 3 {
		t.Fatalf("single-node store after restart: hw %d", got.HighWatermark)
	}
}

func TestDecodeHWCheckpoint(t *testing.T) {
	m := map[partKey]int64{}
	if err := decodeHWCheckpoint([]byte("0\n2\na 0 5\nb.c 3 7\n"), m); err != nil || m[partKey{"a", 0}] != 5 || m[partKey{"b.c", 3}] != 7 {
		t.Fatalf("%v, %v", m, err)
	}
	for _, bad := range []string{"", "0\n1\n", "1\n0\n", "0\n1\na 0\n", "0\n1\na x 5\n", "0\n1\na 0 -1\n", "0\n1\na/b 0 1\n"} {
		if err := decodeHWCheckpoint([]byte(bad), map[partKey]int64{}); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
