package logstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
)

// partition is one topic-partition's log. All fields belong to the owning
// shard goroutine, except failed, which its writeback goroutine sets.
type partition struct {
	topic string
	id    int32
	dir   string
	cfg   PartitionConfig

	segs     []*segment // ascending; the last one is active
	logStart int64
	hw       int64 // high watermark: offsets below it are durable and readable
	// durableEnd is the end of the local log the flush policy has made
	// durable. Without a role (rep nil) it is the high watermark; a
	// leader's high watermark also waits for its in-sync followers.
	durableEnd int64

	// notify is closed when the high watermark moves; it is made only when
	// a fetcher waits, so appends without waiters do no channel work.
	notify chan struct{}
	// appendNotify is closed on every append, for follower fetches: they
	// read to the log end, so a high watermark move is too late for them
	// (it waits for them). Consumers never wait on it, so an append gives
	// them no wakeup the high watermark has not earned.
	appendNotify chan struct{}

	// rep is the partition's replication state; nil for a standalone
	// partition, which keeps the single-copy fast paths (replica.go).
	rep *replica
	// epochs is the leader-epoch cache, oldest first (epochs.go).
	epochs []epochEntry
	// truncGen counts truncations: a sync started before one must not
	// raise the durable end over bytes it removed.
	truncGen uint32
	// hwPos caches where the high watermark lies in the log, for
	// consumer reads when it trails the durable end (a leader waiting for
	// its followers).
	hwPos hwPosition

	// Flush bookkeeping for interval/always.
	dirty    bool // bytes written since the last sync was requested
	waitAcks []*request
	remote   []catalog.Segment // cold-tier segment records below the local log
	deleted  bool

	// loadNotes are tier notifications found during recovery, sent once
	// the partition is registered.
	loadNotes []tierNote

	// producers is the idempotent-producer state (producer.go).
	producers map[int64]*producerState
	// txn is the transaction state: open and aborted transactions (txn.go).
	txn txnState

	// Paced writeback's view of the readers (writeback.go): the lowest read
	// since the last step, and the hold it refreshes.
	fresh, hold readHold

	// failed is set, once, when a write of the log did not reach the disk
	// (writeback or fdatasync reported an error); produce then fails with
	// it. The kernel reports such an error once and marks the pages
	// clean, so a later sync that succeeds says nothing of the bytes lost:
	// going on would acknowledge records on top of a hole. Kafka takes the
	// log directory offline for the same reason. A restart recovers the
	// log from what the disk holds.
	failed atomic.Pointer[error]
}

func partitionDir(root, topic string, id int32) string {
	return filepath.Join(root, "logs", fmt.Sprintf("%s-%d", topic, id))
}

func (p *partition) active() *segment { return p.segs[len(p.segs)-1] }

// leo is the log end offset: the next offset to assign.
func (p *partition) leo() int64 { return p.active().next }

func (p *partition) size() int64 {
	var n int64
	for _, s := range p.segs {
		n += s.size
	}
	return n
}

func encodeConfig(c PartitionConfig) []byte {
	b, _ := json.Marshal(c)
	return b
}

func decodeConfig(b []byte, d PartitionConfig) PartitionConfig {
	var c PartitionConfig
	if len(b) > 0 {
		_ = json.Unmarshal(b, &c)
	}
	return c.withDefaults(d)
}

// createPartition makes the partition's directory, catalog record and first
// segment. The catalog is written first: a crash before the files exist
// leaves a record that load() completes; a crash after leaves nothing stray.
// The record is written unsynced: the shard syncs the catalog once for the
// creates it handled together before it acknowledges them (ackCreates).
//
// A create that fails after the record is written takes the record and the
// directory back out: a half-made partition must not stay for every later
// start to trip over.
func createPartition(s *shard, topic string, id int32, cfg PartitionConfig) (*partition, error) {
	opts := s.opts
	if err := s.budget.admit(topic, id); err != nil {
		return nil, err
	}
	p := &partition{topic: topic, id: id, dir: partitionDir(opts.Dir, topic, id), cfg: cfg.withDefaults(opts.Defaults),
		fresh: readHold{base: -1}, hold: readHold{base: -1}}
	if err := opts.Catalog.PutPartitionUnsynced(catalog.Partition{Topic: topic, Partition: id, Config: encodeConfig(p.cfg),
		CreatedAt: time.Now().UnixNano()}); err != nil {
		return nil, err
	}
	err := os.MkdirAll(p.dir, 0o755)
	if err == nil {
		err = p.roll(s, 0)
	}
	if err != nil {
		p.close()
		if derr := opts.Catalog.DeletePartition(topic, id); derr != nil {
			// Open completes a partition whose record has no files.
			opts.Logger.Warn("undoing a failed partition create", "topic", topic, "partition", id, "err", derr)
		} else {
			_ = os.RemoveAll(p.dir)
		}
		return nil, fmt.Errorf("create %s/%d: %w", topic, id, err)
	}
	return p, nil
}

