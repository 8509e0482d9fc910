package gcs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Config is [tiered_storage.gcs]; the toml tags are the documented keys.
type Config struct {
	Bucket string `toml:"bucket"`
	// Prefix is prepended to every key.
	Prefix string `toml:"prefix"`
	// ServiceAccountPath is a service-account JSON key file; empty means
	// Application Default Credentials.
	ServiceAccountPath string `toml:"service_account_path"`
	// Endpoint overrides the JSON API endpoint
	// ("https://storage.example.internal/storage/v1/").
	Endpoint string `toml:"endpoint"`
}

// Validate checks the config without contacting the service; errors name the
// key at fault. The key file is read here so that a wrong path or a file of
// the wrong kind is a config error, not an authentication failure later.
func (c Config) Validate() error {
	if c.Bucket == "" {
		return fmt.Errorf("%w: gcs: bucket is required", objstore.ErrInvalidConfig)
	}
	if c.ServiceAccountPath != "" {
		data, err := os.ReadFile(c.ServiceAccountPath)
		if err != nil {
			return fmt.Errorf("%w: gcs: service_account_path: %v", objstore.ErrInvalidConfig, err)
		}
		var key struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &key); err != nil || key.Type != "service_account" {
			return fmt.Errorf("%w: gcs: service_account_path %q is not a service-account JSON key file", objstore.ErrInvalidConfig, c.ServiceAccountPath)
		}
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return fmt.Errorf("%w: gcs: endpoint %q must start with http:// or https://", objstore.ErrInvalidConfig, c.Endpoint)
	}
	return nil
}

// Options are settings that are not part of the config file.
type Options struct {
	Logger *slog.Logger
	// SkipBucketCheck skips New's check that the bucket exists and can be
	// listed.
	SkipBucketCheck bool
}

// singleRequestMax is the largest Put sent as one request. Above it a
// resumable upload costs one extra round trip but survives a dropped
// connection without resending everything.
const singleRequestMax = 8 << 20

// deleteConcurrency bounds DeleteMany's parallel requests.
const deleteConcurrency = 16

type bucket struct {
	client *storage.Client
	bkt    *storage.BucketHandle
	prefix string
	name   string
	log    *slog.Logger
}

var _ objstore.Bucket = (*bucket)(nil)

// New connects to the bucket of cfg. Unless opts.SkipBucketCheck, it lists
// one object to check that the bucket exists and the credentials may list
// it (objects.list, which the object roles tierd needs include;
// buckets.get, which a bucket-attributes check would need, is often not
// granted).
func New(ctx context.Context, cfg Config, opts Options) (objstore.Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	var copts []option.ClientOption
	if cfg.ServiceAccountPath != "" {
		copts = append(copts, option.WithAuthCredentialsFile(option.ServiceAccount, cfg.ServiceAccountPath))
	}
	if cfg.Endpoint != "" {
		copts = append(copts, option.WithEndpoint(cfg.Endpoint))
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gcs: creating client: %w", mapErr(ctx, err))
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	where := cfg.Endpoint
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		where = "emulator " + h
	}
	name := fmt.Sprintf("gs://%s/%s", cfg.Bucket, prefix)
	if where != "" {
		name += " (" + where + ")"
	}
	b := &bucket{client: client, bkt: client.Bucket(cfg.Bucket), prefix: prefix, name: name, log: log}
	if !opts.SkipBucketCheck {
		it := b.bkt.Objects(ctx, &storage.Query{Prefix: prefix})
		it.PageInfo().MaxSize = 1
		if _, err := it.Next(); err != nil && !errors.Is(err, iterator.Done) {
			client.Close()
			return nil, fmt.Errorf("gcs: checking bucket %q: %w", cfg.Bucket, mapErr(ctx, err))
		}
	}
	return b, nil
}

func (b *bucket) Name() string   { return b.name }
func (b *bucket) String() string { return b.name }
func (b *bucket) Close() error   { return b.client.Close() }

func (b *bucket) full(key string) string { return objstore.JoinPrefix(b.prefix, key) }

// mapErr translates storage and googleapi errors into objstore's sentinels.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("%w: %w", objstore.ErrBucketNotFound, err)
	}
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return err
	}
	switch code := gerr.Code; {
	case code == http.StatusNotFound:
		// A 404 that the client did not turn into ErrObjectNotExist came
		// from a bucket-level call (a listing): the bucket is missing.
		return fmt.Errorf("%w: %w", objstore.ErrBucketNotFound, err)
	case code == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
	case code == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: %w", objstore.ErrInvalidRange, err)
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
	case objstore.HTTPStatusTransient(code):
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	}
	return err
}

