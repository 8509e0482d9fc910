package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// viewLog records what a store agent's hooks were given.
type viewLog struct {
	mu         sync.Mutex
	version    uint64
	heartbeats int
	session    time.Duration
	late       bool // a heartbeat reported as sent in the future
}

func (l *viewLog) onView(_ context.Context, v *View) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.version = v.Clone().Version
	return nil
}

func (l *viewLog) onHeartbeat(sent time.Time, session time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heartbeats++
	l.session = session
	l.late = l.late || sent.After(time.Now())
}

func runAgentWith(t *testing.T, api Members, pm PartitionManager, id int32, opts StoreAgentOptions) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts.Logger = testLogger(t)
	a := NewStoreAgentWith(api, pm, RegisterNodeRequest{ID: id, Shards: 2, RingAddr: fmt.Sprintf("127.0.0.1:%d", 7100+id)}, opts)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// The agent creates every replica it holds, leader or not, applies
// configs to all of them, deletes its copy once a reassignment moved the
// partition away, and hands views and heartbeats to its hooks. The
// controller moves leadership back to a preferred replica once it is in
// sync again.
func TestStoreAgentReplicas(t *testing.T) {
	defer goleak.VerifyNone(t)
	mc := newMemCluster(t, 1, nil, func(o *Options) { o.LeaderRebalanceInterval = 50 * time.Millisecond })
	c := mc.leader().c
	ctx := context.Background()
	stores := map[int32]*fakeStore{}
	stops := map[int32]func(){}
	var hooks viewLog
	for id := int32(1); id <= 3; id++ {
		stores[id] = newFakeStore()
		opts := StoreAgentOptions{}
		if id == 1 {
			opts = StoreAgentOptions{OnView: hooks.onView, OnHeartbeat: hooks.onHeartbeat}
		}
		stops[id] = runAgentWith(t, c, stores[id], id, opts)
	}
	waitFor(t, 10*time.Second, "three stores live", func() bool {
		n := 0
		c.fsm.read(func(st *state) { n = len(st.placeable()) })
		return n == 3
	})

	resp, err := c.CreateTopics(ctx, CreateTopicsRequest{WaitMs: 10000, Topics: []NewTopic{{Name: "rep", Partitions: 2, ReplicationFactor: 3}}})
	if err != nil || resp.Topics[0].Err() != nil {
		t.Fatal(err, resp)
	}
	for id, s := range stores {
		if got := s.list(); !slices.Equal(got, []string{"rep/0", "rep/1"}) {
			t.Errorf("store %d holds %v after a waited RF 3 create", id, got)
		}
	}
	waitFor(t, 10*time.Second, "hooks called", func() bool {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		return hooks.version >= c.fsm.Version() && hooks.heartbeats > 0
	})
	hooks.mu.Lock()
	if hooks.session != time.Second || hooks.late {
		t.Errorf("OnHeartbeat given session %v (want 1s), sent in the future: %v", hooks.session, hooks.late)
	}
	hooks.mu.Unlock()

	// A config change reaches followers' copies too.
	if _, err := c.AlterConfigs(ctx, AlterConfigsRequest{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "rep",
		Incremental: true, Ops: []ConfigOp{{Name: "retention.ms", Op: OpSet, Value: "120000"}}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "config on every replica", func() bool {
		for _, s := range stores {
			if s.config("rep", 0)["retention.ms"] != "120000" || s.config("rep", 1)["retention.ms"] != "120000" {
				return false
			}
		}
		return true
	})

	// Move rep/0 from its leader's store to a new store 4: 4 creates it at
	// once; when the leader reports 4 in sync, the move completes and the
	// old store deletes its copy.
	stores[4] = newFakeStore()
	stops[4] = runAgentWith(t, c, stores[4], 4, StoreAgentOptions{})
	waitFor(t, 10*time.Second, "store 4 live", func() bool { n, ok := c.fsm.Node(4); return ok && n.Live })
	p0 := mustPartition(t, c, "rep", 0)
	target := append([]int32{4}, without(p0.Replicas, p0.Leader)...)
	rr, err := c.AlterPartitionReassignments(ctx, ReassignRequest{Reassignments: []Reassignment{{Topic: "rep", Partition: 0, Replicas: target}}})
	if err != nil || rr.Errors[0] != nil {
		t.Fatal(err, rr)
	}
	wantParts(t, stores[4], "rep/0")
	p0 = mustPartition(t, c, "rep", 0)
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{Topic: "rep", Partition: 0, LeaderID: p0.Leader, LeaderEpoch: p0.LeaderEpoch,
		PartitionEpoch: p0.PartitionEpoch, ISR: append(slices.Clone(p0.ISR), 4)}); err != nil {
		t.Fatal(err)
	}
	old := p0.Leader
	wantParts(t, stores[old], "rep/1")
	if p := mustPartition(t, c, "rep", 0); p.Leader != 4 || !slices.Equal(p.Replicas, target) {
		t.Errorf("after the move: %+v, want leader 4 replicas %v", p, target)
	}

	// The leader of rep/1 goes away: another replica leads. Back and in
	// sync again, it gets its leadership back from the rebalance check.
	p1 := mustPartition(t, c, "rep", 1)
	pref := p1.Replicas[0]
	stops[pref]()
	waitFor(t, 10*time.Second, "failover of rep/1", func() bool {
		p := mustPartition(t, c, "rep", 1)
		return p.Leader != pref && p.Leader != NoLeader && !slices.Contains(p.ISR, pref)
	})
	stops[pref] = runAgentWith(t, c, stores[pref], pref, StoreAgentOptions{})
	waitFor(t, 10*time.Second, "store back", func() bool { n, _ := c.fsm.Node(pref); return n.Live })
	p1 = mustPartition(t, c, "rep", 1)
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{Topic: "rep", Partition: 1, LeaderID: p1.Leader, LeaderEpoch: p1.LeaderEpoch,
		PartitionEpoch: p1.PartitionEpoch, ISR: append(slices.Clone(p1.ISR), pref)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "preferred leader back", func() bool { return mustPartition(t, c, "rep", 1).Leader == pref })
	for _, stop := range stops {
		stop()
	}
	mc.stop(mc.nodes[0])
}

func mustPartition(t *testing.T, c *Controller, topic string, p int32) PartitionInfo {
	t.Helper()
	ti, err := c.fsm.Topic(TopicRef{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	return ti.Partitions[p]
}
