package tierd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bundle is a staged segment as the one object it is uploaded as
// (tierd/segobj): the log file, then its indexes and the trailer, which
// are small and held in memory.
type bundle struct {
	log  string // the staged .log
	tail []byte
	size int64
}

// loadBundle reads the staged segment of rec in dir. The log must be as
// long as the record says: readers take the record's Bytes as the log's end
// in the object.
func loadBundle(dir string, rec catalog.Segment) (*bundle, error) {
	name := func(ext string) string { return filepath.Join(dir, fmt.Sprintf("%020d%s", rec.BaseOffset, ext)) }
	idx, err := os.ReadFile(name(segobj.LegacyIndexExt))
	if err != nil {
		return nil, err
	}
	tidx, err := os.ReadFile(name(segobj.LegacyTimeIndexExt))
	if err != nil {
		return nil, err
	}
	b := &bundle{log: name(segobj.LegacyLogExt)}
	st, err := os.Stat(b.log)
	if err != nil {
		return nil, err
	}
	if st.Size() != rec.Bytes {
		return nil, fmt.Errorf("%w: %s has %d bytes, its catalog record %d", ErrVerify, b.log, st.Size(), rec.Bytes)
	}
	t := segobj.NewTrailer(st.Size(), idx, tidx)
	b.tail = t.Append(append(append(make([]byte, 0, t.TailBytes()), idx...), tidx...))
	b.size = t.ObjectSize()
	return b, nil
}

// open returns the object's bytes.
func (b *bundle) open() (io.ReadCloser, error) {
	f, err := os.Open(b.log)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(f, bytes.NewReader(b.tail)), f}, nil
}

// checksum is the CRC32C of the object, in objstore's format, and its
// length as read.
func (b *bundle) checksum() (string, int64, error) {
	rc, err := b.open()
	if err != nil {
		return "", 0, err
	}
	defer rc.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, rc)
	if err != nil {
		return "", 0, err
	}
	return objstore.FormatCRC32C(h.Sum32()), n, nil
}

// hashingReader computes the CRC32C of what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash32
	n int64
}

func (r *hashingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	return n, err
}

