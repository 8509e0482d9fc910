package kafka

import (
	"context"

	"github.com/aerostream/aerostream/logstore/ring"
)

// lastStable is a partition's last stable offset, for ListOffsets under
// read_committed: the store reports it with every fetch, so an empty
// fetch at the high watermark (hw) reads it without waiting.
func (g *Gateway) lastStable(ctx context.Context, topic string, partition int32, hw int64) (int64, error) {
	res, err := g.backend.Fetch(ctx, &ring.FetchRequest{IsolationLevel: ring.ReadCommitted,
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: partition, Offset: hw, MaxBytes: 1}}})
	if err != nil {
		return 0, err
	}
	defer res.Release()
	pr := res.Partitions[0]
	if pr.Err != nil {
		return 0, pr.Err
	}
	return min(pr.LastStableOffset, hw), nil
}
