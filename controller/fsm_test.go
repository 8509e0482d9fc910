package controller

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/aerostream/aerostream/topicconfig"
)

// applyCmd encodes p and applies it to f as Raft would.
func applyCmd(t testing.TB, f *FSM, p any) *applyResult {
	t.Helper()
	b, err := encodeCommand(newCommand(p))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := f.Apply(&raft.Log{Type: raft.LogCommand, Data: b}).(*applyResult)
	if !ok {
		t.Fatal("Apply returned no *applyResult")
	}
	return r
}

var idSeq byte

func testID() TopicID {
	idSeq++
	return TopicID{0: 0xAB, 15: idSeq, 7: 1}
}

func createTopic(t testing.TB, f *FSM, name string, parts int32, cfg map[string]string) error {
	t.Helper()
	r := applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: name, ID: testID(), Partitions: parts, ReplicationFactor: 1, Configs: cfg}}})
	if r.err != nil {
		return r.err
	}
	return r.items[0]
}

func registerStore(t testing.TB, f *FSM, id int32) {
	t.Helper()
	r := applyCmd(t, f, &cmdRegisterNode{ID: id, Kind: KindStore, Shards: 2, RingAddr: fmt.Sprintf("127.0.0.1:%d", 7000+id), NowMs: 1})
	if r.err != nil {
		t.Fatal(r.err)
	}
}

// wantErr checks err wraps sentinel and says want.
func wantErr(t *testing.T, err, sentinel error, want string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err %q does not say %q", err, want)
	}
}

func TestCreateTopicBadInput(t *testing.T) {
	f := NewFSM(nil)
	if err := createTopic(t, f, "orders", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := createTopic(t, f, "a.b", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		topic    string
		parts    int32
		rf       int16
		cfg      map[string]string
		sentinel error
		want     string
	}{
		{"duplicate", "orders", 1, 1, nil, ErrTopicExists, `"orders"`},
		{"collision", "a_b", 1, 1, nil, ErrInvalidTopic, `collides with existing topic "a.b"`},
		{"empty name", "", 1, 1, nil, ErrInvalidTopic, "empty"},
		{"dot", ".", 1, 1, nil, ErrInvalidTopic, `"."`},
		{"bad char", "a/b", 1, 1, nil, ErrInvalidTopic, "only ASCII letters"},
		{"too long", strings.Repeat("x", 250), 1, 1, nil, ErrInvalidTopic, "at most 249"},
		{"zero partitions", "t", 0, 1, nil, ErrInvalidPartitions, "0 partitions"},
		{"negative partitions", "t", -2, 1, nil, ErrInvalidPartitions, "-2 partitions"},
		{"too many partitions", "t", MaxPartitionsPerTopic + 1, 1, nil, ErrInvalidPartitions, "100001"},
		{"rf 3", "t", 1, 3, nil, ErrInvalidReplicationFactor, "replication factor 3 is larger than the 0 live store(s)"},
		{"rf 4", "t", 1, 4, nil, ErrInvalidReplicationFactor, "at most 3"},
		{"rf 0", "t", 1, 0, nil, ErrInvalidReplicationFactor, "at least 1"},
		{"unknown config", "t", 1, 1, map[string]string{"retention.mss": "1"}, ErrInvalidConfig, `unknown topic config "retention.mss"`},
		{"not a number", "t", 1, 1, map[string]string{"retention.ms": "soon"}, ErrInvalidConfig, `retention.ms = "soon" is not an integer`},
		{"retention below -1", "t", 1, 1, map[string]string{"retention.ms": "-2"}, ErrInvalidConfig, "retention.ms = -2 must be from -1"},
		{"retention huge", "t", 1, 1, map[string]string{"retention.ms": "9223372036854775807"}, ErrInvalidConfig, "must be from -1 to 9223372036854"},
		{"segment small", "t", 1, 1, map[string]string{"segment.bytes": "13"}, ErrInvalidConfig, "segment.bytes = 13 must be from 14 to 2147483647"},
		{"segment int overflow", "t", 1, 1, map[string]string{"segment.bytes": "4294967296"}, ErrInvalidConfig, "segment.bytes"},
		{"max message", "t", 1, 1, map[string]string{"max.message.bytes": "-5"}, ErrInvalidConfig, "max.message.bytes = -5"},
		{"min isr", "t", 1, 1, map[string]string{"min.insync.replicas": "0"}, ErrInvalidConfig, "min.insync.replicas = 0"},
		{"recompress", "t", 1, 1, map[string]string{"compression.type": "gzip"}, ErrInvalidConfig, "recompression is not available yet"},
		{"cleanup junk", "t", 1, 1, map[string]string{"cleanup.policy": "shred"}, ErrInvalidConfig, `"shred" is not one of delete, compact`},
		{"log append time", "t", 1, 1, map[string]string{"message.timestamp.type": "LogAppendTime"}, ErrInvalidConfig, "LogAppendTime is not available yet"},
		{"timestamp junk", "t", 1, 1, map[string]string{"message.timestamp.type": "Now"}, ErrInvalidConfig, "not one of CreateTime, LogAppendTime"},
		{"compression", "t", 1, 1, map[string]string{"compression.type": "zstd"}, ErrInvalidConfig, "recompression is not available yet"},
		{"bool", "t", 1, 1, map[string]string{"remote.storage.enable": "yes"}, ErrInvalidConfig, "not true or false"},
		{"local over total", "t", 1, 1, map[string]string{"retention.ms": "1000", "local.retention.ms": "2000"}, ErrInvalidConfig, "local.retention.ms = 2000 must not exceed retention.ms = 1000"},
		{"local forever", "t", 1, 1, map[string]string{"retention.bytes": "1000", "local.retention.bytes": "-1"}, ErrInvalidConfig, "local.retention.bytes = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: tc.topic, ID: testID(), Partitions: tc.parts, ReplicationFactor: tc.rf, Configs: tc.cfg}}})
			if r.err != nil {
				t.Fatal(r.err)
			}
			wantErr(t, r.items[0], tc.sentinel, tc.want)
		})
	}
	if v := f.Version(); v != 2 {
		t.Errorf("version %d after two creates and only failures, want 2", v)
	}
	// Defaults and normal forms.
	r := applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: "d", ID: testID(), Partitions: -1, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": " Delete ", "remote.storage.enable": "TRUE", "retention.ms": "-1", "compression.type": "PRODUCER"}}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	got := r.topics[0]
	if len(got.Partitions) != 1 || got.ReplicationFactor != 1 {
		t.Errorf("defaults: %+v", got)
	}
	want := map[string]string{"cleanup.policy": "delete", "remote.storage.enable": "true", "retention.ms": "-1", "compression.type": "producer"}
	if !reflect.DeepEqual(got.Configs, want) {
		t.Errorf("configs %v, want %v", got.Configs, want)
	}
}

