package fetchcache

import "errors"

// Sentinel errors. Corrupt data is reported by wrapping
// logstore.ErrCorruptSegment, and an offset outside the segment by wrapping
// logstore.ErrOffsetOutOfRange, so the store and the gateways map cold-read
// failures exactly as they map local ones. Bucket failures keep the bucket's
// error in the chain (objstore.IsNotFound and friends work on them).
var (
	// ErrClosed: ReadRemote after Close.
	ErrClosed = errors.New("fetchcache: closed")
	// ErrInvalidOptions: New was given an option outside its domain; the
	// message names the field.
	ErrInvalidOptions = errors.New("fetchcache: invalid options")
	// ErrNotRemote: the segment record carries no object key, so there is
	// nothing to read from the bucket.
	ErrNotRemote = errors.New("fetchcache: segment has no object key")
	// errNotInMemory: a ReadCached read would have to wait for a GET; it
	// never leaves the package.
	errNotInMemory = errors.New("fetchcache: not in memory")
)
