package objstore

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"iter"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bucket is one object store location: a bucket (or container, or root
// directory) plus the provider's configured key prefix. Implementations are
// safe for concurrent use. Every method that does I/O takes ctx first and
// returns an error for which errors.Is(err, context.Canceled) holds once ctx
// is cancelled.
type Bucket interface {
	// Name identifies the bucket in logs and errors ("s3://bucket/prefix").
	// It never contains a credential.
	Name() string

	// Put stores exactly size bytes read from r under key, replacing any
	// object there. size must be known (>= 0): every provider can then
	// stream without buffering, and a reader that ends early fails the
	// upload instead of storing a truncated object. Objects of unknown size
	// go through NewMultipartWriter. Readers are not retried by Put itself:
	// r is consumed, so a retry must supply a fresh one (see Retry).
	Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error)

	// PutIfAbsent is Put that fails with an error for which
	// IsPreconditionFailed is true, leaving the stored object untouched, if
	// key already exists. It is atomic on the server: of several concurrent
	// callers exactly one wins. tierd relies on it so that a segment is
	// never uploaded twice under one name with different bytes.
	PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error)

	// NewMultipartWriter starts an upload whose size need not be known.
	// Writes are coalesced into parts of opts.PartSize bytes (at least
	// MinPartSize, the S3 floor, except the last) and uploaded up to
	// opts.Concurrency at a time while the caller keeps writing. Close
	// completes the object; Abort discards it. ctx governs the whole upload,
	// including Close.
	NewMultipartWriter(ctx context.Context, key string, opts MultipartOptions) (MultipartWriter, error)

	// GetRange streams length bytes from offset off; length -1 means to the
	// end. A range running past the end is cut short; off equal to the size
	// yields an empty stream and off beyond it ErrInvalidRange. The caller
	// must Close the reader.
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)

	// Head returns the object's metadata, or ErrNotFound.
	Head(ctx context.Context, key string) (ObjectInfo, error)

	// List yields every object whose key starts with prefix (a plain string
	// prefix, not a directory: "a/b" matches "a/bc"), in ascending byte
	// order, fetching pages as the caller iterates. An error ends the
	// sequence as its last element.
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]

	// Delete removes key. A missing key is not an error, so deletes can be
	// retried and raced (retention and gc both delete) without special cases.
	Delete(ctx context.Context, key string) error

	// DeleteMany removes every key, batching where the provider can. Missing
	// keys are not errors; the result joins (errors.Join) the failures.
	DeleteMany(ctx context.Context, keys []string) error

	// Close releases the client's resources. Readers and writers still open
	// may fail afterwards.
	Close() error
}

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	// Key is the caller's key, without the provider's prefix.
	Key  string
	Size int64
	// ETag is the provider's entity tag, without quotes. It changes whenever
	// the object is replaced, but it is an MD5 of the content only for S3
	// single-part uploads, so it is compared, never recomputed.
	ETag string
	// Checksum is a provider-neutral content checksum in the form
	// "crc32c:%08x" (see FormatCRC32C). Put, PutIfAbsent and a closed
	// MultipartWriter always fill it from the bytes actually sent. Head and
	// List fill it only where the service stores a whole-object CRC32C
	// itself (GCS); elsewhere it is empty and the catalog's copy is the
	// reference.
	Checksum     string
	LastModified time.Time
	// Verified is set by Put, PutIfAbsent and a closed MultipartWriter when
	// the stored object is known to be the bytes Checksum covers: the
	// service checked the body (or every part) against an integrity value
	// sent with it, or the provider wrote the bytes itself. Reading the
	// object back, or a Head, proves nothing more then; tierd skips its
	// verifying Head, a billed request per file, for such uploads.
	Verified bool
}

// MinPartSize is the smallest part S3 accepts except for the last one. Every
// provider enforces the same floor so that code tested on one behaves the
// same on all.
const MinPartSize = 5 << 20

// MaxParts is S3's limit on parts per upload.
const MaxParts = 10000

// Defaults for MultipartOptions.
const (
	// DefaultPartSize balances request count (a 128 MiB segment is 16 parts)
	// against memory: a writer holds at most (Concurrency+1) parts.
	DefaultPartSize = 8 << 20
	// DefaultConcurrency keeps a few parts in flight, enough to fill a link
	// whose per-request latency dominates without starving other uploads.
	DefaultConcurrency = 4
)