// roll seals the active segment (if any) and starts a new one at base.
func (p *partition) roll(s *shard, base int64) error {
	opts := s.opts
	if f := p.failed.Load(); f != nil {
		return *f // its active segment is neither sealed nor uploaded
	}
	if len(p.segs) > 0 {
		old := p.active()
		if opts.Flush == FlushNone {
			// Other policies sync the old segment below.
			if j, ok := p.finalWriteback(old); ok {
				s.queueWriteback(p, old, j)
			}
		}
		if opts.Flush != FlushNone && old.durable < old.size {
			// The old segment's tail must be durable before the new one
			// takes writes, or a later sync of the new file would advance
			// the high watermark over unsynced bytes.
			if err := old.syncData(); err != nil {
				// Not retried by the next produce: that sync would succeed
				// with the bytes lost (see partition.failed).
				s.failStorage(p, fmt.Errorf("sync %s before roll: %w", old.logPath, err))
				return *p.failed.Load()
			}
			old.durable = old.size
			p.advanceDurable(old.next)
		}
		shrinks, err := old.sealLater()
		// The shrinks run as a chore even on error: each owns a descriptor.
		chore := rollChore{shrinks: shrinks}
		if err != nil {
			s.later(chore.run(s))
			return err
		}
		if old.cloud.SegmentID == "" {
			// Fixed at seal and kept in the catalog, so an upload resumed
			// after a crash reuses the same object name.
			old.cloud.SegmentID = newSegmentID()
		}
		rec := p.record(old, sealedState(old))
		// Unsynced: the chore syncs the catalog, off the produce path, and
		// only then tells tierd, so that no object is named after a record
		// a crash could lose. A lost record is harmless: recovery adopts
		// the files and reseals the segment.
		if err := opts.Catalog.PutSegmentUnsynced(rec); err != nil {
			s.later(chore.run(s))
			return err
		}
		if opts.Tier != nil && rec.ObjectKey == "" {
			chore.sealed = &rec
		}
		chore.snapshotPath, chore.snapshot = p.producerSnapshot(base)
		s.later(chore.run(s))
	}
	logPath, _, _ := segmentPaths(p.dir, base)
	if err := opts.Catalog.PutSegmentUnsynced(catalog.Segment{Topic: p.topic, Partition: p.id, BaseOffset: base,
		EndOffset: base, State: catalog.StateActive, LocalPath: logPath, MinTimestamp: -1, MaxTimestamp: -1}); err != nil {
		return err
	}
	seg, err := createSegment(p.dir, base, opts)
	if err != nil {
		return err
	}
	s.files.adopt(seg)
	p.segs = append(p.segs, seg)
	return nil
}

// rollChore is a roll's work off the shard goroutine, in this order:
// shrink the sealed indexes (before tierd stages the files), make the
// catalog durable, then queue the upload; the producer snapshot last.
type rollChore struct {
	shrinks      []indexShrink
	sealed       *catalog.Segment // for tierd, nil when not tiering
	snapshotPath string           // "" when there is no producer state
	snapshot     []byte
}

func (c rollChore) run(s *shard) func() {
	return func() {
		log := s.opts.Logger
		for _, j := range c.shrinks {
			if err := j.run(); err != nil {
				s.limiter.Log(log, slog.LevelWarn, "shrink", "shrinking a sealed index", "err", err)
			}
		}
		if c.sealed != nil {
			if err := s.opts.Catalog.Sync(); err != nil {
				// Not queued: tierd's rescan at the next start finds the
				// segment sealed and not uploaded.
				s.limiter.Log(log, slog.LevelError, "roll-sync", "catalog sync after roll; upload deferred to the next start",
					"err", err)
			} else {
				s.opts.Tier.Sealed(*c.sealed)
			}
		}
		if c.snapshotPath != "" {
			if err := writeSnapshot(c.snapshotPath, c.snapshot); err != nil {
				// Without the snapshot recovery rescans older segments;
				// slower, not wrong.
				s.limiter.Log(log, slog.LevelWarn, "snapshot", "writing producer snapshot", "path", c.snapshotPath, "err", err)
			}
		}
	}
}

