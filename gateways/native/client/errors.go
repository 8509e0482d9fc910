package client

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinels of the SDK.
var (
	// ErrClosed: the client or its connection is closed.
	ErrClosed = errors.New("aerostream: connection closed")
	// ErrUnreachable: the gateway could not be dialed.
	ErrUnreachable = errors.New("aerostream: gateway unreachable")
	// ErrUnknownTopic: no topic has that name.
	ErrUnknownTopic = errors.New("aerostream: unknown topic")
	// ErrTopicExists: CreateTopic named a topic that exists.
	ErrTopicExists = errors.New("aerostream: topic already exists")
)

// Error is an error code the gateway answered with: Kafka's codes
// (PROTOCOL.md, "Error codes"). errors.Is matches it against franz-go's
// kerr values (kerr.UnknownTopicOrPartition) and, for a missing topic,
// ErrUnknownTopic.
type Error struct {
	Code       int16
	Message    string
	LeaderHint int32 // the store node that leads the partition, -1 unknown
	ThrottleMs int32
}

func (e *Error) Error() string {
	name := "UNKNOWN"
	if ke := kerr.ErrorForCode(e.Code); ke != nil {
		var k *kerr.Error
		if errors.As(ke, &k) {
			name = k.Message
		}
	}
	if e.Message == "" {
		return fmt.Sprintf("aerostream: %s (code %d)", name, e.Code)
	}
	return fmt.Sprintf("aerostream: %s (code %d): %s", name, e.Code, e.Message)
}

// Is matches kerr values by code, and ErrUnknownTopic.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnknownTopic:
		return e.Code == kerr.UnknownTopicOrPartition.Code || e.Code == kerr.UnknownTopicID.Code
	case ErrTopicExists:
		return e.Code == kerr.TopicAlreadyExists.Code
	}
	var k *kerr.Error
	if errors.As(target, &k) {
		return k.Code == e.Code
	}
	return false
}

// Retriable reports whether retrying the request may succeed.
func (e *Error) Retriable() bool {
	if ke, ok := kerr.ErrorForCode(e.Code).(*kerr.Error); ok {
		return ke.Retriable
	}
	return false
}
