package ring

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/aerostream/aerostream/logstore"
)

// inProcess is the Backend of `aerostream serve`: gateway and store share a
// process, so requests are plain method calls and fetch results keep their
// file ranges for the gateway to sendfile.
type inProcess struct {
	s      *logstore.Store
	closed atomic.Bool
}

var _ Backend = (*inProcess)(nil)

// NewInProcess returns a Backend that calls s directly. Closing the Backend
// does not close s, which several gateways may share.
func NewInProcess(s *logstore.Store) Backend {
	return &inProcess{s: s}
}

// check fails calls after Close, and calls whose ctx is already done: the
// store may still serve those (its request channels race with ctx), and the
// network transport never sends them, so both transports agree.
func (b *inProcess) check(ctx context.Context) error {
	if b.closed.Load() {
		return fmt.Errorf("%w: in-process ring backend closed", ErrClosed)
	}
	return ctx.Err()
}

func (b *inProcess) Produce(ctx context.Context, req *ProduceRequest) (ProduceResult, error) {
	if err := b.check(ctx); err != nil {
		return ProduceResult{}, err
	}
	return b.s.Produce(ctx, req)
}

func (b *inProcess) ProduceBatch(ctx context.Context, parts []ProducePart) {
	if err := b.check(ctx); err != nil {
		for i := range parts {
			parts[i].Result, parts[i].Err = ProduceResult{}, err
		}
		return
	}
	b.s.ProduceBatch(ctx, parts)
}

func (b *inProcess) Fetch(ctx context.Context, req *FetchRequest) (FetchResult, error) {
	if err := b.check(ctx); err != nil {
		return FetchResult{}, err
	}
	return b.s.Fetch(ctx, req)
}

func (b *inProcess) ListOffsets(ctx context.Context, topic string, partition int32, timestamp int64) (OffsetResult, error) {
	if err := b.check(ctx); err != nil {
		return OffsetResult{}, err
	}
	return b.s.ListOffsets(ctx, topic, partition, timestamp)
}

func (b *inProcess) CreatePartition(ctx context.Context, topic string, partition int32, cfg PartitionConfig) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.CreatePartition(ctx, topic, partition, cfg)
}

func (b *inProcess) DeletePartition(ctx context.Context, topic string, partition int32) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.DeletePartition(ctx, topic, partition)
}

func (b *inProcess) DescribePartition(ctx context.Context, topic string, partition int32) (PartitionInfo, error) {
	if err := b.check(ctx); err != nil {
		return PartitionInfo{}, err
	}
	return b.s.DescribePartition(ctx, topic, partition)
}

func (b *inProcess) ListPartitions(ctx context.Context) ([]PartitionInfo, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.s.ListPartitions(ctx)
}

func (b *inProcess) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	if err := b.check(ctx); err != nil {
		return 0, err
	}
	return b.s.DeleteRecords(ctx, topic, partition, before)
}

func (b *inProcess) Close() error {
	b.closed.Store(true)
	return nil
}

func (b *inProcess) WriteTxnMarker(ctx context.Context, m TxnMarker) (int64, error) {
	if err := b.check(ctx); err != nil {
		return 0, err
	}
	return b.s.WriteTxnMarker(ctx, m)
}

func (b *inProcess) OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (EpochEnd, error) {
	if err := b.check(ctx); err != nil {
		return EpochEnd{}, err
	}
	return b.s.OffsetForLeaderEpoch(ctx, topic, partition, epoch)
}
