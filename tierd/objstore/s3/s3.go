package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// maxSinglePut is S3's limit for one PUT.
const maxSinglePut = 5 << 30

// listPageSize is S3's maximum keys per ListObjectsV2 page.
const listPageSize = 1000

type bucket struct {
	core   *minio.Core
	bucket string
	prefix string
	name   string
	log    *slog.Logger
	// unsigned: bodies go as UNSIGNED-PAYLOAD (Config.SignPayload).
	unsigned bool
}

var _ objstore.Bucket = (*bucket)(nil)

// Options are settings that are not part of the config file.
type Options struct {
	Logger *slog.Logger
	// Transport replaces the HTTP transport (tests, proxies).
	Transport http.RoundTripper
	// SkipBucketCheck skips New's check that the bucket exists and the
	// credentials can list it.
	SkipBucketCheck bool
}

// New connects to the bucket of cfg. Unless opts.SkipBucketCheck, it checks
// that the bucket exists and that the credentials are accepted, so that a
// missing bucket or wrong credentials are reported at startup as
// ErrBucketNotFound or ErrAccessDenied rather than on the first upload.
func New(ctx context.Context, cfg Config, opts Options) (objstore.Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	host, secure, _ := cfg.endpoint()
	lookup := minio.BucketLookupAuto
	if cfg.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(host, &minio.Options{
		Creds:        credentialChain(cfg),
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    opts.Transport,
		// Lets minio-go add a CRC32C trailer the server verifies, where the
		// payload is not already covered by a signed SHA-256.
		TrailingHeaders: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3: %v", objstore.ErrInvalidConfig, err)
	}
	scheme := "https"
	if !secure {
		scheme = "http"
	}
	b := &bucket{
		core:   core,
		bucket: cfg.Bucket,
		prefix: strings.Trim(cfg.Prefix, "/"),
		name:   fmt.Sprintf("s3://%s/%s (%s://%s)", cfg.Bucket, strings.Trim(cfg.Prefix, "/"), scheme, host),
		log:    log,
		// Over https minio-go never signs bodies, whatever this says.
		unsigned: !cfg.SignPayload,
	}
	if !opts.SkipBucketCheck {
		ok, err := core.BucketExists(ctx, cfg.Bucket)
		if err != nil {
			return nil, fmt.Errorf("s3: checking bucket %q at %s: %w", cfg.Bucket, host, mapErr(ctx, err))
		}
		if !ok {
			return nil, fmt.Errorf("s3: bucket %q at %s: %w", cfg.Bucket, host, objstore.ErrBucketNotFound)
		}
	}
	return b, nil
}

// credentialChain returns the inline keys, or the standard AWS chain.
func credentialChain(cfg Config) *credentials.Credentials {
	if cfg.AccessKeyID != "" {
		return credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	}
	// IAM reads AWS_WEB_IDENTITY_TOKEN_FILE/AWS_ROLE_ARN (IRSA) and
	// AWS_CONTAINER_CREDENTIALS_* itself, and falls back to the EC2 instance
	// metadata service.
	iam := &credentials.IAM{}
	if os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE") != "" {
		// The AWS SDKs' per-service endpoint variable, for STS behind a VPC
		// endpoint or in a partition minio-go does not derive from the
		// region. minio-go reads no such variable itself.
		iam.Endpoint = os.Getenv("AWS_ENDPOINT_URL_STS")
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		iam,
	})
}

func (b *bucket) Name() string   { return b.name }
func (b *bucket) String() string { return b.name }
func (b *bucket) Close() error   { return nil }

func (b *bucket) full(key string) string { return objstore.JoinPrefix(b.prefix, key) }

// mapErr translates a minio-go error into objstore's sentinels, keeping the
// original for the message.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		// minio-go sometimes reports a cancelled request as a generic
		// network failure; callers test for the context's error.
		return fmt.Errorf("%w: %w", cerr, err)
	}
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return err
	}
	switch resp.Code {
	case "NoSuchKey", "NoSuchUpload":
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case "NoSuchBucket":
		return fmt.Errorf("%w: %w", objstore.ErrBucketNotFound, err)
	case "PreconditionFailed":
		return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
	case "InvalidRange":
		return fmt.Errorf("%w: %w", objstore.ErrInvalidRange, err)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "AllAccessDisabled":
		return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
	case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeTooSkewed",
		"XMinioServerNotInitialized", "XMinioReadQuorum", "XMinioWriteQuorum",
		// The body arrived damaged (its Content-MD5 or CRC32C trailer did
		// not match): nothing was stored, and sending it again can work.
		"BadDigest", "XAmzContentChecksumMismatch":
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
	case resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
	case resp.StatusCode == http.StatusConflict && resp.Code == "ConditionalRequestConflict":
		// Another conditional write to the key is in flight; S3 asks for a
		// retry, which then answers 412 if that write won.
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	case objstore.HTTPStatusTransient(resp.StatusCode):
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	}
	return err
}

