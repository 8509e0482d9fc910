package ring

import (
	"context"

	"github.com/aerostream/aerostream/logstore"
)

// Backend is what a gateway needs from storage. Every method takes ctx first
// and every error wraps one of the sentinels below (or a context error), on
// either transport, so gateways map errors with errors.Is alone.
//
// Concurrent calls are not ordered with respect to each other: a caller that
// needs two produces to one partition applied in order waits for the first
// to return before issuing the second, on every transport.
type Backend interface {
	// Produce appends whole RecordBatch v2 to a partition. The in-process
	// transport patches offsets into req.Records in place; the network
	// transport leaves the caller's buffer as it was. Callers must rely on
	// neither.
	Produce(ctx context.Context, req *ProduceRequest) (ProduceResult, error)
	// ProduceBatch appends to several partitions in one call: a gateway
	// hands it all the partitions of a produce request, and the transport
	// sends one message per shard rather than one call per partition.
	// Every part gets its own result or error (Err), exactly as its own
	// Produce call would; records are patched or left as Produce says.
	ProduceBatch(ctx context.Context, parts []ProducePart)
	// Fetch reads one or more partitions, long-polling up to req.MaxWait.
	// The caller must call Release on the result once the records are
	// written out. In-process, hot records are file ranges (Records.File is
	// set) that the caller may sendfile; over the network they are bytes.
	Fetch(ctx context.Context, req *FetchRequest) (FetchResult, error)
	// ListOffsets answers Kafka's ListOffsets: timestamp is a time in Unix
	// milliseconds or one of the Timestamp* constants.
	ListOffsets(ctx context.Context, topic string, partition int32, timestamp int64) (OffsetResult, error)
	CreatePartition(ctx context.Context, topic string, partition int32, cfg PartitionConfig) error
	DeletePartition(ctx context.Context, topic string, partition int32) error
	DescribePartition(ctx context.Context, topic string, partition int32) (PartitionInfo, error)
	ListPartitions(ctx context.Context) ([]PartitionInfo, error)
	// DeleteRecords moves the log start offset up to before (-1: the high
	// watermark) and returns the new log start offset.
	DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error)
	// OffsetForLeaderEpoch answers from the partition's leader-epoch
	// cache: the end offset of the largest epoch at or below epoch.
	OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (EpochEnd, error)
	// WriteTxnMarker writes a transaction's commit or abort marker to a
	// partition, durably (as acks all), and returns its offset, or -1 when
	// the producer has no transaction open there (a retried marker).
	WriteTxnMarker(ctx context.Context, m TxnMarker) (int64, error)
	// Close releases the transport. It does not close the store behind it:
	// the store belongs to whoever opened it. Calls after Close fail with
	// ErrClosed.
	Close() error
}

// Request and result types, shared with logstore so the in-process transport
// converts nothing.
type (
	Acks                 = logstore.Acks
	PartitionConfig      = logstore.PartitionConfig
	ProduceRequest       = logstore.ProduceRequest
	ProduceResult        = logstore.ProduceResult
	ProducePart          = logstore.ProducePart
	FetchPartition       = logstore.FetchPartition
	FetchRequest         = logstore.FetchRequest
	FetchPartitionResult = logstore.FetchPartitionResult
	FetchResult          = logstore.FetchResult
	Records              = logstore.Records
	OffsetResult         = logstore.OffsetResult
	PartitionInfo        = logstore.PartitionInfo
	EpochEnd             = logstore.EpochEnd
	TxnMarker            = logstore.TxnMarker
	AbortedTxn           = logstore.AbortedTxn
)

// Isolation levels of a fetch.
const (
	ReadUncommitted = logstore.ReadUncommitted
	ReadCommitted   = logstore.ReadCommitted
)

// Special timestamps for ListOffsets.
const (
	TimestampLatest        = logstore.TimestampLatest
	TimestampEarliest      = logstore.TimestampEarliest
	TimestampMaxTimestamp  = logstore.TimestampMaxTimestamp
	TimestampEarliestLocal = logstore.TimestampEarliestLocal
	TimestampLatestTiered  = logstore.TimestampLatestTiered
)

// Store sentinels, re-exported. They are the same values as logstore's, so
// errors.Is works with either name.
var (
	ErrCorruptBatch         = logstore.ErrCorruptBatch
	ErrBadMagic             = logstore.ErrBadMagic
	ErrBadCRC               = logstore.ErrBadCRC
	ErrInvalidProducer      = logstore.ErrInvalidProducer
	ErrMessageTooLarge      = logstore.ErrMessageTooLarge
	ErrOffsetOutOfRange     = logstore.ErrOffsetOutOfRange
	ErrUnknownPartition     = logstore.ErrUnknownPartition
	ErrPartitionExists      = logstore.ErrPartitionExists
	ErrCorruptSegment       = logstore.ErrCorruptSegment
	ErrCorruptIndex         = logstore.ErrCorruptIndex
	ErrOutOfOrderSequence   = logstore.ErrOutOfOrderSequence
	ErrInvalidProducerEpoch = logstore.ErrInvalidProducerEpoch
	ErrColdTier             = logstore.ErrColdTier
	ErrNotLocal             = logstore.ErrNotLocal
	ErrStorage              = logstore.ErrStorage
	ErrTooManyPartitions    = logstore.ErrTooManyPartitions
	ErrInvalidRequest       = logstore.ErrInvalidRequest
	ErrClosed               = logstore.ErrClosed
	ErrNotLeader            = logstore.ErrNotLeader
	ErrNotEnoughReplicas    = logstore.ErrNotEnoughReplicas
	ErrFencedLeaderEpoch    = logstore.ErrFencedLeaderEpoch
	ErrUnknownLeaderEpoch   = logstore.ErrUnknownLeaderEpoch
	ErrCompactedNoKey       = logstore.ErrCompactedNoKey
)

// ShardFor is logstore.ShardFor: the shard that owns a partition in a ring of
// shards shards.
func ShardFor(topic string, partition int32, shards int) int {
	return logstore.ShardFor(topic, partition, shards)
}