func TestCreateTopicIDIsChecked(t *testing.T) {
	f := NewFSM(nil)
	r := applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: "a", Partitions: 1, ReplicationFactor: 1}}})
	wantErr(t, r.items[0], ErrInvalidRequest, "no id")
	id := testID()
	r = applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: "a", ID: id, Partitions: 1, ReplicationFactor: 1}, {Name: "b", ID: id, Partitions: 1, ReplicationFactor: 1}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	wantErr(t, r.items[1], ErrInvalidRequest, "already topic \"a\"")
}

func TestCreatePartitions(t *testing.T) {
	f := NewFSM(nil)
	registerStore(t, f, 1)
	if err := createTopic(t, f, "t", 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pc       PartitionCount
		sentinel error
		want     string
	}{
		{PartitionCount{"t", 2}, ErrInvalidPartitions, "has 3 partitions; the count can only grow, not shrink to 2"},
		{PartitionCount{"t", 3}, ErrInvalidPartitions, "already has 3 partitions"},
		{PartitionCount{"t", MaxPartitionsPerTopic + 1}, ErrInvalidPartitions, "at most"},
		{PartitionCount{"nope", 5}, ErrUnknownTopic, `"nope"`},
	} {
		r := applyCmd(t, f, &cmdCreatePartitions{Topics: []PartitionCount{tc.pc}})
		wantErr(t, r.items[0], tc.sentinel, tc.want)
	}
	r := applyCmd(t, f, &cmdCreatePartitions{Topics: []PartitionCount{{"t", 5}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	ts, _ := f.Topics([]string{"t"})
	if len(ts[0].Partitions) != 5 || ts[0].Partitions[4].Leader != 1 || ts[0].Partitions[4].LeaderEpoch != 0 {
		t.Errorf("after growing: %+v", ts[0].Partitions)
	}
}

func TestDeleteTopics(t *testing.T) {
	f := NewFSM(nil)
	if err := createTopic(t, f, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ti, err := f.Topic(TopicRef{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	other := testID()
	for _, tc := range []struct {
		ref      TopicRef
		sentinel error
		want     string
	}{
		{TopicRef{Name: "nope"}, ErrUnknownTopic, `"nope"`},
		{TopicRef{ID: other}, ErrUnknownTopicID, other.String()},
		{TopicRef{Name: "t", ID: other}, ErrUnknownTopicID, "has id"},
		{TopicRef{}, ErrInvalidRequest, "by name or id"},
	} {
		r := applyCmd(t, f, &cmdDeleteTopics{Topics: []TopicRef{tc.ref}})
		wantErr(t, r.items[0], tc.sentinel, tc.want)
	}
	r := applyCmd(t, f, &cmdDeleteTopics{Topics: []TopicRef{{ID: ti.ID}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	if _, err := f.Topic(TopicRef{Name: "t"}); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("after delete: %v", err)
	}
	// The name is free again, with a new id.
	if err := createTopic(t, f, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
}

func TestAlterConfigs(t *testing.T) {
	f := NewFSM(nil)
	if err := createTopic(t, f, "t", 1, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	alter := func(res AlterConfigsResource) error {
		t.Helper()
		r := applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{res}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.items[0]
	}
	configs := func() map[string]string {
		ti, _ := f.Topic(TopicRef{Name: "t"})
		return ti.Configs
	}
	// Incremental keeps what it does not name.
	if err := alter(AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "segment.ms", Op: OpSet, Value: "60000"}}}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"retention.ms": "1000", "segment.ms": "60000"}; !reflect.DeepEqual(configs(), want) {
		t.Errorf("configs %v, want %v", configs(), want)
	}
	if err := alter(AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "retention.ms", Op: OpDelete}, {Name: "cleanup.policy", Op: OpAppend, Value: "delete"}}}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"segment.ms": "60000", "cleanup.policy": "delete"}; !reflect.DeepEqual(configs(), want) {
		t.Errorf("configs %v, want %v", configs(), want)
	}
	// Replace drops what it does not name.
	if err := alter(AlterConfigsResource{Type: ResourceTopic, Name: "t", Configs: map[string]string{"max.message.bytes": "100"}}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"max.message.bytes": "100"}; !reflect.DeepEqual(configs(), want) {
		t.Errorf("configs %v, want %v", configs(), want)
	}
	for _, tc := range []struct {
		res      AlterConfigsResource
		sentinel error
		want     string
	}{
		{AlterConfigsResource{Type: ResourceTopic, Name: "nope", Configs: map[string]string{"retention.ms": "1"}}, ErrUnknownTopic, `"nope"`},
		{AlterConfigsResource{Type: ResourceTopic, Name: "t", Configs: map[string]string{"retention.bogus": "1"}}, ErrInvalidConfig, `unknown topic config "retention.bogus"`},
		{AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "bogus", Op: OpDelete}}}, ErrInvalidConfig, `"bogus"`},
		{AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "retention.ms", Op: OpAppend, Value: "5"}}}, ErrInvalidConfig, "not a list config"},
		{AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "retention.ms", Op: "frob"}}}, ErrInvalidRequest, `"frob"`},
		{AlterConfigsResource{Type: ResourceTopic, Name: "t", Incremental: true, Ops: []ConfigOp{{Name: "cleanup.policy", Op: OpAppend, Value: "shred"}}}, ErrInvalidConfig, `"shred" is not one of`},
		{AlterConfigsResource{Type: ResourceBroker, Name: "1", Configs: map[string]string{"log.retention.ms": "1"}}, ErrInvalidRequest, "per-broker"},
		{AlterConfigsResource{Type: ResourceBroker, Configs: map[string]string{"retention.ms": "1"}}, ErrInvalidConfig, `unknown broker config "retention.ms"`},
		{AlterConfigsResource{Type: "group", Name: "g"}, ErrInvalidRequest, `"group"`},
	} {
		wantErr(t, alter(tc.res), tc.sentinel, tc.want)
	}
	v := f.Version()
	if err := alter(AlterConfigsResource{Type: ResourceBroker, Configs: map[string]string{"log.retention.ms": "3600000"}}); err != nil {
		t.Fatal(err)
	}
	if f.Version() != v+1 {
		t.Errorf("broker config change did not bump the version")
	}
	if err := alter(AlterConfigsResource{Type: ResourceBroker, Configs: map[string]string{"log.retention.ms": "3600000"}}); err != nil {
		t.Fatal(err)
	}
	if f.Version() != v+1 {
		t.Errorf("a no-op change bumped the version")
	}
	ti, _ := f.Topic(TopicRef{Name: "t"})
	eff := EffectiveTopicConfig(ti.Configs, f.BrokerConfigs())
	if eff["retention.ms"] != "3600000" || eff["max.message.bytes"] != "100" {
		t.Errorf("effective config %v", eff)
	}
	entries := describeTopicConfigs(ti.Configs, f.BrokerConfigs(), map[string]string{"segment.bytes": "1000"})
	src := map[string]ConfigSource{}
	for _, e := range entries {
		src[e.Name] = e.Source
	}
	if src["max.message.bytes"] != SourceTopic || src["retention.ms"] != SourceDynamicBrokerDeflt ||
		src["segment.bytes"] != SourceStaticBroker || src["segment.ms"] != SourceDefault || len(entries) != len(topicconfig.Names()) {
		t.Errorf("sources %v", src)
	}
}