func (b *bucket) info(key string, a *storage.ObjectAttrs) objstore.ObjectInfo {
	info := objstore.ObjectInfo{Key: key, Size: a.Size, ETag: strings.Trim(a.Etag, `"`), LastModified: a.Updated}
	if a.CRC32C != 0 || a.Size == 0 {
		// The server always computes a CRC32C; 0 is a real sum only for
		// the empty object, and otherwise means the field was not returned.
		info.Checksum = objstore.FormatCRC32C(a.CRC32C)
	}
	return info
}

func (b *bucket) object(key string, ifAbsent bool) *storage.ObjectHandle {
	o := b.bkt.Object(b.full(key))
	if ifAbsent {
		o = o.If(storage.Conditions{DoesNotExist: true})
	}
	return o
}

func (b *bucket) Put(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPut, key, r, size, false)
}

func (b *bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPutIfAbsent, key, r, size, true)
}

func (b *bucket) put(ctx context.Context, op objstore.Op, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	if err := objstore.CheckPut(ctx, "gcs", op, key, size); err != nil {
		return objstore.ObjectInfo{}, err
	}
	chunk := googleapi.DefaultUploadChunkSize
	cr := objstore.NewCountingReader(r, size)
	var body io.Reader = cr
	if size <= singleRequestMax {
		chunk = 0 // one request, no upload session
		// The body is read whole first, so a short reader fails before
		// anything reaches the server: a single request cut off midway
		// by abort could still be committed, truncated, by a server that
		// saw a clean end (fake-gcs-server did, one CI run in several).
		buf, err := io.ReadAll(cr)
		if err != nil {
			return objstore.ObjectInfo{}, fmt.Errorf("gcs: %s %q: reading the body: %w", op, key, err)
		}
		if cr.N != size {
			return objstore.ObjectInfo{}, objstore.ShortError(key, cr.N, size)
		}
		body = bytes.NewReader(buf)
	}
	w := newWriter(ctx, b.object(key, ifAbsent), chunk)
	if _, err := io.Copy(w, body); err != nil {
		w.abort()
		return objstore.ObjectInfo{}, fmt.Errorf("gcs: %s %q: %w", op, key, mapErr(ctx, err))
	}
	if cr.N != size {
		// Closing would store the truncated object: cancel instead.
		w.abort()
		return objstore.ObjectInfo{}, objstore.ShortError(key, cr.N, size)
	}
	attrs, err := w.close()
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("gcs: %s %q: %w", op, key, mapErr(ctx, err))
	}
	info := b.info(key, attrs)
	// Verified when the server's CRC32C of what it stored is ours.
	info.Verified = info.Checksum == cr.Checksum()
	info.Checksum = cr.Checksum()
	return info, nil
}

// writer is a storage.Writer that can be abandoned without storing
// anything. A storage.Writer commits whatever it was given on Close, and
// cancelling its context is not enough on its own: Close after a cancel
// ends the request body cleanly, and if that reaches the server before the
// cancellation does, the truncated object is committed (seen under -race).
type writer struct {
	*storage.Writer
	cancel context.CancelFunc
	opened bool // a Write reached the storage.Writer, starting its upload
}

func newWriter(ctx context.Context, o *storage.ObjectHandle, chunk int) *writer {
	wctx, cancel := context.WithCancel(ctx)
	w := o.NewWriter(wctx)
	w.ChunkSize = chunk
	w.ContentType = "application/octet-stream"
	return &writer{Writer: w, cancel: cancel}
}

func (w *writer) Write(p []byte) (int, error) {
	w.opened = w.opened || len(p) > 0
	return w.Writer.Write(p)
}

// abort fails the upload's request body with an error, so the server sees a
// broken request rather than a complete one, then waits for the upload
// goroutine. An upload never opened has no goroutine and no request; Close
// would open one, so it is left alone.
func (w *writer) abort() {
	w.cancel()
	if !w.opened {
		return
	}
	//lint:ignore SA1019 CloseWithError is the one way to fail the body
	// itself; the suggested context cancellation races with Close (above).
	_ = w.Writer.CloseWithError(context.Canceled)
	_ = w.Writer.Close() // waits for the upload goroutine; reports the error
}

func (w *writer) close() (*storage.ObjectAttrs, error) {
	defer w.cancel()
	if err := w.Writer.Close(); err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}

func (b *bucket) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("gcs: head: %w", err)
	}
	a, err := b.object(key, false).Attrs(ctx)
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("gcs: head %q: %w", key, mapErr(ctx, err))
	}
	return b.info(key, a), nil
}

