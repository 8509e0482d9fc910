package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Config is [tiered_storage.local].
type Config struct {
	// RootPath is the directory objects live under. It must exist: creating
	// a missing NFS mount point would send the cold tier to the local disk
	// unnoticed. (tools/ creates the embedded default ./data/cold.)
	RootPath string `toml:"root_path"`
}

// tmpDir is the folder, under the root, for files not yet objects. Keys may
// not start with it, and List never shows it.
const tmpDir = ".aerostream-tmp"

type bucket struct {
	root string // absolute, cleaned
	tmp  string
	log  *slog.Logger
}

var _ objstore.Bucket = (*bucket)(nil)

// New opens the bucket rooted at cfg.RootPath, removing temporary files a
// crashed process left (see staleTempAge).
func New(cfg Config, log *slog.Logger) (objstore.Bucket, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.RootPath == "" {
		return nil, fmt.Errorf("%w: local: root_path is required", objstore.ErrInvalidConfig)
	}
	root, err := filepath.Abs(cfg.RootPath)
	if err != nil {
		return nil, fmt.Errorf("%w: local: root_path %q: %w", objstore.ErrInvalidConfig, cfg.RootPath, err)
	}
	st, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("local: root_path %q does not exist: %w", root, objstore.ErrBucketNotFound)
	case err != nil:
		return nil, fmt.Errorf("local: root_path %q: %w", root, mapErr(err))
	case !st.IsDir():
		return nil, fmt.Errorf("%w: local: root_path %q is not a directory", objstore.ErrInvalidConfig, root)
	}
	b := &bucket{root: root, tmp: filepath.Join(root, tmpDir), log: log}
	if err := os.MkdirAll(b.tmp, 0o755); err != nil {
		return nil, fmt.Errorf("local: creating %s: %w", b.tmp, mapErr(err))
	}
	b.sweep(time.Now().Add(-staleTempAge))
	return b, nil
}

// staleTempAge is how old a temporary file or upload folder must be before
// New removes it as a crash leftover. Age, not ownership, decides, because
// several processes may open one root at once (the store and an `aerostream
// tier` command) and must not delete each other's uploads in flight.
const staleTempAge = 24 * time.Hour

func (b *bucket) sweep(before time.Time) {
	entries, err := os.ReadDir(b.tmp)
	if err != nil {
		b.log.Warn("local: reading temporary folder", "dir", b.tmp, "err", err)
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		p := filepath.Join(b.tmp, e.Name())
		if err := os.RemoveAll(p); err != nil {
			b.log.Warn("local: removing stale temporary file", "path", p, "err", err)
		} else {
			b.log.Info("local: removed stale temporary file", "path", p, "modified", info.ModTime())
		}
	}
}

func (b *bucket) Name() string   { return "file://" + b.root }
func (b *bucket) String() string { return b.Name() }
func (b *bucket) Close() error   { return nil }

// path maps a key to its file, refusing keys that would leave the root or
// land in the temporary folder.
func (b *bucket) path(op objstore.Op, key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", fmt.Errorf("local: %s: %w", op, err)
	}
	if key == tmpDir || strings.HasPrefix(key, tmpDir+"/") {
		return "", fmt.Errorf("local: %s %q: %w: %s is reserved", op, key, objstore.ErrInvalidArgument, tmpDir)
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// mapErr translates filesystem errors into objstore's sentinels. Most
// filesystem failures are permanent (a full disk does not empty itself
// between retries); only the ones an NFS server produces while failing over
// are transient.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", objstore.ErrNotFound, err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: %w", objstore.ErrPreconditionFailed, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", objstore.ErrAccessDenied, err)
	case errors.Is(err, syscall.ESTALE), errors.Is(err, syscall.EIO), errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Errorf("%w: %w", objstore.ErrTransient, err)
	}
	return err
}

func (b *bucket) info(key string, st fs.FileInfo) objstore.ObjectInfo {
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = sys.Ino
	}
	return objstore.ObjectInfo{
		Key:          key,
		Size:         st.Size(),
		ETag:         fmt.Sprintf("%x-%x-%x", ino, st.Size(), st.ModTime().UnixNano()),
		LastModified: st.ModTime(),
	}
}

func (b *bucket) Put(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPut, key, r, size, false)
}

func (b *bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	return b.put(ctx, objstore.OpPutIfAbsent, key, r, size, true)
}

