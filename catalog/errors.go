package catalog

import "errors"

// Sentinel errors. Everything the catalog returns wraps one of these (or is a
// raw I/O error from pebble), so callers branch with errors.Is, never on text.
var (
	// ErrNotFound: there is no record for the segment or partition asked for.
	// Callers use it to tell "never created or already deleted" from a failure.
	ErrNotFound = errors.New("catalog record not found")
	// ErrCorruptRecord: a stored key or value could not be decoded (unknown
	// version, truncated, trailing bytes, out-of-range field). The record is
	// not guessed at; the caller decides whether to rebuild it from the bucket
	// manifest or the local files.
	ErrCorruptRecord = errors.New("corrupt catalog record")
	// ErrDiskFull: the database's filesystem has no room left, found at
	// open. It wraps the cause (ENOSPC). Open fails at once rather than
	// start and retry writes that cannot succeed; free space and start
	// again.
	ErrDiskFull = errors.New("no space left for the database")
	// ErrClosed: the catalog or raft store has been closed.
	ErrClosed = errors.New("catalog closed")
	// ErrInvalidArgument: a key field is outside its domain (empty or non-Kafka
	// topic name, negative partition or offset, unknown state). Rejected before
	// anything is written, because a bad key could not be read back in order.
	ErrInvalidArgument = errors.New("invalid catalog argument")

	// ErrKeyNotFound is what RaftStore.Get and GetUint64 return for a missing
	// key. hashicorp/raft compares err.Error() with "not found" (see
	// raft.HasExistingState and NewRaft), so the text is part of the contract
	// and this error is returned bare, never wrapped.
	ErrKeyNotFound = errors.New("not found")
)