func (b *bucket) Put(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPut, key, r, size, false)
}

func (b *bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPutIfAbsent, key, r, size, true)
}

func (b *bucket) put(ctx context.Context, op objstore.Op, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	if err := objstore.CheckPut(ctx, "s3", op, key, size); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if size > maxSinglePut {
		return b.putMultipart(ctx, key, r, size, ifAbsent)
	}
	var opts minio.PutObjectOptions
	opts.ContentType = "application/octet-stream"
	opts.DisableContentSha256 = b.unsigned
	if ifAbsent {
		opts.SetMatchETagExcept("*") // If-None-Match: *
	}
	cr := objstore.NewCountingReader(r, size)
	up, err := b.core.PutObject(ctx, b.bucket, b.full(key), cr, size, "", "", opts)
	if err == nil && cr.N != size {
		err = objstore.ShortError(key, cr.N, size)
	}
	if err != nil {
		if cr.N < size && errors.Is(err, io.ErrUnexpectedEOF) {
			err = objstore.ShortError(key, cr.N, size)
		}
		return objstore.ObjectInfo{}, fmt.Errorf("s3: %s %q: %w", op, key, mapErr(ctx, err))
	}
	// Verified: the server checked the body, against the CRC32C trailer
	// minio-go adds to an unsigned body, or against SigV4's streaming
	// chunk signatures (sign_payload over http). TestDamagedUpload checks
	// that MinIO refuses a body changed in transit either way.
	info := objstore.ObjectInfo{Key: key, Size: size, ETag: up.ETag, Checksum: cr.Checksum(), LastModified: up.LastModified,
		Verified: true}
	if info.LastModified.IsZero() {
		// PUT answers carry no Last-Modified; the server's stamp is within
		// the request's duration of now.
		info.LastModified = time.Now()
	}
	return info, nil
}

// putMultipart stores objects too large for one PUT.
func (b *bucket) putMultipart(ctx context.Context, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	// 5 TiB over 10000 parts needs parts of at least 525 MiB; pick the
	// smallest multiple of 8 MiB that fits.
	part := int64(objstore.DefaultPartSize)
	for size/part >= objstore.MaxParts {
		part += objstore.DefaultPartSize
	}
	w, err := b.NewMultipartWriter(ctx, key, objstore.MultipartOptions{PartSize: part, IfAbsent: ifAbsent})
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return objstore.PutMultipart(ctx, w, "s3", key, r, size)
}

func (b *bucket) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("s3: head: %w", err)
	}
	st, err := b.core.StatObject(ctx, b.bucket, b.full(key), minio.StatObjectOptions{})
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("s3: head %q: %w", key, mapErr(ctx, err))
	}
	return objstore.ObjectInfo{Key: key, Size: st.Size, ETag: st.ETag, LastModified: st.LastModified}, nil
}

func (b *bucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("s3: get: %w", err)
	}
	if err := objstore.ValidateRange(off, length); err != nil {
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	if length == 0 {
		// HTTP cannot ask for zero bytes; the object must still exist.
		if _, err := b.Head(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	var opts minio.GetObjectOptions
	switch {
	case off == 0 && length < 0:
		// No Range header: a range on an empty object is unsatisfiable.
	case length < 0:
		_ = opts.SetRange(off, 0) // bytes=off-
	default:
		_ = opts.SetRange(off, off+length-1)
	}
	body, _, _, err := b.core.GetObject(ctx, b.bucket, b.full(key), opts)
	if err != nil {
		err = mapErr(ctx, err)
		if objstore.IsInvalidRange(err) {
			return objstore.RangeAtEnd(ctx, b.Head, "s3", key, off, err)
		}
		return nil, fmt.Errorf("s3: get %q: %w", key, err)
	}
	return body, nil
}

func (b *bucket) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		strip := ""
		if b.prefix != "" {
			strip = b.prefix + "/"
		}
		// minio-go lists from a goroutine feeding a channel, and that
		// goroutine's send ignores ctx: when the caller breaks out early,
		// cancel the listing and drain what is in flight, or it leaks.
		ctx, cancel := context.WithCancel(ctx)
		objs := b.core.Client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{
			Prefix:    strip + prefix,
			Recursive: true,
			MaxKeys:   listPageSize,
		})
		defer func() {
			cancel()
			for range objs {
			}
		}()
		for obj := range objs {
			if obj.Err != nil {
				yield(objstore.ObjectInfo{}, fmt.Errorf("s3: list %q: %w", prefix, mapErr(ctx, obj.Err)))
				return
			}
			info := objstore.ObjectInfo{
				Key:          strings.TrimPrefix(obj.Key, strip),
				Size:         obj.Size,
				ETag:         obj.ETag,
				LastModified: obj.LastModified,
			}
			if !yield(info, nil) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(objstore.ObjectInfo{}, fmt.Errorf("s3: list %q: %w", prefix, err))
		}
	}
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("s3: delete: %w", err)
	}
	err := mapErr(ctx, b.core.RemoveObject(ctx, b.bucket, b.full(key), minio.RemoveObjectOptions{}))
	if err != nil && !objstore.IsNotFound(err) {
		return fmt.Errorf("s3: delete %q: %w", key, err)
	}
	return nil
}

