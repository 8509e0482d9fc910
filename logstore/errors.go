package logstore

import "errors"

// Sentinel errors. Every error the store returns wraps one of these, so callers
// (the ring, the gateways) map them to wire codes with errors.Is and never by
// matching text.
var (
	// ErrCorruptBatch: a RecordBatch failed structural validation (length,
	// header fields, record count). The batch is rejected and nothing is written.
	ErrCorruptBatch = errors.New("corrupt record batch")
	// ErrBadMagic: the batch is not RecordBatch v2 (magic byte != 2).
	ErrBadMagic = errors.New("unsupported record batch magic")
	// ErrBadCRC: the CRC32C over attributes..end does not match the header.
	ErrBadCRC = errors.New("record batch crc mismatch")
	// ErrInvalidProducer: producer id/epoch/sequence fields are inconsistent.
	ErrInvalidProducer = errors.New("invalid producer fields in record batch")
	// ErrMessageTooLarge: the batch exceeds max.message.bytes of the partition.
	ErrMessageTooLarge = errors.New("record batch larger than max.message.bytes")
	// ErrOffsetOutOfRange: the requested offset is below the log start offset
	// or above the log end offset.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrUnknownPartition: the topic/partition is not hosted by this store.
	ErrUnknownPartition = errors.New("unknown topic or partition")
	// ErrPartitionExists: CreatePartition on a partition that already exists.
	ErrPartitionExists = errors.New("partition already exists")
	// ErrCorruptSegment: segment bytes on disk failed validation while reading
	// or recovering.
	ErrCorruptSegment = errors.New("corrupt segment")
	// ErrCorruptIndex: an index file is malformed (size, ordering, bounds).
	ErrCorruptIndex = errors.New("corrupt index")
	// ErrStorage: writing the log failed (the disk is full, or an I/O
	// error). Nothing of the failed append stays in the log, so a retry
	// is safe; Kafka's clients retry KAFKA_STORAGE_ERROR.
	ErrStorage = errors.New("log storage write failed")
	// ErrNotLocal: the range lives only in the cold tier and no cold tier is
	// configured.
	ErrNotLocal = errors.New("segment not available locally")
	// ErrColdTier: reading a range from the cold tier failed (the object is
	// missing, corrupt, or the bucket is unreachable). Only that partition's
	// fetch fails; produce and local reads go on.
	ErrColdTier = errors.New("cold tier read failed")
	// ErrInvalidRequest: a request argument is out of its domain (negative
	// partition, empty topic, unknown flush policy...).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrOutOfOrderSequence: an idempotent producer's batch does not follow
	// the last sequence the partition holds for it (Kafka's
	// OUT_OF_ORDER_SEQUENCE_NUMBER). A duplicate of one of the last five
	// batches is not an error: it is acknowledged with its original offset.
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch: the batch's producer epoch is older than the
	// partition has seen for that producer id (the producer was fenced).
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrTooManyPartitions: creating the partition would take the node past
	// its partition budget (Options.MaxPartitions, or the index mappings
	// vm.max_map_count leaves room for). Nothing is written; the partitions
	// already there are unaffected. The gateway answers it as a policy
	// violation: the placement should choose another node.
	ErrTooManyPartitions = errors.New("partition budget of this node exceeded")
	// ErrDiskFull: Open found no room on the data disk to recover the log
	// (ENOSPC, which it wraps). Open fails at once with it rather than
	// start on a log it could not make consistent; free space and start
	// again.
	ErrDiskFull = errors.New("no space left on the data disk")
	// ErrNotLeader: the partition is not led by this store (it follows
	// another, or its lease on leadership ran out because the controller
	// could not be reached); the client refreshes metadata and retries
	// (Kafka's NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("not the leader of the partition")
	// ErrNotEnoughReplicas: an acks=all produce while fewer replicas than
	// min.insync.replicas are in sync; nothing is written.
	ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")
	// ErrFencedLeaderEpoch: a request named a leader epoch older than the
	// partition's (Kafka's FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrUnknownLeaderEpoch: a request named a leader epoch newer than the
	// partition knows yet (Kafka's UNKNOWN_LEADER_EPOCH); retry.
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")
	// ErrCompactedNoKey: a produced batch holds a record with a null key
	// for a partition whose cleanup.policy includes compact. The cleaner
	// could only drop such a record, so, as Kafka does, it is refused
	// (INVALID_RECORD) and nothing of the batch is written.
	ErrCompactedNoKey = errors.New("compacted topic cannot accept a record without a key")
	// ErrClosed: the store is shutting down or closed.
	ErrClosed = errors.New("store closed")
)
