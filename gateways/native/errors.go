package native

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Sentinels of the native gateway.
var (
	// ErrUnknownTopic: no topic has that name or id (Cluster returns it,
	// or a *kerr.Error with the same meaning).
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrHandshakeFirst: a request came before the handshake.
	ErrHandshakeFirst = errors.New("handshake required before any other request")
	// ErrUnsupportedVersion: a frame or handshake version this gateway
	// does not speak.
	ErrUnsupportedVersion = errors.New("unsupported native protocol version")
	// ErrUnknownOpcode: a request opcode this revision does not define.
	ErrUnknownOpcode = errors.New("unknown opcode")
	// ErrAuthUnsupported: the handshake names an authentication mechanism;
	// none is built yet.
	ErrAuthUnsupported = errors.New("authentication mechanism not supported")
	// ErrInternalTopic: clients may read internal topics but not write or
	// delete them.
	ErrInternalTopic = errors.New("internal topic")
	// ErrBadRequest: a request whose fields are out of range.
	ErrBadRequest = errors.New("invalid request")
)

// errorTable is the one mapping from errors to the Kafka codes the
// protocol answers with (PROTOCOL.md, "Error codes"). An error that is (or
// wraps) a *kerr.Error keeps its code; otherwise the first sentinel it
// wraps wins; anything else is UNKNOWN_SERVER_ERROR.
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrHandshakeFirst, kerr.IllegalSaslState},
	{ErrUnsupportedVersion, kerr.UnsupportedVersion},
	{ErrUnknownOpcode, kerr.InvalidRequest},
	{ErrAuthUnsupported, kerr.UnsupportedSaslMechanism},
	{ErrInternalTopic, kerr.InvalidTopicException},
	{ErrBadRequest, kerr.InvalidRequest},
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
	{ring.ErrTooManyPartitions, kerr.PolicyViolation},
	{ring.ErrCorruptSegment, kerr.KafkaStorageError},
	{ring.ErrCorruptIndex, kerr.KafkaStorageError},
	{ring.ErrNotLocal, kerr.KafkaStorageError},
	{ring.ErrStorage, kerr.KafkaStorageError},
	{ring.ErrInvalidRequest, kerr.InvalidRequest},
	{ring.ErrNotLeader, kerr.NotLeaderForPartition},
	{ring.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{ring.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{ring.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{ring.ErrWrongShard, kerr.NotLeaderForPartition},
	{ring.ErrStaleRing, kerr.NotLeaderForPartition},
	{ring.ErrConnClosed, kerr.NotLeaderForPartition},
	{ring.ErrClosed, kerr.NotLeaderForPartition},
	{ring.ErrProtocol, kerr.KafkaStorageError},
	{controller.ErrTopicExists, kerr.TopicAlreadyExists},
	{controller.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{controller.ErrUnknownTopicID, kerr.UnknownTopicID},
	{controller.ErrInvalidTopic, kerr.InvalidTopicException},
	{controller.ErrInvalidPartitions, kerr.InvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{controller.ErrInvalidConfig, kerr.InvalidConfig},
	{controller.ErrInvalidRequest, kerr.InvalidRequest},
	{controller.ErrNotLeader, kerr.NotController},
	{controller.ErrTimeout, kerr.RequestTimedOut},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// codeFor returns the Kafka code for err (0 for nil).
func codeFor(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}
