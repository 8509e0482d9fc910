package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/internal/kcode"
)

// errorTable is the one mapping from Go errors to Kafka error codes: the
// store, the controller and the gateway return sentinels, and only this
// table (kcode's shared rows, then this gateway's own) knows Kafka's codes
// for them. An error that is (or wraps) a *kerr.Error keeps that code;
// otherwise the first entry whose sentinel the error wraps wins. Anything
// else is UNKNOWN_SERVER_ERROR, and logged. Every exported sentinel of the
// ring, the controller and this package has a row (errors_test.go checks).
var errorTable = kcode.Table([]kcode.Row{
	// Cluster (metadata) sentinels.
	{Err: ErrUnknownTopic, Code: kerr.UnknownTopicOrPartition},
	{Err: ErrUnknownTopicID, Code: kerr.UnknownTopicID},
	{Err: ErrTopicExists, Code: kerr.TopicAlreadyExists},
	{Err: ErrInvalidTopic, Code: kerr.InvalidTopicException},
	{Err: ErrInvalidPartitions, Code: kerr.InvalidPartitions},
	{Err: ErrInvalidReplicationFactor, Code: kerr.InvalidReplicationFactor},
	{Err: ErrInvalidReplicaAssignment, Code: kerr.InvalidReplicaAssignment},
	{Err: ErrInvalidConfig, Code: kerr.InvalidConfig},
	{Err: ErrUnknownResource, Code: kerr.ResourceNotFound},
	{Err: ErrUnavailable, Code: kerr.LeaderNotAvailable},

	// The gateway's own.
	{Err: errMultipleBatches, Code: kerr.InvalidRecord},
	{Err: errCoordinatorLoading, Code: kerr.CoordinatorLoadInProgress},
}...)

// Sentinels of the gateway itself.
var (
	// errMultipleBatches: a produce for one partition carried more than
	// one record batch, which Kafka refuses for produce v3+.
	errMultipleBatches = errors.New("produce requests v3+ must carry exactly one record batch per partition")
	// errCoordinatorLoading: the group coordinator is still reading the
	// committed offsets back from __consumer_offsets.
	errCoordinatorLoading = errors.New("group coordinator is loading committed offsets")
)

// ErrorFor returns the Kafka error the gateway answers err with: nil for
// nil, kerr.UnknownServerError for an error the table does not know.
func ErrorFor(err error) *kerr.Error { return kcode.Lookup(errorTable, err) }

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