// MultipartOptions tune a MultipartWriter. The zero value is usable.
type MultipartOptions struct {
	// PartSize is the size of every part but the last. 0 means
	// DefaultPartSize; values below MinPartSize are raised to it.
	PartSize int64
	// Concurrency bounds the parts uploading at once. 0 means
	// DefaultConcurrency.
	Concurrency int
	// IfAbsent makes Close fail with ErrPreconditionFailed, storing nothing,
	// if key exists when the upload completes (the multipart PutIfAbsent).
	IfAbsent bool
	// Retry, when non-nil, retries a part upload that fails with a
	// transient error, so one dropped connection does not restart a large
	// upload. The writer holds the part's bytes, so retrying is safe.
	Retry *RetryPolicy
}

// WithDefaults returns o with zero fields set to their defaults and PartSize
// raised to MinPartSize.
func (o MultipartOptions) WithDefaults() MultipartOptions {
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < MinPartSize {
		o.PartSize = MinPartSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o
}

// MultipartWriter is an upload in progress. It is an io.Writer for one
// goroutine at a time. Close completes the upload and Abort discards it; a
// writer that is neither closed nor aborted leaves an incomplete upload on
// the server (S3 bucket lifecycle rules should expire those).
type MultipartWriter interface {
	io.Writer
	// Close uploads what is buffered, waits for every part and completes
	// the object. On any failure the upload is aborted and the first error
	// returned; calling Close again returns the same result.
	Close() error
	// Abort cancels parts in flight and discards the upload. After a
	// successful Close it does nothing and returns nil, so `defer
	// w.Abort(ctx)` is the idiom for "clean up unless completed".
	Abort(ctx context.Context) error
	// Info describes the stored object after a successful Close.
	Info() ObjectInfo
}

// Op names a Bucket operation for FaultBucket rules and Observer events.
type Op string

// Operations, named after what the object store bills.
const (
	OpPut               Op = "put"
	OpPutIfAbsent       Op = "put_if_absent"
	OpGetRange          Op = "get_range"
	OpHead              Op = "head"
	OpList              Op = "list"
	OpDelete            Op = "delete"
	OpDeleteMany        Op = "delete_many"
	OpMultipartCreate   Op = "multipart_create"
	OpMultipartWrite    Op = "multipart_write"
	OpMultipartComplete Op = "multipart_complete"
	OpMultipartAbort    Op = "multipart_abort"
)

// MaxKeyLen is the longest key accepted, S3's and GCS's limit (Azure allows
// more). The provider prefix counts toward the service's limit, so a long
// prefix lowers it further; the service reports that case.
const MaxKeyLen = 1024

// ValidateKey checks that key is a relative '/'-separated path every provider
// stores under the same name: non-empty, valid UTF-8, no NUL, no leading or
// trailing '/', no empty, "." or ".." segment. The filesystem provider needs
// this to stay inside its root; the others apply it too so that a key valid on
// one provider is valid on all (S3 would happily store "a//b", a filesystem
// would not).
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key longer than %d bytes", ErrInvalidArgument, MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidArgument, key)
	case strings.ContainsRune(key, 0):
		return fmt.Errorf("%w: key %q contains NUL", ErrInvalidArgument, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: key %q has an empty, \".\" or \"..\" segment", ErrInvalidArgument, key)
		}
	}
	return nil
}

// ValidateRange checks GetRange's offset and length.
func ValidateRange(off, length int64) error {
	if off < 0 || length < -1 {
		return fmt.Errorf("%w: range offset %d length %d", ErrInvalidArgument, off, length)
	}
	return nil
}

// ValidateSize checks a Put size.
func ValidateSize(size int64) error {
	if size < 0 {
		return fmt.Errorf("%w: size %d (Put needs a known size; use NewMultipartWriter)", ErrInvalidArgument, size)
	}
	return nil
}