func (b *bucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("gcs: get: %w", err)
	}
	if err := objstore.ValidateRange(off, length); err != nil {
		return nil, fmt.Errorf("gcs: get %q: %w", key, err)
	}
	if length == 0 {
		// The object must still exist; a zero-length range request is not
		// something HTTP can express.
		if _, err := b.Head(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	r, err := b.object(key, false).NewRangeReader(ctx, off, length)
	if err != nil {
		err = mapErr(ctx, err)
		if objstore.IsInvalidRange(err) {
			return objstore.RangeAtEnd(ctx, b.Head, "gcs", key, off, err)
		}
		return nil, fmt.Errorf("gcs: get %q: %w", key, err)
	}
	return r, nil
}

func (b *bucket) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		strip := ""
		if b.prefix != "" {
			strip = b.prefix + "/"
		}
		q := &storage.Query{Prefix: strip + prefix}
		if err := q.SetAttrSelection([]string{"Name", "Size", "Etag", "CRC32C", "Updated"}); err != nil {
			yield(objstore.ObjectInfo{}, err)
			return
		}
		it := b.bkt.Objects(ctx, q)
		it.PageInfo().MaxSize = 1000
		for {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return
			}
			if err != nil {
				yield(objstore.ObjectInfo{}, fmt.Errorf("gcs: list %q: %w", prefix, mapErr(ctx, err)))
				return
			}
			if !yield(b.info(strings.TrimPrefix(a.Name, strip), a), nil) {
				return
			}
		}
	}
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("gcs: delete: %w", err)
	}
	err := mapErr(ctx, b.object(key, false).Delete(ctx))
	if err != nil && !objstore.IsNotFound(err) {
		return fmt.Errorf("gcs: delete %q: %w", key, err)
	}
	return nil
}

func (b *bucket) DeleteMany(ctx context.Context, keys []string) error {
	// Neither service has a batch delete this client uses; b.Delete names
	// the provider and key in its errors.
	return objstore.DeleteEach(ctx, keys, deleteConcurrency, b.Delete)
}

func (b *bucket) NewMultipartWriter(ctx context.Context, key string, opts objstore.MultipartOptions) (objstore.MultipartWriter, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("gcs: multipart: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gcs: multipart %q: %w", key, err)
	}
	opts = opts.WithDefaults()
	return &resumable{
		b: b, key: key, ctx: ctx,
		w:   newWriter(ctx, b.object(key, opts.IfAbsent), int(opts.PartSize)),
		sum: objstore.NewCRC32C(),
	}, nil
}

// resumable is the MultipartWriter over a GCS resumable upload.
type resumable struct {
	b     *bucket
	key   string
	ctx   context.Context
	w     *writer
	sum   hash.Hash32
	n     int64
	state int // 0 open, 1 closed, 2 aborted
	err   error
	info  objstore.ObjectInfo
}

var _ objstore.MultipartWriter = (*resumable)(nil)

func (r *resumable) Write(p []byte) (int, error) {
	if r.state != 0 {
		return 0, fmt.Errorf("gcs: write %q: %w", r.key, objstore.ErrClosed)
	}
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.w.Write(p)
	r.sum.Write(p[:n])
	r.n += int64(n)
	if err != nil {
		r.err = fmt.Errorf("gcs: upload %q: %w", r.key, mapErr(r.ctx, err))
		r.w.abort()
		return n, r.err
	}
	return n, nil
}

func (r *resumable) Close() error {
	switch r.state {
	case 1:
		return r.err
	case 2:
		return fmt.Errorf("gcs: close %q: %w", r.key, objstore.ErrClosed)
	}
	r.state = 1
	if r.err != nil {
		return r.err
	}
	if err := r.ctx.Err(); err != nil {
		r.w.abort()
		r.err = fmt.Errorf("gcs: upload %q: %w", r.key, err)
		return r.err
	}
	attrs, err := r.w.close()
	if err != nil {
		r.err = fmt.Errorf("gcs: complete %q: %w", r.key, mapErr(r.ctx, err))
		return r.err
	}
	r.info = r.b.info(r.key, attrs)
	sum := objstore.FormatCRC32C(r.sum.Sum32())
	r.info.Verified = r.info.Checksum == sum // the server's CRC32C of what it stored
	r.info.Checksum = sum
	if r.info.LastModified.IsZero() {
		r.info.LastModified = time.Now()
	}
	return nil
}

// Abort cancels the upload; GCS discards an unfinalized resumable upload
// and its session expires.
func (r *resumable) Abort(context.Context) error {
	if r.state != 0 {
		return nil
	}
	r.state = 2
	r.w.abort()
	return nil
}

func (r *resumable) Info() objstore.ObjectInfo { return r.info }