func TestPlacement(t *testing.T) {
	f := NewFSM(nil)
	// No store yet: partitions wait unplaced.
	if err := createTopic(t, f, "early", 4, nil); err != nil {
		t.Fatal(err)
	}
	ts, _ := f.Topics([]string{"early"})
	for _, p := range ts[0].Partitions {
		if p.Leader != NoLeader || p.LeaderEpoch != -1 {
			t.Fatalf("unplaced partition %+v", p)
		}
	}
	registerStore(t, f, 2)
	ts, _ = f.Topics([]string{"early"})
	for _, p := range ts[0].Partitions {
		if p.Leader != 2 || p.LeaderEpoch != 0 {
			t.Fatalf("after a store registered: %+v", p)
		}
	}
	registerStore(t, f, 1)
	registerStore(t, f, 3)
	// 4 on node 2: the next 8 go to 1 and 3 first, then round the three.
	if err := createTopic(t, f, "spread", 8, nil); err != nil {
		t.Fatal(err)
	}
	ts, _ = f.Topics(nil)
	load := map[int32]int{}
	for _, tp := range ts {
		for _, p := range tp.Partitions {
			load[p.Leader]++
		}
	}
	if want := map[int32]int{1: 4, 2: 4, 3: 4}; !reflect.DeepEqual(load, want) {
		t.Errorf("load %v, want %v", load, want)
	}
	// A down store gets no new partitions; those it holds alone keep it as
	// their only replica, without a leader until it returns.
	applyCmd(t, f, &cmdSetLiveness{Down: []int32{1}, NowMs: 2})
	if err := createTopic(t, f, "more", 2, nil); err != nil {
		t.Fatal(err)
	}
	ts, _ = f.Topics([]string{"more", "spread"})
	for _, p := range ts[0].Partitions {
		if p.Leader == 1 {
			t.Errorf("partition placed on a down store: %+v", p)
		}
	}
	if p := ts[1].Partitions[0]; p.Leader != NoLeader || !reflect.DeepEqual(p.Replicas, []int32{1}) || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Errorf("partition of a down store: %+v", p)
	}
	applyCmd(t, f, &cmdSetLiveness{Up: []int32{1}, NowMs: 3})
	ts, _ = f.Topics([]string{"spread"})
	if p := ts[0].Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Errorf("partition of a store back up: %+v, want leader 1 at epoch 2", p)
	}
	// Deleting frees load.
	applyCmd(t, f, &cmdDeleteTopics{Topics: []TopicRef{{Name: "spread"}}})
	f.read(func(st *state) {
		st.loads()
		if st.load[1] != 0 || st.rload[1] != 0 {
			t.Errorf("load after delete: %v", st.load)
		}
	})
}

