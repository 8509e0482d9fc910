package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"
)

// memBucket is an in-memory Bucket for unit tests. It enforces what real
// services enforce and a lax fake would let slide (the part-size floor,
// conditional creates, range rules, cancelled contexts), so code that passes
// against it is not surprised by MinIO.
type memBucket struct {
	name string
	mu   struct {
		sync.Mutex
		objects map[string]memObject
		uploads map[string]*memUpload
		closed  bool
	}
}

type memObject struct {
	data     []byte
	etag     string
	modified time.Time
}

type memUpload struct {
	key   string
	parts map[int][]byte
}

var _ Bucket = (*memBucket)(nil)

// NewMemBucket returns an empty in-memory Bucket.
func NewMemBucket() Bucket {
	b := &memBucket{name: "mem://" + randomHex(4)}
	b.mu.objects = map[string]memObject{}
	b.mu.uploads = map[string]*memUpload{}
	return b
}

func randomHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}

func (b *memBucket) Name() string   { return b.name }
func (b *memBucket) String() string { return b.name }

func (b *memBucket) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.closed = true
	return nil
}

// begin runs the checks every operation starts with.
func (b *memBucket) begin(ctx context.Context, op Op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mem: %s %q: %w", op, key, err)
	}
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("mem: %s: %w", op, err)
	}
	return nil
}

func (b *memBucket) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, OpPut, key, r, size, false)
}

func (b *memBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	return b.put(ctx, OpPutIfAbsent, key, r, size, true)
}

func (b *memBucket) put(ctx context.Context, op Op, key string, r io.Reader, size int64, ifAbsent bool) (ObjectInfo, error) {
	if err := b.begin(ctx, op, key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ValidateSize(size); err != nil {
		return ObjectInfo{}, err
	}
	cr := NewCountingReader(r, size)
	data, err := io.ReadAll(ctxReader{ctx, cr})
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("mem: %s %q: %w", op, key, err)
	}
	if int64(len(data)) != size {
		return ObjectInfo{}, ShortError(key, int64(len(data)), size)
	}
	sum := md5.Sum(data)
	return b.store(key, data, hex.EncodeToString(sum[:]), ifAbsent, cr.Checksum())
}

func (b *memBucket) store(key string, data []byte, etag string, ifAbsent bool, checksum string) (ObjectInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ifAbsent {
		if _, ok := b.mu.objects[key]; ok {
			return ObjectInfo{}, fmt.Errorf("mem: put %q: %w", key, ErrPreconditionFailed)
		}
	}
	o := memObject{data: data, etag: etag, modified: time.Now()}
	b.mu.objects[key] = o
	info := o.info(key)
	info.Checksum = checksum
	info.Verified = true // stored here, from the bytes given
	return info, nil
}

func (o memObject) info(key string) ObjectInfo {
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ETag: o.etag, LastModified: o.modified}
}

func (b *memBucket) lookup(key string) (memObject, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.mu.objects[key]
	if !ok {
		return o, fmt.Errorf("mem: %q: %w", key, ErrNotFound)
	}
	return o, nil
}

func (b *memBucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := b.begin(ctx, OpGetRange, key); err != nil {
		return nil, err
	}
	if err := ValidateRange(off, length); err != nil {
		return nil, err
	}
	o, err := b.lookup(key)
	if err != nil {
		return nil, err
	}
	size := int64(len(o.data))
	if off > size {
		return nil, fmt.Errorf("mem: get %q offset %d of %d: %w", key, off, size, ErrInvalidRange)
	}
	end := size
	if length >= 0 && off+length < size {
		end = off + length
	}
	// The stored slice is never mutated (Put replaces it), so readers share it.
	return io.NopCloser(ctxReader{ctx, bytes.NewReader(o.data[off:end])}), nil
}

func (b *memBucket) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := b.begin(ctx, OpHead, key); err != nil {
		return ObjectInfo{}, err
	}
	o, err := b.lookup(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	return o.info(key), nil
}

