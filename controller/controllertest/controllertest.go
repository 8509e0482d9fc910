package controllertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// callTimeout bounds each call of the suite.
const callTimeout = 20 * time.Second

// Run checks the API that newAPI returns: a controller cluster of one
// voter, elected, with its cluster id set, and used by nothing else.
// newAPI registers its own cleanup with t.
func Run(t *testing.T, newAPI func(t *testing.T) controller.API) {
	api := newAPI(t)
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, api controller.API)
	}{
		{"CreateTopics", testCreateTopics},
		{"CreateTopicsRequestID", testCreateTopicsRequestID},
		{"Metadata", testMetadata},
		{"CreatePartitions", testCreatePartitions},
		{"Configs", testConfigs},
		{"DeleteTopics", testDeleteTopics},
		{"Members", testMembers},
		{"ClusterInfo", testClusterInfo},
		{"Voters", testVoters},
		{"Replication", testReplication},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, api) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return c
}

// must(call(...))(t) is call's result, or t fails.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// wantIs checks that err wraps sentinel; want, if set, is text it must
// contain.
func wantIs(t *testing.T, what string, err, sentinel error, want string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: %v, want %v", what, err, sentinel)
		return
	}
	if want != "" && !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %q does not say %q", what, err, want)
	}
}

func create(t *testing.T, api controller.API, names ...string) []controller.CreateTopicResult {
	t.Helper()
	req := controller.CreateTopicsRequest{}
	for _, n := range names {
		req.Topics = append(req.Topics, controller.NewTopic{Name: n, Partitions: 2, ReplicationFactor: 1})
	}
	resp := must(api.CreateTopics(ctx(t), req))(t)
	if len(resp.Topics) != len(names) {
		t.Fatalf("create %v: %d results", names, len(resp.Topics))
	}
	for _, r := range resp.Topics {
		if r.Err() != nil {
			t.Fatalf("create %s: %v", r.Name, r.Err())
		}
	}
	return resp.Topics
}

func testCreateTopics(t *testing.T, api controller.API) {
	create(t, api, "ct-taken")
	resp := must(api.CreateTopics(ctx(t), controller.CreateTopicsRequest{Topics: []controller.NewTopic{
		{Name: "ct-taken", Partitions: 1, ReplicationFactor: 1},
		{Name: "ct-rf3", Partitions: 1, ReplicationFactor: 3},
		{Name: "ct-cfg", Partitions: 1, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "-7"}},
		{Name: "ct-dup", Partitions: 1, ReplicationFactor: 1},
		{Name: "ct-dup", Partitions: 1, ReplicationFactor: 1},
		{Name: "ct/bad", Partitions: 1, ReplicationFactor: 1},
		{Name: "ct-zero", Partitions: 0, ReplicationFactor: 1},
		{Name: "ct-ok", Partitions: -1, ReplicationFactor: -1},
	}}))(t)
	if len(resp.Topics) != 8 {
		t.Fatalf("%d results for 8 topics", len(resp.Topics))
	}
	for i, want := range []error{
		controller.ErrTopicExists, controller.ErrInvalidReplicationFactor, controller.ErrInvalidConfig,
		controller.ErrInvalidRequest, controller.ErrInvalidRequest, controller.ErrInvalidTopic, controller.ErrInvalidPartitions,
	} {
		wantIs(t, "topic "+resp.Topics[i].Name, resp.Topics[i].Err(), want, "")
	}
	ok := resp.Topics[7]
	if ok.Err() != nil || ok.Name != "ct-ok" || ok.ID.IsZero() || len(ok.Partitions) != 1 || ok.ReplicationFactor != 1 {
		t.Errorf("create with defaults: %+v", ok)
	}

	// Validate-only checks everything and creates nothing.
	v := must(api.CreateTopics(ctx(t), controller.CreateTopicsRequest{ValidateOnly: true, Topics: []controller.NewTopic{
		{Name: "ct-validate", Partitions: 3, ReplicationFactor: 1},
		{Name: "ct-taken", Partitions: 1, ReplicationFactor: 1},
	}}))(t)
	if v.Topics[0].Err() != nil || len(v.Topics[0].Partitions) != 3 {
		t.Errorf("validate only: %+v", v.Topics[0])
	}
	wantIs(t, "validate only, taken name", v.Topics[1].Err(), controller.ErrTopicExists, "")
	md := must(api.Metadata(ctx(t), controller.MetadataRequest{Topics: []string{"ct-validate"}}))(t)
	if len(md.Topics) != 0 {
		t.Errorf("validate only created %+v", md.Topics)
	}
}

