package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/http/adminapi"
)

// remoteFetchTimeout bounds one fetch through the gateways, so that a
// gateway that stops answering makes the inspector answer 503 rather than
// hold the HTTP request open.
const remoteFetchTimeout = 10 * time.Second

// kafkaClient is the Kafka client under the admin client, built on first
// use.
func (r *remoteGroups) kafkaClient(ctx context.Context) (*kgo.Client, error) {
	if _, err := r.admin(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.kc == nil {
		return nil, fmt.Errorf("%w: the Kafka client is closed", adminapi.ErrUnavailable)
	}
	return r.mu.kc, nil
}

// fetch reads a partition this node does not hold through the Kafka
// gateways, with one sessionless Fetch that does not wait for new records,
// as a consumer at offset would. The answer's record batches are the bytes
// the local path reads from the store, so the API decodes both alike, and
// maxBytes bounds them the same way. id is the topic's id, which Fetch v13+
// names topics by.
func (r *remoteGroups) fetch(ctx context.Context, topic string, id [16]byte, partition int32, offset int64, maxBytes int32) (adminapi.Fetched, error) {
	kc, err := r.kafkaClient(ctx)
	if err != nil {
		return adminapi.Fetched{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, remoteFetchTimeout)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, kc)
	if err != nil {
		return adminapi.Fetched{}, fmt.Errorf("fetch %s/%d through the Kafka gateways: %w", topic, partition, r.remoteErr(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return adminapi.Fetched{}, fetchErr(err, topic, partition)
	}
	for _, t := range resp.Topics {
		if t.Topic != topic && t.TopicID != id {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return adminapi.Fetched{}, fetchErr(err, topic, partition)
			}
			return adminapi.Fetched{Batches: p.RecordBatches, HighWatermark: p.HighWatermark, LogStart: p.LogStartOffset}, nil
		}
	}
	return adminapi.Fetched{}, fmt.Errorf("%w: the Kafka gateways answered a fetch of %s/%d without it", adminapi.ErrUnavailable, topic, partition)
}

// fetchErr maps a Fetch error code onto the API's sentinels.
func fetchErr(err error, topic string, partition int32) error {
	switch {
	case errors.Is(err, kerr.OffsetOutOfRange):
		return fmt.Errorf("%w: %s/%d: %v", adminapi.ErrOffsetOutOfRange, topic, partition, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return fmt.Errorf("%w: %s/%d: %v", adminapi.ErrUnknownTopic, topic, partition, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && ke.Retriable {
		// Leadership moving, a store down: what a later request may not
		// meet.
		return fmt.Errorf("%w: %s/%d through the Kafka gateways: %v", adminapi.ErrUnavailable, topic, partition, err)
	}
	return fmt.Errorf("fetch %s/%d through the Kafka gateways: %w", topic, partition, err)
}

// remoteFetch is Fetch for a partition this node does not hold: through
// the gateways, by the topic id the controller gives.
func (s *adminSources) remoteFetch(ctx context.Context, topic string, partition int32, offset int64, maxBytes int32) (adminapi.Fetched, error) {
	md, err := s.api.Metadata(ctx, controller.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return adminapi.Fetched{}, err
	}
	for _, t := range md.Topics {
		if t.Name == topic {
			return s.remote.fetch(ctx, topic, t.ID, partition, offset, maxBytes)
		}
	}
	return adminapi.Fetched{}, fmt.Errorf("%w: %s", adminapi.ErrUnknownTopic, topic)
}