func (b *memBucket) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("mem: list %q: %w", prefix, err))
			return
		}
		b.mu.Lock()
		var infos []ObjectInfo
		for k, o := range b.mu.objects {
			if strings.HasPrefix(k, prefix) {
				infos = append(infos, o.info(k))
			}
		}
		b.mu.Unlock()
		slices.SortFunc(infos, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
		for _, info := range infos {
			if err := ctx.Err(); err != nil {
				yield(ObjectInfo{}, fmt.Errorf("mem: list %q: %w", prefix, err))
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	}
}

func (b *memBucket) Delete(ctx context.Context, key string) error {
	if err := b.begin(ctx, OpDelete, key); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.mu.objects, key)
	return nil
}

func (b *memBucket) DeleteMany(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func (b *memBucket) NewMultipartWriter(ctx context.Context, key string, opts MultipartOptions) (MultipartWriter, error) {
	if err := b.begin(ctx, OpMultipartCreate, key); err != nil {
		return nil, err
	}
	id := randomHex(8)
	b.mu.Lock()
	b.mu.uploads[id] = &memUpload{key: key, parts: map[int][]byte{}}
	b.mu.Unlock()
	return NewPartWriter(ctx, key, opts, &memUploader{b: b, id: id, key: key, ifAbsent: opts.IfAbsent}, nil), nil
}

// Uploads reports how many multipart uploads are open, so tests can check
// that an abort or a failed Close left nothing behind.
func (b *memBucket) Uploads() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.uploads)
}

type memUploader struct {
	b        *memBucket
	id, key  string
	ifAbsent bool
}

func (u *memUploader) UploadPart(ctx context.Context, n int, data []byte) (Part, error) {
	if err := ctx.Err(); err != nil {
		return Part{}, err
	}
	u.b.mu.Lock()
	defer u.b.mu.Unlock()
	up, ok := u.b.mu.uploads[u.id]
	if !ok {
		return Part{}, fmt.Errorf("mem: upload %s of %q: %w", u.id, u.key, ErrNotFound)
	}
	up.parts[n] = slices.Clone(data)
	sum := md5.Sum(data)
	return Part{ETag: hex.EncodeToString(sum[:])}, nil
}

func (u *memUploader) Complete(ctx context.Context, parts []Part) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	u.b.mu.Lock()
	up, ok := u.b.mu.uploads[u.id]
	u.b.mu.Unlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("mem: upload %s of %q: %w", u.id, u.key, ErrNotFound)
	}
	var data []byte
	etags := md5.New()
	for i, p := range parts {
		d, ok := up.parts[p.Number]
		if !ok || p.Number != i+1 {
			return ObjectInfo{}, fmt.Errorf("mem: complete %q: part %d missing: %w", u.key, i+1, ErrInvalidArgument)
		}
		if i < len(parts)-1 && len(d) < MinPartSize {
			return ObjectInfo{}, fmt.Errorf("mem: complete %q: part %d is %d bytes, below the %d floor: %w", u.key, p.Number, len(d), MinPartSize, ErrInvalidArgument)
		}
		data = append(data, d...)
		b, _ := hex.DecodeString(p.ETag)
		etags.Write(b)
	}
	info, err := u.b.store(u.key, data, fmt.Sprintf("%x-%d", etags.Sum(nil), len(parts)), u.ifAbsent, "")
	if err != nil {
		return ObjectInfo{}, err
	}
	u.b.mu.Lock()
	delete(u.b.mu.uploads, u.id)
	u.b.mu.Unlock()
	return info, nil
}

func (u *memUploader) Abort(context.Context) error {
	u.b.mu.Lock()
	defer u.b.mu.Unlock()
	delete(u.b.mu.uploads, u.id)
	return nil
}

// ContextReader returns r failing its reads once ctx is done, as a network
// body does when its request's context is cancelled. Providers whose reads
// never touch the network (memory, filesystem) use it so a cancelled reader
// behaves the same everywhere.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
