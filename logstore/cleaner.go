package logstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"golang.org/x/sys/unix"
)

// The log cleaner of compacted topics (cleanup.policy=compact). doc.go
// ("Compaction") gives the algorithm and its crash safety; this file is
// the loop, the choice of what to clean, the rewrite and the swap.

// CleanerOptions configure the store's log cleaner.
type CleanerOptions struct {
	// Disabled stops the background loop; CleanNow still cleans.
	Disabled bool
	// Interval between passes over the compacted partitions; default 15 s.
	Interval time.Duration
	// BytesPerSecond bounds what the cleaner reads and writes together, so
	// that cleaning does not take the disk from produce; default 32 MiB/s,
	// negative for no bound.
	BytesPerSecond int64
	// MapEntries bounds the keys one pass remembers (about 40 bytes each);
	// a dirty part with more keys is cleaned over several passes. Default
	// 1,048,576.
	MapEntries int
}

func (o *CleanerOptions) setDefaults() {
	if o.Interval <= 0 {
		o.Interval = 15 * time.Second
	}
	if o.BytesPerSecond == 0 {
		o.BytesPerSecond = 32 << 20
	}
	if o.MapEntries <= 0 {
		o.MapEntries = 1 << 20
	}
}

// CleanerStats are the cleaner's counters since Open, for /metrics.
type CleanerStats struct {
	Cleanings      int64 // partition cleanings that swapped segments in
	BytesRead      int64
	BytesWritten   int64
	RecordsRemoved int64
	// ThrottledNanos is time spent waiting for the I/O bound.
	ThrottledNanos int64
	// Failed are the partitions ("topic/partition") whose cleaning stopped
	// on a segment it could not read, with the reason; their count is the
	// metric. They stay stopped until a restart.
	Failed map[string]string
}

// ReplacedTier is what a Tier implements to hear of cloud objects the
// cleaner has replaced: the segment's local copy was rewritten, the new one
// is sealed for upload under a new segment id, and the old objects are no
// longer referenced. tierd deletes them after a grace period, so that a
// reader still holding the old record finishes. A tier without it leaves
// them to `tier gc`.
type ReplacedTier interface {
	Replaced(old catalog.Segment)
}

// Names of the cleaner's files in a partition directory.
const (
	cleanedSuffix     = ".cleaned"
	swapSuffix        = ".swap"
	cleanerCheckpoint = "cleaner-offset-checkpoint"
)

// cleanerCrashAt, set by tests only, stops a cleaning at a step as a
// crash there would: "before-swap" (markers written) or "after-rename"
// (the first group's files renamed, nothing else).
var cleanerCrashAt string

// errCrashed is what a cleaning stopped by cleanerCrashAt returns.
var errCrashed = errors.New("cleaner: stopped by a test at " + "a crash point")

type cleaner struct {
	st   *Store
	opts CleanerOptions
	log  *slog.Logger

	passMu sync.Mutex // one pass at a time: the loop's and CleanNow's
	wg     sync.WaitGroup

	read, written, removed, cleanings, throttled atomic.Int64

	mu struct {
		sync.Mutex
		failed map[partKey]error
	}

	// The I/O bound, used by the pass holding passMu.
	budgetStart time.Time
	budgetBytes int64
}

func newCleaner(st *Store) *cleaner {
	o := st.opts.Cleaner
	o.setDefaults()
	c := &cleaner{st: st, opts: o, log: st.opts.Logger.With("component", "cleaner")}
	c.mu.failed = map[partKey]error{}
	return c
}

func (c *cleaner) start(ctx context.Context) {
	if c.opts.Disabled {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.pass(ctx); err != nil && ctx.Err() == nil {
					c.log.Warn("cleaner pass", "err", err)
				}
			}
		}
	}()
}

func (c *cleaner) wait() { c.wg.Wait() }

// CleanNow runs one cleaner pass over every compacted partition, whatever
// the interval, and returns the errors of partitions it had to stop.
func (s *Store) CleanNow(ctx context.Context) error { return s.cleaner.pass(ctx) }

// CleanerStats reports the cleaner's counters.
func (s *Store) CleanerStats() CleanerStats {
	c := s.cleaner
	st := CleanerStats{Cleanings: c.cleanings.Load(), BytesRead: c.read.Load(), BytesWritten: c.written.Load(),
		RecordsRemoved: c.removed.Load(), ThrottledNanos: c.throttled.Load(), Failed: map[string]string{}}
	c.mu.Lock()
	for k, err := range c.mu.failed {
		st.Failed[fmt.Sprintf("%s/%d", k.topic, k.id)] = err.Error()
	}
	c.mu.Unlock()
	return st
}

