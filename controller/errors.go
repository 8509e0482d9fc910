package controller

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors. Every error the controller returns, locally or through
// Client, wraps one of these; gateways turn them into Kafka error codes with
// KafkaError, never by matching text.
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
	// ErrInvalidReplicationFactor: a replication factor other than 1 (or -1,
	// the default). Replication is not available yet.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
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
	// ErrTimeout: Raft did not commit in time, or leadership was lost while
	// a write was in flight. The write may or may not have been applied.
	ErrTimeout = errors.New("controller request timed out")
	// ErrClosed: the controller is shutting down.
	ErrClosed = errors.New("controller closed")
)

// errorCodes is the one table that names each sentinel on the wire (the
// client API's "code") and maps it to a Kafka error. Wire names are ours so
// that two sentinels may share a Kafka code and still round-trip through
// Client.
var errorCodes = []struct {
	err   error
	wire  string
	kafka *kerr.Error
}{
	{ErrTopicExists, "TOPIC_ALREADY_EXISTS", kerr.TopicAlreadyExists},
	{ErrUnknownTopic, "UNKNOWN_TOPIC", kerr.UnknownTopicOrPartition},
	{ErrUnknownTopicID, "UNKNOWN_TOPIC_ID", kerr.UnknownTopicID},
	{ErrInvalidTopic, "INVALID_TOPIC", kerr.InvalidTopicException},
	{ErrInvalidPartitions, "INVALID_PARTITIONS", kerr.InvalidPartitions},
	{ErrInvalidReplicationFactor, "INVALID_REPLICATION_FACTOR", kerr.InvalidReplicationFactor},
	{ErrInvalidConfig, "INVALID_CONFIG", kerr.InvalidConfig},
	{ErrInvalidRequest, "INVALID_REQUEST", kerr.InvalidRequest},
	{ErrMalformedCommand, "MALFORMED_COMMAND", kerr.InvalidRequest},
	{ErrNotLeader, "NOT_LEADER", kerr.NotController},
	{ErrUnknownNode, "UNKNOWN_NODE", kerr.BrokerIDNotRegistered},
	{ErrNodeIDInUse, "NODE_ID_IN_USE", kerr.DuplicateBrokerRegistration},
	{ErrTimeout, "TIMEOUT", kerr.RequestTimedOut},
	{ErrClosed, "CLOSED", kerr.NotController},
}

// KafkaError maps an error from this package to the Kafka error a gateway
// answers with: nil for nil, kerr.UnknownServerError for an error that wraps
// no sentinel of ours.
//
//	ErrTopicExists              TOPIC_ALREADY_EXISTS (36)
//	ErrUnknownTopic             UNKNOWN_TOPIC_OR_PARTITION (3)
//	ErrUnknownTopicID           UNKNOWN_TOPIC_ID (100)
//	ErrInvalidTopic             INVALID_TOPIC_EXCEPTION (17)
//	ErrInvalidPartitions        INVALID_PARTITIONS (37)
//	ErrInvalidReplicationFactor INVALID_REPLICATION_FACTOR (38)
//	ErrInvalidConfig            INVALID_CONFIG (40)
//	ErrInvalidRequest           INVALID_REQUEST (42)
//	ErrMalformedCommand         INVALID_REQUEST (42)
//	ErrNotLeader, ErrClosed     NOT_CONTROLLER (41)
//	ErrUnknownNode              BROKER_ID_NOT_REGISTERED (102)
//	ErrNodeIDInUse              DUPLICATE_BROKER_REGISTRATION (101)
//	ErrTimeout                  REQUEST_TIMED_OUT (7)
func KafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.kafka
		}
	}
	return kerr.UnknownServerError
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
