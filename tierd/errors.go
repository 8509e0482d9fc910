package tierd

import "errors"

// Sentinel errors of the tiering daemon.
var (
	// ErrBadManifest: a manifest.json in the bucket does not parse or is
	// inconsistent (order, overlap, keys of another partition).
	ErrBadManifest = errors.New("bad manifest")
	// ErrVerify: an uploaded or stored object does not match the catalog
	// (size or CRC32C).
	ErrVerify = errors.New("object verification failed")
	// ErrBadSegment: a segment object restore had to read (one no manifest
	// lists) is not a whole, valid log: a batch fails its length, magic or
	// CRC32C, offsets go backwards, or the object ends inside a batch.
	ErrBadSegment = errors.New("segment object is not a valid log")
	// ErrClosed: the daemon has stopped.
	ErrClosed = errors.New("tierd closed")
)