func TestNodes(t *testing.T) {
	f := NewFSM(nil)
	for _, tc := range []struct {
		cmd  cmdRegisterNode
		want string
	}{
		{cmdRegisterNode{ID: -1, Kind: KindStore, Shards: 1, RingAddr: "x:1"}, "negative"},
		{cmdRegisterNode{ID: 1, Kind: "broker"}, `"broker"`},
		{cmdRegisterNode{ID: 1, Kind: KindStore}, "shard ring"},
		{cmdRegisterNode{ID: 1, Kind: KindGateway, Shards: 2}, "no shard ring"},
		{cmdRegisterNode{ID: 1, Kind: KindGateway, Addresses: map[string]string{"": "x"}}, "names and addresses"},
	} {
		r := applyCmd(t, f, &tc.cmd)
		wantErr(t, r.err, ErrInvalidRequest, tc.want)
	}
	registerStore(t, f, 1)
	n, _ := f.Node(1)
	ringV := n.Ring.Version
	registerStore(t, f, 1) // same ring: same ring version
	if n, _ = f.Node(1); n.Ring.Version != ringV {
		t.Errorf("ring version moved on an identical registration")
	}
	applyCmd(t, f, &cmdRegisterNode{ID: 1, Kind: KindStore, Shards: 4, RingAddr: "127.0.0.1:7001", NowMs: 5})
	if n, _ = f.Node(1); n.Ring.Version == ringV || n.Ring.Shards != 4 {
		t.Errorf("ring change not versioned: %+v", n.Ring)
	}
	r := applyCmd(t, f, &cmdRegisterNode{ID: 1, Kind: KindGateway})
	wantErr(t, r.err, ErrNodeIDInUse, "node id 1 is registered to a store at 127.0.0.1:7001")
}

