// Package logstore owns AeroStream's local log: partitions as sequences of
// segment files holding Kafka RecordBatch v2 bytes exactly as on the wire,
// their mmap'd sparse offset and time indexes, rolling, retention, paced
// writeback, flush policies, crash recovery and the shards that own the
// partitions.
//
// # Ownership
//
// A Store runs N shards. A partition belongs to shard ShardFor(topic,
// partition, N), and only that shard's goroutine touches its state; every
// public method is a request to that goroutine. The produce and fetch paths
// therefore take no lock, and the append path allocates nothing per batch or
// per record: offsets are assigned by patching the base offset in place
// (outside the CRC), the write is one pwrite, and index entries are stores
// into an mmap'd file. fsync runs on a per-shard flusher goroutine so that
// appends continue while it runs and share the next sync (group commit).
//
// # Files
//
// <dir>/logs/<topic>-<partition>/<base offset, 20 digits>.{log,index,timeindex,snapshot},
// and leader-epoch-checkpoint.
// The .index maps relative offset -> position (uint32, uint32) every
// IndexIntervalBytes of log; the .timeindex maps max timestamp so far ->
// relative offset (int64, uint32) at the same points.
//
// # Descriptors and mappings
//
// Log files are opened through each shard's bounded cache (files.go,
// Options.MaxOpenLogs) and indexes keep their mapping but no descriptor,
// so the partition count is not bounded by the open file limit. A create
// that would take the index mappings past three quarters of
// vm.max_map_count, or past Options.MaxPartitions, is refused with
// ErrTooManyPartitions before anything is written (limits.go).
//
// # Durability and recovery
//
// The catalog (package catalog) records every segment. Catalog records are
// written before files are created and marked "deleting" before files are
// removed, so Open can always reconcile the two after a crash: finishing
// deletions, adopting unrecorded files, dropping records of vanished local
// segments, truncating the torn tail of the last segment after validating
// every batch's CRC32C, and rebuilding missing or corrupt indexes.
//
// Not every record is synced by the shard goroutine that writes it, since
// an fsync there stalls every produce of the shard. The cloud pointer
// SetRemote records is written unsynced (tier.go says why that is safe).
// A roll writes the sealed and the new active record unsynced too; so do
// an eviction, its remote record, and a retention deletion, its deleting
// mark. A per-shard chore goroutine then does the slow part in order
// (shard.go, later): it shrinks the sealed indexes to their used entries,
// syncs the catalog and only then tells tierd to upload, writes the
// producer snapshot, and removes evicted or deleted files only after the
// sync that makes their record durable. A crash in between leaves
// files that recovery adopts, or a sealed index still at its preallocated
// size, which recovery rebuilds. Deleting a partition drains the chores
// first, so none outlives the directory.
//
// # Paced writeback
//
// Each full window (WritebackBytes) behind the writer is handed to the
// kernel with sync_file_range, and the window before it is waited for and
// then dropped from the page cache unless a reader seen in the last 30 s
// still needs it, up to eight windows behind the writer. What a reader
// further behind brings back from the disk is dropped again once sent
// (writeback.go).
//
// # Storage failures
//
// A write that fails (a full disk: pwrite, or the fallocate that gives the
// mmap'd indexes their blocks before any store into them) fails its
// produce with ErrStorage and changes nothing. A write that did not reach
// the disk (writeback or fdatasync reports an error) takes the partition
// offline for produce until a restart, since the kernel reports such an
// error only once (partition.failed).
//
// # Fetch
//
// A fetch returns whole batches only: as many as fit in the partition's max
// bytes, or the first alone when it is larger (KIP-74). Kafka also cuts the
// last batch at the limit, which its clients discard and fetch again.
//
// # Idempotent producers
//
// Each partition keeps the last five batches of every idempotent producer
// (producer.go), snapshots that state beside each new segment and rebuilds
// it on recovery. A producer idle for ProducerIDExpiration (Kafka's
// producer.id.expiration.ms, one day) is forgotten at the next retention
// check.
//
// # Replication
//
// The log is the storage side of replication (replica.go, epochs.go,
// truncate.go); the replica manager (package replica) runs the fetchers
// and the ISR and hands each partition its role with SetReplicaState. A
// partition without a role is a single copy and keeps the paths above
// unchanged (unless Options.RequireRole, which a cluster store sets, makes
// it refuse clients until it has one). A leader:
//   - keeps a high watermark that is the lowest of its durable end and
//     the log end each other ISR member reported by its last follower
//     fetch; consumers, ListOffsets latest and DeleteRecords see only what
//     lies below it, and acks=all produces wait for it to pass them
//     (ErrNotEnoughReplicas with fewer in-sync replicas than
//     min.insync.replicas);
//   - serves follower fetches (FetchPartition.FollowerID) up to its log
//     end after checking their leader epoch, wakes them on appends, and
//     records their progress and catch-up time (ReplicaStatuses);
//   - stamps its leader epoch into each batch it appends;
//   - refuses produce and consumer fetches once the store's lease
//     (SetLease, renewed on every controller heartbeat) has run out, so a
//     fenced leader serves no stale read.
//
// A follower takes its leader's batches with AppendReplica (offsets,
// epochs and producer state kept), refuses clients with ErrNotLeader, and
// on a leader change truncates what diverged (Truncate, by batch, crash
// safe), or starts over at its leader's log start (TruncateFully). Every partition keeps a leader-epoch cache, checkpointed in its
// directory as leader-epoch-checkpoint, which answers OffsetForLeaderEpoch.
// A cluster store checkpoints its high watermarks every few seconds
// (hw-checkpoint.<shard> in the data directory) and a restart starts each
// partition there, not at its log end, which may hold records never
// committed; a follower's fetches then set it to its leader's.
//
// # Compaction
//
// A partition whose cleanup.policy includes compact is cleaned by the
// store's cleaner goroutine (cleaner.go), off the shard goroutines, one
// partition at a time, its reads and writes bounded together by
// CleanerOptions.BytesPerSecond. It cleans sealed segments only, below
// the high watermark and older than min.compaction.lag.ms, and only when
// the part not yet cleaned (above cleaner-offset-checkpoint in the
// partition's directory) is at least min.cleanable.dirty.ratio of them, or
// holds a record older than max.compaction.lag.ms (an active segment that
// old is rolled). A pass builds a map of each key's last offset over the
// dirty part (a 128-bit hash per key, CleanerOptions.MapEntries at most),
// then rewrites runs of segments, each into one segment at the first
// one's base: a record stays unless a later record has its key, it has no
// key, or it is a tombstone whose batch is older than delete.retention.ms.
// Rewritten batches keep their offsets, producer fields and codec
// (checkStoredFields says what a compacted batch may look like); a batch
// left empty stays, without records, when it is a producer's last or the
// run's last, so each cleaned segment still ends where the old ones did.
// Transactional and control batches stay whole. A segment that fails any
// check stops the partition's cleaning until a restart (CleanerStats),
// and nothing of it is rewritten.
//
// The swap is crash safe through two file names:
//   - the cleaner writes <base>.{log,index,timeindex}.cleaned and syncs
//     them, then <base>.swap naming the segments they replace, synced with
//     its directory;
//   - the shard goroutine checks the segments are still the ones read,
//     renames the .cleaned files over the base segment's (the log last:
//     that rename is the commit), reopens it and records it, unsynced;
//   - a chore syncs the directory and the catalog, drops the replaced
//     segments' records and files, and only then removes the marker.
//
// At load, a marker beside a .cleaned log means the swap never happened:
// the .cleaned files go, the old segments stand. A marker alone means it
// did: the replaced segments' files and records go. Either way the base
// segment's indexes are rebuilt, and .cleaned files without a marker are
// removed. A cleaned segment gets a new segment id and is sealed for
// upload; the objects of the segments it replaced are handed to the tier
// (ReplacedTier), which deletes them after a grace period. The cleaner
// cleans local segments only: with local.retention.* at its default (as
// retention, which compact alone turns off) a compacted log stays local
// and the bucket holds a copy of it as compacted; segments evicted under
// a local retention set on the topic are not cleaned again.
//
// # What it must not import
//
// No AeroStream package except catalog. The cold tier is reached only through
// the ColdTier interface defined here; tools/ wires tierd into it.
package logstore