// A retried create (same RequestID) recognises its own topic; anyone else
// finds it taken.
func testCreateTopicsRequestID(t *testing.T, api controller.API) {
	req := controller.CreateTopicsRequest{RequestID: "conformance-1", Topics: []controller.NewTopic{{Name: "rid-topic", Partitions: 3, ReplicationFactor: 1}}}
	first := must(api.CreateTopics(ctx(t), req))(t)
	if first.Topics[0].Err() != nil {
		t.Fatal(first.Topics[0].Err())
	}
	again := must(api.CreateTopics(ctx(t), req))(t)
	if again.Topics[0].Err() != nil || again.Topics[0].ID != first.Topics[0].ID || len(again.Topics[0].Partitions) != 3 {
		t.Errorf("retry with the same request id: %+v, want %+v", again.Topics[0], first.Topics[0])
	}
	req.RequestID = "conformance-2"
	other := must(api.CreateTopics(ctx(t), req))(t)
	wantIs(t, "another request id", other.Topics[0].Err(), controller.ErrTopicExists, "")
	req.RequestID = strings.Repeat("x", controller.MaxRequestIDLen+1)
	_, err := api.CreateTopics(ctx(t), req)
	wantIs(t, "an overlong request id", err, controller.ErrInvalidRequest, "request id")
}

func testMetadata(t *testing.T, api controller.API) {
	created := create(t, api, "md-a", "md-b")
	md := must(api.Metadata(ctx(t), controller.MetadataRequest{Topics: []string{"md-b", "md-nope", "md-a"}}))(t)
	if md.ClusterID == "" || md.LeaderID < 0 || md.Version == 0 {
		t.Errorf("metadata header: cluster %q leader %d version %d", md.ClusterID, md.LeaderID, md.Version)
	}
	if len(md.Topics) != 2 || len(md.Missing) != 1 || md.Missing[0] != "md-nope" {
		t.Fatalf("named topics: %+v missing %v", md.Topics, md.Missing)
	}
	byName := map[string]controller.TopicInfo{}
	for _, tp := range md.Topics {
		byName[tp.Name] = tp
	}
	for _, c := range created {
		tp := byName[c.Name]
		if tp.ID != c.ID || len(tp.Partitions) != 2 || tp.ReplicationFactor != 1 {
			t.Errorf("topic %s: %+v, created as %+v", c.Name, tp, c)
		}
	}
	all := must(api.Metadata(ctx(t), controller.MetadataRequest{}))(t)
	names := map[string]bool{}
	for i, tp := range all.Topics {
		names[tp.Name] = true
		if i > 0 && all.Topics[i-1].Name >= tp.Name {
			t.Errorf("all topics not sorted by name: %s before %s", all.Topics[i-1].Name, tp.Name)
		}
	}
	if !names["md-a"] || !names["md-b"] || len(all.Missing) != 0 {
		t.Errorf("all topics: %v missing %v", names, all.Missing)
	}
}

func testCreatePartitions(t *testing.T, api controller.API) {
	create(t, api, "cp")
	resp := must(api.CreatePartitions(ctx(t), controller.CreatePartitionsRequest{Topics: []controller.PartitionCount{
		{Name: "cp", Count: 1}, {Name: "cp", Count: 5}, {Name: "cp-nope", Count: 2},
	}}))(t)
	wantIs(t, "shrink", resp.Topics[0].Err(), controller.ErrInvalidPartitions, "")
	if resp.Topics[1].Err() != nil {
		t.Errorf("grow: %v", resp.Topics[1].Err())
	}
	wantIs(t, "unknown topic", resp.Topics[2].Err(), controller.ErrUnknownTopic, "")
	v := must(api.CreatePartitions(ctx(t), controller.CreatePartitionsRequest{ValidateOnly: true, Topics: []controller.PartitionCount{{Name: "cp", Count: 9}}}))(t)
	if v.Topics[0].Err() != nil {
		t.Errorf("validate only: %v", v.Topics[0].Err())
	}
	md := must(api.Metadata(ctx(t), controller.MetadataRequest{Topics: []string{"cp"}}))(t)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 5 {
		t.Errorf("after grow to 5 and a validate-only 9: %+v", md.Topics)
	}
}

