package tierd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// Operator commands behind `aerostream tier …`. They run inside the store
// process (the catalog is single-process), reached through the admin API.

// VerifyResult is the outcome for one remote segment.
type VerifyResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int64  `json:"base_offset"`
	ObjectKey string `json:"object_key"`
	OK        bool   `json:"ok"`
	Problem   string `json:"problem,omitempty"`
}

// Verify re-reads every remote object of the given topic (all topics when
// empty) and checks it against the catalog's size and CRC32C, and its
// indexes: a bundle's trailer must check out against the record, and a
// legacy segment's index objects must exist. progress, when set, is told
// of each segment done.
func (d *Daemon) Verify(ctx context.Context, topic string, progress func(done, total int)) ([]VerifyResult, error) {
	recs, err := d.remoteRecords(topic)
	if err != nil {
		return nil, err
	}
	out := make([]VerifyResult, 0, len(recs))
	for i, r := range recs {
		res := VerifyResult{Topic: r.Topic, Partition: r.Partition, Base: r.BaseOffset, ObjectKey: r.ObjectKey, OK: true}
		tailFrom := int64(-1)
		if segobj.IsBundle(r.ObjectKey) {
			tailFrom = r.Bytes
		}
		sum, n, tail, err := d.remoteChecksumTail(ctx, r.ObjectKey, tailFrom)
		switch {
		case err != nil:
			res.OK, res.Problem = false, err.Error()
		case n != r.ObjectSize:
			res.OK, res.Problem = false, fmt.Sprintf("size %d, catalog says %d", n, r.ObjectSize)
		case r.Checksum != "" && sum != r.Checksum:
			res.OK, res.Problem = false, fmt.Sprintf("checksum %s, catalog says %s", sum, r.Checksum)
		}
		if res.OK {
			if err := d.checkIndexes(ctx, r, tail); err != nil {
				res.OK, res.Problem = false, err.Error()
			}
		}
		out = append(out, res)
		if progress != nil {
			progress(i+1, len(recs))
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// checkIndexes checks the indexes of the remote segment r: tail is the
// bundle's bytes from the log's end (remoteChecksumTail); a legacy
// segment's two index objects must exist.
func (d *Daemon) checkIndexes(ctx context.Context, r catalog.Segment, tail []byte) error {
	if segobj.IsBundle(r.ObjectKey) {
		_, _, err := segobj.SplitTail(tail, r.Bytes)
		return err
	}
	for _, key := range segobj.Objects(r.ObjectKey)[:2] {
		if _, err := d.opts.Bucket.Head(ctx, key); err != nil {
			return fmt.Errorf("%s: %w", path.Ext(key), err)
		}
	}
	return nil
}

// remoteRecords lists catalog records with a cloud pointer, not being
// deleted.
func (d *Daemon) remoteRecords(topic string) ([]catalog.Segment, error) {
	parts, err := d.opts.Catalog.Partitions()
	if err != nil {
		return nil, err
	}
	var out []catalog.Segment
	for _, p := range parts {
		if topic != "" && p.Topic != topic {
			continue
		}
		recs, err := d.opts.Catalog.Segments(p.Topic, p.Partition)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.ObjectKey != "" && r.State != catalog.StateDeleting {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Orphan is an object no catalog record accounts for.
type Orphan struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"last_modified"`
	Deleted      bool      `json:"deleted"`
}

// GC finds objects written by tierd that no catalog record references (a
// crash between upload and record, or a deletion that lost its record) and,
// unless dryRun, deletes them. Objects younger than minAge are left alone:
// they may belong to an upload in progress.
//
// In a cluster the bucket is shared and a catalog knows only its own
// store's partitions, each of which another store may lead: GC judges only
// the partitions this store leads (after taking their cold tier over) and
// leaves the rest, including partitions it does not hold, to their
// leaders' stores.
func (d *Daemon) GC(ctx context.Context, dryRun bool, minAge time.Duration) ([]Orphan, error) {
	referenced := map[string]bool{}
	parts, err := d.opts.Catalog.Partitions()
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	foreign := map[string]bool{} // held here, led elsewhere
	clustered := false
	for _, p := range parts {
		name := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		known[name] = true
		if rs, ok := d.opts.Store.(Replicas); ok {
			if role, _, _, err := rs.TierRole(ctx, p.Topic, p.Partition); err == nil && role != roleStandalone {
				clustered = true
			}
		}
		if acc, _, err := d.access(ctx, p.Topic, p.Partition); err != nil || acc != accessOwner {
			foreign[name] = true
			continue
		}
		recs, err := d.opts.Catalog.Segments(p.Topic, p.Partition)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.ObjectKey == "" {
				continue
			}
			for _, key := range segobj.Objects(r.ObjectKey) {
				referenced[key] = true
			}
		}
	}
	var orphans []Orphan
	now := time.Now()
	for info, err := range d.opts.Bucket.List(ctx, "") {
		if err != nil {
			return orphans, err
		}
		k, ok := parseKey(info.Key)
		if !ok || referenced[info.Key] {
			continue
		}
		if name := fmt.Sprintf("%s/%d", k.topic, k.partition); foreign[name] || clustered && !known[name] {
			continue
		}
		if k.ext == "manifest.json" && known[fmt.Sprintf("%s/%d", k.topic, k.partition)] {
			continue
		}
		if !info.LastModified.IsZero() && now.Sub(info.LastModified) < minAge {
			continue
		}
		orphans = append(orphans, Orphan{Key: info.Key, Size: info.Size, LastModified: info.LastModified})
	}
	if dryRun {
		return orphans, nil
	}
	for i := range orphans {
		if err := d.opts.Bucket.Delete(ctx, orphans[i].Key); err != nil {
			return orphans, fmt.Errorf("delete orphan %s: %w", orphans[i].Key, err)
		}
		orphans[i].Deleted = true
	}
	return orphans, nil
}

// Records returns the manifest's segments as remote catalog records.
func (m Manifest) Records() []catalog.Segment { return m.records() }

func readAll(ctx context.Context, b objstore.Bucket, key string) ([]byte, error) {
	rc, err := b.GetRange(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Adopter takes a downloaded segment back into the local log
// (*logstore.Store.AdoptSegment).
type Adopter interface {
	AdoptSegment(ctx context.Context, topic string, partition int32, base int64, logFile string) error
}

// Rehydrate brings remote segments of a partition back to local disk, from
// the newest remote segment down to the one holding fromOffset (local
// segments stay contiguous). Each download is verified against the
// catalog's checksum before the store adopts it. It returns the segments
// brought back.
func (d *Daemon) Rehydrate(ctx context.Context, a Adopter, topic string, partition int32, fromOffset int64, progress func(done, total int)) (int, error) {
	recs, err := d.opts.Store.Segments(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	var todo []catalog.Segment
	for _, r := range recs {
		if r.State == catalog.StateRemote && r.EndOffset > fromOffset {
			todo = append(todo, r)
		}
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].BaseOffset > todo[j].BaseOffset })
	for i, r := range todo {
		tmp := filepath.Join(d.opts.Store.StagingDir(), fmt.Sprintf("rehydrate-%s-%d-%020d.log", topic, partition, r.BaseOffset))
		if err := d.download(ctx, r, tmp); err != nil {
			os.Remove(tmp)
			return i, err
		}
		if err := a.AdoptSegment(ctx, topic, partition, r.BaseOffset, tmp); err != nil {
			os.Remove(tmp)
			return i, err
		}
		if progress != nil {
			progress(i+1, len(todo))
		}
	}
	return len(todo), nil
}

func (d *Daemon) download(ctx context.Context, r catalog.Segment, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tailFrom := int64(-1)
	if segobj.IsBundle(r.ObjectKey) {
		tailFrom = r.Bytes
	}
	return objstore.Retry(ctx, d.opts.Retry, func(ctx context.Context) error {
		rc, err := d.opts.Bucket.GetRange(ctx, r.ObjectKey, 0, -1)
		if err != nil {
			return err
		}
		defer rc.Close()
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, rc)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		sum, n, tail, err := fileChecksumTail(path, tailFrom)
		if err != nil {
			return err
		}
		if n != r.ObjectSize || (r.Checksum != "" && sum != r.Checksum) {
			return fmt.Errorf("%w: downloaded %s: %d bytes %s, catalog says %d bytes %s", ErrVerify, r.ObjectKey, n, sum, r.ObjectSize, r.Checksum)
		}
		if tailFrom < 0 {
			return nil
		}
		// A bundle: the store adopts the log alone and rebuilds its
		// indexes, as for a legacy segment, whose .log was all that was
		// downloaded.
		if _, _, err := segobj.SplitTail(tail, r.Bytes); err != nil {
			return fmt.Errorf("downloaded %s: %w", r.ObjectKey, err)
		}
		return os.Truncate(path, r.Bytes)
	})
}

// Drain waits until the queue is empty or ctx ends: `tier offload --now`
// seals active segments, rescans and then drains. Every segment sealed
// before the call is uploaded when it returns: seal notices are sent after
// the store's chores, which Drain first waits for.
func (d *Daemon) Drain(ctx context.Context) error {
	select {
	case <-d.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	parts, err := d.opts.Catalog.Partitions()
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := d.opts.Store.Settle(ctx, p.Topic, p.Partition); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	for {
		d.mu.Lock()
		idle := len(d.mu.queue) == 0 && len(d.mu.pending) == 0
		d.mu.Unlock()
		if idle {
			// Drained includes the manifests: a caller that drains and
			// then reads them (tests, restore drills) sees every upload.
			d.flushManifests(ctx)
			d.dirty.Lock()
			clean := len(d.dirty.m) == 0
			d.dirty.Unlock()
			if clean {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("%d tier jobs still pending", d.Backlog()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
