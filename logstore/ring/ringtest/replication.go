package ringtest

import (
	"math"
	"testing"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
)

// ReplicationSuite runs the part of the conformance suite that needs the
// store behind the backend: the follower fields of Fetch and
// OffsetForLeaderEpoch, which a follower store and the Kafka gateway reach
// through the ring. newBackend returns a Backend over a fresh, empty store
// with the default flush policy, and that store (to give partitions a
// role), and registers its own cleanup.
func ReplicationSuite(t *testing.T, newBackend func(t *testing.T) (ring.Backend, *logstore.Store)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b ring.Backend, s *logstore.Store)
	}{
		{"OffsetForLeaderEpoch", testOffsetForLeaderEpoch},
		{"FollowerFetch", testFollowerFetch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, s := newBackend(t)
			tc.fn(t, b, s)
		})
	}
}

// lead makes this store (node 1) the leader of topic/partition at epoch,
// with follower 7 a replica and isr the in-sync set.
func lead(t *testing.T, s *logstore.Store, topic string, partition, epoch int32, isr []int32) {
	t.Helper()
	err := s.SetReplicaState(ctx(t), topic, partition, logstore.ReplicaState{
		Role: logstore.RoleLeader, LeaderEpoch: epoch, Leader: 1, LocalID: 1,
		Replicas: []int32{1, 7}, ISR: isr, MinISR: 1,
	})
	if err != nil {
		t.Fatalf("leading %s/%d at epoch %d: %v", topic, partition, epoch, err)
	}
}

func epochEnd(t *testing.T, b ring.Backend, topic string, partition, epoch int32) ring.EpochEnd {
	t.Helper()
	e, err := b.OffsetForLeaderEpoch(ctx(t), topic, partition, epoch)
	if err != nil {
		t.Fatalf("OffsetForLeaderEpoch(%s/%d, %d): %v", topic, partition, epoch, err)
	}
	return e
}

func testOffsetForLeaderEpoch(t *testing.T, b ring.Backend, s *logstore.Store) {
	create(t, b, "ofle", 0)
	create(t, b, "ofle", 1)
	lead(t, s, "ofle", 0, 0, []int32{1})
	_, err := b.OffsetForLeaderEpoch(ctx(t), "nope", 0, 0)
	wantErr(t, "OffsetForLeaderEpoch of an unknown partition", err, ring.ErrUnknownPartition)
	produce(t, b, "ofle", 0, batch(1, 3, 1))
	produce(t, b, "ofle", 0, batch(2, 2, 2))
	lead(t, s, "ofle", 0, 2, []int32{1})
	produce(t, b, "ofle", 0, batch(3, 4, 3))

	for _, tc := range []struct {
		ask  int32
		want ring.EpochEnd
	}{
		{0, ring.EpochEnd{LeaderEpoch: 0, EndOffset: 5}},
		{1, ring.EpochEnd{LeaderEpoch: 0, EndOffset: 5}}, // no epoch 1: the one below it
		{2, ring.EpochEnd{LeaderEpoch: 2, EndOffset: 9}}, // the latest ends at the log end
		{math.MaxInt32, ring.EpochEnd{LeaderEpoch: 2, EndOffset: 9}},
	} {
		if got := epochEnd(t, b, "ofle", 0, tc.ask); got != tc.want {
			t.Fatalf("OffsetForLeaderEpoch(%d) = %+v, want %+v", tc.ask, got, tc.want)
		}
	}
	// A partition never led knows no epoch.
	if got := epochEnd(t, b, "ofle", 1, math.MaxInt32); got != (ring.EpochEnd{LeaderEpoch: -1, EndOffset: -1}) {
		t.Fatalf("OffsetForLeaderEpoch of a partition without epochs = %+v, want -1, -1", got)
	}
}

func testFollowerFetch(t *testing.T, b ring.Backend, s *logstore.Store) {
	create(t, b, "ff", 0)
	lead(t, s, "ff", 0, 3, []int32{1})
	produce(t, b, "ff", 0, batch(1, 4, 1))

	follower := func(offset int64, epoch int32) (ring.FetchPartitionResult, error) {
		_, p, err := fetch(t, b, ctx(t), &ring.FetchRequest{Partitions: []ring.FetchPartition{{
			Topic: "ff", Partition: 0, Offset: offset, MaxBytes: 1 << 20, FollowerID: 7, LeaderEpoch: epoch,
		}}})
		return p, err
	}
	// The epoch the follower names crosses the wire: older is fenced,
	// newer is not known yet.
	_, err := follower(0, 2)
	wantErr(t, "follower fetch at an older epoch", err, ring.ErrFencedLeaderEpoch)
	_, err = follower(0, 4)
	wantErr(t, "follower fetch at a newer epoch", err, ring.ErrUnknownLeaderEpoch)

	if _, err := follower(0, 3); err != nil {
		t.Fatalf("follower fetch: %v", err)
	}
	if _, err := follower(4, 3); err != nil {
		t.Fatalf("follower fetch at the log end: %v", err)
	}
	// So does the follower's id: the leader records its log end.
	sts, err := s.ReplicaStatuses(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.Topic != "ff" || st.Partition != 0 {
			continue
		}
		for _, f := range st.Followers {
			if f.ID == 7 {
				if f.LEO != 4 {
					t.Fatalf("follower 7's log end on the leader is %d, want 4", f.LEO)
				}
				return
			}
		}
		t.Fatalf("the leader does not list follower 7: %+v", st)
	}
	t.Fatal("ReplicaStatuses does not list ff/0")
}