// upload runs stage -> upload -> verify -> record -> manifest for one
// sealed segment.
func (d *Daemon) upload(ctx context.Context, rec catalog.Segment) error {
	if rec.SegmentID == "" {
		return fmt.Errorf("segment %s/%d@%d has no segment id", rec.Topic, rec.Partition, rec.BaseOffset)
	}
	if cur, err := d.opts.Catalog.GetSegment(rec.Topic, rec.Partition, rec.BaseOffset); err != nil ||
		cur.ObjectKey != "" || cur.State != catalog.StateSealed {
		return nil // gone, already uploaded, or no longer eligible
	}
	// Only the leader uploads, and only below its high watermark; a
	// leader takes in what earlier leaders uploaded first (replica.go),
	// which may have given this segment a pointer or evicted it.
	acc, hw, err := d.access(ctx, rec.Topic, rec.Partition)
	if err != nil {
		return fmt.Errorf("replication role: %w", err)
	}
	if acc != accessOwner {
		return nil
	}
	if hw >= 0 && rec.EndOffset > hw {
		d.holdForHW(rec)
		return nil
	}
	// The seal's index shrink and catalog sync run after the roll, off the
	// produce path; stage only what they have finished.
	if err := d.opts.Store.Settle(ctx, rec.Topic, rec.Partition); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	dir, err := d.stage(rec)
	if errors.Is(err, os.ErrNotExist) {
		return nil // deleted by retention before we got to it
	}
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	defer os.RemoveAll(dir)
	// The record as the settled seal left it: its Bytes is what the
	// bundle's log length is checked against.
	cur, err := d.opts.Catalog.GetSegment(rec.Topic, rec.Partition, rec.BaseOffset)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && (cur.SegmentID != rec.SegmentID || cur.ObjectKey != "") {
		return nil // deleted, replaced or uploaded meanwhile
	}
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	rec = cur
	start := time.Now()
	b, err := loadBundle(dir, rec)
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	key := segmentKey(rec.Topic, rec.Partition, rec.BaseOffset, rec.SegmentID, segobj.Ext)
	info, err := d.putObject(ctx, b, key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	rec.ObjectKey, rec.ObjectSize, rec.Checksum, rec.ETag = info.Key, info.Size, info.Checksum, info.ETag
	rec.UploadedAt = time.Now().UnixNano()
	if err := d.opts.Store.SetRemote(ctx, rec); err != nil {
		// If the segment is gone (retention, topic deletion) the objects
		// just uploaded belong to nothing: remove them rather than leave
		// orphans. Otherwise keep them: the rescan retries the record and
		// the conditional put finds them already there.
		if cur, gerr := d.opts.Catalog.GetSegment(rec.Topic, rec.Partition, rec.BaseOffset); errors.Is(gerr, catalog.ErrNotFound) ||
			gerr == nil && (cur.State == catalog.StateDeleting || cur.SegmentID != rec.SegmentID) {
			d.log.Info("segment vanished during upload; deleting its objects", "topic", rec.Topic, "partition", rec.Partition, "base", rec.BaseOffset)
			return d.deleteObjects(ctx, rec.ObjectKey)
		}
		return fmt.Errorf("record cloud pointer: %w", err)
	}
	d.opts.Metrics.uploaded(rec.Topic, b.size, time.Since(start))
	d.log.Debug("segment uploaded", "topic", rec.Topic, "partition", rec.Partition, "base", rec.BaseOffset,
		"key", rec.ObjectKey, "bytes", b.size, "took", time.Since(start))
	d.markManifest(rec.Topic, rec.Partition)
	return nil
}

// putObject uploads a staged segment under key unless an identical object
// is already there, and verifies it: the CRC32C of the bytes sent must
// equal the bundle's, and the stored size must match (read back with a Head
// unless the provider reports the upload Verified).
//
// The bundle's CRC32C is computed from the bytes as they are read for the
// upload, not in a read pass of its own: the staged log is a hard link to
// a sealed segment, so what was read is the file, and the second pass was
// CPU and I/O taken from the produce path for every segment.
func (d *Daemon) putObject(ctx context.Context, b *bundle, key string) (objstore.ObjectInfo, error) {
	size := b.size
	var sum string
	var info objstore.ObjectInfo
	conditional := true
	err := objstore.Retry(ctx, d.opts.Retry, func(ctx context.Context) error {
		rc, err := b.open()
		if err != nil {
			return err
		}
		defer rc.Close()
		hr := &hashingReader{r: rc, h: crc32.New(castagnoli)}
		var sendErr error
		info, sendErr = d.send(ctx, hr, key, size, conditional)
		if sendErr != nil && !objstore.IsPreconditionFailed(sendErr) {
			return sendErr
		}
		if hr.n == size {
			sum = objstore.FormatCRC32C(hr.h.Sum32())
		} else {
			// The provider stopped reading early (a refused conditional
			// put need not read the body): read the bundle itself.
			var n int64
			if sum, n, err = b.checksum(); err != nil {
				return err
			} else if n != size {
				return fmt.Errorf("%w: %s changed size while staged (%d, then %d bytes)", ErrVerify, b.log, size, n)
			}
		}
		if sendErr != nil { // a refused conditional put
			// Uploaded by an earlier attempt whose answer was lost, or
			// before a crash. Same name means same segment id, so it should
			// be these bytes; check before trusting it.
			same, cerr := d.sameObject(ctx, key, size, sum)
			if cerr != nil {
				return cerr
			}
			if same {
				info = objstore.ObjectInfo{Key: key, Size: size, Checksum: sum}
				return nil
			}
			d.log.Warn("object exists with other bytes (torn earlier upload?); replacing it", "key", key)
			conditional = false
			return fmt.Errorf("%w: replacing %s", objstore.ErrTransient, key)
		}
		return nil
	})
	if err != nil {
		return info, err
	}
	if info.Checksum != "" && info.Checksum != sum {
		return info, fmt.Errorf("%w: %s sent with %s, the staged segment has %s", ErrVerify, key, info.Checksum, sum)
	}
	if info.Verified && info.Size == size && info.ETag != "" {
		// The service checked the body it stored against what was sent,
		// and what was sent has the file's checksum: a Head would cost a
		// billed request per file and prove nothing more.
		info.Key, info.Checksum = key, sum
		return info, nil
	}
	head, err := d.opts.Bucket.Head(ctx, key)
	if err != nil {
		return info, fmt.Errorf("verify %s: %w", key, err)
	}
	if head.Size != size {
		return info, fmt.Errorf("%w: %s stored with %d bytes, the staged segment has %d", ErrVerify, key, head.Size, size)
	}
	info.Key, info.Size, info.Checksum = key, size, sum
	if info.ETag == "" {
		info.ETag = head.ETag
	}
	return info, nil
}

func (d *Daemon) send(ctx context.Context, r io.Reader, key string, size int64, conditional bool) (objstore.ObjectInfo, error) {
	b := d.opts.Bucket
	if size < d.opts.MultipartThreshold {
		if conditional {
			return b.PutIfAbsent(ctx, key, r, size)
		}
		return b.Put(ctx, key, r, size)
	}
	retry := d.opts.Retry
	w, err := b.NewMultipartWriter(ctx, key, objstore.MultipartOptions{IfAbsent: conditional, Retry: &retry})
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	defer w.Abort(context.WithoutCancel(ctx))
	if _, err := io.Copy(w, r); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := w.Close(); err != nil {
		return objstore.ObjectInfo{}, err
	}
	return w.Info(), nil
}

// sameObject reads an existing object back and compares size and CRC32C.
func (d *Daemon) sameObject(ctx context.Context, key string, size int64, sum string) (bool, error) {
	head, err := d.opts.Bucket.Head(ctx, key)
	if err != nil {
		return false, err
	}
	if head.Size != size {
		return false, nil
	}
	if head.Checksum != "" {
		return head.Checksum == sum, nil
	}
	got, _, err := d.remoteChecksum(ctx, key)
	if err != nil {
		return false, err
	}
	return got == sum, nil
}

// remoteChecksum streams an object and returns its CRC32C and size.
func (d *Daemon) remoteChecksum(ctx context.Context, key string) (string, int64, error) {
	sum, n, _, err := d.remoteChecksumTail(ctx, key, -1)
	return sum, n, err
}

// remoteChecksumTail is remoteChecksum that also returns the object's bytes
// from tailFrom on (none when tailFrom < 0): a bundle's indexes and
// trailer, checked in the same pass.
func (d *Daemon) remoteChecksumTail(ctx context.Context, key string, tailFrom int64) (string, int64, []byte, error) {
	rc, err := d.opts.Bucket.GetRange(ctx, key, 0, -1)
	if err != nil {
		return "", 0, nil, err
	}
	defer rc.Close()
	return checksumTail(rc, tailFrom)
}

// fileChecksumTail is remoteChecksumTail for a local file.
func fileChecksumTail(path string, tailFrom int64) (string, int64, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, nil, err
	}
	defer f.Close()
	return checksumTail(f, tailFrom)
}

