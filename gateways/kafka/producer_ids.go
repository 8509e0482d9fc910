package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aerostream/aerostream/logstore/ring"
)

// producerIDsTopic holds the gateways' producer id counters.
const producerIDsTopic = "__producer_ids"

// logProducerIDs is the default ProducerIDAllocator. Each gateway keeps its
// own counter, as records of the one-partition internal topic
// __producer_ids keyed by its node id, and an id is the counter times 65536
// plus the node id (modulo 65536). Gateways therefore never hand out the
// same id without talking to each other, provided their node ids differ
// modulo 65536, and a restarted gateway resumes after the last block it
// reserved, which it finds by reading the topic back. The counter is
// reserved before any of its ids is used, so a crash skips ids and never
// repeats one.
type logProducerIDs struct {
	g  *Gateway
	mu struct {
		sync.Mutex
		loaded bool
		next   int64 // first counter value not yet reserved
	}
}

func (l *logProducerIDs) key() []byte {
	return []byte("node:" + strconv.Itoa(int(l.g.opts.NodeID)))
}

// AllocateProducerIDs implements ProducerIDAllocator.
func (l *logProducerIDs) AllocateProducerIDs(ctx context.Context, n int) ([]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.mu.loaded {
		next, err := l.load(ctx)
		if err != nil {
			return nil, err
		}
		l.mu.next, l.mu.loaded = next, true
	}
	first := l.mu.next
	end := first + int64(n)
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(end))
	batch := appendBatch(nil, time.Now().UnixMilli(), []record{{key: l.key(), value: v[:]}})
	if _, err := l.g.backend.Produce(ctx, &ring.ProduceRequest{Topic: producerIDsTopic, Partition: 0, Acks: -1, Records: batch}); err != nil {
		return nil, fmt.Errorf("reserving producer ids: %w", err)
	}
	l.mu.next = end
	node := int64(uint32(l.g.opts.NodeID) & 0xffff)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = (first+int64(i))<<16 | node
	}
	return ids, nil
}

// load creates __producer_ids if needed and returns this node's next
// counter value (1 for a node that never reserved any, so that no id is
// below 65536).
func (l *logProducerIDs) load(ctx context.Context) (int64, error) {
	_, err := l.g.cluster.Topic(ctx, producerIDsTopic)
	if errors.Is(err, ErrUnknownTopic) {
		_, err = l.g.createInternal(ctx, CreateTopic{
			Name: producerIDsTopic, Partitions: 1,
			Configs: map[string]*string{"retention.ms": ptr("-1"), "retention.bytes": ptr("-1")},
		})
		if errors.Is(err, ErrTopicExists) {
			err = nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", producerIDsTopic, err)
	}
	info, err := l.g.backend.DescribePartition(ctx, producerIDsTopic, 0)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", producerIDsTopic, err)
	}
	key := string(l.key())
	next := int64(1)
	for from := info.LogStartOffset; from < info.HighWatermark; {
		res, err := l.g.backend.Fetch(ctx, &ring.FetchRequest{
			Partitions: []ring.FetchPartition{{Topic: producerIDsTopic, Partition: 0, Offset: from, MaxBytes: 1 << 20}},
		})
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", producerIDsTopic, err)
		}
		pr := res.Partitions[0]
		data, rerr := pr.Records.ReadAll(nil)
		res.Release()
		if pr.Err != nil || rerr != nil {
			return 0, fmt.Errorf("reading %s at %d: %w", producerIDsTopic, from, errors.Join(pr.Err, rerr))
		}
		end, err := readBatches(data, func(b batchInfo, r record) error {
			if string(r.key) == key && len(r.value) == 8 {
				next = max(next, int64(binary.BigEndian.Uint64(r.value)))
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("%s at %d: %w", producerIDsTopic, from, err)
		}
		if end <= from {
			return 0, fmt.Errorf("%s: no whole batch at offset %d", producerIDsTopic, from)
		}
		from = end
	}
	return next, nil
}
