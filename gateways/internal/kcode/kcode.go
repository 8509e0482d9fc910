package kcode

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Row maps a sentinel to the Kafka error a gateway answers it with.
type Row struct {
	Err  error
	Code *kerr.Error
}

// shared are the rows of the store's sentinels (through the ring) and the
// controller's. Within them the first match wins, so more specific rows
// come first.
var shared = []Row{
	// Store sentinels, through the ring. A cold-tier read failure comes
	// first: the cause it wraps (a corrupt object fails its CRC) is the
	// broker's storage problem, not a bad message from the client.
	{ring.ErrColdTier, kerr.KafkaStorageError},
	{ring.ErrCorruptBatch, kerr.CorruptMessage},
	{ring.ErrBadCRC, kerr.CorruptMessage},
	{ring.ErrBadMagic, kerr.UnsupportedForMessageFormat},
	{ring.ErrInvalidProducer, kerr.InvalidRecord},
	{ring.ErrCompactedNoKey, kerr.InvalidRecord},
	{ring.ErrMessageTooLarge, kerr.MessageTooLarge},
	{ring.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{ring.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{ring.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{ring.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{ring.ErrPartitionExists, kerr.TopicAlreadyExists},
	// The node's partition budget is spent: not retriable, as Kafka's
	// create policies answer.
	{ring.ErrTooManyPartitions, kerr.PolicyViolation},
	{ring.ErrCorruptSegment, kerr.KafkaStorageError},
	{ring.ErrCorruptIndex, kerr.KafkaStorageError},
	{ring.ErrNotLocal, kerr.KafkaStorageError},
	{ring.ErrStorage, kerr.KafkaStorageError},
	{ring.ErrInvalidRequest, kerr.InvalidRequest},
	// Replication: the partition's leader moved (or has none) and the
	// client refreshes its metadata; too few in-sync replicas for acks=all;
	// a leader epoch older or newer than the partition's.
	{ring.ErrNotLeader, kerr.NotLeaderForPartition},
	{ring.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{ring.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{ring.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	// The store or the path to it is going away or being rebuilt: a
	// retriable code that also makes the client refresh its metadata.
	{ring.ErrWrongShard, kerr.NotLeaderForPartition},
	{ring.ErrStaleRing, kerr.NotLeaderForPartition},
	{ring.ErrConnClosed, kerr.NotLeaderForPartition},
	{ring.ErrClosed, kerr.NotLeaderForPartition},
	{ring.ErrProtocol, kerr.KafkaStorageError},
	{ring.ErrTLSRequired, kerr.KafkaStorageError},
	{ring.ErrFrameTooLarge, kerr.MessageTooLarge},
	{ring.ErrUnsupported, kerr.KafkaStorageError},
	{ring.ErrRemote, kerr.KafkaStorageError},

	// Controller sentinels. kmeta translates most of them into the Cluster
	// sentinels above; their rows here give the same codes, so an error
	// answers the same whether it was translated or not. A controller
	// without a leader, closing or slow to commit is a passing state: a
	// retriable code that makes the client refresh its metadata.
	{controller.ErrTopicExists, kerr.TopicAlreadyExists},
	{controller.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{controller.ErrUnknownTopicID, kerr.UnknownTopicID},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{controller.ErrTooManyPartitions, kerr.PolicyViolation},
	{controller.ErrUnknownUser, kerr.ResourceNotFound},
	{controller.ErrInvalidConfig, kerr.InvalidConfig},
	{controller.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{controller.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{controller.ErrStaleRequest, kerr.InvalidUpdateVersion},
	{controller.ErrIneligibleReplica, kerr.IneligibleReplica},
	{controller.ErrInvalidRequest, kerr.InvalidRequest},
	{controller.ErrMalformedCommand, kerr.InvalidRequest},
	{controller.ErrUnknownNode, kerr.BrokerIDNotRegistered},
	{controller.ErrNodeIDInUse, kerr.DuplicateBrokerRegistration},
	{controller.ErrNotLeader, kerr.LeaderNotAvailable},
	{controller.ErrTimeout, kerr.LeaderNotAvailable},
	{controller.ErrClosed, kerr.LeaderNotAvailable},
	// The cluster credential (auth.controller_secret_file) failed one way
	// or the other: the controller refused this gateway's, or could not
	// prove it holds the secret. A misconfigured node, which retrying does
	// not mend; the log names the problem.
	{controller.ErrUnauthenticated, kerr.ClusterAuthorizationFailed},
}

// tail maps what is left of a request cut short; last, so that an error
// that says more wins.
var tail = []Row{
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// Table returns a gateway's error table: the store's and the controller's
// rows, then the gateway's own, then the context errors, first match
// winning.
func Table(own ...Row) []Row {
	t := make([]Row, 0, len(shared)+len(own)+len(tail))
	t = append(t, shared...)
	t = append(t, own...)
	return append(t, tail...)
}

// Lookup returns the Kafka error for err: nil for nil; the *kerr.Error it
// is or wraps; the first row of table whose sentinel it wraps; else
// kerr.UnknownServerError.
func Lookup(table []Row, err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	for _, r := range table {
		if errors.Is(err, r.Err) {
			return r.Code
		}
	}
	return kerr.UnknownServerError
}
