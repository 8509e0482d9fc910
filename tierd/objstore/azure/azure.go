package azure

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Config is [tiered_storage.azure]; the toml tags are the documented keys.
type Config struct {
	ContainerName string `toml:"container_name"`
	AccountName   string `toml:"account_name"`
	// Prefix is prepended to every key.
	Prefix string `toml:"prefix"`
	// AccessKey is the account's shared key (base64); empty means
	// AZURE_STORAGE_KEY.
	AccessKey string `toml:"access_key"`
	// Endpoint is the blob service URL; empty means
	// https://<account_name>.blob.core.windows.net.
	Endpoint string `toml:"endpoint"`
}

const redacted = "[REDACTED]"

// String renders the config with the key redacted.
func (c Config) String() string {
	key := ""
	if c.AccessKey != "" {
		key = redacted
	}
	return fmt.Sprintf("azure{container_name=%q account_name=%q prefix=%q access_key=%q endpoint=%q}",
		c.ContainerName, c.AccountName, c.Prefix, key, c.Endpoint)
}

// LogValue keeps the key out of slog output.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c Config) key() string {
	if c.AccessKey != "" {
		return c.AccessKey
	}
	return os.Getenv("AZURE_STORAGE_KEY")
}

func (c Config) endpoint() string {
	if c.Endpoint != "" {
		return strings.TrimRight(c.Endpoint, "/")
	}
	return "https://" + c.AccountName + ".blob.core.windows.net"
}

// Validate checks the config without contacting the service; errors name the
// key at fault and never print the key itself.
func (c Config) Validate() error {
	switch {
	case c.ContainerName == "":
		return fmt.Errorf("%w: azure: container_name is required", objstore.ErrInvalidConfig)
	case c.AccountName == "":
		return fmt.Errorf("%w: azure: account_name is required", objstore.ErrInvalidConfig)
	case c.key() == "":
		return fmt.Errorf("%w: azure: access_key is required (or set AZURE_STORAGE_KEY)", objstore.ErrInvalidConfig)
	}
	if _, err := base64.StdEncoding.DecodeString(c.key()); err != nil {
		return fmt.Errorf("%w: azure: access_key is not base64", objstore.ErrInvalidConfig)
	}
	if u, err := url.Parse(c.endpoint()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: azure: endpoint %q must be an http:// or https:// URL", objstore.ErrInvalidConfig, c.Endpoint)
	}
	return nil
}

// Options are settings that are not part of the config file.
type Options struct {
	Logger *slog.Logger
	// SkipContainerCheck skips New's check that the container exists and
	// the key is accepted.
	SkipContainerCheck bool
}

const (
	// singlePutMax is the largest Put sent as one Put Blob, buffered in
	// memory (Put Blob needs a seekable body for its retries).
	singlePutMax = 8 << 20
	listPageSize = 1000
	// deleteConcurrency bounds DeleteMany's parallel requests.
	deleteConcurrency = 16
)

type bucket struct {
	c      *container.Client
	prefix string
	name   string
	log    *slog.Logger
}

var _ objstore.Bucket = (*bucket)(nil)

// New connects to the container of cfg. Unless opts.SkipContainerCheck it
// lists one blob, so a missing container or a rejected key is reported at
// startup as ErrBucketNotFound or ErrAccessDenied.
func New(ctx context.Context, cfg Config, opts Options) (objstore.Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cred, err := container.NewSharedKeyCredential(cfg.AccountName, cfg.key())
	if err != nil {
		return nil, fmt.Errorf("%w: azure: access_key: %v", objstore.ErrInvalidConfig, err)
	}
	curl := cfg.endpoint() + "/" + url.PathEscape(cfg.ContainerName)
	c, err := container.NewClientWithSharedKeyCredential(curl, cred, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: azure: %v", objstore.ErrInvalidConfig, err)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	b := &bucket{c: c, prefix: prefix, log: log,
		name: fmt.Sprintf("azblob://%s/%s/%s (%s)", cfg.AccountName, cfg.ContainerName, prefix, cfg.endpoint())}
	if !opts.SkipContainerCheck {
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(prefix), MaxResults: to.Ptr[int32](1)})
		if _, err := pager.NextPage(ctx); err != nil {
			return nil, fmt.Errorf("azure: checking container %q: %w", cfg.ContainerName, mapErr(ctx, err))
		}
	}
	return b, nil
}

