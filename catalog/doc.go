// Package catalog is AeroStream's metadata store. It owns two things:
//
//   - the segment catalog: one record per partition (log start offset, the
//     logstore's opaque partition config) and one record per segment (offset
//     range, size, timestamps, lifecycle state, local path and, once tierd has
//     uploaded it, the cloud pointer: object key, size, checksum, ETag, epoch);
//   - RaftStore, the pebble-backed raft.LogStore and raft.StableStore the
//     controller runs hashicorp/raft on (raft-boltdb does not build with raft
//     v1.8, see DESIGN.md §5).
//
// Both live in pebble, and this is the only package that imports pebble: every
// other package sees typed records and sentinel errors, so the storage engine
// can change without touching them. For the same reason catalog imports no
// other aerostream package; logstore, tierd and controller import it, never the
// reverse.
//
// # Catalog keys (catalog DB)
//
// Partition numbers are 4-byte big-endian and offsets 8-byte big-endian, so
// the lexical key order pebble keeps is the numeric order we scan in (offset
// 255 sorts before 256, partition 1 before 256). Topic names are Kafka names
// ([a-zA-Z0-9._-], at most 249 bytes), so they never contain the '/'
// separator and one partition's prefix is never a prefix of another's.
//
//	p/<topic>/<partition BE32>                  -> partition record
//	s/<topic>/<partition BE32>/<base offset BE64> -> segment record
//
// Key order is not topic-name order ('.' and '-' sort below '/'), so
// Partitions sorts after scanning.
//
// # Raft keys (raft DB, a separate pebble instance in its own directory)
//
//	l/<index BE64> -> raft log entry
//	k/<key>        -> stable-store value (SetUint64 stores 8 bytes big-endian)
//
// # Values
//
// Every value starts with a format version byte (currently 1) followed by
// encoding/binary varints and length-prefixed strings. Identity fields that are
// already in the key (topic, partition, base offset) are not repeated in the
// value. Decoders check every length against the remaining input and reject
// trailing bytes, so any undecodable value yields ErrCorruptRecord and never a
// panic or a huge allocation; they are fuzzed (FuzzDecodeSegment,
// FuzzDecodePartition, FuzzDecodeRaftLog).
//
// # Durability
//
// Every mutation is committed with pebble.Sync before it returns: callers
// act on a catalog write as a fact, e.g. the store deletes an evicted
// segment's files only after its remote-only record is durable. The one
// exception is PutSegmentUnsynced, for records that recovery can do
// without (a cloud pointer that tierd's rescan records again); the next
// synced write makes it durable too, as the write-ahead log is ordered.
package catalog
