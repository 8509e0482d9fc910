package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

// errorTable is the one mapping from Go errors to Kafka error codes: the
// store, the controller and the gateway return sentinels, and only this
// table knows Kafka's codes for them. An error that is (or wraps) a
// *kerr.Error keeps that code; otherwise the first entry whose sentinel the
// error wraps wins, so more specific entries come first. Anything else is
// UNKNOWN_SERVER_ERROR, and logged. Every exported sentinel of the ring,
// the controller and this package has a row (errors_test.go checks).
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	// Store sentinels, through the ring. A cold-tier read failure comes
	// first: the cause it wraps (a corrupt object fails its CRC) is the
	// broker's storage problem, not a bad message from the client.
	{ring.ErrColdTier, kerr.KafkaStorageError},
	{ring.ErrCorruptBatch, kerr.CorruptMessage},
	{ring.ErrBadCRC, kerr.CorruptMessage},
	{ring.ErrBadMagic, kerr.UnsupportedForMessageFormat},
	{ring.ErrInvalidProducer, kerr.InvalidRecord},
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
	{ring.ErrFrameTooLarge, kerr.MessageTooLarge},
	{ring.ErrUnsupported, kerr.KafkaStorageError},
	{ring.ErrRemote, kerr.KafkaStorageError},

	// Cluster (metadata) sentinels.
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrUnknownTopicID, kerr.UnknownTopicID},
	{ErrTopicExists, kerr.TopicAlreadyExists},
	{ErrInvalidTopic, kerr.InvalidTopicException},
	{ErrInvalidPartitions, kerr.InvalidPartitions},
	{ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{ErrInvalidConfig, kerr.InvalidConfig},
	{ErrUnknownResource, kerr.ResourceNotFound},
	{ErrUnavailable, kerr.LeaderNotAvailable},

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

	// The gateway's own.
	{errUnsupportedTxn, kerr.InvalidTxnState},
	{errMultipleBatches, kerr.InvalidRecord},
	{errCoordinatorLoading, kerr.CoordinatorLoadInProgress},

	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// Sentinels of the gateway itself.
var (
	// errUnsupportedTxn: a transactional produce or transactional id; this
	// gateway serves no transactions (the keys are not advertised).
	errUnsupportedTxn = errors.New("transactions are not supported")
	// errMultipleBatches: a produce for one partition carried more than
	// one record batch, which Kafka refuses for produce v3+.
	errMultipleBatches = errors.New("produce requests v3+ must carry exactly one record batch per partition")
	// errCoordinatorLoading: the group coordinator is still reading the
	// committed offsets back from __consumer_offsets.
	errCoordinatorLoading = errors.New("group coordinator is loading committed offsets")
)

// ErrorFor returns the Kafka error the gateway answers err with: nil for
// nil, kerr.UnknownServerError for an error the table does not know.
func ErrorFor(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return kerr.UnknownServerError
}

// errorCode is ErrorFor's code, 0 for nil.
func errorCode(err error) int16 {
	if ke := ErrorFor(err); ke != nil {
		return ke.Code
	}
	return 0
}

// errorMessage is the message sent beside a code where the protocol has
// room for one: the error's text, nil for no error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// errInternalTopic refuses a client write to an internal topic.
func errInternalTopic(name string) error {
	return fmt.Errorf("%w: %s is an internal topic", kerr.InvalidTopicException, name)
}