func (b *bucket) Name() string   { return b.name }
func (b *bucket) String() string { return b.name }
func (b *bucket) Close() error   { return nil }

func (b *bucket) full(key string) string { return objstore.JoinPrefix(b.prefix, key) }

func (b *bucket) blob(key string) *blockblob.Client {
	return b.c.NewBlockBlobClient(b.full(key))
}

// mapErr translates azblob errors into objstore's sentinels.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.ContainerBeingDeleted):
		return fmt.Errorf("%w: %w", objstore.ErrBucketNotFound, err)
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet):
		// The trap: If-None-Match: * on an existing blob is a 409
		// BlobAlreadyExists on Put Blob, not the 412 of the other stores.
		return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
	case bloberror.HasCode(err, bloberror.InvalidRange):
		return fmt.Errorf("%w: %w", objstore.ErrInvalidRange, err)
	case bloberror.HasCode(err, bloberror.AuthenticationFailed, bloberror.AuthorizationFailure,
		bloberror.AuthorizationPermissionMismatch, bloberror.InsufficientAccountPermissions):
		return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
	case bloberror.HasCode(err, bloberror.ServerBusy, bloberror.InternalError, bloberror.OperationTimedOut):
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	}
	var rerr *azcore.ResponseError
	if errors.As(err, &rerr) {
		switch code := rerr.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
		case code == http.StatusPreconditionFailed:
			return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
		case code == http.StatusRequestedRangeNotSatisfiable:
			return fmt.Errorf("%w: %w", objstore.ErrInvalidRange, err)
		case code == http.StatusForbidden, code == http.StatusUnauthorized:
			return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
		case objstore.HTTPStatusTransient(code):
			return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
		}
	}
	return err
}

func etag(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return strings.Trim(string(*e), `"`)
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Now()
	}
	return *t
}

func ifAbsentConditions(ifAbsent bool) *blob.AccessConditions {
	if !ifAbsent {
		return nil
	}
	return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
}

func contentMD5(data []byte) blob.TransferValidationType {
	sum := md5.Sum(data)
	return blob.TransferValidationTypeMD5(sum[:])
}

func (b *bucket) Put(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPut, key, r, size, false)
}

func (b *bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPutIfAbsent, key, r, size, true)
}

func (b *bucket) put(ctx context.Context, op objstore.Op, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	if err := objstore.CheckPut(ctx, "azure", op, key, size); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if size > singlePutMax {
		return b.putBlocks(ctx, key, r, size, ifAbsent)
	}
	cr := objstore.NewCountingReader(r, size)
	data, err := io.ReadAll(objstore.ContextReader(ctx, cr))
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("azure: %s %q: %w", op, key, mapErr(ctx, err))
	}
	if int64(len(data)) != size {
		return objstore.ObjectInfo{}, objstore.ShortError(key, int64(len(data)), size)
	}
	resp, err := b.blob(key).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		AccessConditions:        ifAbsentConditions(ifAbsent),
		TransactionalValidation: contentMD5(data),
	})
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("azure: %s %q: %w", op, key, mapErr(ctx, err))
	}
	// Verified: the service checked the Content-MD5 sent with the body.
	return objstore.ObjectInfo{Key: key, Size: size, ETag: etag(resp.ETag), Checksum: cr.Checksum(),
		LastModified: timeOf(resp.LastModified), Verified: true}, nil
}

// putBlocks streams a large Put as staged blocks, so it is never held in
// memory whole.
func (b *bucket) putBlocks(ctx context.Context, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	w, err := b.NewMultipartWriter(ctx, key, objstore.MultipartOptions{IfAbsent: ifAbsent})
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return objstore.PutMultipart(ctx, w, "azure", key, r, size)
}