func (b *bucket) DeleteMany(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if err := objstore.ValidateKey(k); err != nil {
			return fmt.Errorf("s3: delete: %w", err)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("s3: delete: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for _, k := range keys {
			select {
			case objs <- minio.ObjectInfo{Key: b.full(k)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	// RemoveObjects batches the keys 1000 a request (DeleteObjects).
	for rerr := range b.core.RemoveObjects(ctx, b.bucket, objs, minio.RemoveObjectsOptions{}) {
		err := mapErr(ctx, rerr.Err)
		if objstore.IsNotFound(err) {
			continue
		}
		errs = append(errs, fmt.Errorf("s3: delete %q: %w", rerr.ObjectName, err))
	}
	if err := ctx.Err(); err != nil && len(errs) == 0 {
		return fmt.Errorf("s3: delete: %w", err)
	}
	return errors.Join(errs...)
}

func (b *bucket) NewMultipartWriter(ctx context.Context, key string, opts objstore.MultipartOptions) (objstore.MultipartWriter, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("s3: multipart: %w", err)
	}
	id, err := b.core.NewMultipartUpload(ctx, b.bucket, b.full(key), minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return nil, fmt.Errorf("s3: multipart %q: %w", key, mapErr(ctx, err))
	}
	up := &uploader{b: b, key: key, id: id, ifAbsent: opts.IfAbsent}
	return objstore.NewPartWriter(ctx, key, opts, up, b.log), nil
}

type uploader struct {
	b        *bucket
	key, id  string
	ifAbsent bool
}

func (u *uploader) UploadPart(ctx context.Context, n int, data []byte) (objstore.Part, error) {
	// Content-MD5 makes the server reject a part damaged in transit.
	sum := md5.Sum(data)
	p, err := u.b.core.PutObjectPart(ctx, u.b.bucket, u.b.full(u.key), u.id, n, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectPartOptions{Md5Base64: base64.StdEncoding.EncodeToString(sum[:]), DisableContentSha256: u.b.unsigned})
	if err != nil {
		return objstore.Part{}, mapErr(ctx, err)
	}
	return objstore.Part{ETag: p.ETag}, nil
}

func (u *uploader) Complete(ctx context.Context, parts []objstore.Part) (objstore.ObjectInfo, error) {
	cps := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	var opts minio.PutObjectOptions
	if u.ifAbsent {
		// S3 evaluates the condition at completion; this is the header
		// minio-go's PutObject drops on its multipart path.
		opts.SetMatchETagExcept("*")
	}
	res, err := u.b.core.CompleteMultipartUpload(ctx, u.b.bucket, u.b.full(u.key), u.id, cps, opts)
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, err)
	}
	// Verified: every part went with a Content-MD5 the server checked, and
	// the object is those parts in order.
	info := objstore.ObjectInfo{ETag: res.ETag, LastModified: res.LastModified, Verified: true}
	if info.LastModified.IsZero() {
		info.LastModified = time.Now() // CompleteMultipartUpload answers carry none
	}
	return info, nil
}

func (u *uploader) Abort(ctx context.Context) error {
	err := mapErr(ctx, u.b.core.AbortMultipartUpload(ctx, u.b.bucket, u.b.full(u.key), u.id))
	if err != nil && !objstore.IsNotFound(err) {
		return err
	}
	return nil
}