func testConfigs(t *testing.T, api controller.API) {
	create(t, api, "cfg")
	alter := func(res controller.AlterConfigsResource) error {
		t.Helper()
		resp := must(api.AlterConfigs(ctx(t), controller.AlterConfigsRequest{Resources: []controller.AlterConfigsResource{res}}))(t)
		if len(resp.Resources) != 1 {
			t.Fatalf("%d results for one resource", len(resp.Resources))
		}
		return resp.Resources[0].Err()
	}
	if err := alter(controller.AlterConfigsResource{Type: controller.ResourceTopic, Name: "cfg", Incremental: true,
		Ops: []controller.ConfigOp{{Name: "retention.ms", Op: controller.OpSet, Value: "60000"}}}); err != nil {
		t.Fatal(err)
	}
	wantIs(t, "unknown config", alter(controller.AlterConfigsResource{Type: controller.ResourceTopic, Name: "cfg", Incremental: true,
		Ops: []controller.ConfigOp{{Name: "retention.mss", Op: controller.OpSet, Value: "1"}}}), controller.ErrInvalidConfig, "retention.mss")
	wantIs(t, "out of range", alter(controller.AlterConfigsResource{Type: controller.ResourceTopic, Name: "cfg", Incremental: true,
		Ops: []controller.ConfigOp{{Name: "retention.ms", Op: controller.OpSet, Value: "-7"}}}), controller.ErrInvalidConfig, "")
	wantIs(t, "unknown topic", alter(controller.AlterConfigsResource{Type: controller.ResourceTopic, Name: "cfg-nope", Incremental: true,
		Ops: []controller.ConfigOp{{Name: "retention.ms", Op: controller.OpSet, Value: "1"}}}), controller.ErrUnknownTopic, "")

	dc := must(api.DescribeConfigs(ctx(t), controller.DescribeConfigsRequest{Resources: []controller.ConfigResource{
		{Type: controller.ResourceTopic, Name: "cfg"}, {Type: controller.ResourceTopic, Name: "cfg-nope"}, {Type: controller.ResourceBroker}, {Type: "planet"},
	}}))(t)
	if len(dc.Resources) != 4 {
		t.Fatalf("%d results for 4 resources", len(dc.Resources))
	}
	found := false
	for _, e := range dc.Resources[0].Configs {
		found = found || e.Name == "retention.ms" && e.Value == "60000" && e.Source == controller.SourceTopic
	}
	if !found {
		t.Errorf("describe after set: retention.ms=60000 from the topic not among %+v", dc.Resources[0].Configs)
	}
	wantIs(t, "describe an unknown topic", dc.Resources[1].Err(), controller.ErrUnknownTopic, "")
	if dc.Resources[2].Err() != nil || len(dc.Resources[2].Configs) == 0 {
		t.Errorf("describe the cluster defaults: %+v", dc.Resources[2])
	}
	wantIs(t, "describe an unknown resource type", dc.Resources[3].Err(), controller.ErrInvalidRequest, "planet")
}

func testDeleteTopics(t *testing.T, api controller.API) {
	created := create(t, api, "del-a", "del-b")
	resp := must(api.DeleteTopics(ctx(t), controller.DeleteTopicsRequest{Topics: []controller.TopicRef{
		{Name: "del-a"}, {ID: created[1].ID}, {Name: "del-nope"},
	}}))(t)
	if resp.Topics[0].Err() != nil || resp.Topics[0].ID != created[0].ID {
		t.Errorf("delete by name: %+v", resp.Topics[0])
	}
	if resp.Topics[1].Err() != nil || resp.Topics[1].Name != "del-b" {
		t.Errorf("delete by id: %+v", resp.Topics[1])
	}
	wantIs(t, "delete an unknown name", resp.Topics[2].Err(), controller.ErrUnknownTopic, "")
	again := must(api.DeleteTopics(ctx(t), controller.DeleteTopicsRequest{Topics: []controller.TopicRef{{ID: created[0].ID}}}))(t)
	wantIs(t, "delete an id already deleted", again.Topics[0].Err(), controller.ErrUnknownTopicID, "")
	md := must(api.Metadata(ctx(t), controller.MetadataRequest{Topics: []string{"del-a", "del-b"}}))(t)
	if len(md.Topics) != 0 {
		t.Errorf("deleted topics still there: %+v", md.Topics)
	}
}

