package controller

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// createRF creates a topic with a replication factor and returns the
// item's error.
func createRF(t *testing.T, f *FSM, name string, parts int32, rf int16, cfg map[string]string) error {
	t.Helper()
	r := applyCmd(t, f, &cmdCreateTopics{Topics: []cmdNewTopic{{Name: name, ID: testID(), Partitions: parts, ReplicationFactor: rf, Configs: cfg}}})
	if r.err != nil {
		return r.err
	}
	return r.items[0]
}

func part(t *testing.T, f *FSM, topic string, p int32) PartitionInfo {
	t.Helper()
	ti, err := f.Topic(TopicRef{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	return ti.Partitions[p]
}

func ids(v ...int32) []int32 { return v }

// wantPart checks a partition's leader, epochs, replicas and ISR.
func wantPart(t *testing.T, what string, p PartitionInfo, leader, leaderEpoch, partEpoch int32, replicas, isr []int32) {
	t.Helper()
	if p.Leader != leader || p.LeaderEpoch != leaderEpoch || p.PartitionEpoch != partEpoch ||
		!reflect.DeepEqual(p.Replicas, replicas) || !reflect.DeepEqual(p.ISR, isr) {
		t.Errorf("%s: %+v\nwant leader %d epoch %d partition epoch %d replicas %v isr %v", what, p, leader, leaderEpoch, partEpoch, replicas, isr)
	}
}

func down(t *testing.T, f *FSM, ids ...int32) {
	t.Helper()
	if r := applyCmd(t, f, &cmdSetLiveness{Down: ids, NowMs: 5}); r.err != nil {
		t.Fatal(r.err)
	}
}

func up(t *testing.T, f *FSM, ids ...int32) {
	t.Helper()
	if r := applyCmd(t, f, &cmdSetLiveness{Up: ids, NowMs: 6}); r.err != nil {
		t.Fatal(r.err)
	}
}

func alterISR(t *testing.T, f *FSM, topic string, p int32, isr ...int32) (*applyResult, PartitionInfo) {
	t.Helper()
	cur := part(t, f, topic, p)
	r := applyCmd(t, f, &cmdAlterPartition{Topic: topic, Partition: p, LeaderID: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, ISR: isr})
	return r, part(t, f, topic, p)
}

// threeStores is an FSM with stores 1, 2 and 3 and topic "r": RF 3, one
// partition, led by 1.
func threeStores(t *testing.T, cfg map[string]string) *FSM {
	t.Helper()
	f := NewFSM(nil)
	for id := int32(1); id <= 3; id++ {
		registerStore(t, f, id)
	}
	if err := createRF(t, f, "r", 1, 3, cfg); err != nil {
		t.Fatal(err)
	}
	wantPart(t, "created", part(t, f, "r", 0), 1, 0, 0, ids(1, 2, 3), ids(1, 2, 3))
	return f
}

func TestPlacementSpreadsReplicasAndLeaders(t *testing.T) {
	f := NewFSM(nil)
	for id := int32(1); id <= 3; id++ {
		registerStore(t, f, id)
	}
	if err := createRF(t, f, "rf3", 6, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := createRF(t, f, "rf2", 6, 2, nil); err != nil {
		t.Fatal(err)
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, name := range []string{"rf3", "rf2"} {
		ti, _ := f.Topic(TopicRef{Name: name})
		for _, p := range ti.Partitions {
			want := int(ti.ReplicationFactor)
			if len(p.Replicas) != want || p.Leader != p.Replicas[0] || !reflect.DeepEqual(p.ISR, p.Replicas) || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
				t.Errorf("%s/%d: %+v", name, p.Partition, p)
			}
			seen := map[int32]bool{}
			for _, r := range p.Replicas {
				if seen[r] {
					t.Errorf("%s/%d: store %d twice in %v", name, p.Partition, r, p.Replicas)
				}
				seen[r] = true
				replicas[r]++
			}
			leaders[p.Leader]++
		}
	}
	if want := map[int32]int{1: 4, 2: 4, 3: 4}; !reflect.DeepEqual(leaders, want) {
		t.Errorf("leaders %v, want %v", leaders, want)
	}
	if want := map[int32]int{1: 10, 2: 10, 3: 10}; !reflect.DeepEqual(replicas, want) {
		t.Errorf("replicas %v, want %v", replicas, want)
	}
	// A draining store gets nothing new, though it holds the least.
	registerStore(t, f, 4)
	if r := applyCmd(t, f, &cmdDrainStore{ID: 4}); r.err != nil {
		t.Fatal(r.err)
	}
	if err := createRF(t, f, "after-drain", 4, 3, nil); err != nil {
		t.Fatal(err)
	}
	ti, _ := f.Topic(TopicRef{Name: "after-drain"})
	for _, p := range ti.Partitions {
		if slices.Contains(p.Replicas, 4) {
			t.Errorf("after-drain/%d on %v, with 4 draining", p.Partition, p.Replicas)
		}
	}
}

func TestReplicationFactorRefusals(t *testing.T) {
	f := NewFSM(nil)
	registerStore(t, f, 1)
	wantErr(t, createRF(t, f, "rf3", 1, 3, nil), ErrInvalidReplicationFactor, "replication factor 3 is larger than the 1 live store(s)")
	wantErr(t, createRF(t, f, "rf4", 1, 4, nil), ErrInvalidReplicationFactor, "at most 3")
	registerStore(t, f, 2)
	registerStore(t, f, 3)
	down(t, f, 3)
	wantErr(t, createRF(t, f, "rf3", 1, 3, nil), ErrInvalidReplicationFactor, "larger than the 2 live store(s)")
	if err := createRF(t, f, "rf2", 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	// min.insync.replicas above the replication factor, at create and on
	// a change.
	wantErr(t, createRF(t, f, "mis", 1, 2, map[string]string{"min.insync.replicas": "3"}), ErrInvalidConfig, "min.insync.replicas = 3 is larger than the replication factor 2")
	if err := createRF(t, f, "mis", 1, 2, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	r := applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "mis", Incremental: true, Ops: []ConfigOp{{Name: "min.insync.replicas", Op: OpSet, Value: "3"}}}}})
	wantErr(t, r.items[0], ErrInvalidConfig, "larger than the replication factor 2")
	// Growing a topic needs as many live stores as its factor.
	down(t, f, 2)
	r = applyCmd(t, f, &cmdCreatePartitions{Topics: []PartitionCount{{Name: "rf2", Count: 2}}})
	wantErr(t, r.items[0], ErrInvalidReplicationFactor, "replication factor 2 is larger than the 1 live store(s)")
}

func TestAlterPartition(t *testing.T) {
	f := threeStores(t, nil)
	cur := part(t, f, "r", 0)
	for _, tc := range []struct {
		name     string
		cmd      cmdAlterPartition
		sentinel error
		want     string
	}{
		{"old leader epoch", cmdAlterPartition{LeaderID: 1, LeaderEpoch: -1, PartitionEpoch: 0, ISR: ids(1, 2)}, ErrStaleRequest, "leader is 1 at epoch 0"},
		{"not the leader", cmdAlterPartition{LeaderID: 2, LeaderEpoch: 0, PartitionEpoch: 0, ISR: ids(2)}, ErrStaleRequest, "request from leader 2"},
		{"old partition epoch", cmdAlterPartition{LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: 7, ISR: ids(1, 2)}, ErrStaleRequest, "partition epoch 7"},
		{"leader left out", cmdAlterPartition{LeaderID: 1, LeaderEpoch: 0, ISR: ids(2, 3)}, ErrInvalidRequest, "leaves out its leader 1"},
		{"not a replica", cmdAlterPartition{LeaderID: 1, LeaderEpoch: 0, ISR: ids(1, 9)}, ErrInvalidRequest, "store 9 is in the ISR"},
		{"twice", cmdAlterPartition{LeaderID: 1, LeaderEpoch: 0, ISR: ids(1, 1)}, ErrInvalidRequest, "twice"},
		{"empty", cmdAlterPartition{LeaderID: 1, LeaderEpoch: 0}, ErrInvalidRequest, "empty ISR"},
	} {
		c := tc.cmd
		c.Topic, c.Partition = "r", 0
		wantErr(t, applyCmd(t, f, &c).err, tc.sentinel, tc.want)
	}
	r := applyCmd(t, f, &cmdAlterPartition{Topic: "r", Partition: 3, LeaderID: 1, ISR: ids(1)})
	wantErr(t, r.err, ErrUnknownTopic, "no partition 3")
	if p := part(t, f, "r", 0); !reflect.DeepEqual(p, cur) {
		t.Fatalf("refused requests changed the partition: %+v", p)
	}

	// Shrink, given in any order: kept in replica order, epoch bumped.
	r, p := alterISR(t, f, "r", 0, 3, 1)
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantPart(t, "shrunk", p, 1, 0, 1, ids(1, 2, 3), ids(1, 3))
	if r.partition == nil || !reflect.DeepEqual(*r.partition, p) {
		t.Errorf("result %+v, want %+v", r.partition, p)
	}
	// The same ISR again changes nothing.
	v := f.Version()
	if r, _ := alterISR(t, f, "r", 0, 1, 3); r.err != nil || f.Version() != v {
		t.Errorf("a no-op alter: %v, version %d -> %d", r.err, v, f.Version())
	}
	// A dead store cannot join; a live one can.
	down(t, f, 2)
	r, _ = alterISR(t, f, "r", 0, 1, 2, 3)
	wantErr(t, r.err, ErrIneligibleReplica, "store 2 cannot join the ISR")
	up(t, f, 2)
	r, p = alterISR(t, f, "r", 0, 1, 2, 3)
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantPart(t, "expanded", p, 1, 0, 2, ids(1, 2, 3), ids(1, 2, 3))
	// A leader whose session expired is fenced: its request, computed
	// before, is stale.
	stale := cmdAlterPartition{Topic: "r", Partition: 0, LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: 2, ISR: ids(1)}
	down(t, f, 1)
	wantErr(t, applyCmd(t, f, &stale).err, ErrStaleRequest, "")
}

func TestSessionExpiryElections(t *testing.T) {
	f := threeStores(t, nil)
	// The leader dies: the next replica in the ISR leads, the dead one
	// leaves the ISR.
	down(t, f, 1)
	wantPart(t, "leader 1 down", part(t, f, "r", 0), 2, 1, 1, ids(1, 2, 3), ids(2, 3))
	// A follower dies: only the ISR shrinks.
	down(t, f, 3)
	wantPart(t, "follower 3 down", part(t, f, "r", 0), 2, 1, 2, ids(1, 2, 3), ids(2))
	// The last ISR member dies: it stays the ISR, and there is no leader.
	down(t, f, 2)
	wantPart(t, "last member down", part(t, f, "r", 0), NoLeader, 2, 3, ids(1, 2, 3), ids(2))
	// A replica outside the ISR coming back does not lead (unclean
	// election is off)...
	up(t, f, 1)
	wantPart(t, "non-ISR back", part(t, f, "r", 0), NoLeader, 2, 3, ids(1, 2, 3), ids(2))
	// ... the ISR member does.
	up(t, f, 2)
	wantPart(t, "ISR member back", part(t, f, "r", 0), 2, 3, 4, ids(1, 2, 3), ids(2))
	// Nothing else moved on the way: no version bump without a change.
	v := f.Version()
	up(t, f, 2)
	if f.Version() != v {
		t.Error("a store already up bumped the version")
	}
}

func TestUncleanElection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		topic  map[string]string
		broker map[string]string
	}{
		{"topic config", map[string]string{"unclean.leader.election.enable": "true"}, nil},
		{"cluster default", nil, map[string]string{"unclean.leader.election.enable": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := threeStores(t, tc.topic)
			if tc.broker != nil {
				if r := applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceBroker, Configs: tc.broker}}}); r.items[0] != nil {
					t.Fatal(r.items[0])
				}
			}
			if r, _ := alterISR(t, f, "r", 0, 1); r.err != nil {
				t.Fatal(r.err)
			}
			down(t, f, 1)
			// Only 1 was in sync; 2 is the first live replica.
			wantPart(t, "unclean", part(t, f, "r", 0), 2, 1, 2, ids(1, 2, 3), ids(2))
		})
	}
	// Turned on while a partition has no leader: it gets one at once.
	f := threeStores(t, nil)
	alterISR(t, f, "r", 0, 1)
	down(t, f, 1)
	wantPart(t, "clean, no ISR member live", part(t, f, "r", 0), NoLeader, 1, 2, ids(1, 2, 3), ids(1))
	r := applyCmd(t, f, &cmdAlterConfigs{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "r", Configs: map[string]string{"unclean.leader.election.enable": "true"}}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	wantPart(t, "unclean turned on", part(t, f, "r", 0), 2, 2, 3, ids(1, 2, 3), ids(2))

	// An unclean ISR that is a reassignment's whole target completes it.
	f = threeStores(t, map[string]string{"unclean.leader.election.enable": "true"})
	alterISR(t, f, "r", 0, 1)
	if r := applyCmd(t, f, &cmdReassign{Reassignments: []Reassignment{{Topic: "r", Partition: 0, Replicas: ids(2)}}}); r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	down(t, f, 1)
	p := part(t, f, "r", 0)
	wantPart(t, "unclean onto the target", p, 2, 1, 3, ids(2), ids(2))
	if p.TargetReplicas != nil {
		t.Errorf("reassignment left in progress: %+v", p)
	}
}

