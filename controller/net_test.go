package controller

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// netNode is a controller on a real loopback listener with its Raft state
// in pebble, as `aerostream controller` runs one.
type netNode struct {
	id   int32
	dir  string
	addr string
	c    *Controller
}

func startNetNode(t testing.TB, nd *netNode, bootstrap bool, join []string, tune ...func(*Options)) {
	t.Helper()
	listen := "127.0.0.1:0"
	if nd.addr != "" {
		listen = nd.addr
	}
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger a moment after a restart
		if ln, err = net.Listen("tcp", listen); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		NodeID: nd.id, Dir: nd.dir, Listener: ln, Bootstrap: bootstrap, Join: join,
		RaftTimeout: testRaftTimeout, SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Logger: testLogger(t),
	}
	for _, fn := range tune {
		fn(&opts)
	}
	c, err := Open(opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	nd.c, nd.addr = c, c.Addr()
}

// startNetCluster starts n controllers: the first bootstraps, the others
// join it.
func startNetCluster(t testing.TB, n int, tune ...func(*Options)) []*netNode {
	t.Helper()
	nodes := make([]*netNode, n)
	for i := range nodes {
		nodes[i] = &netNode{id: int32(i + 1), dir: filepath.Join(t.TempDir(), "raft")}
		var join []string
		if i > 0 {
			join = []string{nodes[0].addr}
		}
		startNetNode(t, nodes[i], i == 0, join, tune...)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd.c != nil {
				_ = nd.c.Close()
			}
		}
	})
	// Wait for every node to see three voters and a leader.
	for _, nd := range nodes {
		deadline := time.Now().Add(30 * time.Second)
		for {
			info, err := nd.c.ClusterInfo(context.Background())
			if err == nil && len(info.Voters) == n && info.LeaderID >= 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: cluster not formed within 30s: %+v %v", nd.id, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nodes
}

func addrsOf(nodes []*netNode) []string {
	var out []string
	for _, nd := range nodes {
		out = append(out, nd.addr)
	}
	return out
}

func TestNetworkClusterAndClient(t *testing.T) {
	defer goleak.VerifyNone(t)
	nodes := startNetCluster(t, 3)
	// Start the client at a follower, so its first write is redirected.
	info, err := nodes[0].c.ClusterInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addrs := addrsOf(nodes)
	for i, a := range addrs {
		if a != info.LeaderAddr {
			addrs[0], addrs[i] = addrs[i], addrs[0]
			break
		}
	}
	cl := NewClient(addrs, ClientOptions{Timeout: 30 * time.Second})
	defer cl.Close()
	ctx := context.Background()
	mustCreate(t, cl, "orders", "payments")
	if cl.Target() != info.LeaderAddr {
		t.Errorf("client target %s, want the leader %s", cl.Target(), info.LeaderAddr)
	}

	// Bad input through the client: each error keeps its sentinel.
	resp, err := cl.CreateTopics(ctx, CreateTopicsRequest{Topics: []NewTopic{
		{Name: "orders", Partitions: 1, ReplicationFactor: 1},
		{Name: "r3", Partitions: 1, ReplicationFactor: 3},
		{Name: "cfg", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "-7"}},
		{Name: "dup", Partitions: 1, ReplicationFactor: 1},
		{Name: "dup", Partitions: 1, ReplicationFactor: 1},
		{Name: "ok", Partitions: 3, ReplicationFactor: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{ErrTopicExists, ErrInvalidReplicationFactor, ErrInvalidConfig, ErrInvalidRequest, ErrInvalidRequest, nil} {
		if got := resp.Topics[i].Err(); !errors.Is(got, want) {
			t.Errorf("topic %d (%s): %v, want %v", i, resp.Topics[i].Name, got, want)
		}
	}
	if !strings.Contains(resp.Topics[1].Err().Error(), "replication factor 3 is larger than the 0 live store(s)") {
		t.Errorf("rf error: %v", resp.Topics[1].Err())
	}
	if resp.Topics[5].ID.IsZero() || len(resp.Topics[5].Partitions) != 3 {
		t.Errorf("created: %+v", resp.Topics[5])
	}
	// Validate-only creates nothing.
	resp, err = cl.CreateTopics(ctx, CreateTopicsRequest{ValidateOnly: true, Topics: []NewTopic{{Name: "v", Partitions: 2, ReplicationFactor: 1}}})
	if err != nil || resp.Topics[0].Err() != nil || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("validate only: %+v %v", resp, err)
	}
	md, err := cl.Metadata(ctx, MetadataRequest{Topics: []string{"v", "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Name != "orders" || len(md.Missing) != 1 || md.Missing[0] != "v" || md.ClusterID == "" {
		t.Errorf("metadata %+v", md)
	}
	pr, err := cl.CreatePartitions(ctx, CreatePartitionsRequest{Topics: []PartitionCount{{"orders", 1}, {"orders", 4}, {"nope", 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(pr.Topics[0].Err(), ErrInvalidPartitions) || pr.Topics[1].Err() != nil || !errors.Is(pr.Topics[2].Err(), ErrUnknownTopic) {
		t.Errorf("create partitions: %+v", pr)
	}
	if err := cl.IncrementalAlterConfigs(ctx, ResourceTopic, "orders", []ConfigOp{{Name: "retention.ms", Op: OpSet, Value: "60000"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := cl.IncrementalAlterConfigs(ctx, ResourceTopic, "orders", []ConfigOp{{Name: "retention.mss", Op: OpSet, Value: "60000"}}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unknown config: %v", err)
	}
	dc, err := cl.DescribeConfigs(ctx, DescribeConfigsRequest{Resources: []ConfigResource{{Type: ResourceTopic, Name: "orders"}, {Type: ResourceTopic, Name: "nope"}, {Type: ResourceBroker}}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range dc.Resources[0].Configs {
		found = found || e.Name == "retention.ms" && e.Value == "60000" && e.Source == SourceTopic
	}
	if !found || !errors.Is(dc.Resources[1].Err(), ErrUnknownTopic) || len(dc.Resources[2].Configs) == 0 {
		t.Errorf("describe configs: %+v", dc)
	}
	dr, err := cl.DeleteTopics(ctx, DeleteTopicsRequest{Topics: []TopicRef{{Name: "payments"}, {Name: "nope"}}})
	if err != nil || dr.Topics[0].Err() != nil || !errors.Is(dr.Topics[1].Err(), ErrUnknownTopic) {
		t.Fatalf("delete: %+v %v", dr, err)
	}

	// Raw HTTP: malformed bodies and wrong methods get INVALID_REQUEST and
	// the node carries on.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", pathCreateTopics, `{"topics":[{"name":`},
		{"POST", pathCreateTopics, `{"topics":[],"extra":1}`},
		{"POST", pathCreateTopics, `[]`},
		{"GET", pathCreateTopics, ``},
		{"POST", "/v1/nope", `{}`},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+info.LeaderAddr+tc.path, strings.NewReader(tc.body))
		hr, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb notLeaderBody
		_ = json.NewDecoder(hr.Body).Decode(&eb)
		hr.Body.Close()
		if hr.StatusCode != http.StatusBadRequest || eb.Error == nil || eb.Error.Code != "INVALID_REQUEST" {
			t.Errorf("%s %s %q: HTTP %d %+v", tc.method, tc.path, tc.body, hr.StatusCode, eb.Error)
		}
	}
	// A connection that sends garbage bytes is dropped, and the node serves
	// the next one.
	raw, err := net.Dial("tcp", info.LeaderAddr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte{0x00, 0xff, 0x13, '\n', '\n'})
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(raw)
	raw.Close()
	// A follower answers reads locally, and writes with 421 + the leader.
	var follower string
	for _, a := range addrsOf(nodes) {
		if a != info.LeaderAddr {
			follower = a
		}
	}
	hr, err := http.Post("http://"+follower+pathCreateTopics, "application/json", strings.NewReader(`{"topics":[{"name":"f","partitions":1,"replication_factor":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var eb notLeaderBody
	_ = json.NewDecoder(hr.Body).Decode(&eb)
	hr.Body.Close()
	if hr.StatusCode != http.StatusMisdirectedRequest || eb.LeaderAddr != info.LeaderAddr || eb.Error.Code != "NOT_LEADER" {
		t.Errorf("write on a follower: HTTP %d %+v", hr.StatusCode, eb)
	}
	// The replication writes take the same path: a client that starts at
	// the follower reaches the leader, whose own verdict comes back.
	for _, path := range []string{pathAlterPartition, pathReassign, pathDrainStore} {
		hr, err := http.Post("http://"+follower+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		hr.Body.Close()
		if hr.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s on a follower: HTTP %d, want 421", path, hr.StatusCode)
		}
	}
	fc := NewClient([]string{follower}, ClientOptions{Timeout: 30 * time.Second})
	defer fc.Close()
	if _, err := fc.DrainStore(ctx, DrainRequest{ID: 4242}); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("drain through a follower: %v, want ErrUnknownNode from the leader", err)
	}
	if _, err := fc.AlterPartition(ctx, AlterPartitionRequest{Topic: "orders", Partition: 0, LeaderID: 77, ISR: []int32{77}}); !errors.Is(err, ErrStaleRequest) {
		t.Errorf("alter partition through a follower: %v, want ErrStaleRequest from the leader", err)
	}
	if fc.Target() != info.LeaderAddr {
		t.Errorf("client started at a follower targets %s, want the leader %s", fc.Target(), info.LeaderAddr)
	}

	// Close the leader: the client finds the new one and goes on.
	var old *netNode
	for _, nd := range nodes {
		if nd.addr == info.LeaderAddr {
			old = nd
		}
	}
	if err := old.c.Close(); err != nil {
		t.Fatal(err)
	}
	old.c = nil
	mustCreate(t, cl, "after-failover")
	md, err = cl.Metadata(ctx, MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tp := range md.Topics {
		names[tp.Name] = true
	}
	if !names["orders"] || !names["ok"] || !names["after-failover"] || names["payments"] || md.LeaderID == old.id {
		t.Errorf("after failover: leader %d topics %v", md.LeaderID, names)
	}
	// The old leader restarts (no bootstrap, no join: it has state) and
	// catches up.
	startNetNode(t, old, false, nil)
	waitFor(t, 30*time.Second, "restarted node catches up", func() bool {
		_, missing := old.c.fsm.Topics([]string{"after-failover"})
		return len(missing) == 0
	})
	// Remove a voter, then add it back.
	if err := cl.RemoveVoter(ctx, RemoveVoterRequest{ID: 42}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("removing a non-voter: %v", err)
	}
	if err := cl.RemoveVoter(ctx, RemoveVoterRequest{ID: old.id}); err != nil {
		t.Fatal(err)
	}
	ci, err := cl.ClusterInfo(ctx)
	if err != nil || len(ci.Voters) != 2 {
		t.Fatalf("after remove: %+v %v", ci, err)
	}
	if err := cl.AddVoter(ctx, AddVoterRequest{ID: old.id, Address: old.addr}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, cl, "after-readd")
	waitFor(t, 30*time.Second, "re-added voter catches up", func() bool {
		_, missing := old.c.fsm.Topics([]string{"after-readd"})
		return len(missing) == 0
	})
	cl.Close()
	for _, nd := range nodes {
		if nd.c != nil {
			if err := nd.c.Close(); err != nil {
				t.Error(err)
			}
			nd.c = nil
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "raft")
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{NodeID: 1, Dir: dir, Listener: ln}, "holds no controller state: set bootstrap"},
		{Options{NodeID: 1, Dir: dir, Listener: ln, Bootstrap: true, Join: []string{"x:1"}}, "bootstrap and join both set"},
		{Options{NodeID: -1, Dir: dir, Listener: ln}, "negative"},
		{Options{NodeID: 1, Dir: dir, Listener: ln, Bootstrap: true, TopicDefaults: map[string]string{"retention.ms": "-2"}}, "topic defaults"},
		{Options{NodeID: 1, Dir: dir, Listener: ln, Bootstrap: true, Advertise: "nohost"}, "advertise"},
	} {
		tc.opts.Logger = testLogger(t)
		if _, err := Open(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open: %v, want %q", err, tc.want)
		}
	}
}