func (p *partition) record(seg *segment, st catalog.State) catalog.Segment {
	c := seg.cloud
	rec := catalog.Segment{Topic: p.topic, Partition: p.id, BaseOffset: seg.base, EndOffset: seg.next,
		Bytes: seg.size, MinTimestamp: seg.minTs, MaxTimestamp: seg.maxTs, State: st, LocalPath: seg.logPath,
		SegmentID: c.SegmentID, ObjectKey: c.ObjectKey, ObjectSize: c.ObjectSize, Checksum: c.Checksum,
		ETag: c.ETag, Epoch: c.Epoch, UploadedAt: c.UploadedAt}
	switch st {
	case catalog.StateSealed, catalog.StateLocalRemote, catalog.StateRemote:
		// Kept for ListOffsets(MAX_TIMESTAMP) once the segment is only in
		// the cold tier, where finding the record would mean a read.
		var scratch [BatchHeaderSize]byte
		if off, err := seg.exactMaxTsOffset(scratch[:]); err == nil && off >= 0 {
			rec.SetMaxTimestampOffset(off)
		} else if off, ok := c.MaxTimestampOffset(); ok {
			rec.SetMaxTimestampOffset(off)
		}
	}
	return rec
}

// sealedState is the catalog state of a sealed local segment.
func sealedState(seg *segment) catalog.State {
	if seg.cloud.ObjectKey != "" {
		return catalog.StateLocalRemote
	}
	return catalog.StateSealed
}