func TestReregistrationFencesTheOldIncarnation(t *testing.T) {
	f := threeStores(t, nil)
	registerStore(t, f, 1) // store 1 restarted within its session
	wantPart(t, "leader restarted", part(t, f, "r", 0), 2, 1, 1, ids(1, 2, 3), ids(2, 3))
	if n, _ := f.Node(1); !n.Live {
		t.Errorf("re-registered store not live: %+v", n)
	}
	// The only in-sync replica restarting is not a reason for an unclean
	// election: it leads again.
	f = threeStores(t, map[string]string{"unclean.leader.election.enable": "true"})
	alterISR(t, f, "r", 0, 1)
	registerStore(t, f, 1)
	wantPart(t, "sole ISR member restarted", part(t, f, "r", 0), 1, 2, 3, ids(1, 2, 3), ids(1))
	// With one copy, the store comes back as its leader, at a new epoch.
	f = NewFSM(nil)
	registerStore(t, f, 1)
	if err := createRF(t, f, "one", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	registerStore(t, f, 1)
	wantPart(t, "single copy", part(t, f, "one", 0), 1, 2, 2, ids(1), ids(1))
}

func TestPreferredLeaderElection(t *testing.T) {
	f := threeStores(t, nil)
	down(t, f, 1)
	up(t, f, 1)
	wantPart(t, "1 back, out of sync", part(t, f, "r", 0), 2, 1, 1, ids(1, 2, 3), ids(2, 3))
	f.read(func(st *state) {
		if n := st.preferredPending(); n != 0 {
			t.Errorf("%d pending before 1 is in sync", n)
		}
	})
	if r, _ := alterISR(t, f, "r", 0, 1, 2, 3); r.err != nil {
		t.Fatal(r.err)
	}
	f.read(func(st *state) {
		if n := st.preferredPending(); n != 1 {
			t.Errorf("%d pending once 1 is in sync, want 1", n)
		}
	})
	applyCmd(t, f, &cmdElectPreferred{})
	wantPart(t, "preferred back", part(t, f, "r", 0), 1, 2, 3, ids(1, 2, 3), ids(1, 2, 3))
	v := f.Version()
	applyCmd(t, f, &cmdElectPreferred{})
	if f.Version() != v {
		t.Error("a second election with nothing to move bumped the version")
	}
}

func TestControlledShutdown(t *testing.T) {
	f := threeStores(t, nil)
	if err := createRF(t, f, "f", 1, 3, nil); err != nil { // led by 2, 1 a follower
		t.Fatal(err)
	}
	wantPart(t, "f created", part(t, f, "f", 0), 2, 0, 0, ids(2, 1, 3), ids(2, 1, 3))
	if r := applyCmd(t, f, &cmdShutdownStore{ID: 1, ShrinkISR: true}); r.err != nil {
		t.Fatal(r.err)
	}
	// Leadership moves to the next in-sync replica, and the store leaves
	// the ISRs, where it led and where it followed, so that acks=all
	// writes stop waiting for it; replicas stay.
	wantPart(t, "1 shutting down", part(t, f, "r", 0), 2, 1, 1, ids(1, 2, 3), ids(2, 3))
	wantPart(t, "1 shutting down, a follower", part(t, f, "f", 0), 2, 0, 1, ids(2, 1, 3), ids(2, 3))
	var st DrainStatus
	f.read(func(s *state) { st = s.drainStatus(1) })
	if !st.ShuttingDown || st.Draining || st.Leaders != 0 || st.Replicas != 2 {
		t.Errorf("status %+v, want shutting down, not draining, 0 leaders, 2 replicas", st)
	}
	v := f.Version()
	f.read(func(s *state) {
		if s.shutdownPending(1) {
			t.Error("shutdown still pending after leadership moved")
		}
		if n := s.preferredPending(); n != 0 {
			t.Errorf("preferred election would hand %d partition(s) back to a store shutting down", n)
		}
	})
	applyCmd(t, f, &cmdShutdownStore{ID: 1, ShrinkISR: true})
	if f.Version() != v {
		t.Error("a second shutdown with nothing to move bumped the version")
	}
	// An election while 1 is shutting down passes it over.
	down(t, f, 2)
	wantPart(t, "2 expired", part(t, f, "r", 0), 3, 2, 2, ids(1, 2, 3), ids(3))
	// A new incarnation clears the state, and the preferred election gives
	// leadership back once 1 is in sync.
	registerStore(t, f, 1)
	if n, _ := f.Node(1); n.ShuttingDown {
		t.Error("re-registration kept the store shutting down")
	}
	if r, _ := alterISR(t, f, "r", 0, 1, 3); r.err != nil {
		t.Fatal(r.err)
	}
	applyCmd(t, f, &cmdElectPreferred{})
	if p := part(t, f, "r", 0); p.Leader != 1 {
		t.Errorf("preferred leader not back after restart: %+v", p)
	}

	// A shutdown logged before ShrinkISR replays as it was applied: the
	// store keeps its ISR places.
	f = threeStores(t, nil)
	applyCmd(t, f, &cmdShutdownStore{ID: 1})
	wantPart(t, "1 shutting down, logged without ShrinkISR", part(t, f, "r", 0), 2, 1, 1, ids(1, 2, 3), ids(1, 2, 3))

	// The only in-sync replica keeps leading, and its ISR place: moving
	// would lose records.
	f = threeStores(t, nil)
	alterISR(t, f, "r", 0, 1)
	applyCmd(t, f, &cmdShutdownStore{ID: 1, ShrinkISR: true})
	wantPart(t, "sole ISR member", part(t, f, "r", 0), 1, 0, 1, ids(1, 2, 3), ids(1))
	f.read(func(s *state) {
		if s.shutdownPending(1) {
			t.Error("shutdown pending with nowhere to move")
		}
	})
	wantErr(t, applyCmd(t, f, &cmdShutdownStore{ID: 99}).err, ErrUnknownNode, "99")

	// A partition created meanwhile is not led by the store shutting down
	// (2 leads nothing and would be the least loaded).
	f = threeStores(t, nil)
	applyCmd(t, f, &cmdShutdownStore{ID: 2, ShrinkISR: true})
	if err := createRF(t, f, "new", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	if p := part(t, f, "new", 0); p.Leader != 3 || len(p.Replicas) != 3 {
		t.Errorf("new partition %+v, want leader 3, not 2 which is shutting down", p)
	}
}

func TestReassignment(t *testing.T) {
	f := threeStores(t, nil)
	registerStore(t, f, 4)
	reassign := func(target []int32) error {
		t.Helper()
		r := applyCmd(t, f, &cmdReassign{Reassignments: []Reassignment{{Topic: "r", Partition: 0, Replicas: target}}})
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.items[0]
	}
	for _, tc := range []struct {
		target   []int32
		sentinel error
		want     string
	}{
		{[]int32{}, ErrInvalidReplicaAssignment, "0 replicas"},
		{ids(1, 2, 3, 4), ErrInvalidReplicaAssignment, "want 1 to 3"},
		{ids(1, 1), ErrInvalidReplicaAssignment, "store 1 twice"},
		{ids(1, 9), ErrInvalidReplicaAssignment, "9 is not a registered store"},
	} {
		wantErr(t, reassign(tc.target), tc.sentinel, tc.want)
	}
	wantErr(t, reassign(nil), ErrNoReassignmentInProgress, "r/0")

	// Move 3 to 4: 4 joins as a replica, the move waits for it to catch up.
	if err := reassign(ids(1, 2, 4)); err != nil {
		t.Fatal(err)
	}
	p := part(t, f, "r", 0)
	wantPart(t, "moving", p, 1, 0, 1, ids(1, 2, 3, 4), ids(1, 2, 3))
	if !reflect.DeepEqual(p.TargetReplicas, ids(1, 2, 4)) || !reflect.DeepEqual(p.OriginalReplicas, ids(1, 2, 3)) {
		t.Errorf("target %v original %v", p.TargetReplicas, p.OriginalReplicas)
	}
	f.read(func(st *state) {
		got := st.reassignments(ListReassignmentsRequest{})
		want := []OngoingReassignment{{Topic: "r", Partition: 0, Replicas: ids(1, 2, 3, 4), Adding: ids(4), Removing: ids(3)}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("list %+v, want %+v", got, want)
		}
		if got := st.reassignments(ListReassignmentsRequest{Topics: []TopicPartitions{{Topic: "r", Partitions: []int32{1, 0}}, {Topic: "nope"}}}); len(got) != 1 {
			t.Errorf("list by name: %+v", got)
		}
	})
	// Cancel reverts.
	if err := reassign(nil); err != nil {
		t.Fatal(err)
	}
	wantPart(t, "cancelled", part(t, f, "r", 0), 1, 0, 2, ids(1, 2, 3), ids(1, 2, 3))
	if p := part(t, f, "r", 0); p.TargetReplicas != nil || p.OriginalReplicas != nil {
		t.Errorf("cancel left %+v", p)
	}

	// Move the leader off: once 4 is in sync the move completes in the
	// same apply, and the leader hands over to the first target replica.
	if err := reassign(ids(4, 2, 3)); err != nil {
		t.Fatal(err)
	}
	r, p := alterISR(t, f, "r", 0, 1, 2, 3, 4)
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantPart(t, "completed", p, 4, 1, 4, ids(4, 2, 3), ids(4, 2, 3))
	if p.TargetReplicas != nil || p.OriginalReplicas != nil {
		t.Errorf("completed but %+v", p)
	}
	// Dropping a replica completes at once: the target is in sync already.
	if err := reassign(ids(4, 2)); err != nil {
		t.Fatal(err)
	}
	wantPart(t, "dropped", part(t, f, "r", 0), 4, 1, 5, ids(4, 2), ids(4, 2))
	f.read(func(st *state) {
		if got := st.reassignments(ListReassignmentsRequest{}); len(got) != 0 {
			t.Errorf("still listed: %+v", got)
		}
	})
}

func TestDrainStore(t *testing.T) {
	f := threeStores(t, nil)
	// Every store holds a replica of r/0: draining one has nowhere to go.
	r := applyCmd(t, f, &cmdDrainStore{ID: 3})
	wantErr(t, r.err, ErrInvalidReplicaAssignment, "partition r/0")
	wantErr(t, r.err, ErrInvalidReplicaAssignment, "2 live store(s)")
	if n, _ := f.Node(3); n.Draining {
		t.Error("a refused drain marked the store draining")
	}
	wantErr(t, applyCmd(t, f, &cmdDrainStore{ID: 99}).err, ErrUnknownNode, "99")

	registerStore(t, f, 4)
	registerStore(t, f, 5)
	if err := createRF(t, f, "one", 2, 1, nil); err != nil { // on 4 and 5, the least loaded
		t.Fatal(err)
	}
	if r := applyCmd(t, f, &cmdDrainStore{ID: 1}); r.err != nil {
		t.Fatal(r.err)
	}
	var st DrainStatus
	f.read(func(s *state) { st = s.drainStatus(1) })
	if !st.Draining || st.Replicas != 1 || st.Leaders != 1 {
		t.Errorf("drain status %+v, want draining, 1 replica, 1 leader", st)
	}
	p := part(t, f, "r", 0)
	if len(p.TargetReplicas) != 3 || p.TargetReplicas[0] != 4 || !reflect.DeepEqual(p.TargetReplicas[1:], ids(2, 3)) {
		t.Errorf("drain target %v, want [4 2 3] (4 and 5 tie; the lower id)", p.TargetReplicas)
	}
	// Asking again changes nothing.
	v := f.Version()
	applyCmd(t, f, &cmdDrainStore{ID: 1})
	f.read(func(s *state) {
		if s.drainPending(1) {
			t.Error("drain still pending after it set every target")
		}
	})
	if f.Version() != v {
		t.Error("a second drain bumped the version")
	}
	// A restart keeps the store draining.
	registerStore(t, f, 1)
	if n, _ := f.Node(1); !n.Draining {
		t.Error("re-registration cleared draining")
	}
	// Once 4 is in sync, the partition leaves 1 altogether.
	p = part(t, f, "r", 0)
	cur := p.ISR
	r = applyCmd(t, f, &cmdAlterPartition{Topic: "r", Partition: 0, LeaderID: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: append(cur, 4)})
	if r.err != nil {
		t.Fatal(r.err)
	}
	f.read(func(s *state) { st = s.drainStatus(1) })
	if st.Replicas != 0 || st.Leaders != 0 {
		t.Errorf("after the move: %+v", st)
	}
	if n, ok := f.Node(1); !ok || !n.Draining {
		t.Errorf("drained store: %+v", n)
	}
}

func TestSnapshotRestoreReplication(t *testing.T) {
	f := threeStores(t, nil)
	registerStore(t, f, 4)
	registerStore(t, f, 5)
	applyCmd(t, f, &cmdReassign{Reassignments: []Reassignment{{Topic: "r", Partition: 0, Replicas: ids(4, 2, 3)}}})
	down(t, f, 3)
	if r := applyCmd(t, f, &cmdDrainStore{ID: 2}); r.err != nil {
		t.Fatal(r.err)
	}
	if r := applyCmd(t, f, &cmdShutdownStore{ID: 5}); r.err != nil {
		t.Fatal(r.err)
	}
	data := snapshotBytes(t, f)
	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	f.read(func(a *state) {
		g.read(func(b *state) {
			a.loads()
			if !reflect.DeepEqual(a.topics, b.topics) || !reflect.DeepEqual(a.nodes, b.nodes) || !reflect.DeepEqual(a.load, b.load) || !reflect.DeepEqual(a.rload, b.rload) {
				t.Errorf("restored state differs:\n%+v\n%+v", a.topics["r"], b.topics["r"])
			}
		})
	})
	p := part(t, g, "r", 0)
	if len(p.TargetReplicas) == 0 || len(p.OriginalReplicas) == 0 || len(p.ISR) == 0 {
		t.Errorf("restored partition lost its replication state: %+v", p)
	}
	if n, _ := g.Node(2); !n.Draining {
		t.Error("restored store lost draining")
	}
	if n, _ := g.Node(5); !n.ShuttingDown {
		t.Error("restored store lost shutting down")
	}

	// A snapshot from before replication: a partition is its leader alone.
	old := `{"format":1,"version":3,"topics":[{"name":"old","id":"q6urq6urq6urq6urq6urqw","replication_factor":1,"partitions":[{"partition":0,"leader":7,"leader_epoch":2},{"partition":1,"leader":-1,"leader_epoch":-1}]}],"nodes":[{"id":7,"kind":"store","live":true,"ring":{"shards":1,"address":"h:1"}}]}`
	h := NewFSM(nil)
	if err := h.Restore(io.NopCloser(strings.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	wantPart(t, "old placed", part(t, h, "old", 0), 7, 2, 0, ids(7), ids(7))
	if p := part(t, h, "old", 1); p.Replicas != nil || p.Leader != NoLeader {
		t.Errorf("old unplaced: %+v", p)
	}
	// The old store leaves: the partition waits for it.
	down(t, h, 7)
	wantPart(t, "old store down", part(t, h, "old", 0), NoLeader, 3, 1, ids(7), ids(7))
}

func TestReplicationCommandsAreValidated(t *testing.T) {
	f := threeStores(t, nil)
	for _, p := range []any{
		&cmdAlterPartition{Topic: "nope", ISR: ids(1)},
		&cmdReassign{Reassignments: []Reassignment{{Topic: "nope", Replicas: ids(1)}}},
		&cmdDrainStore{ID: -5},
		&cmdShutdownStore{ID: -5},
	} {
		r := applyCmd(t, f, p)
		err := r.err
		if err == nil && len(r.items) > 0 {
			err = r.items[0]
		}
		if err == nil {
			t.Errorf("%T accepted", p)
		}
		if errors.Is(err, ErrMalformedCommand) {
			t.Errorf("%T: a value error reported as malformed: %v", p, err)
		}
	}
}

func TestViewClone(t *testing.T) {
	v := &View{}
	v.Apply(Delta{Full: true, Version: 3, Topics: []TopicInfo{{Name: "a"}}, Nodes: []NodeInfo{{ID: 1}}, BrokerConfigs: map[string]string{"k": "v"}, BrokerConfigsChanged: true})
	c := v.Clone()
	v.Apply(Delta{Version: 4, Topics: []TopicInfo{{Name: "b"}}, Nodes: []NodeInfo{{ID: 2}}, BrokerConfigsChanged: true})
	if c.Version != 3 || len(c.Topics) != 1 || len(c.Nodes) != 1 || c.BrokerConfigs["k"] != "v" {
		t.Errorf("the clone moved with the view: %+v", c)
	}
}
