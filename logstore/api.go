package logstore

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"golang.org/x/sys/unix"
)

// Special timestamps accepted by ListOffsets, as in Kafka's ListOffsets API.
const (
	TimestampLatest        int64 = -1 // the log end offset (high watermark)
	TimestampEarliest      int64 = -2 // the log start offset
	TimestampMaxTimestamp  int64 = -3 // the offset of the record with the largest timestamp
	TimestampEarliestLocal int64 = -4 // the first offset still on local disk (KIP-405)
	TimestampLatestTiered  int64 = -5 // the last offset in the cold tier, -1 if none
)

// Acks mirrors Kafka's produce acks: 0 and 1 return once the batch is
// written; -1 (all) additionally waits until the flush policy has made it
// durable. Under flush=always every ack waits for the fsync.
type Acks int16

// PartitionConfig is the per-partition subset of topic configs the store
// enforces (the topicconfig rows whose layer is logstore; PartitionConfigOf
// reads them). Zero fields take the store's defaults, and so do nil ones.
type PartitionConfig struct {
	SegmentBytes    int64         // segment.bytes: roll when the active segment reaches this size
	SegmentMs       time.Duration // segment.ms: roll when the active segment is this old
	RetentionMs     time.Duration // retention.ms: delete sealed segments older than this; <0 = forever; RetentionNow for 0
	RetentionBytes  int64         // retention.bytes: keep at most this much; <0 = unlimited; RetainNoBytes for 0
	MaxMessageBytes int32         // max.message.bytes: largest batch accepted

	// local.retention.bytes / local.retention.ms (KIP-405): how much of the
	// log stays on local disk once segments are in the cold tier, in
	// Kafka's terms: 0 removes a segment's local copy as soon as it is
	// uploaded, -2 means "as retention.bytes / retention.ms" (nothing is
	// evicted early) and -1 unlimited. They are pointers because 0 is a
	// value here, so only nil can mean "the store's default".
	LocalRetentionBytes *int64
	LocalRetentionMs    *time.Duration

	// Compaction (cleaner.go). CleanupPolicy is cleanup.policy in normal
	// form ("delete", "compact", "compact,delete"; "" = the default). The
	// pointers are for configs where 0 is a value of its own.
	CleanupPolicy          string
	DeleteRetentionMs      *time.Duration // delete.retention.ms
	MinCleanableDirtyRatio *float64       // min.cleanable.dirty.ratio
	MinCompactionLagMs     time.Duration  // min.compaction.lag.ms
	MaxCompactionLagMs     time.Duration  // max.compaction.lag.ms; past maxMs: none
}

// ProduceRequest appends one or more whole RecordBatch v2 to a partition.
// Records is modified in place (offsets are patched into it), and must not be
// touched by the caller until the call returns.
type ProduceRequest struct {
	Topic     string
	Partition int32
	Acks      Acks
	Records   []byte
}

// ProducePart is one partition's share of a batched produce
// (Store.ProduceBatch): the request, and once the call returns, its result
// or its error. Each part succeeds or fails alone, as separate Produce
// calls would.
type ProducePart struct {
	ProduceRequest
	Result ProduceResult
	Err    error
}

// ProduceResult is what Kafka's produce response needs for one partition.
type ProduceResult struct {
	BaseOffset     int64
	LogAppendTime  int64 // -1: CreateTime topics
	LogStartOffset int64
}

// FetchPartition names one partition and where to read it from.
type FetchPartition struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int32
	// FollowerID is 0 for a consumer, which reads up to the high
	// watermark. A follower store sets its node id (store ids are > 0): it
	// reads up to the log end, and its Offset tells the leader how far it
	// has replicated, which moves the high watermark.
	FollowerID int32
	// LeaderEpoch is, for a follower fetch, the epoch the follower follows;
	// the leader refuses an older one (ErrFencedLeaderEpoch) or a newer one
	// (ErrUnknownLeaderEpoch). Ignored for consumers.
	LeaderEpoch int32
}

// FetchRequest reads several partitions at once. The call returns when at
// least MinBytes are available over all partitions, or MaxWait has passed, or
// any partition has an error.
type FetchRequest struct {
	Partitions []FetchPartition
	MinBytes   int32
	MaxBytes   int32
	MaxWait    time.Duration
	// IsolationLevel is ReadUncommitted (0) or ReadCommitted (1): the
	// latter reads consumers' partitions up to the last stable offset
	// only, and gets the aborted transactions there (txn.go).
	IsolationLevel int8
}

// FetchPartitionResult is the outcome for one partition. Err wraps a
// sentinel of this package; on error Records is empty.
type FetchPartitionResult struct {
	Topic          string
	Partition      int32
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is below the high watermark while a transaction
	// is open in the partition (txn.go).
	LastStableOffset int64
	// AbortedTransactions, for a ReadCommitted fetch only, are those the
	// records returned may hold.
	AbortedTransactions []AbortedTxn
	Records             Records
}