// loadPartition recovers a partition from its directory and reconciles it
// with the catalog:
//   - a catalog record marked deleting: finish the deletion;
//   - a local record whose files are gone: dropped (or kept as remote when
//     it has a cloud pointer);
//   - a log file without a record: adopted, since losing data is worse than
//     keeping a stray;
//   - the last segment is always fully scanned: torn tails are truncated
//     and indexes rebuilt; sealed segments have their indexes validated.
func loadPartition(s *shard, meta catalog.Partition) (*partition, error) {
	opts := s.opts
	p := &partition{topic: meta.Topic, id: meta.Partition, dir: partitionDir(opts.Dir, meta.Topic, meta.Partition),
		cfg: decodeConfig(meta.Config, opts.Defaults), logStart: meta.LogStartOffset,
		fresh: readHold{base: -1}, hold: readHold{base: -1}}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	recs, err := opts.Catalog.Segments(p.topic, p.id)
	if err != nil {
		return nil, err
	}
	if recs, err = finishCleanerSwaps(s, p, recs); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	onDisk := map[int64]bool{}
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok {
			onDisk[base] = true
		}
	}
	byBase := map[int64]catalog.Segment{}
	for _, r := range recs {
		switch {
		case r.State == catalog.StateDeleting:
			removeSegmentFiles(p.dir, r.BaseOffset)
			delete(onDisk, r.BaseOffset)
			if r.ObjectKey != "" {
				// The remote copy may still exist: the record stays until
				// tierd reports the objects gone.
				p.loadNotes = append(p.loadNotes, tierNote{rec: r, delete: true})
				continue
			}
			if err := opts.Catalog.DeleteSegment(p.topic, p.id, r.BaseOffset); err != nil {
				return nil, err
			}
		case r.State == catalog.StateRemote:
			if onDisk[r.BaseOffset] {
				// An eviction was interrupted after the catalog moved on.
				removeSegmentFiles(p.dir, r.BaseOffset)
				delete(onDisk, r.BaseOffset)
			}
			p.remote = append(p.remote, r)
		case !onDisk[r.BaseOffset]:
			if r.ObjectKey != "" {
				r.State = catalog.StateRemote
				r.LocalPath = ""
				if err := opts.Catalog.PutSegment(r); err != nil {
					return nil, err
				}
				p.remote = append(p.remote, r)
				continue
			}
			opts.Logger.Error("segment in catalog has no local file and no cloud copy; dropping record",
				"topic", p.topic, "partition", p.id, "base", r.BaseOffset)
			if err := opts.Catalog.DeleteSegment(p.topic, p.id, r.BaseOffset); err != nil {
				return nil, err
			}
		default:
			byBase[r.BaseOffset] = r
		}
	}
	bases := make([]int64, 0, len(onDisk))
	for b := range onDisk {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for i, base := range bases {
		last := i == len(bases)-1
		r, known := byBase[base]
		full := last || !known || r.State == catalog.StateActive
		seg, err := recoverSegment(p.dir, base, opts, full, last)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("recover %s/%d segment %d: %w", p.topic, p.id, base, err)
		}
		s.files.adopt(seg)
		if len(p.segs) > 0 && p.segs[len(p.segs)-1].next != seg.base && seg.size > 0 {
			opts.Logger.Warn("gap between segments", "topic", p.topic, "partition", p.id,
				"prev_end", p.segs[len(p.segs)-1].next, "base", seg.base)
		}
		p.segs = append(p.segs, seg)
		if known {
			seg.cloud = r
		}
		st := catalog.StateActive
		if !last {
			st = sealedState(seg)
			if seg.cloud.SegmentID == "" {
				seg.cloud.SegmentID = newSegmentID()
			}
		}
		if !known || r.State != st || r.EndOffset != seg.next || r.Bytes != seg.size {
			// Unsynced: what it records is on disk, so a crash before the
			// load's one sync (shard.load) only makes the next start redo it.
			if err := opts.Catalog.PutSegmentUnsynced(p.record(seg, st)); err != nil {
				p.close()
				return nil, err
			}
		}
		if st == catalog.StateSealed {
			p.loadNotes = append(p.loadNotes, tierNote{rec: p.record(seg, st)})
		}
	}
	if len(p.segs) == 0 {
		base := p.logStart
		if n := len(p.remote); n > 0 && p.remote[n-1].EndOffset > base {
			base = p.remote[n-1].EndOffset
		}
		if err := p.roll(s, base); err != nil {
			return nil, err
		}
	}
	if first := p.earliest(); p.logStart < first {
		p.logStart = first
	}
	// Everything recovered from disk is what survived, so it is the new
	// durable state: the high watermark starts at the log end.
	p.hw = p.leo()
	p.durableEnd = p.hw
	if v, ok := s.hwLoaded[partKey{p.topic, p.id}]; ok && v < p.hw {
		// A cluster store's log end may hold records never committed
		// (hwcheckpoint.go).
		p.hw = max(v, p.logStart)
	}
	if err := p.loadEpochs(s); err != nil {
		p.close()
		return nil, err
	}
	if p.rebuildProducers(opts) {
		// The log holds epochs a crash kept from the checkpoint.
		if err := writeFileSynced(epochCheckpointPath(p.dir), encodeEpochs(p.epochs)); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// earliest is the first offset held anywhere (cold tier or local).
func (p *partition) earliest() int64 {
	if len(p.remote) > 0 {
		return p.remote[0].BaseOffset
	}
	return p.segs[0].base
}

func removeSegmentFiles(dir string, base int64) {
	l, i, t := segmentPaths(dir, base)
	for _, f := range []string{l, i, t} {
		_ = os.Remove(f)
	}
}

// advanceDurable notes that the local log is durable up to end and moves
// the high watermark as far as that lets it.
func (p *partition) advanceDurable(end int64) {
	if end > p.durableEnd {
		p.durableEnd = end
	}
	p.updateHW()
}

// updateHW moves the high watermark to where the durable end and, for a
// leader, its in-sync followers let it, and wakes long-polling fetchers. It
// never moves it back; only a truncation, or a follower taking a lower
// high watermark from its leader (followLeaderHW), does.
func (p *partition) updateHW() {
	hw := p.durableEnd
	if p.rep != nil {
		hw = p.rep.capHW(hw)
	}
	if hw <= p.hw {
		return
	}
	p.hw = hw
	if p.notify != nil {
		close(p.notify)
		p.notify = nil
	}
}

// waitChan returns the channel closed on the next high watermark move.
func (p *partition) waitChan() chan struct{} {
	if p.notify == nil {
		p.notify = make(chan struct{})
	}
	return p.notify
}

// segmentFor returns the local segment holding offset, or nil when the
// offset is below the local log.
func (p *partition) segmentFor(offset int64) *segment {
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].base > offset }) - 1
	if i < 0 {
		return nil
	}
	return p.segs[i]
}