func TestDeltaSince(t *testing.T) {
	f := NewFSM(nil)
	applyCmd(t, f, &cmdSetClusterID{ClusterID: "c1"})
	registerStore(t, f, 1)
	if err := createTopic(t, f, "a", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := createTopic(t, f, "b", 1, nil); err != nil {
		t.Fatal(err)
	}
	full := f.DeltaSince(0)
	if !full.Full || len(full.Topics) != 2 || len(full.Nodes) != 1 || full.ClusterID != "c1" {
		t.Fatalf("full delta %+v", full)
	}
	var v View
	v.Apply(full)
	known := full.Version
	if d := f.DeltaSince(known); !d.Empty() || d.Version != known {
		t.Errorf("delta at the current version: %+v", d)
	}
	applyCmd(t, f, &cmdDeleteTopics{Topics: []TopicRef{{Name: "a"}}})
	applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "b", Configs: map[string]string{"retention.ms": "5000"}}}})
	applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceBroker, Configs: map[string]string{"log.segment.bytes": "1048576"}}}})
	applyCmd(t, f, &cmdSetLiveness{Down: []int32{1}, NowMs: 3})
	d := f.DeltaSince(known)
	if d.Full || len(d.DeletedTopics) != 1 || d.DeletedTopics[0].Name != "a" || len(d.Topics) != 1 || d.Topics[0].Configs["retention.ms"] != "5000" ||
		!d.BrokerConfigsChanged || d.BrokerConfigs["log.segment.bytes"] != "1048576" || len(d.Nodes) != 1 || d.Nodes[0].Live {
		t.Errorf("incremental delta %+v", d)
	}
	v.Apply(d)
	var fresh View
	fresh.Apply(f.DeltaSince(0))
	fresh.Apply(Delta{ClusterID: fresh.ClusterID, Version: fresh.Version})
	if !reflect.DeepEqual(v, fresh) {
		t.Errorf("view from deltas differs from a full one:\n%+v\n%+v", v, fresh)
	}
	// Ahead of the controller (a node that saw another cluster): full.
	if d := f.DeltaSince(f.Version() + 10); !d.Full {
		t.Error("a version from the future got an incremental delta")
	}
	// Older than the change log: full.
	for i := 0; i < maxChanges+10; i++ {
		applyCmd(t, f, &cmdSetLiveness{Up: []int32{1}, NowMs: 3})
		applyCmd(t, f, &cmdSetLiveness{Down: []int32{1}, NowMs: 3})
	}
	if d := f.DeltaSince(known); !d.Full {
		t.Error("a version older than the change log got an incremental delta")
	}
	if d := f.DeltaSince(f.Version() - 1); d.Full || len(d.Nodes) != 1 {
		t.Errorf("recent version: %+v", d)
	}
}

// snapshotBytes persists f's snapshot into memory.
func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := s.Persist(sink); err != nil {
		t.Fatal(err)
	}
	s.Release()
	return sink.Bytes()
}

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