// maxTail bounds what checksumTail keeps: far beyond the indexes of any
// segment, so a record whose Bytes is wrong costs an error, not the object
// in memory.
const maxTail = 64 << 20

func checksumTail(r io.Reader, tailFrom int64) (string, int64, []byte, error) {
	h := crc32.New(castagnoli)
	w := io.Writer(h)
	var t tailWriter
	if tailFrom >= 0 {
		t.from = tailFrom
		w = io.MultiWriter(h, &t)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return "", n, nil, err
	}
	return objstore.FormatCRC32C(h.Sum32()), n, t.tail, nil
}

// tailWriter keeps the bytes written from position from on, up to maxTail.
type tailWriter struct {
	from, n int64
	tail    []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if end := w.n + int64(len(p)); end > w.from {
		skip := max(w.from-w.n, 0)
		keep := p[skip:]
		keep = keep[:min(int64(len(keep)), maxTail-int64(len(w.tail)))]
		w.tail = append(w.tail, keep...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// deleteSegment removes a segment's objects and tells the store.
func (d *Daemon) deleteSegment(ctx context.Context, rec catalog.Segment) error {
	// A role that cannot be read (the partition was deleted with its
	// topic) leaves the deletion to go ahead as on a single copy.
	if acc, _, err := d.access(ctx, rec.Topic, rec.Partition); err == nil && acc != accessOwner {
		// The objects are the leader's, which deletes them under the same
		// retention; a follower only drops its record of them.
		return d.opts.Store.RemoteDeleted(ctx, rec.Topic, rec.Partition, rec.BaseOffset)
	}
	if err := d.deleteObjects(ctx, rec.ObjectKey); err != nil {
		return err
	}
	if err := d.opts.Store.RemoteDeleted(ctx, rec.Topic, rec.Partition, rec.BaseOffset); err != nil {
		return fmt.Errorf("record remote deletion: %w", err)
	}
	d.opts.Metrics.deleted(rec.Topic)
	if err := d.writeManifest(ctx, rec.Topic, rec.Partition); err != nil {
		// The partition itself may be gone (topic deletion): then the
		// manifest goes too.
		if _, gerr := d.opts.Catalog.GetPartition(rec.Topic, rec.Partition); errors.Is(gerr, catalog.ErrNotFound) {
			return d.deleteManifestIfEmpty(ctx, rec.Topic, rec.Partition)
		}
		return err
	}
	return nil
}

// deleteObjects removes every object of the segment whose log is logKey.
func (d *Daemon) deleteObjects(ctx context.Context, logKey string) error {
	keys := segobj.Objects(logKey)
	return objstore.Retry(ctx, d.opts.Retry, func(ctx context.Context) error {
		return d.opts.Bucket.DeleteMany(ctx, keys)
	})
}

// deleteManifestIfEmpty removes the manifest of a deleted partition once no
// segment objects remain under it.
func (d *Daemon) deleteManifestIfEmpty(ctx context.Context, topic string, partition int32) error {
	prefix := fmt.Sprintf("%s/%d/", topic, partition)
	for info, err := range d.opts.Bucket.List(ctx, prefix) {
		if err != nil {
			return err
		}
		if k, ok := parseKey(info.Key); ok && k.ext != "manifest.json" {
			return nil
		}
	}
	return d.opts.Bucket.Delete(ctx, manifestKey(topic, partition))
}