func (c *cleaner) failed(k partKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.failed[k] != nil
}

// spend takes n bytes from the I/O bound, waiting when the pass is ahead
// of it.
func (c *cleaner) spend(ctx context.Context, n int) error {
	if c.opts.BytesPerSecond < 0 {
		return nil
	}
	now := time.Now()
	if c.budgetStart.IsZero() || now.Sub(c.budgetStart) > time.Second {
		// A fresh window, so idle time between passes is not saved up
		// into a burst.
		c.budgetStart, c.budgetBytes = now, 0
	}
	c.budgetBytes += int64(n)
	due := c.budgetStart.Add(time.Duration(float64(c.budgetBytes) / float64(c.opts.BytesPerSecond) * float64(time.Second)))
	if wait := due.Sub(now); wait > 0 {
		c.throttled.Add(int64(wait))
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// segView is what the cleaner knows of a sealed segment, copied on the
// shard goroutine; seg is only compared, never read, off it.
type segView struct {
	seg              *segment
	base, next, size int64
	minTs, maxTs     int64
	created          time.Time
	logPath          string
}

// candidate is a compacted partition's cleanable segments.
type candidate struct {
	p         *partition
	key       partKey
	dir       string
	cfg       PartitionConfig
	segs      []segView
	producers map[int64]int64 // producer id -> last offset of its last batch
}

// pass cleans every compacted partition that is due, one at a time.
func (c *cleaner) pass(ctx context.Context) error {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	var errs []error
	for _, sh := range c.st.shards {
		cands, err := c.candidates(ctx, sh, time.Now())
		if err != nil {
			return err
		}
		for i := range cands {
			if err := c.clean(ctx, sh, &cands[i], time.Now()); err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return err
				}
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// candidates lists the shard's compacted partitions with their cleanable
// segments: sealed, below the high watermark, and older than
// min.compaction.lag.ms, a prefix of the local log. An active segment
// older than max.compaction.lag.ms is rolled first, so that it becomes
// cleanable.
func (c *cleaner) candidates(ctx context.Context, sh *shard, now time.Time) ([]candidate, error) {
	var out []candidate
	r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
	r.hook = func(s *shard) {
		for k, p := range s.parts {
			if !p.cfg.compacts() || p.deleted || c.failed(k) {
				continue
			}
			if lag := p.cfg.MaxCompactionLagMs; lag > 0 && lag < math.MaxInt64 {
				if act := p.active(); act.size > 0 && now.Sub(act.created) >= lag && p.failed.Load() == nil {
					if err := p.roll(s, act.next); err != nil {
						s.logLimited("cleaner-roll", "rolling a segment past max.compaction.lag.ms", "topic", p.topic,
							"partition", p.id, "err", err)
					}
				}
			}
			cand := candidate{p: p, key: k, dir: p.dir, cfg: p.cfg}
			for _, seg := range p.segs[:len(p.segs)-1] {
				ts := seg.maxTs
				if ts < 0 {
					ts = seg.created.UnixMilli()
				}
				if !seg.sealed || seg.next > p.hw || now.UnixMilli()-ts < p.cfg.MinCompactionLagMs.Milliseconds() ||
					!p.releasable(s, seg.next) {
					break
				}
				cand.segs = append(cand.segs, segView{seg: seg, base: seg.base, next: seg.next, size: seg.size,
					minTs: seg.minTs, maxTs: seg.maxTs, created: seg.created, logPath: seg.logPath})
			}
			if len(cand.segs) == 0 {
				continue
			}
			cand.producers = make(map[int64]int64, len(p.producers))
			for id, ps := range p.producers {
				if e := ps.last(); e != nil {
					cand.producers[id] = e.lastOffset
				}
			}
			out = append(out, cand)
		}
	}
	if err := c.st.call(ctx, sh, r); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].key.topic != out[j].key.topic {
			return out[i].key.topic < out[j].key.topic
		}
		return out[i].key.id < out[j].key.id
	})
	return out, nil
}

func readCheckpoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, cleanerCheckpoint))
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// keyHash is the offset map's key: a 128-bit hash of the record key, as
// Kafka's map keeps a digest rather than the key.
type keyHash [16]byte

