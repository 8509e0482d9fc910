package kmeta

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
)

// clusterErrors maps the controller's sentinels onto the Cluster
// contract's; one the contract has no sentinel for passes through as it is,
// and the gateway's error table gives it its Kafka code.
var clusterErrors = []struct{ from, to error }{
	{controller.ErrTopicExists, kafka.ErrTopicExists},
	{controller.ErrUnknownTopic, kafka.ErrUnknownTopic},
	{controller.ErrUnknownTopicID, kafka.ErrUnknownTopicID},
	{controller.ErrInvalidTopic, kafka.ErrInvalidTopic},
	{controller.ErrInvalidPartitions, kafka.ErrInvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kafka.ErrInvalidReplicationFactor},
	{controller.ErrInvalidConfig, kafka.ErrInvalidConfig},
	{controller.ErrNotLeader, kafka.ErrUnavailable},
	{controller.ErrTimeout, kafka.ErrUnavailable},
	{controller.ErrClosed, kafka.ErrUnavailable},
}

// mappedError keeps the controller's message and unwraps to both the
// contract's sentinel (or Kafka error) and the controller's error.
type mappedError struct {
	to, err error
}

func (e *mappedError) Error() string   { return e.err.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.to, e.err} }

func clusterErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range clusterErrors {
		if errors.Is(err, m.from) {
			return &mappedError{to: m.to, err: err}
		}
	}
	// The rest of the controller's sentinels and ctx errors have rows of
	// their own; anything else is the path to the controller failing.
	if kafka.ErrorFor(err) != kerr.UnknownServerError {
		return err
	}
	return &mappedError{to: kafka.ErrUnavailable, err: err}
}