// FetchResult holds one result per requested partition, in request order.
// Release must be called once the records have been written out.
type FetchResult struct {
	Partitions []FetchPartitionResult
}

// Release drops the file references held by the result.
func (r *FetchResult) Release() {
	for i := range r.Partitions {
		r.Partitions[i].Records.Release()
	}
}

// Records is a byte range of record batches: either a range of a segment
// file (hot, zero-copy: the gateway may sendfile it) or bytes in memory
// (cold tier, or after a network hop). The range always starts at a batch
// boundary; it may end inside a batch, as Kafka allows.
type Records struct {
	File  *os.File // non-nil: read Len bytes at Pos
	Pos   int64
	Len   int
	Bytes []byte // used when File is nil
	// More are bytes that follow Bytes, when File is nil: a cold read
	// over cache chunks is each chunk's own memory, sent as it is, not
	// copied into one slice.
	More [][]byte
	ref  *fileRef
	// uncache is how many bytes from Pos writeback had already dropped
	// from the page cache: this read brought them back from the disk, and
	// Release drops them again (see writeback.go).
	uncache int
}

// Size is the number of bytes in the range.
func (r *Records) Size() int {
	if r.File != nil {
		return r.Len
	}
	n := len(r.Bytes)
	for _, b := range r.More {
		n += len(b)
	}
	return n
}

// ReadAll copies the range into memory, appending to dst.
func (r *Records) ReadAll(dst []byte) ([]byte, error) {
	if r.File == nil {
		dst = append(dst, r.Bytes...)
		for _, b := range r.More {
			dst = append(dst, b...)
		}
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, r.Len)...)
	if _, err := r.File.ReadAt(dst[n:], r.Pos); err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// Release drops the file reference, and drops from the page cache the bytes
// this read brought back from the disk (uncache). It is safe to call more
// than once.
func (r *Records) Release() {
	if r.ref != nil {
		if r.uncache > 0 {
			_ = unix.Fadvise(int(r.File.Fd()), r.Pos, int64(r.uncache), unix.FADV_DONTNEED)
		}
		r.ref.release()
		r.ref = nil
	}
	r.File = nil
}

// fileRef keeps a segment's log file open while fetch results point into it,
// so retention can delete a segment without closing a descriptor a gateway is
// still sending from. Counting is atomic because releases come from gateway
// goroutines; the shard goroutine is the only one that takes references.
type fileRef struct {
	f *os.File
	// wb is the same file opened again, for paced writeback's syncs (nil
	// until the first). The kernel reports a writeback error once per
	// open file: had writeback learned of one through f, the fdatasync
	// that decides the high watermark would have succeeded after it.
	wb   *os.File
	refs atomic.Int32
}

func newFileRef(f *os.File) *fileRef {
	r := &fileRef{f: f}
	r.refs.Store(1) // the segment's own reference
	return r
}

func (r *fileRef) acquire() { r.refs.Add(1) }

func (r *fileRef) release() {
	if r.refs.Add(-1) == 0 {
		_ = r.f.Close()
		if r.wb != nil {
			_ = r.wb.Close()
		}
	}
}

// OffsetResult answers ListOffsets.
type OffsetResult struct {
	Offset    int64
	Timestamp int64
}

// PartitionInfo describes a partition's log.
type PartitionInfo struct {
	Topic          string
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64 // last durable offset + 1; what consumers may read
	LogEndOffset   int64 // next offset to assign
	Size           int64 // bytes on local disk
	Segments       int
	Config         PartitionConfig
}

// Tier is the seam through which the tiering daemon (tierd) learns what to
// upload and what to delete remotely. Both calls come from a shard goroutine
// and must not block: the tier queues the work and reports back with
// Store.SetRemote and Store.RemoteDeleted, so the shard stays the only
// writer of its partitions' catalog records.
type Tier interface {
	// Sealed: seg is immutable and has no cloud copy yet; upload it.
	Sealed(seg catalog.Segment)
	// DeleteRemote: seg's objects must be deleted (retention or topic
	// deletion); seg keeps its cloud pointer.
	DeleteRemote(seg catalog.Segment)
}

// ColdTier is the seam through which a later tier (tierd + fetchcache) serves
// ranges of segments that are no longer on local disk. logstore never
// imports the tier; tools/ wires an implementation in.
type ColdTier interface {
	// ReadRemote returns record batches of the remote segment seg starting
	// with the batch that holds offset, at most maxBytes (but at least one
	// whole batch), ending anywhere. The bytes are the parts back to back
	// (Records.Bytes, then Records.More). It is called outside the shard
	// goroutine, so it may block on the network. The parts are read-only:
	// they may be the tier's cache memory.
	ReadRemote(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int) ([][]byte, error)
}