// deleteOldest removes local sealed segments, oldest first, until keep
// says stop. The catalog marks each as deleting before its files go, so a
// crash in between is finished by load(). A segment with a cloud copy keeps
// its record (still marked deleting) until tierd reports the objects gone.
func (p *partition) deleteOldest(s *shard, keep func(seg *segment, remaining int64) bool) (int, error) {
	var gone []*segment
	var recs []catalog.Segment
	total := p.size() + p.remoteBytes()
	var err error
	for len(p.segs) > 1 && len(p.remote) == 0 {
		seg := p.segs[0]
		if keep(seg, total) {
			break
		}
		// Marked deleting, unsynced here: the chore syncs the catalog
		// before any file goes, and recovery finishes a deletion whose
		// mark survived (or keeps the segment whose mark did not).
		rec := p.record(seg, catalog.StateDeleting)
		if err = s.opts.Catalog.PutSegmentUnsynced(rec); err != nil {
			break
		}
		total -= seg.size
		p.segs[0] = nil
		p.segs = p.segs[1:]
		gone = append(gone, seg)
		recs = append(recs, rec)
	}
	if len(gone) > 0 {
		s.removeLater(p.dir, p.segs[0].base, gone, recs)
	}
	return len(gone), errors.Join(err, p.raiseLogStart(s))
}

// removeLater hands segments taken out of a partition to the chore
// goroutine. Once the records that say so (remote for an eviction,
// deleting for a deletion) are durable, it removes their files; a deletion
// (recs given) then drops the records, or asks tierd to delete their
// objects first. Snapshots below first go too.
func (s *shard) removeLater(dir string, first int64, gone []*segment, recs []catalog.Segment) {
	for _, seg := range gone {
		s.files.forget(seg) // the chore goroutine closes it, outside the cache
	}
	s.later(func() {
		log := s.opts.Logger
		if err := s.opts.Catalog.Sync(); err != nil {
			// Keep the files: the next start reconciles them with whichever
			// record survived.
			s.limiter.Log(log, slog.LevelError, "remove-sync", "catalog sync before removing segment files; files kept",
				"err", err)
			for _, seg := range gone {
				seg.closeFiles()
			}
			return
		}
		for i, seg := range gone {
			if err := seg.remove(); err != nil {
				s.limiter.Log(log, slog.LevelWarn, "remove", "removing segment files", "segment", seg.logPath, "err", err)
			}
			switch {
			case recs == nil:
			case recs[i].ObjectKey != "":
				s.deleteRemote(recs[i])
			default:
				if err := s.opts.Catalog.DeleteSegment(recs[i].Topic, recs[i].Partition, recs[i].BaseOffset); err != nil {
					// The deleting mark stays; the next start finishes it.
					s.limiter.Log(log, slog.LevelWarn, "drop-record", "dropping the record of a deleted segment",
						"segment", seg.logPath, "err", err)
				}
			}
		}
		pruneSnapshots(dir, first)
	})
}

// dropRemoteOldest deletes cold-tier segments, oldest first, while drop
// says so: the record is marked deleting and tierd is asked to delete the
// objects.
func (p *partition) dropRemoteOldest(s *shard, drop func(r *catalog.Segment, remaining int64) bool) (int, error) {
	removed := 0
	total := p.size() + p.remoteBytes()
	for len(p.remote) > 0 {
		r := p.remote[0]
		if !drop(&r, total) {
			break
		}
		r.State = catalog.StateDeleting
		if err := s.opts.Catalog.PutSegment(r); err != nil {
			return removed, err
		}
		s.deleteRemote(r)
		total -= r.Bytes
		p.remote = p.remote[1:]
		removed++
	}
	return removed, p.raiseLogStart(s)
}

// raiseLogStart moves the log start offset up to the first offset still
// held anywhere, and persists it.
func (p *partition) raiseLogStart(s *shard) error {
	if first := p.earliest(); p.logStart < first {
		p.logStart = first
		return s.opts.Catalog.SetLogStart(p.topic, p.id, p.logStart)
	}
	return nil
}

func (p *partition) remoteBytes() int64 {
	var n int64
	for i := range p.remote {
		n += p.remote[i].Bytes
	}
	return n
}

// expired applies retention.ms / retention.bytes (or their local.*
// counterparts) to a segment ending at next, with maxTs, given the bytes
// held from it onwards (total).
func expired(next, size, maxTs int64, created time.Time, total int64, logStart int64,
	retBytes int64, retMs time.Duration, now time.Time) bool {
	if next <= logStart {
		return true
	}
	if retBytes >= 0 && total-size >= retBytes {
		return true
	}
	if retMs >= 0 {
		if maxTs < 0 {
			maxTs = created.UnixMilli()
		}
		if now.UnixMilli()-maxTs > retMs.Milliseconds() {
			return true
		}
	}
	return false
}