func (b *bucket) put(ctx context.Context, op objstore.Op, key string, r io.Reader, size int64, ifAbsent bool) (objstore.ObjectInfo, error) {
	dst, err := b.path(op, key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := objstore.ValidateSize(size); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("local: %s %q: %w", op, key, err)
	}
	cr := objstore.NewCountingReader(r, size)
	tmp, st, err := b.writeTemp(func(f *os.File) error {
		_, err := io.Copy(f, objstore.ContextReader(ctx, cr))
		if err == nil && cr.N != size {
			err = objstore.ShortError(key, cr.N, size)
		}
		return err
	})
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("local: %s %q: %w", op, key, err)
	}
	if err := b.publish(ctx, tmp, dst, ifAbsent); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("local: %s %q: %w", op, key, err)
	}
	info := b.info(key, st)
	info.Checksum = cr.Checksum()
	info.Verified = true // written and fsynced here, from the bytes counted
	return info, nil
}

// writeTemp writes a temporary file with fill and fsyncs it. It returns the
// file's stat, taken before the file is published, so the ETag is the
// object's even if another writer replaces it at once.
func (b *bucket) writeTemp(fill func(*os.File) error) (string, fs.FileInfo, error) {
	f, err := os.CreateTemp(b.tmp, "obj-*")
	if err != nil {
		return "", nil, mapErr(err)
	}
	name := f.Name()
	fail := func(err error) (string, fs.FileInfo, error) {
		f.Close()
		os.Remove(name)
		return "", nil, err
	}
	if err := fill(f); err != nil {
		return fail(mapErr(err))
	}
	// fsync before the rename: otherwise a crash can leave the new name
	// pointing at an empty or partial file.
	if err := f.Sync(); err != nil {
		return fail(mapErr(err))
	}
	st, err := f.Stat()
	if err != nil {
		return fail(mapErr(err))
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", nil, mapErr(err)
	}
	return name, st, nil
}

// publish moves a finished temporary file to dst: rename replaces, link
// refuses an existing dst (EEXIST) atomically. A concurrent Delete may
// remove dst's freshly created parent folder (it prunes empty folders), so a
// vanished parent is recreated and the step retried.
func (b *bucket) publish(ctx context.Context, tmp, dst string, ifAbsent bool) error {
	defer os.Remove(tmp) // after a link, and after any failure
	var err error
	for range 5 {
		if err = ctx.Err(); err != nil {
			return err
		}
		if err = os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return mapErr(err)
		}
		if ifAbsent {
			err = os.Link(tmp, dst)
		} else {
			err = os.Rename(tmp, dst)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return mapErr(err)
	}
	return syncDir(filepath.Dir(dst))
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return mapErr(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return mapErr(err)
	}
	return nil
}

func (b *bucket) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	p, err := b.path(objstore.OpHead, key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("local: head %q: %w", key, err)
	}
	st, err := b.stat(p)
	if err != nil {
		return objstore.ObjectInfo{}, fmt.Errorf("local: head %q: %w", key, err)
	}
	return b.info(key, st), nil
}

// stat is os.Stat where a directory is no object: "a/b" names a folder when
// "a/b/c" exists, and must read as missing, as it does on S3.
func (b *bucket) stat(p string) (fs.FileInfo, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			err = fs.ErrNotExist
		}
		return nil, mapErr(err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a file", objstore.ErrNotFound, p)
	}
	return st, nil
}

func (b *bucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	p, err := b.path(objstore.OpGetRange, key)
	if err != nil {
		return nil, err
	}
	if err := objstore.ValidateRange(off, length); err != nil {
		return nil, fmt.Errorf("local: get %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local: get %q: %w", key, err)
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			err = fs.ErrNotExist
		}
		return nil, fmt.Errorf("local: get %q: %w", key, mapErr(err))
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%w: not a file", objstore.ErrNotFound)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("local: get %q: %w", key, mapErr(err))
	}
	if off > st.Size() {
		f.Close()
		return nil, fmt.Errorf("local: get %q offset %d of %d: %w", key, off, st.Size(), objstore.ErrInvalidRange)
	}
	n := st.Size() - off
	if length >= 0 {
		n = min(n, length)
	}
	return &fileReader{r: objstore.ContextReader(ctx, io.NewSectionReader(f, off, n)), f: f}, nil
}

type fileReader struct {
	r io.Reader
	f *os.File
}

func (r *fileReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *fileReader) Close() error               { return r.f.Close() }