func (b *bucket) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("azure: head: %w", err)
	}
	p, err := b.blob(key).GetProperties(ctx, nil)
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("azure: head %q: %w", key, mapErr(ctx, err))
	}
	var size int64
	if p.ContentLength != nil {
		size = *p.ContentLength
	}
	return objstore.ObjectInfo{Key: key, Size: size, ETag: etag(p.ETag), LastModified: timeOf(p.LastModified)}, nil
}

func (b *bucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("azure: get: %w", err)
	}
	if err := objstore.ValidateRange(off, length); err != nil {
		return nil, fmt.Errorf("azure: get %q: %w", key, err)
	}
	if length == 0 {
		if _, err := b.Head(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	var rng blob.HTTPRange // Count 0 means to the end
	rng.Offset = off
	if length > 0 {
		rng.Count = length
	}
	resp, err := b.blob(key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		err = mapErr(ctx, err)
		if objstore.IsInvalidRange(err) {
			return objstore.RangeAtEnd(ctx, b.Head, "azure", key, off, err)
		}
		return nil, fmt.Errorf("azure: get %q: %w", key, err)
	}
	return resp.Body, nil
}

func (b *bucket) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		strip := ""
		if b.prefix != "" {
			strip = b.prefix + "/"
		}
		pager := b.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{
			Prefix:     to.Ptr(strip + prefix),
			MaxResults: to.Ptr[int32](listPageSize),
		})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(objstore.ObjectInfo{}, fmt.Errorf("azure: list %q: %w", prefix, mapErr(ctx, err)))
				return
			}
			for _, item := range page.Segment.BlobItems {
				if item.Name == nil {
					continue
				}
				info := objstore.ObjectInfo{Key: strings.TrimPrefix(*item.Name, strip)}
				if p := item.Properties; p != nil {
					if p.ContentLength != nil {
						info.Size = *p.ContentLength
					}
					info.ETag = etag(p.ETag)
					info.LastModified = timeOf(p.LastModified)
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return fmt.Errorf("azure: delete: %w", err)
	}
	_, err := b.blob(key).Delete(ctx, nil)
	if err = mapErr(ctx, err); err != nil && !objstore.IsNotFound(err) {
		return fmt.Errorf("azure: delete %q: %w", key, err)
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
		return nil, fmt.Errorf("azure: multipart: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("azure: multipart %q: %w", key, err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	up := &uploader{b: b, key: key, id: hex.EncodeToString(id), ifAbsent: opts.IfAbsent}
	return objstore.NewPartWriter(ctx, key, opts, up, b.log), nil
}

type uploader struct {
	b        *bucket
	key, id  string
	ifAbsent bool
}

// blockID names part n of this upload. All IDs of a blob must have the same
// length, hence the fixed-width number.
func (u *uploader) blockID(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%05d", u.id, n))
}

func (u *uploader) UploadPart(ctx context.Context, n int, data []byte) (objstore.Part, error) {
	if len(data) == 0 {
		// Only an empty object has an empty part; Put Block refuses empty
		// blocks, and committing no blocks makes the empty blob.
		return objstore.Part{}, nil
	}
	id := u.blockID(n)
	_, err := u.b.blob(u.key).StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(data)),
		&blockblob.StageBlockOptions{TransactionalValidation: contentMD5(data)})
	if err != nil {
		return objstore.Part{}, mapErr(ctx, err)
	}
	return objstore.Part{ETag: id}, nil
}

func (u *uploader) Complete(ctx context.Context, parts []objstore.Part) (objstore.ObjectInfo, error) {
	ids := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Size > 0 {
			ids = append(ids, p.ETag)
		}
	}
	resp, err := u.b.blob(u.key).CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
		AccessConditions: ifAbsentConditions(u.ifAbsent),
	})
	if err != nil {
		return objstore.ObjectInfo{}, mapErr(ctx, err)
	}
	// Verified: every block was staged with a Content-MD5 the service
	// checked.
	return objstore.ObjectInfo{ETag: etag(resp.ETag), LastModified: timeOf(resp.LastModified), Verified: true}, nil
}

// Abort has nothing to remove; see the package comment.
func (u *uploader) Abort(context.Context) error { return nil }