func testMembers(t *testing.T, api controller.API) {
	store := controller.RegisterNodeRequest{ID: 31, Kind: controller.KindStore, Shards: 2, RingAddr: "10.9.0.31:7000", Addresses: map[string]string{"ring": "10.9.0.31:7000"}}
	reg := must(api.RegisterNode(ctx(t), store))(t)
	if !reg.Delta.Full || reg.Delta.ClusterID == "" || reg.HeartbeatIntervalMs <= 0 || reg.SessionTimeoutMs <= 0 {
		t.Errorf("register reply: %+v", reg)
	}
	hb := must(api.Heartbeat(ctx(t), controller.HeartbeatRequest{ID: 31, KnownVersion: reg.Delta.Version}))(t)
	if hb.Delta.Full || hb.Delta.Version < reg.Delta.Version {
		t.Errorf("heartbeat at the current version: %+v", hb.Delta)
	}
	_, err := api.Heartbeat(ctx(t), controller.HeartbeatRequest{ID: 32})
	wantIs(t, "heartbeat of an unregistered node", err, controller.ErrUnknownNode, "")
	_, err = api.RegisterNode(ctx(t), controller.RegisterNodeRequest{ID: 33, Kind: "broker"})
	wantIs(t, "register an unknown kind", err, controller.ErrInvalidRequest, "broker")
	_, err = api.RegisterNode(ctx(t), controller.RegisterNodeRequest{ID: 31, Kind: controller.KindGateway, Addresses: map[string]string{"kafka": "10.9.0.99:9092"}})
	wantIs(t, "a gateway with a store's id", err, controller.ErrNodeIDInUse, "10.9.0.31:7000")
	moved := store
	moved.RingAddr, moved.Addresses = "10.9.0.77:7000", map[string]string{"ring": "10.9.0.77:7000"}
	_, err = api.RegisterNode(ctx(t), moved)
	wantIs(t, "a second store with a live store's id", err, controller.ErrNodeIDInUse, "10.9.0.31:7000")

	nodes := must(api.ListNodes(ctx(t)))(t)
	found := false
	for _, n := range nodes.Nodes {
		if n.ID == 31 {
			found = n.Kind == controller.KindStore && n.Live && n.Ring.Address == "10.9.0.31:7000" && n.Ring.Shards == 2
		}
	}
	if !found {
		t.Errorf("registered store 31 not listed as it registered: %+v", nodes.Nodes)
	}
}

func testClusterInfo(t *testing.T, api controller.API) {
	info := must(api.ClusterInfo(ctx(t)))(t)
	if info.ClusterID == "" || info.State != "Leader" || info.LeaderID != info.NodeID || info.LeaderAddr == "" {
		t.Errorf("cluster info of a single voter: %+v", info)
	}
	if len(info.Voters) != 1 || info.Voters[0].ID != info.NodeID || info.Voters[0].Suffrage != "Voter" || len(info.Joining) != 0 {
		t.Errorf("voters of a single voter: %+v joining %+v", info.Voters, info.Joining)
	}
}

// Membership changes that would harm the cluster are refused and leave it
// as it was.
func testVoters(t *testing.T, api controller.API) {
	before := must(api.ClusterInfo(ctx(t)))(t)
	err := api.AddVoter(ctx(t), controller.AddVoterRequest{ID: 97, Address: "127.0.0.1:1"})
	wantIs(t, "add a voter where none answers", err, controller.ErrInvalidRequest, "127.0.0.1:1")
	err = api.AddVoter(ctx(t), controller.AddVoterRequest{ID: -1, Address: "127.0.0.1:1"})
	wantIs(t, "add a voter with a negative id", err, controller.ErrInvalidRequest, "")
	err = api.RemoveVoter(ctx(t), controller.RemoveVoterRequest{ID: 98})
	wantIs(t, "remove a voter that is not one", err, controller.ErrInvalidRequest, "98")
	after := must(api.ClusterInfo(ctx(t)))(t)
	if len(after.Voters) != len(before.Voters) || len(after.Joining) != 0 {
		t.Errorf("refused changes changed the configuration: %+v -> %+v", before.Voters, after.Voters)
	}
	create(t, api, "voters-still-writable")
}

