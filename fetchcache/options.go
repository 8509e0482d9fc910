package fetchcache

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Defaults of Options.
const (
	// DefaultChunkSize: large enough that per-request latency (tens of ms
	// on S3) is amortised over megabytes, small enough that a consumer
	// fetching 1 MiB does not wait for much more than it asked for.
	DefaultChunkSize = 4 << 20
	// DefaultMaxBytes is the memory budget of cached bytes.
	DefaultMaxBytes = 256 << 20
	// DefaultMaxConcurrentGets bounds cold GETs in flight.
	DefaultMaxConcurrentGets = 8
	// DefaultReadahead is the number of chunks prefetched ahead of a
	// sequential reader.
	DefaultReadahead = 1

	// Fetch-path retry defaults: a consumer re-polls on its own, so the
	// cache retries briefly (a dropped connection, one 503) and then
	// reports, instead of holding a fetch for the 15 s objstore allows an
	// upload.
	defaultRetryAttempts   = 3
	defaultRetryInitial    = 20 * time.Millisecond
	defaultRetryMaxBackoff = 500 * time.Millisecond

	minChunkSize = 64
)

// Options configure a Cache. Zero values take the defaults.
type Options struct {
	// ChunkSize is the unit of range GETs and of caching; chunk k of an
	// object covers bytes [k*ChunkSize, (k+1)*ChunkSize). 0 means
	// DefaultChunkSize.
	ChunkSize int

	// MaxBytes is the memory budget for cached bytes, over all three
	// segments (main + scan + index). 0 means DefaultMaxBytes. Buffers of
	// GETs in flight (at most MaxConcurrentGets chunks) and the results
	// handed to callers come on top.
	MaxBytes int64
	// ScanBytes is the part of MaxBytes given to the scan segment, which
	// every fetched chunk enters first and where one-pass reads stay. It
	// must hold what each concurrent sequential reader is working on: the
	// chunk it reads, the next one its reads run into, and its readahead,
	// (Readahead+2) chunks per reader (one more when chunks are as small as
	// the index interval, 4 KiB, as a read then often starts from an index
	// entry in the chunk before). A reader that loses its chunk before
	// it is done with it reads it again, which counts as a re-reference and
	// moves the chunk to the main segment. 0 means 3/8 of MaxBytes: 24
	// chunks at the default sizes, room for four sequential readers (a
	// consumer replaying four partitions) with the default readahead;
	// with more, each reader's readahead window shrinks to its share, so
	// that no prefetched chunk is pushed out before it is read (readers
	// then wait more for GETs). (2Q suggests a quarter for a pure
	// probation queue; this one also buffers readahead.)
	ScanBytes int64
	// IndexBytes is the part of MaxBytes given to remote .index objects
	// (about 2 KiB per MiB of log). 0 means MaxBytes/16.
	IndexBytes int64

	// MaxConcurrentGets is the cold I/O budget: GETs in flight at once,
	// demand and readahead together. Readahead may use all but a quarter of
	// it (at least one slot is kept for demand reads, unless there is only
	// one). 0 means DefaultMaxConcurrentGets.
	MaxConcurrentGets int
	// MaxBytesPerSec, when positive, rate-limits the bytes cold GETs
	// request. 0 means unlimited.
	MaxBytesPerSec int64

	// Readahead is the number of chunks prefetched ahead of a sequential
	// reader. 0 means DefaultReadahead; a negative value disables
	// readahead.
	Readahead int

	// Retry governs retries of failed GETs (transient errors only, by
	// default). Zero fields take fetch-path defaults: 3 attempts, backoff
	// capped at 20 ms then growing to 500 ms. MaxAttempts 1 disables
	// retries. Readahead GETs are never retried.
	Retry objstore.RetryPolicy

	// Prealloc allocates the chunk memory of the budget (MaxBytes less
	// IndexBytes) from when the cache is created and touches every page of
	// it, for the first chunks fetched (reserve.go says why). It costs that
	// memory from the start, and about 0.3 CPU-s per GiB in a goroutine
	// that New starts and does not wait for.
	Prealloc bool

	// SkipVerify turns off the CRC32C check of every whole batch served.
	// The check costs one CRC pass over the returned bytes (hardware
	// CRC32C: several GB/s); turning it off lets a corrupted object reach
	// clients, so it exists for benchmarks.
	SkipVerify bool

	// Logger receives warnings (corrupt data, unusable index objects) and
	// debug events (retries). Nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults fills zero fields and checks the result.
func (o Options) withDefaults() (Options, error) {
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.ChunkSize < minChunkSize {
		return o, fmt.Errorf("%w: ChunkSize %d is below %d bytes", ErrInvalidOptions, o.ChunkSize, minChunkSize)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.ScanBytes == 0 {
		o.ScanBytes = o.MaxBytes / 8 * 3
	}
	if o.IndexBytes == 0 {
		o.IndexBytes = o.MaxBytes / 16
	}
	if o.MaxConcurrentGets == 0 {
		o.MaxConcurrentGets = DefaultMaxConcurrentGets
	}
	if o.Readahead == 0 {
		o.Readahead = DefaultReadahead
	}
	if o.Readahead < 0 {
		o.Readahead = 0
	}
	if o.Retry.MaxAttempts == 0 {
		o.Retry.MaxAttempts = defaultRetryAttempts
	}
	if o.Retry.InitialBackoff == 0 {
		o.Retry.InitialBackoff = defaultRetryInitial
	}
	if o.Retry.MaxBackoff == 0 {
		o.Retry.MaxBackoff = defaultRetryMaxBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	chunk := int64(o.ChunkSize)
	switch {
	case o.MaxBytes < 0:
		return o, fmt.Errorf("%w: MaxBytes %d is negative", ErrInvalidOptions, o.MaxBytes)
	case o.ScanBytes < 0 || o.IndexBytes < 0:
		return o, fmt.Errorf("%w: ScanBytes %d / IndexBytes %d is negative", ErrInvalidOptions, o.ScanBytes, o.IndexBytes)
	case o.ScanBytes < chunk*int64(o.Readahead+2):
		return o, fmt.Errorf("%w: ScanBytes %d cannot hold what one sequential reader needs (Readahead+2 = %d chunks of %d bytes)",
			ErrInvalidOptions, o.ScanBytes, o.Readahead+2, chunk)
	case o.MaxBytes-o.ScanBytes-o.IndexBytes < chunk:
		return o, fmt.Errorf("%w: MaxBytes %d leaves %d bytes for the main segment after ScanBytes %d and IndexBytes %d, less than one chunk of %d",
			ErrInvalidOptions, o.MaxBytes, o.MaxBytes-o.ScanBytes-o.IndexBytes, o.ScanBytes, o.IndexBytes, chunk)
	case o.MaxConcurrentGets < 0:
		return o, fmt.Errorf("%w: MaxConcurrentGets %d is negative", ErrInvalidOptions, o.MaxConcurrentGets)
	case o.MaxBytesPerSec < 0:
		return o, fmt.Errorf("%w: MaxBytesPerSec %d is negative", ErrInvalidOptions, o.MaxBytesPerSec)
	}
	return o, nil
}

// mainBytes is the budget of the ristretto segment.
func (o *Options) mainBytes() int64 { return o.MaxBytes - o.ScanBytes - o.IndexBytes }