func hashKey(k []byte) keyHash {
	h := fnv.New128a()
	_, _ = h.Write(k)
	var out keyHash
	h.Sum(out[:0])
	return out
}

// clean cleans one partition if its dirty ratio or max.compaction.lag.ms
// says so.
func (c *cleaner) clean(ctx context.Context, sh *shard, cand *candidate, now time.Time) error {
	segs := cand.segs
	firstDirty := readCheckpoint(cand.dir)
	if firstDirty < segs[0].base || firstDirty > segs[len(segs)-1].next {
		// Past the cleanable end, the checkpoint outlived a truncation
		// (a follower's): the log below it is not known to be clean.
		firstDirty = segs[0].base
	}
	var cleanBytes, dirtyBytes int64
	lagged := false
	maxLag := cand.cfg.MaxCompactionLagMs
	for _, v := range segs {
		if v.next <= firstDirty {
			cleanBytes += v.size
			continue
		}
		dirtyBytes += v.size
		ts := v.minTs
		if ts < 0 {
			ts = v.created.UnixMilli()
		}
		if maxLag > 0 && maxLag < math.MaxInt64 && now.UnixMilli()-ts >= maxLag.Milliseconds() {
			lagged = true
		}
	}
	if dirtyBytes == 0 {
		return nil
	}
	ratio := float64(dirtyBytes) / float64(cleanBytes+dirtyBytes)
	minRatio := 0.5
	if r := cand.cfg.MinCleanableDirtyRatio; r != nil {
		minRatio = *r
	}
	if ratio < minRatio && !lagged {
		return nil
	}
	start, read0, written0 := time.Now(), c.read.Load(), c.written.Load()
	err := c.cleanSegments(ctx, sh, cand, firstDirty, now)
	if read := c.read.Load() - read0; err == nil && read > 0 {
		// log_mib_per_sec is the rate Kafka's cleaner logs ("MB of log
		// processed", per second of the whole cleaning), so the two
		// compare; read_bytes counts the dirty part twice (map, rewrite).
		secs := time.Since(start).Seconds()
		c.log.Info("log cleaner cleaned a partition", "topic", cand.key.topic, "partition", cand.key.id,
			"log_bytes", cleanBytes+dirtyBytes, "read_bytes", read, "written_bytes", c.written.Load()-written0,
			"seconds", secs, "log_mib_per_sec", float64(cleanBytes+dirtyBytes)/(1<<20)/secs)
	}
	if errors.Is(err, errSegmentGone) {
		return nil // retention or an eviction got there first; next pass
	}
	if errors.Is(err, ErrCorruptSegment) || errors.Is(err, ErrCorruptBatch) {
		c.mu.Lock()
		c.mu.failed[cand.key] = err
		c.mu.Unlock()
		c.log.Error("log cleaner stopped for a partition: a segment could not be read; nothing was rewritten",
			"topic", cand.key.topic, "partition", cand.key.id, "err", err)
		return fmt.Errorf("clean %s/%d: %w", cand.key.topic, cand.key.id, err)
	}
	if err != nil {
		return fmt.Errorf("clean %s/%d: %w", cand.key.topic, cand.key.id, err)
	}
	return nil
}

// errSegmentGone: a segment the cleaner chose was removed before it read
// it; the pass skips the partition.
var errSegmentGone = errors.New("cleaner: segment removed meanwhile")

// eachBatch reads the batches of segment v through its own descriptor,
// opened and closed here, so a pass over many segments holds two at most.
// The file it opens may no longer be the segment it chose (removed and
// made again): the swap checks the segments are unchanged before it puts
// anything in their place. atEnd is set for the segment's last batch.
func (c *cleaner) eachBatch(v segView, buf []byte, onRead func(int) error, fn func(b []byte, h *BatchHeader, atEnd bool) error) error {
	f, err := os.Open(v.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return errSegmentGone
	}
	if err != nil {
		return err
	}
	defer f.Close()
	rd := newSegReader(f, v.logPath, v.size, v.base, buf, onRead)
	for {
		b, h, err := rd.batch()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(b, &h, rd.pos == v.size); err != nil {
			if errors.Is(err, ErrCorruptBatch) {
				return fmt.Errorf("%w: %s at byte %d: %w", ErrCorruptSegment, v.logPath, rd.pos-int64(h.Length), err)
			}
			return err
		}
	}
}