// keepAlive registers stores and heartbeats for them, and for every store
// registered before (earlier tests'), until the test ends, so that no
// replica's session expires while it runs.
func keepAlive(t *testing.T, api controller.API, ids ...int32) {
	t.Helper()
	var all []int32
	for _, n := range must(api.ListNodes(ctx(t)))(t).Nodes {
		if n.Kind == controller.KindStore {
			all = append(all, n.ID)
		}
	}
	for _, id := range ids {
		addr := fmt.Sprintf("10.9.1.%d:7000", id)
		must(api.RegisterNode(ctx(t), controller.RegisterNodeRequest{ID: id, Kind: controller.KindStore, Shards: 1, RingAddr: addr, Addresses: map[string]string{"ring": addr}}))(t)
		all = append(all, id)
	}
	ids = all
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.Done():
				return
			case <-tick.C:
			}
			for _, id := range ids {
				_, _ = api.Heartbeat(c, controller.HeartbeatRequest{ID: id})
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func partitionOf(t *testing.T, api controller.API, topic string, p int32) controller.PartitionInfo {
	t.Helper()
	md := must(api.Metadata(ctx(t), controller.MetadataRequest{Topics: []string{topic}}))(t)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) <= int(p) {
		t.Fatalf("metadata of %s: %+v", topic, md.Topics)
	}
	return md.Topics[0].Partitions[p]
}

