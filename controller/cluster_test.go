package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"
)

// testRaftTimeout tolerates fsync spikes on slow CI disks; production
// defaults are 1s.
const testRaftTimeout = 500 * time.Millisecond

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// memNode is one controller on the in-memory transport. Its stores outlive
// the controller, so it can be restarted.
type memNode struct {
	id    int32
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	logs  *raft.InmemStore
	snaps raft.SnapshotStore
	c     *Controller
}

type memCluster struct {
	t      *testing.T
	nodes  []*memNode
	voters []raft.Server
	tune   func(*raft.Config)
	opts   func(*Options)

	// mu guards each node's c against peerInfo, which leaders call from
	// their own goroutines; ghosts answer peerInfo for addresses that no
	// controller serves.
	mu     sync.Mutex
	ghosts map[string]ClusterInfo
}

// peerInfo is RaftDeps.PeerInfo on the in-memory transport.
func (mc *memCluster) peerInfo(ctx context.Context, addr string) (ClusterInfo, error) {
	mc.mu.Lock()
	var c *Controller
	for _, nd := range mc.nodes {
		if string(nd.addr) == addr {
			c = nd.c
		}
	}
	ghost, isGhost := mc.ghosts[addr]
	mc.mu.Unlock()
	switch {
	case c != nil:
		return c.ClusterInfo(ctx)
	case isGhost:
		return ghost, nil
	}
	return ClusterInfo{}, fmt.Errorf("dial %s: connection refused", addr)
}

