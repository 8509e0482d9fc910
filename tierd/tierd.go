package tierd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// Store is what tierd needs from the local log. *logstore.Store satisfies
// it; tools/ wires the two.
type Store interface {
	// SetRemote records a verified upload's cloud pointer.
	SetRemote(ctx context.Context, rec catalog.Segment) error
	// RemoteDeleted drops the record of a segment whose objects are gone.
	RemoteDeleted(ctx context.Context, topic string, partition int32, base int64) error
	// Segments lists a partition's catalog records, local and remote.
	Segments(ctx context.Context, topic string, partition int32) ([]catalog.Segment, error)
	// PartitionDir is where a partition's segment files live.
	PartitionDir(topic string, partition int32) string
	// StagingDir is a folder on the same filesystem as the logs.
	StagingDir() string
	// Settle returns once every segment of the partition sealed before the
	// call has its files final and its catalog record durable.
	Settle(ctx context.Context, topic string, partition int32) error
}

// Options configure a Daemon.
type Options struct {
	Bucket  objstore.Bucket
	Store   Store
	Catalog *catalog.Catalog // read-only here: partitions and their log start
	// Uploaders is the number of segments uploaded at once; default 2.
	Uploaders int
	// QueueSize bounds the queue of pending work; notifications beyond it
	// are dropped and found again by the periodic rescan. Default 4096.
	QueueSize int
	// RescanInterval is how often the catalog is scanned for work a lost
	// notification left behind; default 1 minute.
	RescanInterval time.Duration
	// MultipartThreshold: files at least this big go multipart; default
	// 16 MiB.
	MultipartThreshold int64
	// ManifestInterval is how long a partition's manifest may lag its
	// uploads: uploads mark the partition, and a flusher rewrites each
	// marked manifest at most once per interval (and at Drain and
	// shutdown). With small segments rolling many times a second, a
	// rewrite per upload was a catalog scan and a growing PUT per segment,
	// CPU and object-store I/O taken from producers. Default 10 s: at 1 s,
	// with segments of one PUT each, the rewrites were half of tierd's
	// PUTs in measure-tiered (1 MiB segments); a restore reads the
	// segments uploaded since the manifest once (ReadManifests), so the lag
	// costs it a little reading, never data.
	ManifestInterval time.Duration
	// FollowerSyncInterval is how often the manifests of the partitions
	// this store follows are read, for their cloud pointers (replica.go);
	// default ManifestInterval, which is how far a manifest may lag anyway.
	FollowerSyncInterval time.Duration
	// ReplacedGrace is how long the objects of a segment the log cleaner
	// replaced stay in the bucket (Replaced): a reader that took the old
	// record before the swap, or a follower that has not read the new
	// manifest yet, still finds them. Default three FollowerSyncIntervals,
	// at least a minute.
	ReplacedGrace time.Duration
	Retry         objstore.RetryPolicy
	Metrics       *Metrics // optional
	Logger        *slog.Logger
}

type jobKind uint8

const (
	jobUpload jobKind = iota
	jobDelete
)

type job struct {
	kind jobKind
	rec  catalog.Segment
}

type partKey struct {
	topic     string
	partition int32
}

type jobKey struct {
	topic     string
	partition int32
	base      int64
	kind      jobKind
}

// Daemon runs the tiering pipeline. Sealed and DeleteRemote (the
// logstore.Tier interface) only enqueue.
type Daemon struct {
	opts Options
	log  *slog.Logger

	mu struct {
		sync.Mutex
		queue   []job
		pending map[jobKey]bool
		closed  bool
		held    []catalog.Segment // sealed past the leader's high watermark
	}
	// lead holds, per partition this store leads, the leader epoch whose
	// cold tier it has taken over (replica.go).
	lead struct {
		sync.Mutex
		m map[partKey]int32
	}
	wakes []chan struct{} // one per worker, so none misses a wakeup
	ready chan struct{}   // closed once Run's first rescan has queued its work

	// dirty holds the partitions whose manifest is behind the catalog;
	// flushManifests empties it.
	dirty struct {
		sync.Mutex
		m map[partKey]bool
	}

	// replaced holds the objects of cleaned segments waiting out
	// ReplacedGrace (compact.go).
	replaced struct {
		sync.Mutex
		list []replacedObjects
	}

	manifestMu sync.Map // partition -> *sync.Mutex: one manifest writer per partition
	wg         sync.WaitGroup
}