func (b *bucket) List(ctx context.Context, prefix string) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		infos, err := b.list(ctx, prefix)
		if err != nil {
			yield(objstore.ObjectInfo{}, fmt.Errorf("local: list %q: %w", prefix, err))
			return
		}
		for _, info := range infos {
			if !yield(info, nil) {
				return
			}
		}
	}
}

// list walks the deepest folder the prefix names in full and filters by the
// string prefix. A walk visits "a/1" before "a-b" ('/' sorts after '-'), so
// the result is sorted afterwards to give the byte order the object stores
// give.
func (b *bucket) list(ctx context.Context, prefix string) ([]objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := b.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = filepath.Join(b.root, filepath.FromSlash(prefix[:i]))
		if rel, err := filepath.Rel(b.root, start); err != nil || strings.HasPrefix(rel, "..") {
			return nil, nil // a prefix outside the root matches no key
		}
	}
	var infos []objstore.ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // vanished under us, or a prefix with no folder
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.root, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p == b.tmp {
				return filepath.SkipDir
			}
			// Skip folders that cannot hold a matching key.
			if p != start && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		st, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		infos = append(infos, b.info(key, st))
		return nil
	})
	if err != nil {
		return nil, mapErr(err)
	}
	slices.SortFunc(infos, func(x, y objstore.ObjectInfo) int { return strings.Compare(x.Key, y.Key) })
	return infos, nil
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	p, err := b.path(objstore.OpDelete, key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local: delete %q: %w", key, err)
	}
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		return nil // a folder is no object, so there is nothing to delete
	}
	err = os.Remove(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local: delete %q: %w", key, mapErr(err))
	}
	b.pruneDirs(filepath.Dir(p))
	return nil
}

// pruneDirs removes now-empty folders up to the root, so deleted partitions
// and topics leave no folder trail (an object store has no folders to leave).
// rmdir fails on a non-empty folder, which ends the climb.
func (b *bucket) pruneDirs(dir string) {
	for dir != b.root && strings.HasPrefix(dir, b.root+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

func (b *bucket) DeleteMany(ctx context.Context, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *bucket) NewMultipartWriter(ctx context.Context, key string, opts objstore.MultipartOptions) (objstore.MultipartWriter, error) {
	dst, err := b.path(objstore.OpMultipartCreate, key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local: multipart %q: %w", key, err)
	}
	dir, err := os.MkdirTemp(b.tmp, "mpu-*")
	if err != nil {
		return nil, fmt.Errorf("local: multipart %q: %w", key, mapErr(err))
	}
	up := &uploader{b: b, key: key, dst: dst, dir: dir, ifAbsent: opts.IfAbsent}
	return objstore.NewPartWriter(ctx, key, opts, up, b.log), nil
}

type uploader struct {
	b        *bucket
	key, dst string
	dir      string
	ifAbsent bool
}

func (u *uploader) partPath(n int) string {
	return filepath.Join(u.dir, fmt.Sprintf("part-%05d", n))
}

func (u *uploader) UploadPart(ctx context.Context, n int, data []byte) (objstore.Part, error) {
	if err := ctx.Err(); err != nil {
		return objstore.Part{}, err
	}
	// Parts are not fsynced: only the assembled file is, before it is
	// published. A crash loses the upload, which tierd redoes anyway.
	if err := os.WriteFile(u.partPath(n), data, 0o644); err != nil {
		return objstore.Part{}, mapErr(err)
	}
	return objstore.Part{}, nil
}

func (u *uploader) Complete(ctx context.Context, parts []objstore.Part) (objstore.ObjectInfo, error) {
	tmp, st, err := u.b.writeTemp(func(f *os.File) error {
		for _, p := range parts {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := appendFile(f, u.partPath(p.Number)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := u.b.publish(ctx, tmp, u.dst, u.ifAbsent); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := os.RemoveAll(u.dir); err != nil {
		u.b.log.Warn("local: removing multipart parts", "dir", u.dir, "err", err)
	}
	info := u.b.info(u.key, st)
	info.Verified = true // the parts, concatenated here
	return info, nil
}

// appendFile copies src to the end of f; io.Copy between two *os.File uses
// copy_file_range, so the bytes need not pass through user space.
func appendFile(f *os.File, src string) error {
	s, err := os.Open(src)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = io.Copy(f, s)
	return err
}

func (u *uploader) Abort(context.Context) error {
	return mapErr(os.RemoveAll(u.dir))
}