func newMemCluster(t *testing.T, n int, tune func(*raft.Config), opts func(*Options)) *memCluster {
	mc := &memCluster{t: t, tune: tune, opts: opts}
	for i := 1; i <= n; i++ {
		addr := raft.ServerAddress(fmt.Sprintf("node%d", i))
		// Snapshots go to files: raft's InmemSnapshotStore hands a snapshot
		// being sent to a follower the buffer that the next snapshot is
		// still writing (a data race inside raft).
		snaps, err := raft.NewFileSnapshotStore(filepath.Join(t.TempDir(), string(addr)), 2, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		mc.nodes = append(mc.nodes, &memNode{id: int32(i), addr: addr, logs: raft.NewInmemStore(), snaps: snaps})
		mc.voters = append(mc.voters, raft.Server{Suffrage: raft.Voter, ID: serverID(int32(i)), Address: addr})
	}
	for _, nd := range mc.nodes {
		mc.start(nd)
	}
	t.Cleanup(func() {
		for _, nd := range mc.nodes {
			if nd.c != nil {
				_ = nd.c.Close()
			}
		}
	})
	return mc
}

// start (re)starts nd's controller on a fresh transport connected to the
// others.
func (mc *memCluster) start(nd *memNode) {
	mc.t.Helper()
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	for _, o := range mc.nodes {
		if o != nd && o.trans != nil {
			nd.trans.Connect(o.addr, o.trans)
			o.trans.Connect(nd.addr, nd.trans)
		}
	}
	opts := Options{
		NodeID:            nd.id,
		Bootstrap:         true,
		RaftTimeout:       testRaftTimeout,
		SessionTimeout:    time.Second,
		HeartbeatInterval: 50 * time.Millisecond,
		Logger:            testLogger(mc.t),
		Raft:              &RaftDeps{Transport: nd.trans, Logs: nd.logs, Stable: nd.logs, Snapshots: nd.snaps, Voters: mc.voters, Tune: mc.tune, PeerInfo: mc.peerInfo},
	}
	if mc.opts != nil {
		mc.opts(&opts)
	}
	c, err := Open(opts)
	if err != nil {
		mc.t.Fatal(err)
	}
	mc.mu.Lock()
	nd.c = c
	mc.mu.Unlock()
}

func (mc *memCluster) stop(nd *memNode) {
	mc.t.Helper()
	if err := nd.c.Close(); err != nil {
		mc.t.Fatal(err)
	}
	mc.mu.Lock()
	nd.c = nil
	mc.mu.Unlock()
	for _, o := range mc.nodes {
		if o.trans != nil {
			o.trans.Disconnect(nd.addr)
		}
	}
	nd.trans = nil
}

// isolate cuts nd off from every other node, both ways.
func (mc *memCluster) isolate(nd *memNode) {
	nd.trans.DisconnectAll()
	for _, o := range mc.nodes {
		if o != nd && o.trans != nil {
			o.trans.Disconnect(nd.addr)
		}
	}
}

func (mc *memCluster) heal() {
	for _, a := range mc.nodes {
		for _, b := range mc.nodes {
			if a != b && a.trans != nil && b.trans != nil {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// leader waits for exactly one running node among among to lead.
func (mc *memCluster) leader(among ...*memNode) *memNode {
	mc.t.Helper()
	if len(among) == 0 {
		among = mc.nodes
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var leaders []*memNode
		for _, nd := range among {
			if nd.c != nil && nd.c.IsLeader() {
				leaders = append(leaders, nd)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	mc.t.Fatal("no single leader within 20s")
	return nil
}

// converged waits until every running node's FSM encodes the same.
func (mc *memCluster) converged() {
	mc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var states [][]byte
	for time.Now().Before(deadline) {
		states = states[:0]
		for _, nd := range mc.nodes {
			if nd.c != nil {
				states = append(states, snapshotBytes(mc.t, nd.c.fsm))
			}
		}
		same := true
		for _, s := range states[1:] {
			same = same && bytes.Equal(s, states[0])
		}
		if same {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, s := range states {
		mc.t.Logf("state %d: %s", i, s)
	}
	mc.t.Fatal("FSMs did not converge within 20s")
}

func mustCreate(t *testing.T, api API, names ...string) {
	t.Helper()
	req := CreateTopicsRequest{}
	for _, n := range names {
		req.Topics = append(req.Topics, NewTopic{Name: n, Partitions: 2, ReplicationFactor: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := api.CreateTopics(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Topics {
		if r.Err() != nil {
			t.Fatalf("create %s: %v", r.Name, r.Err())
		}
	}
}

func TestInmemCluster(t *testing.T) {
	defer goleak.VerifyNone(t)
	mc := newMemCluster(t, 3, func(c *raft.Config) {
		// Small enough that a restarted node is sent a snapshot.
		c.SnapshotThreshold = 16
		c.TrailingLogs = 4
		c.SnapshotInterval = 100 * time.Millisecond
	}, nil)
	ctx := context.Background()

	// Election.
	l := mc.leader()
	mustCreate(t, l.c, "a", "b")
	mc.converged()
	if id := l.c.fsm.ClusterID(); id == "" {
		t.Error("the first leader set no cluster id")
	}

	// A follower refuses writes and names the leader.
	var f *memNode
	for _, nd := range mc.nodes {
		if nd != l {
			f = nd
			break
		}
	}
	_, err := f.c.CreateTopics(ctx, CreateTopicsRequest{Topics: []NewTopic{{Name: "x", Partitions: 1, ReplicationFactor: 1}}})
	var nl *NotLeaderError
	if !errors.As(err, &nl) || nl.LeaderID != l.id || nl.LeaderAddr != string(l.addr) {
		t.Fatalf("write on a follower: %v", err)
	}

	// Partition the leader away: the other two elect one of themselves and
	// go on; the old leader cannot commit.
	mc.isolate(l)
	var rest []*memNode
	for _, nd := range mc.nodes {
		if nd != l {
			rest = append(rest, nd)
		}
	}
	start := time.Now()
	l2 := mc.leader(rest...)
	t.Logf("new leader %d elected %v after the partition", l2.id, time.Since(start).Round(time.Millisecond))
	mustCreate(t, l2.c, "c")
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = l.c.CreateTopics(short, CreateTopicsRequest{Topics: []NewTopic{{Name: "lost", Partitions: 1, ReplicationFactor: 1}}})
	cancel()
	if err == nil {
		t.Fatal("the isolated old leader committed a write")
	}
	t.Logf("write on the isolated old leader: %v", err)
	mc.heal()
	mc.converged()
	if _, missing := l.c.fsm.Topics([]string{"c", "lost"}); len(missing) != 1 || missing[0] != "lost" {
		t.Errorf("old leader after healing: missing %v, want [lost]", missing)
	}

	// Restart a follower while writes go on; enough of them that the
	// leader compacts its log and must send a snapshot.
	l = mc.leader()
	var victim *memNode
	for _, nd := range mc.nodes {
		if nd != l {
			victim = nd
			break
		}
	}
	mc.stop(victim)
	for i := 0; i < 40; i++ {
		mustCreate(t, l.c, fmt.Sprintf("during-%02d", i))
	}
	if err := l.c.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	mc.start(victim)
	mc.converged()
	if got := len(victim.c.fsm.Nodes()) + len(mustTopics(victim.c)); got != 43 {
		t.Errorf("restarted node has %d topics+nodes, want 43", got)
	}

	// Restart every node at once: the state comes back from the stores.
	before := snapshotBytes(t, l.c.fsm)
	for _, nd := range mc.nodes {
		mc.stop(nd)
	}
	for _, nd := range mc.nodes {
		mc.start(nd)
	}
	l = mc.leader()
	mc.converged()
	after := snapshotBytes(t, l.c.fsm)
	if !bytes.Equal(before, after) {
		t.Errorf("state after a full restart differs:\n%s\n%s", before, after)
	}
	mustCreate(t, l.c, "after-restart")
	mc.converged()
	for _, nd := range mc.nodes {
		mc.stop(nd)
	}
}

func mustTopics(c *Controller) []TopicInfo {
	ts, _ := c.fsm.Topics(nil)
	return ts
}

func TestSessionTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	mc := newMemCluster(t, 1, nil, nil)
	l := mc.leader()
	ctx := context.Background()
	resp, err := l.c.RegisterNode(ctx, RegisterNodeRequest{ID: 5, Kind: KindStore, Shards: 1, RingAddr: "127.0.0.1:7005"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionTimeoutMs != 1000 || resp.HeartbeatIntervalMs != 50 || !resp.Delta.Full {
		t.Errorf("register reply %+v", resp)
	}
	// Unknown nodes must register.
	if _, err := l.c.Heartbeat(ctx, HeartbeatRequest{ID: 6}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("heartbeat of an unknown node: %v", err)
	}
	// Silent past the session timeout: down.
	waitFor(t, 10*time.Second, "node 5 down", func() bool {
		n, _ := l.c.fsm.Node(5)
		return !n.Live
	})
	// A heartbeat brings it back, and the reply says so.
	hb, err := l.c.Heartbeat(ctx, HeartbeatRequest{ID: 5, KnownVersion: resp.Delta.Version})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := l.c.fsm.Node(5); !n.Live {
		t.Error("a heartbeat did not bring the node back")
	}
	if len(hb.Delta.Nodes) != 1 || !hb.Delta.Nodes[0].Live || hb.Delta.Full {
		t.Errorf("heartbeat delta %+v", hb.Delta)
	}
	mc.stop(mc.nodes[0])
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