// applyRetention enforces retention.ms, retention.bytes and the log start
// offset, first on the cold tier (the oldest data), then on local sealed
// segments; then evicts uploaded local segments past local.retention.*.
// The active segment is never deleted.
func (p *partition) applyRetention(s *shard, now time.Time) (int, error) {
	cfg := p.cfg
	cfg.RetentionBytes = cfg.retentionBytes()
	if !cfg.deletes() {
		// cleanup.policy=compact alone: the cleaner, not retention, bounds
		// the log, as in Kafka.
		cfg.RetentionBytes, cfg.RetentionMs = -1, -1
	}
	n, err := p.dropRemoteOldest(s, func(r *catalog.Segment, total int64) bool {
		return (r.EndOffset <= p.logStart || p.releasable(s, r.EndOffset)) &&
			expired(r.EndOffset, r.Bytes, r.MaxTimestamp, time.Unix(0, r.UploadedAt), total, p.logStart,
				cfg.RetentionBytes, cfg.RetentionMs, now)
	})
	if err != nil {
		return n, err
	}
	m, err := p.deleteOldest(s, func(seg *segment, total int64) bool {
		return seg.next > p.logStart && !p.releasable(s, seg.next) ||
			!expired(seg.next, seg.size, seg.maxTs, seg.created, total, p.logStart,
				cfg.RetentionBytes, cfg.RetentionMs, now)
	})
	if err != nil {
		return n + m, err
	}
	e, err := p.evict(s, now)
	return n + m + e, err
}

// releasable reports whether a segment ending at next may leave the log
// (retention, eviction, compaction) as far as Options.RetentionFloor is
// concerned.
func (p *partition) releasable(s *shard, next int64) bool {
	if s.opts.RetentionFloor == nil {
		return true
	}
	floor, guarded := s.opts.RetentionFloor(p.topic, p.id)
	return !guarded || next <= floor
}

// evict removes the local copy of uploaded sealed segments, oldest first,
// while local.retention.bytes / local.retention.ms say the local log is too
// big or too old; a limit of 0 removes each as soon as it is uploaded.
// Negative limits evict nothing early: -1 is unlimited, and -2 ("as
// retention.*") leaves the segment to retention, which deletes it whole.
func (p *partition) evict(s *shard, now time.Time) (int, error) {
	locBytes, locMs := int64(-1), time.Duration(-1)
	if l := p.cfg.LocalRetentionBytes; l != nil && *l >= 0 {
		locBytes = *l
	}
	if l := p.cfg.LocalRetentionMs; l != nil && *l >= 0 {
		locMs = *l
	}
	if locBytes < 0 && locMs < 0 {
		return 0, nil
	}
	atOnce := locBytes == 0 || locMs == 0
	var gone []*segment
	local := p.size()
	var err error
	for len(p.segs) > 1 {
		seg := p.segs[0]
		if seg.cloud.ObjectKey == "" || !seg.sealed {
			break // not uploaded yet: it must stay, and so must everything after it
		}
		if !p.releasable(s, seg.next) {
			break
		}
		if !atOnce && !expired(seg.next, seg.size, seg.maxTs, seg.created, local, -1, locBytes, locMs, now) {
			break
		}
		rec := p.record(seg, catalog.StateRemote)
		rec.LocalPath = ""
		// The catalog moves first, unsynced here; the chore syncs it before
		// the files go. A crash before the sync leaves the files and a
		// record that still names them (or the remote one, and load()
		// removes the files).
		if err = s.opts.Catalog.PutSegmentUnsynced(rec); err != nil {
			break
		}
		local -= seg.size
		p.segs[0] = nil
		p.segs = p.segs[1:]
		p.remote = append(p.remote, rec)
		gone = append(gone, seg)
	}
	if len(gone) > 0 {
		s.removeLater(p.dir, p.segs[0].base, gone, nil)
	}
	return len(gone), err
}

func (p *partition) close() {
	for _, seg := range p.segs {
		if !seg.sealed && seg.idx != nil {
			_ = seg.idx.trim()
			_ = seg.tidx.trim()
		}
		seg.closeFiles()
	}
	p.segs = nil
	p.wakeAll()
}