// Replicas, the ISR, reassignment and drain, on stores 41 to 44 (the
// replica ids of these APIs are store node ids).
func testReplication(t *testing.T, api controller.API) {
	keepAlive(t, api, 41, 42, 43)
	resp := must(api.CreateTopics(ctx(t), controller.CreateTopicsRequest{Topics: []controller.NewTopic{
		{Name: "rep", Partitions: 2, ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "2"}},
		{Name: "rep-rf4", Partitions: 1, ReplicationFactor: 4},
		{Name: "rep-mis", Partitions: 1, ReplicationFactor: 2, Configs: map[string]string{"min.insync.replicas": "3"}},
	}}))(t)
	if err := resp.Topics[0].Err(); err != nil {
		t.Fatal(err)
	}
	wantIs(t, "replication factor 4", resp.Topics[1].Err(), controller.ErrInvalidReplicationFactor, "at most 3")
	wantIs(t, "min.insync.replicas above the factor", resp.Topics[2].Err(), controller.ErrInvalidConfig, "min.insync.replicas")
	p := partitionOf(t, api, "rep", 0)
	if len(p.Replicas) != 3 || p.Leader != p.Replicas[0] || len(p.ISR) != 3 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
		t.Fatalf("an RF 3 partition: %+v", p)
	}

	// AlterPartition: stale and invalid requests are refused; a valid one
	// bumps the partition epoch.
	alter := controller.AlterPartitionRequest{Topic: "rep", Partition: 0, LeaderID: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, ISR: p.ISR}
	_, err := api.AlterPartition(ctx(t), alter)
	wantIs(t, "alter at a future partition epoch", err, controller.ErrStaleRequest, "partition epoch")
	alter.PartitionEpoch, alter.ISR = p.PartitionEpoch, []int32{p.Leader, 99}
	_, err = api.AlterPartition(ctx(t), alter)
	wantIs(t, "alter with a stranger in the ISR", err, controller.ErrInvalidRequest, "99")
	dropped := p.Replicas[2]
	alter.ISR = p.Replicas[:2]
	got := must(api.AlterPartition(ctx(t), alter))(t)
	if got.PartitionEpoch != p.PartitionEpoch+1 || len(got.ISR) != 2 || got.Leader != p.Leader {
		t.Errorf("after shrinking the ISR: %+v", got)
	}

	// Reassignment onto a fourth store waits for it to be in sync, is
	// listed, and cancels back.
	keepAlive(t, api, 44)
	target := []int32{p.Replicas[0], p.Replicas[1], 44}
	ra := must(api.AlterPartitionReassignments(ctx(t), controller.ReassignRequest{Reassignments: []controller.Reassignment{
		{Topic: "rep", Partition: 0, Replicas: target},
		{Topic: "rep", Partition: 1, Replicas: []int32{41, 41}},
		{Topic: "rep", Partition: 1},
		{Topic: "rep-nope", Partition: 0, Replicas: []int32{41}},
	}}))(t)
	if len(ra.Errors) != 4 || ra.Errors[0] != nil {
		t.Fatalf("reassign: %+v", ra.Errors)
	}
	wantIs(t, "a store twice", ra.Errors[1], controller.ErrInvalidReplicaAssignment, "twice")
	wantIs(t, "cancel with none in progress", ra.Errors[2], controller.ErrNoReassignmentInProgress, "")
	wantIs(t, "reassign in an unknown topic", ra.Errors[3], controller.ErrUnknownTopic, "rep-nope")
	list := must(api.ListPartitionReassignments(ctx(t), controller.ListReassignmentsRequest{}))(t)
	if len(list.Reassignments) != 1 {
		t.Fatalf("list: %+v", list.Reassignments)
	}
	if r := list.Reassignments[0]; r.Topic != "rep" || r.Partition != 0 || len(r.Replicas) != 4 ||
		len(r.Adding) != 1 || r.Adding[0] != 44 || len(r.Removing) != 1 || r.Removing[0] != dropped {
		t.Errorf("listed %+v, want adding [44] removing [%d]", r, dropped)
	}
	named := must(api.ListPartitionReassignments(ctx(t), controller.ListReassignmentsRequest{Topics: []controller.TopicPartitions{{Topic: "rep", Partitions: []int32{1}}}}))(t)
	if len(named.Reassignments) != 0 {
		t.Errorf("partition 1 is not moving: %+v", named.Reassignments)
	}
	ra = must(api.AlterPartitionReassignments(ctx(t), controller.ReassignRequest{Reassignments: []controller.Reassignment{{Topic: "rep", Partition: 0}}}))(t)
	if ra.Errors[0] != nil {
		t.Fatalf("cancel: %v", ra.Errors[0])
	}
	if p := partitionOf(t, api, "rep", 0); len(p.Replicas) != 3 || len(p.TargetReplicas) != 0 {
		t.Errorf("after cancel: %+v", p)
	}

	// Drain: a store that holds nothing is drained at once; an unknown
	// one is refused.
	st := must(api.DrainStore(ctx(t), controller.DrainRequest{ID: 44}))(t)
	if !st.Draining || st.Replicas != 0 || st.Leaders != 0 || st.ID != 44 {
		t.Errorf("drain of an empty store: %+v", st)
	}
	_, err = api.DrainStore(ctx(t), controller.DrainRequest{ID: 4999})
	wantIs(t, "drain an unknown store", err, controller.ErrUnknownNode, "4999")
	ra = must(api.AlterPartitionReassignments(ctx(t), controller.ReassignRequest{Reassignments: []controller.Reassignment{{Topic: "rep", Partition: 0, Replicas: []int32{44}}}}))(t)
	wantIs(t, "reassign onto a draining store", ra.Errors[0], controller.ErrInvalidReplicaAssignment, "draining")

	// Controlled shutdown: the leader hands over to another in-sync
	// replica and keeps its replica.
	before := partitionOf(t, api, "rep", 0)
	st = must(api.DrainStore(ctx(t), controller.DrainRequest{ID: before.Leader, LeadershipOnly: true}))(t)
	if !st.ShuttingDown || st.Draining || st.Replicas == 0 {
		t.Errorf("controlled shutdown of %d: %+v", before.Leader, st)
	}
	after := partitionOf(t, api, "rep", 0)
	if len(before.ISR) > 1 && (after.Leader == before.Leader || after.LeaderEpoch <= before.LeaderEpoch || !slices.Equal(after.Replicas, before.Replicas)) {
		t.Errorf("after the controlled shutdown of %d: %+v, was %+v", before.Leader, after, before)
	}
	// It also leaves the ISR, so that acks=all writes stop waiting for it,
	// and may not join it again while it shuts down.
	if len(before.ISR) > 1 {
		if slices.Contains(after.ISR, before.Leader) {
			t.Errorf("store %d still in the ISR %v after its controlled shutdown", before.Leader, after.ISR)
		}
		_, err = api.AlterPartition(ctx(t), controller.AlterPartitionRequest{Topic: "rep", Partition: 0, LeaderID: after.Leader,
			LeaderEpoch: after.LeaderEpoch, PartitionEpoch: after.PartitionEpoch, ISR: append(slices.Clone(after.ISR), before.Leader)})
		wantIs(t, "a store shutting down rejoins the ISR", err, controller.ErrIneligibleReplica, "shutting down")
	}
}