// CheckPut is the check a provider's Put and PutIfAbsent make before they
// send anything: a valid key and size and a live ctx. Its errors name the
// provider, the operation and the key.
func CheckPut(ctx context.Context, provider string, op Op, key string, size int64) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("%s: %s: %w", provider, op, err)
	}
	if err := ValidateSize(size); err != nil {
		return fmt.Errorf("%s: %s %q: %w", provider, op, key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %s %q: %w", provider, op, key, err)
	}
	return nil
}

// RangeAtEnd resolves a GetRange the service refused as not satisfiable
// (416, rangeErr): the contract gives an empty read for a start exactly at
// the object's end (a reader that consumed the whole object asks for the
// rest), which S3, GCS and Azure refuse like any start past it. head is the
// provider's Head.
func RangeAtEnd(ctx context.Context, head func(context.Context, string) (ObjectInfo, error),
	provider, key string, off int64, rangeErr error) (io.ReadCloser, error) {
	info, err := head(ctx, key)
	if err != nil {
		return nil, err
	}
	if off == info.Size {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return nil, fmt.Errorf("%s: get %q offset %d of %d: %w", provider, key, off, info.Size, rangeErr)
}

// PutMultipart stores size bytes of r through w, a multipart writer just
// opened for key: the path of a provider's Put for objects too large for
// one request. A reader shorter than size aborts the upload (ShortError),
// so nothing is stored.
func PutMultipart(ctx context.Context, w MultipartWriter, provider, key string, r io.Reader, size int64) (ObjectInfo, error) {
	defer w.Abort(ctx)
	n, err := io.Copy(w, io.LimitReader(r, size))
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("%s: put %q: %w", provider, key, err)
	}
	if n != size {
		return ObjectInfo{}, ShortError(key, n, size)
	}
	if err := w.Close(); err != nil {
		return ObjectInfo{}, err
	}
	return w.Info(), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// NewCRC32C returns the hash behind ObjectInfo.Checksum. CRC32C because
// hardware computes it at memory speed and GCS stores the same sum, so a GCS
// Head can be checked without reading the object.
func NewCRC32C() hash.Hash32 { return crc32.New(castagnoli) }

// FormatCRC32C renders a CRC32C as an ObjectInfo.Checksum.
func FormatCRC32C(sum uint32) string { return fmt.Sprintf("crc32c:%08x", sum) }

// ChecksumOf returns the ObjectInfo.Checksum of data.
func ChecksumOf(data []byte) string { return FormatCRC32C(crc32.Checksum(data, castagnoli)) }

// JoinPrefix joins a provider prefix and a key. Prefixes are written with or
// without slashes in configs; both mean the same folder.
func JoinPrefix(prefix, key string) string {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return key
	}
	return prefix + "/" + key
}

// CountingReader counts and checksums what passes through it, so a provider
// can report ObjectInfo.Checksum for a streamed upload and detect a reader
// that ended before the declared size.
type CountingReader struct {
	R   io.Reader
	N   int64
	Sum hash.Hash32
}

// NewCountingReader wraps r, reading at most limit bytes (the declared size;
// bytes past it are left unread, as on the wire).
func NewCountingReader(r io.Reader, limit int64) *CountingReader {
	return &CountingReader{R: io.LimitReader(r, limit), Sum: NewCRC32C()}
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	c.Sum.Write(p[:n])
	return n, err
}

// Checksum is the ObjectInfo.Checksum of the bytes read so far.
func (c *CountingReader) Checksum() string { return FormatCRC32C(c.Sum.Sum32()) }

// ShortError is the error for a reader that delivered fewer bytes than the
// declared size. It wraps io.ErrUnexpectedEOF and ErrInvalidArgument: the
// caller's input was wrong (a staged file shrank), which a retry of the same
// input cannot fix, so IsTransient is false for it.
func ShortError(key string, got, want int64) error {
	return fmt.Errorf("objstore: put %q: reader gave %d of %d bytes: %w (%w)", key, got, want, ErrInvalidArgument, io.ErrUnexpectedEOF)
}

// DeleteEach is DeleteMany for providers without a batch delete (GCS,
// Azure): it validates every key first, then calls del for each, at most
// concurrency at a time, and joins the failures.
func DeleteEach(ctx context.Context, keys []string, concurrency int, del func(ctx context.Context, key string) error) error {
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return err
		}
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, concurrency)
	)
	for _, k := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := del(ctx, k); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