// New makes a daemon; Run starts it.
func New(opts Options) (*Daemon, error) {
	if opts.Bucket == nil || opts.Store == nil || opts.Catalog == nil {
		return nil, errors.New("tierd: bucket, store and catalog are required")
	}
	if opts.Uploaders <= 0 {
		opts.Uploaders = 2
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.RescanInterval <= 0 {
		opts.RescanInterval = time.Minute
	}
	if opts.MultipartThreshold <= 0 {
		opts.MultipartThreshold = 16 << 20
	}
	if opts.ManifestInterval <= 0 {
		opts.ManifestInterval = 10 * time.Second
	}
	if opts.FollowerSyncInterval <= 0 {
		opts.FollowerSyncInterval = opts.ManifestInterval
	}
	if opts.ReplacedGrace <= 0 {
		opts.ReplacedGrace = max(time.Minute, 3*opts.FollowerSyncInterval)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Retry.OnRetry == nil {
		m := opts.Metrics
		log := opts.Logger
		opts.Retry.OnRetry = func(attempt int, err error, wait time.Duration) {
			m.retry()
			log.Warn("object store operation failed; retrying", "attempt", attempt, "wait", wait, "err", err)
		}
	}
	d := &Daemon{opts: opts, log: opts.Logger.With("component", "tierd"), ready: make(chan struct{})}
	d.wakes = make([]chan struct{}, opts.Uploaders)
	for i := range d.wakes {
		d.wakes[i] = make(chan struct{}, 1)
	}
	d.mu.pending = map[jobKey]bool{}
	d.dirty.m = map[partKey]bool{}
	d.lead.m = map[partKey]int32{}
	return d, nil
}

// Sealed queues the upload of a sealed segment (logstore.Tier).
func (d *Daemon) Sealed(seg catalog.Segment) { d.enqueue(job{kind: jobUpload, rec: seg}) }

// DeleteRemote queues the deletion of a segment's objects (logstore.Tier).
func (d *Daemon) DeleteRemote(seg catalog.Segment) { d.enqueue(job{kind: jobDelete, rec: seg}) }

func (d *Daemon) enqueue(j job) {
	k := jobKey{j.rec.Topic, j.rec.Partition, j.rec.BaseOffset, j.kind}
	d.mu.Lock()
	switch {
	case d.mu.closed || d.mu.pending[k]:
	case len(d.mu.queue) >= d.opts.QueueSize:
		d.log.Warn("tier queue full; the rescan will pick this segment up", "topic", k.topic, "partition", k.partition, "base", k.base)
	default:
		d.mu.pending[k] = true
		d.mu.queue = append(d.mu.queue, j)
	}
	n := len(d.mu.queue)
	d.mu.Unlock()
	d.opts.Metrics.backlog(n)
	for _, w := range d.wakes {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Backlog is the number of queued jobs.
func (d *Daemon) Backlog() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.queue)
}

// backlogPerWorker is the backlog that each worker beyond the first waits
// for before it helps. Uploads share the machine with the produce path; a
// small backlog is drained by one worker one segment after the other,
// which keeps the object store's load (and its CPU and disk bursts) even,
// while a growing backlog still gets every worker.
const backlogPerWorker = 4

// next returns the next job for worker i, if the backlog calls for it.
func (d *Daemon) next(i int) (job, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.mu.queue) == 0 || len(d.mu.queue) <= i*backlogPerWorker {
		return job{}, false
	}
	j := d.mu.queue[0]
	d.mu.queue[0] = job{}
	d.mu.queue = d.mu.queue[1:]
	return j, true
}

func (d *Daemon) done(j job) {
	d.mu.Lock()
	delete(d.mu.pending, jobKey{j.rec.Topic, j.rec.Partition, j.rec.BaseOffset, j.kind})
	n := len(d.mu.queue)
	d.mu.Unlock()
	d.opts.Metrics.backlog(n)
}

// Run cleans the staging folder, rescans the catalog, and processes jobs
// until ctx ends; it returns after the workers have stopped.
func (d *Daemon) Run(ctx context.Context) error {
	staging := d.opts.Store.StagingDir()
	_ = os.RemoveAll(staging) // links from a previous run; the rescan redoes their work
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return fmt.Errorf("tierd staging dir: %w", err)
	}
	d.Rescan(ctx)
	// A crash may have come between recording an upload and rewriting
	// its manifest: bring every manifest up to date once.
	d.markAllManifests()
	close(d.ready)
	for i := 0; i < d.opts.Uploaders; i++ {
		d.wg.Add(1)
		go d.worker(ctx, i)
	}
	t := time.NewTicker(d.opts.RescanInterval)
	defer t.Stop()
	mt := time.NewTicker(d.opts.ManifestInterval)
	defer mt.Stop()
	ft := time.NewTicker(d.opts.FollowerSyncInterval)
	defer ft.Stop()
	for {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			d.mu.closed = true
			d.mu.Unlock()
			d.wg.Wait()
			// Manifests marked by the last uploads are written before
			// returning, under a context of their own.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			d.flushManifests(fctx)
			cancel()
			return nil
		case <-t.C:
			d.Rescan(ctx)
		case <-mt.C:
			d.deleteReplaced(ctx, time.Now())
			d.flushManifests(ctx)
		case <-ft.C:
			d.syncFollowers(ctx)
			d.releaseHeld()
		}
	}
}

func (d *Daemon) worker(ctx context.Context, i int) {
	defer d.wg.Done()
	for {
		j, ok := d.next(i)
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-d.wakes[i]:
				continue
			}
		}
		var err error
		switch j.kind {
		case jobUpload:
			err = d.upload(ctx, j.rec)
		case jobDelete:
			err = d.deleteSegment(ctx, j.rec)
		}
		d.done(j)
		if err != nil && ctx.Err() == nil {
			d.log.Error("tier job failed; it will be retried by the rescan", "op", map[jobKind]string{jobUpload: "upload", jobDelete: "delete"}[j.kind],
				"topic", j.rec.Topic, "partition", j.rec.Partition, "base", j.rec.BaseOffset, "err", err)
		}
	}
}

