package logstore

import (
	"context"
	"fmt"
	"time"
)

// Role is a partition's part in replication.
type Role int8

// Roles. A partition no one has given a role (RoleStandalone) behaves as a
// single copy: produce and fetch are served, the high watermark is the
// durable end of the local log, and no lease is checked. serve runs so.
const (
	RoleStandalone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "standalone"
}

// ReplicaState is what the controller's metadata says of one partition, as
// the store's replica manager hands it to the log.
type ReplicaState struct {
	Role        Role
	LeaderEpoch int32
	// Leader is the leading store's node id (for a follower).
	Leader int32
	// LocalID is this store's node id.
	LocalID int32
	// Replicas are every store holding a copy, leader included.
	Replicas []int32
	// ISR is the in-sync replica set the leader computes the high
	// watermark over, leader included. The replica manager passes the
	// controller's ISR plus any member it has asked to add (the maximal
	// ISR of KIP-497), so the high watermark never passes a replica the
	// controller may elect.
	ISR []int32
	// MinISR is min.insync.replicas: an acks=all produce with fewer ISR
	// members fails with ErrNotEnoughReplicas.
	MinISR int
}

// EpochEnd answers OffsetForLeaderEpoch: the largest epoch at or below the
// one asked for, and the offset after its last record (the start of the
// next epoch, or the log end for the latest). Both are -1 when the log
// knows no epoch at or below the one asked for.
type EpochEnd struct {
	LeaderEpoch int32
	EndOffset   int64
}

// FollowerStatus is a leader's view of one follower.
type FollowerStatus struct {
	ID int32
	// LEO is the follower's log end offset: the offset of its last fetch.
	LEO int64
	// LastCaughtUp is the last time the follower had fetched up to the
	// leader's log end (Kafka's lastCaughtUpTimeMs); zero if never.
	LastCaughtUp time.Time
}

// ReplicaStatus is a partition's replication state as the log holds it.
type ReplicaStatus struct {
	Topic       string
	Partition   int32
	Role        Role
	LeaderEpoch int32
	LogEnd      int64
	// HighWatermark: for a leader, the lowest log end over its ISR; for a
	// follower, the leader's high watermark as of its last fetch, capped
	// at the local log end.
	HighWatermark int64
	ISR           []int32
	// Followers lists, for a leader, every other replica in Replicas.
	Followers []FollowerStatus
}

var errReplicaTODO = fmt.Errorf("%w: replication is not built yet", ErrInvalidRequest)

// SetReplicaState gives a partition its role. A leader with a new epoch
// records the epoch's start offset (the log end) in the partition's
// leader-epoch cache and stamps that epoch on every batch it appends.
func (s *Store) SetReplicaState(ctx context.Context, topic string, partition int32, st ReplicaState) error {
	return errReplicaTODO
}

// AppendReplica appends batches a follower fetched from its leader, keeping
// their offsets and leader epochs. The first batch must start at the local
// log end. leaderHW, the leader's high watermark, caps the follower's own.
// It returns the new log end.
func (s *Store) AppendReplica(ctx context.Context, topic string, partition int32, records []byte, leaderHW int64) (int64, error) {
	return 0, errReplicaTODO
}

// OffsetForLeaderEpoch answers from the partition's leader-epoch cache.
func (s *Store) OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (EpochEnd, error) {
	return EpochEnd{}, errReplicaTODO
}

// Truncate drops every record at or above offset (a follower that diverged
// from its new leader). The high watermark, the epoch cache and the
// producer state follow.
func (s *Store) Truncate(ctx context.Context, topic string, partition int32, offset int64) error {
	return errReplicaTODO
}

// ReplicaStatuses lists the replication state of every partition that has
// a role.
func (s *Store) ReplicaStatuses(ctx context.Context) ([]ReplicaStatus, error) {
	return nil, errReplicaTODO
}

// SetLease extends how long this store may act as a leader without
// hearing from the controller. Once it passes, produce and consumer fetches
// on led partitions fail with ErrNotLeader until the lease is extended: a
// store the controller has fenced must not serve stale reads. Until the
// first call there is no lease and nothing is refused.
func (s *Store) SetLease(until time.Time) {}