// group is a run of segments rewritten into one.
type group struct {
	segs     []segView
	end      int64 // next of the last segment
	removed  int64
	size     int64 // bytes of the output
	marker   string
	basePath string // <dir>/<base 20 digits>
}

// cleanSegments builds the offset map over the dirty segments, rewrites
// the cleanable segments group by group into .cleaned files, writes the
// swap markers and has the shard swap the groups in.
func (c *cleaner) cleanSegments(ctx context.Context, sh *shard, cand *candidate, firstDirty int64, now time.Time) error {
	segs := cand.segs
	buf := make([]byte, 1<<20)
	onRead := func(n int) error {
		c.read.Add(int64(n))
		return c.spend(ctx, n)
	}
	// The offset map: the last offset of each key in the dirty part.
	// Transactional and control batches stay whole (doc.go), so their
	// keys are not in it.
	offsets := map[keyHash]int64{}
	end := segs[len(segs)-1].next
	var recs []cleanRecord
	var scratch []byte
	for _, v := range segs {
		if v.next <= firstDirty {
			continue
		}
		if len(offsets) >= c.opts.MapEntries {
			end = v.base
			break
		}
		err := c.eachBatch(v, buf, onRead, func(b []byte, h *BatchHeader, _ bool) error {
			if h.IsControl() || h.IsTransactional() {
				return nil
			}
			var err error
			if recs, scratch, err = batchRecords(b, h, scratch, recs[:0]); err != nil {
				return err
			}
			for i := range recs {
				if recs[i].key != nil {
					offsets[hashKey(recs[i].key)] = h.BaseOffset + recs[i].offDelta
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Groups: runs of segments whose output fits one segment, within the
	// offset span a segment's index can hold.
	var groups []*group
	for _, v := range segs {
		if v.base >= end {
			break
		}
		if n := len(groups); n > 0 {
			g := groups[n-1]
			var in int64
			for _, x := range g.segs {
				in += x.size
			}
			if in+v.size <= cand.cfg.SegmentBytes && v.next-g.segs[0].base <= math.MaxUint32/2 {
				g.segs = append(g.segs, v)
				g.end = v.next
				continue
			}
		}
		groups = append(groups, &group{segs: []segView{v}, end: v.next,
			basePath: filepath.Join(cand.dir, segmentName(v.base))})
	}
	deleteHorizon := int64(math.MinInt64)
	if d := cand.cfg.DeleteRetentionMs; d != nil {
		deleteHorizon = now.UnixMilli() - d.Milliseconds()
	} else {
		deleteHorizon = now.UnixMilli() - int64(24*time.Hour/time.Millisecond)
	}
	var swaps []*group
	for _, g := range groups {
		if err := c.rewrite(ctx, g, cand, offsets, deleteHorizon, buf, onRead); err != nil {
			c.discard(g)
			for _, s := range swaps {
				c.discard(s)
			}
			return err
		}
		if g.removed == 0 && len(g.segs) == 1 {
			c.discard(g) // nothing to gain from swapping it
			continue
		}
		swaps = append(swaps, g)
	}
	if len(swaps) == 0 {
		return writeFileSynced(filepath.Join(cand.dir, cleanerCheckpoint), []byte(strconv.FormatInt(end, 10)))
	}
	// The markers make the swap recoverable: a crash after a rename of
	// a .cleaned log over its segment finds the marker naming what it
	// replaced (doc.go).
	for _, g := range swaps {
		var b strings.Builder
		fmt.Fprintf(&b, "end %d\nreplaced", g.end)
		for _, v := range g.segs {
			fmt.Fprintf(&b, " %d", v.base)
		}
		b.WriteString("\n")
		g.marker = g.basePath + swapSuffix
		if err := writeSnapshot(g.marker, []byte(b.String())); err != nil {
			for _, s := range swaps {
				c.discard(s)
			}
			return err
		}
	}
	if err := syncDir(cand.dir); err != nil {
		for _, s := range swaps {
			c.discard(s)
		}
		return err
	}
	if cleanerCrashAt == "before-swap" {
		return errCrashed
	}
	return c.swap(ctx, sh, cand, swaps, end)
}

// discard removes a group's .cleaned files and marker.
func (c *cleaner) discard(g *group) {
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		_ = os.Remove(g.basePath + ext + cleanedSuffix)
	}
	if g.marker != "" {
		_ = os.Remove(g.marker)
	}
}

// rewrite writes a group's kept batches to <base>.log.cleaned, indexed
// and synced. A record is kept when no later record in the dirty part has
// its key, unless it is a tombstone past delete.retention.ms; records
// without a key go, as in Kafka. A batch left without records goes too,
// unless it is a producer's last (its sequence must stay) or the group's
// last (the segment must end where the one it replaces ended, so readers
// move on to the next).
func (c *cleaner) rewrite(ctx context.Context, g *group, cand *candidate, offsets map[keyHash]int64, deleteHorizon int64,
	buf []byte, onRead func(int) error) error {
	opts := c.st.opts
	base := g.segs[0].base
	logPath := g.basePath + ".log" + cleanedSuffix
	f, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	out := &segment{base: base, next: base, logPath: logPath, ref: newFileRef(f), created: g.segs[0].created,
		minTs: -1, maxTs: -1, maxTsOffset: -1}
	defer out.closeFiles()
	if out.idx, err = openIndex(g.basePath+".index"+cleanedSuffix, offsetEntryWidth, opts.MaxIndexBytes, true); err != nil {
		return err
	}
	if out.tidx, err = openIndex(g.basePath+".timeindex"+cleanedSuffix, timeEntryWidth, opts.MaxIndexBytes/offsetEntryWidth*timeEntryWidth, true); err != nil {
		return err
	}
	enc := encoders.Get().(*encoder)
	defer encoders.Put(enc)
	var pending []byte
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if out.indexFull() {
			return fmt.Errorf("%w: the index of %s is full", ErrStorage, logPath)
		}
		if err := out.appendBatches(pending, opts.IndexIntervalBytes); err != nil {
			return err
		}
		c.written.Add(int64(len(pending)))
		err := c.spend(ctx, len(pending))
		pending = pending[:0]
		return err
	}
	var recs, kept []cleanRecord
	var scratch []byte
	for si, v := range g.segs {
		err := c.eachBatch(v, buf, onRead, func(b []byte, h *BatchHeader, atEnd bool) error {
			last := si == len(g.segs)-1 && atEnd
			if h.IsControl() || h.IsTransactional() {
				pending = append(pending, b...)
			} else {
				var err error
				if recs, scratch, err = batchRecords(b, h, scratch, recs[:0]); err != nil {
					return err
				}
				kept = kept[:0]
				for _, r := range recs {
					off := h.BaseOffset + r.offDelta
					switch {
					case r.key == nil:
					case offsets[hashKey(r.key)] > off:
						// A later record has the key. (A key absent from
						// the map lies only in the clean part, where it is
						// already the latest.)
					case r.tombstone && h.MaxTimestamp <= deleteHorizon:
					default:
						kept = append(kept, r)
					}
				}
				g.removed += int64(len(recs) - len(kept))
				holds := last || h.ProducerID >= 0 && cand.producers[h.ProducerID] == h.LastOffset()
				switch {
				case len(kept) > 0 && len(kept) == len(recs), len(recs) == 0 && holds:
					pending = append(pending, b...)
				case len(kept) > 0 || holds:
					if pending, err = rewriteBatch(pending, b, h, kept, enc); err != nil {
						return err
					}
				}
				// Otherwise the batch goes, an empty one a pass left too,
				// once nothing needs it to hold its offsets.
			}
			if len(pending) >= 1<<20 {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if out.next < g.end && out.size > 0 {
		// Cannot happen: the group's last batch is always kept.
		return fmt.Errorf("%w: cleaned %s ends at %d, not %d", ErrStorage, logPath, out.next, g.end)
	}
	if err := out.seal(); err != nil {
		return err
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	for _, p := range []string{g.basePath + ".index" + cleanedSuffix, g.basePath + ".timeindex" + cleanedSuffix} {
		if err := syncFile(p); err != nil {
			return err
		}
	}
	g.size = out.size
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error { return syncFile(dir) }

// swap has the shard put the cleaned groups in place of the segments they
// replace, if those are still the segments the cleaner read. The shard
// only renames and reopens; the chore makes the change durable and then
// removes what was replaced.
func (c *cleaner) swap(ctx context.Context, sh *shard, cand *candidate, swaps []*group, end int64) error {
	var ferr error
	r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
	r.hook = func(s *shard) { ferr = c.swapOnShard(s, cand, swaps, end) }
	if err := c.st.call(ctx, sh, r); err != nil {
		// The request may still run; its chore or the next start
		// settles the files either way.
		return err
	}
	return ferr
}

func (c *cleaner) swapOnShard(s *shard, cand *candidate, swaps []*group, end int64) error {
	p := cand.p
	if s.parts[cand.key] != p || p.deleted {
		for _, g := range swaps {
			c.discard(g)
		}
		return nil
	}
	type done struct {
		g       *group
		old     []*segment
		oldRecs []catalog.Segment
		rec     catalog.Segment
	}
	var dones []done
	var err error
	for _, g := range swaps {
		i := -1
		for j, seg := range p.segs {
			if seg == g.segs[0].seg {
				i = j
			}
		}
		ok := i >= 0 && i+len(g.segs) < len(p.segs)
		for k := 0; ok && k < len(g.segs); k++ {
			seg, v := p.segs[i+k], g.segs[k]
			ok = seg == v.seg && seg.sealed && seg.next == v.next && seg.size == v.size
		}
		if !ok {
			// Retention, a truncation or an eviction got there first.
			c.discard(g)
			continue
		}
		base := g.segs[0].base
		logPath, idxPath, tidxPath := segmentPaths(p.dir, base)
		for _, mv := range [][2]string{{idxPath + cleanedSuffix, idxPath}, {tidxPath + cleanedSuffix, tidxPath}, {logPath + cleanedSuffix, logPath}} {
			if err = os.Rename(mv[0], mv[1]); err != nil {
				break
			}
		}
		if err != nil {
			// The log goes last, so it was not renamed: the old segments
			// stand. The marker and the .cleaned log stay, so that the
			// next start rebuilds the indexes, which may have been.
			break
		}
		if cleanerCrashAt == "after-rename" {
			return errCrashed
		}
		seg, rerr := recoverSegment(p.dir, base, s.opts, false, false)
		if rerr != nil {
			seg, rerr = recoverSegment(p.dir, base, s.opts, true, false)
		}
		if rerr != nil {
			// The new log is in place; the next start recovers it (the
			// marker stays). Until then the old segments serve reads.
			err = rerr
			break
		}
		old := p.segs[i : i+len(g.segs)]
		seg.created = old[0].created
		seg.cloud = catalog.Segment{SegmentID: newSegmentID()}
		s.files.adopt(seg)
		d := done{g: g, old: append([]*segment(nil), old...)}
		for _, o := range old {
			// The cloud pointer is all the tier needs (p.record would
			// read the segment here, on the produce path).
			r := o.cloud
			r.Topic, r.Partition, r.BaseOffset, r.EndOffset = p.topic, p.id, o.base, o.next
			d.oldRecs = append(d.oldRecs, r)
			s.files.forget(o)
		}
		segsAfter := append([]*segment{seg}, p.segs[i+len(g.segs):]...)
		p.segs = append(p.segs[:i], segsAfter...)
		d.rec = p.record(seg, catalog.StateSealed)
		if perr := s.opts.Catalog.PutSegmentUnsynced(d.rec); perr != nil && err == nil {
			err = perr
		}
		dones = append(dones, d)
	}
	if len(dones) == 0 {
		return err
	}
	tier := s.opts.Tier
	topic, id, dir, log := p.topic, p.id, p.dir, s.opts.Logger
	s.later(func() {
		if serr := syncDir(dir); serr != nil {
			log.Error("cleaner: syncing the directory after a swap; the next start finishes it", "dir", dir, "err", serr)
			return
		}
		if serr := s.opts.Catalog.Sync(); serr != nil {
			log.Error("cleaner: catalog sync after a swap; the next start finishes it", "dir", dir, "err", serr)
			return
		}
		for _, d := range dones {
			for k, o := range d.old {
				if k == 0 {
					o.closeFiles() // its paths are the new segment's now
					continue
				}
				if derr := s.opts.Catalog.DeleteSegment(topic, id, o.base); derr != nil {
					log.Error("cleaner: dropping a replaced segment's record; the next start finishes it", "segment", o.logPath, "err", derr)
					return
				}
				if rerr := o.remove(); rerr != nil {
					log.Warn("cleaner: removing a replaced segment", "segment", o.logPath, "err", rerr)
				}
			}
		}
		if serr := syncDir(dir); serr != nil {
			log.Error("cleaner: syncing the directory after removing replaced segments", "dir", dir, "err", serr)
			return
		}
		for _, d := range dones {
			_ = os.Remove(d.g.marker)
		}
		if werr := writeFileSynced(filepath.Join(dir, cleanerCheckpoint), []byte(strconv.FormatInt(end, 10))); werr != nil {
			log.Warn("cleaner: writing the checkpoint; the next pass cleans again", "err", werr)
		}
		for _, d := range dones {
			c.removed.Add(d.g.removed)
			if tier != nil {
				tier.Sealed(d.rec)
				for _, r := range d.oldRecs {
					if r.ObjectKey != "" {
						replaced(s, r)
					}
				}
			}
		}
		c.cleanings.Add(1)
		log.Info("log cleaned", "topic", topic, "partition", id, "groups", len(dones), "cleaned_to", end)
	})
	return err
}

// replaced hands the tier a cloud copy the cleaner made obsolete.
func replaced(s *shard, r catalog.Segment) {
	if rt, ok := s.opts.Tier.(ReplacedTier); ok {
		rt.Replaced(r)
		return
	}
	s.opts.Logger.Warn("a compacted segment's old objects stay until `tier gc`", "topic", r.Topic, "partition", r.Partition,
		"object", r.ObjectKey)
}

// finishCleanerSwaps settles, at load, what a crash left of the cleaner's
// work in p.dir (doc.go, "Compaction"), before the segments are read, and
// returns the catalog records to load with.
func finishCleanerSwaps(s *shard, p *partition, recs []catalog.Segment) ([]catalog.Segment, error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return recs, err
	}
	markers := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, swapSuffix) && len(name) == 20+len(swapSuffix) {
			if b, err := strconv.ParseInt(name[:20], 10, 64); err == nil {
				markers[b] = true
			}
		}
	}
	changed := false
	for base := range markers {
		basePath := filepath.Join(p.dir, segmentName(base))
		marker := basePath + swapSuffix
		logPath, idxPath, tidxPath := segmentPaths(p.dir, base)
		// The marker was complete and synced before any rename, so a
		// .cleaned log still there means the swap never happened.
		_, cerr := os.Stat(logPath + cleanedSuffix)
		committed := errors.Is(cerr, os.ErrNotExist)
		replacedBases, mErr := parseMarker(marker)
		if mErr != nil {
			committed = false
		}
		// Either way the base segment's indexes may not match its log.
		for _, f := range []string{idxPath, tidxPath, idxPath + cleanedSuffix, tidxPath + cleanedSuffix, logPath + cleanedSuffix} {
			_ = os.Remove(f)
		}
		if committed {
			s.opts.Logger.Info("finishing a log cleaner swap interrupted by a crash", "topic", p.topic, "partition", p.id, "base", base)
			gone := map[int64]bool{}
			for _, b := range replacedBases {
				if b != base {
					removeSegmentFiles(p.dir, b)
					gone[b] = true
				}
			}
			kept := recs[:0]
			for _, r := range recs {
				switch {
				case gone[r.BaseOffset]:
					if err := s.opts.Catalog.DeleteSegment(p.topic, p.id, r.BaseOffset); err != nil {
						return recs, err
					}
					if r.ObjectKey != "" && s.opts.Tier != nil {
						replaced(s, r)
					}
					continue
				case r.BaseOffset == base && r.ObjectKey != "" && r.State != catalog.StateRemote:
					// The record may still name the old copy's objects.
					if s.opts.Tier != nil {
						replaced(s, r)
					}
					r = catalog.Segment{Topic: r.Topic, Partition: r.Partition, BaseOffset: r.BaseOffset, EndOffset: r.EndOffset,
						State: catalog.StateSealed, LocalPath: r.LocalPath, MinTimestamp: -1, MaxTimestamp: -1, SegmentID: newSegmentID()}
					if err := s.opts.Catalog.PutSegment(r); err != nil {
						return recs, err
					}
				}
				kept = append(kept, r)
			}
			recs = kept
		}
		changed = true
		if err := syncDir(p.dir); err != nil {
			return recs, err
		}
		_ = os.Remove(marker)
	}
	// .cleaned files without a marker: a pass that never reached its swap.
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), cleanedSuffix) {
			_ = os.Remove(filepath.Join(p.dir, e.Name()))
			changed = true
		}
	}
	if changed {
		return recs, syncDir(p.dir)
	}
	return recs, nil
}

func parseMarker(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "replaced" {
			continue
		}
		for _, x := range f[1:] {
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("marker %s: %q", path, x)
			}
			bases = append(bases, n)
		}
		return bases, nil
	}
	return nil, fmt.Errorf("marker %s names no segment", path)
}