// Rescan queues the work the catalog implies: sealed segments without a
// cloud copy, and remote deletions that never finished.
func (d *Daemon) Rescan(ctx context.Context) {
	d.eachPartition("rescan", func(_ catalog.Partition, recs []catalog.Segment) {
		for _, r := range recs {
			switch {
			case r.State == catalog.StateSealed && r.ObjectKey == "":
				d.Sealed(r)
			case r.State == catalog.StateDeleting && r.ObjectKey != "":
				d.DeleteRemote(r)
			}
		}
	})
}

// eachPartition calls fn with every partition the catalog holds and its
// segment records; what names the caller in the log lines of a failed
// listing.
func (d *Daemon) eachPartition(what string, fn func(p catalog.Partition, recs []catalog.Segment)) {
	parts, err := d.opts.Catalog.Partitions()
	if err != nil {
		d.log.Error(what+": listing partitions", "err", err)
		return
	}
	for _, p := range parts {
		recs, err := d.opts.Catalog.Segments(p.Topic, p.Partition)
		if err != nil {
			d.log.Error(what+": listing segments", "topic", p.Topic, "partition", p.Partition, "err", err)
			continue
		}
		fn(p, recs)
	}
}

func (d *Daemon) partitionLock(topic string, partition int32) *sync.Mutex {
	m, _ := d.manifestMu.LoadOrStore(fmt.Sprintf("%s/%d", topic, partition), &sync.Mutex{})
	return m.(*sync.Mutex)
}

// markManifest notes that a partition's manifest is behind the catalog;
// the flusher rewrites it within ManifestInterval.
func (d *Daemon) markManifest(topic string, partition int32) {
	d.dirty.Lock()
	d.dirty.m[partKey{topic, partition}] = true
	d.dirty.Unlock()
}

// markAllManifests marks every partition with a cloud copy.
func (d *Daemon) markAllManifests() {
	d.eachPartition("manifests", func(p catalog.Partition, recs []catalog.Segment) {
		for _, r := range recs {
			if r.ObjectKey != "" {
				d.markManifest(p.Topic, p.Partition)
				return
			}
		}
	})
}

// flushManifests rewrites the marked manifests. A partition whose write
// fails stays marked and is tried again on the next flush.
func (d *Daemon) flushManifests(ctx context.Context) {
	d.dirty.Lock()
	todo := d.dirty.m
	d.dirty.m = map[partKey]bool{}
	d.dirty.Unlock()
	for p := range todo {
		if err := d.writeManifest(ctx, p.topic, p.partition); err != nil {
			if ctx.Err() == nil {
				d.log.Error("manifest write failed; retrying on the next flush", "topic", p.topic, "partition", p.partition, "err", err)
			}
			d.markManifest(p.topic, p.partition)
		}
	}
}

// writeManifest rewrites a partition's manifest from the catalog. Writes
// for one partition are serialized so an older view never lands last. The
// records are read from the catalog itself, not through the partition's
// shard: a read of pebble needs no owner, and the shard's goroutine is the
// produce path.
func (d *Daemon) writeManifest(ctx context.Context, topic string, partition int32) error {
	// Only the owner of the cold tier writes its manifest: a follower's
	// catalog lags the leader's.
	if acc, _, err := d.access(ctx, topic, partition); err != nil || acc != accessOwner {
		return err
	}
	mu := d.partitionLock(topic, partition)
	mu.Lock()
	defer mu.Unlock()
	recs, err := d.opts.Catalog.Segments(topic, partition)
	if err != nil {
		return err
	}
	var logStart int64
	if meta, err := d.opts.Catalog.GetPartition(topic, partition); err == nil {
		logStart = meta.LogStartOffset
	}
	body, err := jsonIndent(buildManifest(topic, partition, logStart, recs))
	if err != nil {
		return err
	}
	return objstore.Retry(ctx, d.opts.Retry, func(ctx context.Context) error {
		_, err := d.opts.Bucket.Put(ctx, manifestKey(topic, partition), bytesReader(body), int64(len(body)))
		return err
	})
}

// stage hard-links a segment's files into a fresh staging folder. A link
// costs no copy, and keeps the bytes readable even if retention deletes
// the segment while it uploads.
func (d *Daemon) stage(rec catalog.Segment) (string, error) {
	dir := filepath.Join(d.opts.Store.StagingDir(), fmt.Sprintf("%s-%d-%020d-%s", rec.Topic, rec.Partition, rec.BaseOffset, rec.SegmentID))
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := d.opts.Store.PartitionDir(rec.Topic, rec.Partition)
	for _, ext := range segmentExts {
		name := fmt.Sprintf("%020d%s", rec.BaseOffset, ext)
		if err := os.Link(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}
