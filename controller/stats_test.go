package controller

import (
	"context"
	"testing"
	"time"
)

// TestStoreStatsOnEveryController: a store's heartbeat stats show in
// ListNodes on the leader, which holds them, and on a follower, which asks
// the leader for them; a gateway's are ignored.
func TestStoreStatsOnEveryController(t *testing.T) {
	nodes := startNetCluster(t, 2)
	ctx := context.Background()
	var leader, follower *netNode
	for _, nd := range nodes {
		if nd.c.IsLeader() {
			leader = nd
		} else {
			follower = nd
		}
	}
	if leader == nil || follower == nil {
		t.Fatal("no leader and follower")
	}
	if _, err := leader.c.RegisterNode(ctx, RegisterNodeRequest{ID: 7, Kind: KindStore, Shards: 1, RingAddr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.c.RegisterNode(ctx, RegisterNodeRequest{ID: 900, Kind: KindGateway, Addresses: map[string]string{"kafka": "127.0.0.1:2"}}); err != nil {
		t.Fatal(err)
	}
	want := StoreStats{DiskBytes: 1234, ColdBytes: 5678, Partitions: 3}
	if _, err := leader.c.Heartbeat(ctx, HeartbeatRequest{ID: 7, Stats: &want}); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.c.Heartbeat(ctx, HeartbeatRequest{ID: 900, Stats: &StoreStats{DiskBytes: 1}}); err != nil {
		t.Fatal(err)
	}
	check := func(who string, nodes []NodeInfo) {
		t.Helper()
		seen := 0
		for _, n := range nodes {
			switch n.ID {
			case 7:
				seen++
				if n.Stats == nil || *n.Stats != want {
					t.Errorf("%s: store 7 stats %+v, want %+v", who, n.Stats, want)
				}
			case 900:
				seen++
				if n.Stats != nil {
					t.Errorf("%s: gateway stats %+v, want none", who, n.Stats)
				}
			}
		}
		if seen != 2 {
			t.Errorf("%s: %d of the 2 nodes listed: %+v", who, seen, nodes)
		}
	}
	lr, err := leader.c.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("leader", lr.Nodes)
	// The follower applies the registrations in its own time.
	waitFor(t, 10*time.Second, "the follower to apply the registrations", func() bool { return len(follower.c.fsm.Nodes()) == 2 })
	fr, err := follower.c.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("follower", fr.Nodes)
	cl := NewClient([]string{follower.addr}, ClientOptions{})
	defer cl.Close()
	cr, err := cl.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("client", cr.Nodes)
}
