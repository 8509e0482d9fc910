package controller

import "errors"

// Sentinel errors. Every error the controller returns, locally or through
// Client, wraps one of these; each gateway maps them to its protocol's codes
// in its own table (the Kafka gateway's errorTable), never by matching text.
var (
	// ErrTopicExists: CreateTopics of a name that is taken.
	ErrTopicExists = errors.New("topic already exists")
	// ErrUnknownTopic: the named topic does not exist.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrUnknownTopicID: no topic has this topic id.
	ErrUnknownTopicID = errors.New("unknown topic id")
	// ErrInvalidTopic: a topic name Kafka would refuse (empty, too long,
	// characters outside [a-zA-Z0-9._-], "." or "..", or colliding with an
	// existing name once '.' and '_' are treated alike).
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrInvalidPartitions: a partition count below 1, above
	// MaxPartitionsPerTopic, or not above the current count.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidReplicationFactor: a replication factor outside 1 to
	// MaxReplicationFactor (or -1, the default), or larger than the number
	// of live stores that are not draining.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidReplicaAssignment: a reassignment target that is empty,
	// longer than MaxReplicationFactor, names a store twice or names a node
	// that is not a store or is draining; or a drain that finds no store to
	// move a replica to.
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrNoReassignmentInProgress: a cancel of a partition that is not
	// being reassigned.
	ErrNoReassignmentInProgress = errors.New("no reassignment in progress")
	// ErrStaleRequest: an AlterPartition computed from a leader, leader
	// epoch or partition epoch that is no longer current, or sent by a
	// leader store that has been fenced. The sender reads the metadata
	// again before retrying.
	ErrStaleRequest = errors.New("stale partition state")
	// ErrIneligibleReplica: an AlterPartition that adds a store to the ISR
	// which is not live.
	ErrIneligibleReplica = errors.New("ineligible replica")
	// ErrInvalidConfig: a config name the controller does not know, a value
	// out of its range, or a value whose behaviour is not built.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrInvalidRequest: a request that is malformed as a whole (bad JSON,
	// missing fields, unknown node kind, bad address).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrMalformedCommand: a Raft log entry that does not decode. Apply
	// answers it with this error instead of panicking.
	ErrMalformedCommand = errors.New("malformed controller command")
	// ErrNotLeader: this controller is not the Raft leader; the error carries
	// the leader's id and address when known (see NotLeaderError).
	ErrNotLeader = errors.New("not the controller leader")
	// ErrUnknownNode: a heartbeat from a node id that never registered (or
	// was forgotten); the node must register again.
	ErrUnknownNode = errors.New("node not registered")
	// ErrNodeIDInUse: a registration with a node id that another node
	// holds: one of another kind, or a live one at other addresses.
	ErrNodeIDInUse = errors.New("node id in use")
	// ErrTooManyPartitions: a create (CreateTopics, CreatePartitions)
	// whose replicas do not fit in the partition budgets the live stores
	// registered with. Nothing of it is created.
	ErrTooManyPartitions = errors.New("partition budget exceeded")
	// ErrTimeout: Raft did not commit in time, or leadership was lost while
	// a write was in flight. The write may or may not have been applied.
	ErrTimeout = errors.New("controller request timed out")
	// ErrClosed: the controller is shutting down.
	ErrClosed = errors.New("controller closed")
	// ErrUnauthenticated: a client API request or Raft stream without the
	// cluster credential the controller requires (Options.ClusterSecret),
	// or with a wrong, stale or replayed one; or, at a client or voter
	// holding the secret, a controller that does not prove it holds it
	// too (clusterauth.go).
	ErrUnauthenticated = errors.New("cluster credential refused")
)

// errorCodes names each sentinel on the wire (the client API's "code").
// Wire names are ours, not any protocol's, so that every sentinel
// round-trips through Client as itself.
var errorCodes = []struct {
	err  error
	wire string
}{
	{ErrTopicExists, "TOPIC_ALREADY_EXISTS"},
	{ErrUnknownTopic, "UNKNOWN_TOPIC"},
	{ErrUnknownTopicID, "UNKNOWN_TOPIC_ID"},
	{ErrInvalidTopic, "INVALID_TOPIC"},
	{ErrInvalidPartitions, "INVALID_PARTITIONS"},
	{ErrInvalidReplicationFactor, "INVALID_REPLICATION_FACTOR"},
	{ErrInvalidReplicaAssignment, "INVALID_REPLICA_ASSIGNMENT"},
	{ErrNoReassignmentInProgress, "NO_REASSIGNMENT_IN_PROGRESS"},
	{ErrStaleRequest, "STALE_REQUEST"},
	{ErrIneligibleReplica, "INELIGIBLE_REPLICA"},
	{ErrInvalidConfig, "INVALID_CONFIG"},
	{ErrInvalidRequest, "INVALID_REQUEST"},
	{ErrMalformedCommand, "MALFORMED_COMMAND"},
	{ErrNotLeader, "NOT_LEADER"},
	{ErrUnknownNode, "UNKNOWN_NODE"},
	{ErrNodeIDInUse, "NODE_ID_IN_USE"},
	{ErrTooManyPartitions, "TOO_MANY_PARTITIONS"},
	{ErrTimeout, "TIMEOUT"},
	{ErrClosed, "CLOSED"},
	{ErrUnknownUser, "UNKNOWN_USER"},
	{ErrUnauthenticated, "UNAUTHENTICATED"},
}

// wireCode names err's sentinel on the wire; "UNKNOWN" for none.
func wireCode(err error) string {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.wire
		}
	}
	return "UNKNOWN"
}

// sentinelFor is the inverse of wireCode; nil for an unknown code.
func sentinelFor(code string) error {
	for _, c := range errorCodes {
		if c.wire == code {
			return c.err
		}
	}
	return nil
}

// NotLeaderError is ErrNotLeader with the leader a client should retry at.
// LeaderID is -1 and LeaderAddr empty while no leader is known (an election
// is under way).
type NotLeaderError struct {
	LeaderID   int32
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderAddr == "" {
		return ErrNotLeader.Error() + " (no leader known)"
	}
	return ErrNotLeader.Error() + " (leader is node " + itoa(int64(e.LeaderID)) + " at " + e.LeaderAddr + ")"
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }
