package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnOffsetsReachLiveGroup: offsets that a transaction's coordinator
// on another gateway commits for a group (here: the records that gateway
// appends, written directly) reach the group's coordinator while it holds
// the group live, before its next OffsetFetch answer. Without that, a
// member joining after a rebalance resumed from the offsets before the
// transaction and consumed its records twice.
func TestTxnOffsetsReachLiveGroup(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	c := e.gw.groups
	waitFor(t, "the group coordinator to load", func() bool {
		select {
		case <-c.ready:
			return true
		default:
			return false
		}
	})
	const id = "txn-applied-group"
	createTopic(t, newClient(t, e.addr), "etl-in", 3)
	// A member keeps the group live (an idle group retires to dormant).
	member := newClient(t, e.addr, kgo.ConsumerGroup(id), kgo.ConsumeTopics("etl-in"), kgo.DisableAutoCommit())
	go member.PollFetches(ctx)
	waitFor(t, "the group to have a member", func() bool {
		c.mu.Lock()
		gr := c.mu.active[id]
		c.mu.Unlock()
		if gr == nil {
			return false
		}
		n := make(chan int, 1)
		if err := c.call(ctx, id, false, func(gr *group) { n <- len(gr.members) }); err != nil {
			return false
		}
		return <-n > 0
	})
	offs := map[tp]committed{{"etl-in", 2}: {offset: 41, leaderEpoch: -1, metadata: "m"}}
	recs := []record{offsetRecord(id, tp{"etl-in", 2}, new(offs[tp{"etl-in", 2}])), txnAppliedRecord(id, offs)}
	if err := c.write(ctx, c.partitionFor(id), recs); err != nil {
		t.Fatal(err)
	}
	res, err := e.gw.fetchOffsets(ctx, id, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, ft := range res {
		for _, p := range ft.parts {
			if ft.name == "etl-in" && p.Partition == 2 {
				got = append(got, p.Offset)
			}
		}
	}
	if len(got) != 1 || got[0] != 41 {
		t.Fatalf("live group's offset for etl-in/2 after another gateway's transaction: %v, want [41]", got)
	}
}