func TestSnapshotRestore(t *testing.T) {
	f := NewFSM(nil)
	applyCmd(t, f, &cmdSetClusterID{ClusterID: "c1"})
	registerStore(t, f, 1)
	applyCmd(t, f, &cmdRegisterNode{ID: 9, Kind: KindGateway, Addresses: map[string]string{"kafka": "h:9092"}, NowMs: 7})
	for i := 0; i < 20; i++ {
		if err := createTopic(t, f, fmt.Sprintf("t%02d", i), int32(i%4+1), map[string]string{"retention.ms": fmt.Sprint(1000 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	applyCmd(t, f, &cmdDeleteTopics{Topics: []TopicRef{{Name: "t03"}}})
	applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceBroker, Configs: map[string]string{"log.retention.ms": "5"}}}})
	data := snapshotBytes(t, f)

	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	f.read(func(a *state) {
		g.read(func(b *state) {
			a.loads()
			if !reflect.DeepEqual(a.topics, b.topics) || !reflect.DeepEqual(a.nodes, b.nodes) || !reflect.DeepEqual(a.broker, b.broker) ||
				!reflect.DeepEqual(a.deleted, b.deleted) || a.version != b.version || a.clusterID != b.clusterID ||
				!reflect.DeepEqual(a.load, b.load) || !reflect.DeepEqual(a.rload, b.rload) || !reflect.DeepEqual(a.byID, b.byID) || !reflect.DeepEqual(a.collide, b.collide) {
				t.Error("restored state differs")
			}
		})
	})
	// The restored FSM goes on as the original would.
	if err := createTopic(t, g, "t03", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := createTopic(t, g, "t04", 1, nil); !errors.Is(err, ErrTopicExists) {
		t.Errorf("create over a restored topic: %v", err)
	}
	if d := g.DeltaSince(f.Version() - 1); !d.Full {
		t.Error("a restored FSM answered from a change log it does not have")
	}
	for _, bad := range []string{``, `{}`, `{"format":2}`, `null`, `{"format":1,"topics":[null]}`, `{"format":1,"topics":[{"name":"a/b","id":"q6urq6urq6urq6urq6urqw"}]}`,
		`{"format":1,"nodes":[{"id":1},{"id":1}]}`, `{"format":1} trailing`} {
		if err := g.Restore(io.NopCloser(strings.NewReader(bad))); err == nil {
			t.Errorf("restored %q", bad)
		}
	}
}

func TestMalformedCommands(t *testing.T) {
	f := NewFSM(nil)
	for _, data := range [][]byte{
		nil,
		{1},
		{2, byte(opCreateTopics), '{', '}'},
		{1, 99, '{', '}'},
		append([]byte{1, byte(opCreateTopics)}, `{"topics":[{"name":"a","bogus":1}]}`...),
		append([]byte{1, byte(opCreateTopics)}, `{"topics":[]} {}`...),
		append([]byte{1, byte(opCreateTopics)}, `null`...),
		append([]byte{1, byte(opCreateTopics)}, `{"topics":[{"name":"a","id":"short"}]}`...),
		append([]byte{1, byte(opSetLiveness)}, `{"down":"x"}`...),
	} {
		r, ok := f.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(*applyResult)
		if !ok || r.err == nil {
			t.Errorf("%q: applied", data)
			continue
		}
		wantErr(t, r.err, ErrMalformedCommand, "malformed")
	}
	if f.Version() != 0 {
		t.Errorf("version %d after only malformed commands", f.Version())
	}
	// Non-command entries change nothing.
	f.Apply(&raft.Log{Type: raft.LogNoop})
}

func TestErrorWireCodes(t *testing.T) {
	if wireCode(errors.New("x")) != "UNKNOWN" || sentinelFor("UNKNOWN") != nil {
		t.Error("a foreign error has a wire code")
	}
	seen := map[string]bool{}
	for _, c := range errorCodes {
		if seen[c.wire] {
			t.Errorf("wire code %s twice", c.wire)
		}
		seen[c.wire] = true
		e := toError(fmt.Errorf("%w: detail", c.err))
		if !errors.Is(e, c.err) || e.Code != c.wire || e.Message != c.err.Error()+": detail" {
			t.Errorf("%s does not round-trip through the wire: %+v", c.wire, e)
		}
	}
	nl := &NotLeaderError{LeaderID: 2, LeaderAddr: "h:1"}
	if !errors.Is(nl, ErrNotLeader) || toError(nl).Code != "NOT_LEADER" || !strings.Contains(nl.Error(), "node 2 at h:1") {
		t.Errorf("NotLeaderError: %v", nl)
	}
}

func TestTopicID(t *testing.T) {
	for i := 0; i < 100; i++ {
		id := newTopicID()
		s := id.String()
		if len(s) != 22 || s[0] == '-' || id.IsZero() {
			t.Fatalf("id %q", s)
		}
		back, err := ParseTopicID(s)
		if err != nil || back != id {
			t.Fatalf("parse %q: %v", s, err)
		}
	}
	if _, err := ParseTopicID("nope"); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad id: %v", err)
	}
}
