package logstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/catalog"
)

// Truncate drops every record at or above offset (a follower that diverged
// from its new leader). As in Kafka, a batch is kept or dropped whole: an
// offset inside a batch drops that batch too, so the log may end below
// offset. An offset at or past the log end changes nothing; one below the
// log start fails with ErrOffsetOutOfRange, and one below the local log
// (in the cold tier only) or inside a segment already in the cold tier
// with ErrInvalidRequest. The high watermark, the epoch cache and the
// producer state follow, and appends still waiting for the dropped records
// fail with ErrNotLeader.
func (s *Store) Truncate(ctx context.Context, topic string, id int32, offset int64) error {
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		return sh.truncate(p, offset)
	})
}

// truncateHook, when set (tests), is called after each step of a
// truncation with the step's number; returning false stops the truncation
// there, as a crash would.
var truncateHook func(p *partition, step int) bool

// truncate cuts the log in an order that a crash at any point leaves
// valid, and that recovery completes or undoes:
//  1. the producer snapshots above the cut go (a stale one would be read
//     once the log grew past it again);
//  2. the segments above the cut are marked deleting in the catalog, which
//     is synced, then their files and records go (recovery finishes an
//     interrupted deletion);
//  3. the segment holding the cut is truncated and synced, then reopened as
//     the active segment with rebuilt indexes (recovery rescans the last
//     segment anyway);
//  4. the epoch checkpoint is rewritten (recovery drops entries past the
//     log end and adds back those the log's batches carry).
func (s *shard) truncate(p *partition, offset int64) error {
	leo := p.leo()
	switch {
	case offset >= leo:
		return nil
	case offset < p.logStart:
		return fmt.Errorf("%w: truncate %s/%d to %d: below the log start %d", ErrOffsetOutOfRange, p.topic, p.id, offset, p.logStart)
	case offset < p.segs[0].base:
		return fmt.Errorf("%w: truncate %s/%d to %d: below the local log, which starts at %d", ErrInvalidRequest,
			p.topic, p.id, offset, p.segs[0].base)
	}
	if f := p.failed.Load(); f != nil {
		return *f
	}
	i := len(p.segs) - 1
	for p.segs[i].base > offset {
		i--
	}
	t := p.segs[i]
	pos, err := t.findPosition(offset, t.size, s.scratch[:])
	if err != nil {
		return err
	}
	end := t.next
	if pos < t.size {
		h, err := t.readHeader(pos, s.scratch[:])
		if err != nil {
			return err
		}
		end = h.BaseOffset
	}
	for j, seg := range p.segs[i:] {
		if seg.cloud.ObjectKey != "" && (j > 0 || pos < t.size) {
			return fmt.Errorf("%w: truncate %s/%d to %d: segment %d is already in the cold tier", ErrInvalidRequest,
				p.topic, p.id, offset, seg.base)
		}
	}
	// Chores queued before (snapshots, epoch checkpoints) must not land
	// after the files they describe are cut.
	s.drainChores()
	removeSnapshotsAbove(p.dir, end)
	if truncateHook != nil && !truncateHook(p, 1) {
		return errTruncateStopped
	}

	above := p.segs[i+1:]
	for _, seg := range above {
		if err := s.opts.Catalog.PutSegmentUnsynced(p.record(seg, catalog.StateDeleting)); err != nil {
			return fmt.Errorf("truncate %s/%d: %w", p.topic, p.id, err)
		}
	}
	if len(above) > 0 {
		if err := s.opts.Catalog.Sync(); err != nil {
			return fmt.Errorf("truncate %s/%d: %w", p.topic, p.id, err)
		}
	}
	if truncateHook != nil && !truncateHook(p, 2) {
		return errTruncateStopped
	}
	p.truncGen++ // from here on a sync in flight describes a log that is gone
	for k, seg := range above {
		if err := seg.remove(); err != nil {
			s.logLimited("remove", "removing a truncated segment's files", "segment", seg.logPath, "err", err)
		}
		if err := s.opts.Catalog.DeleteSegment(p.topic, p.id, seg.base); err != nil {
			// The deleting mark stays; the next start finishes it.
			s.logLimited("drop-record", "dropping the record of a truncated segment", "segment", seg.logPath, "err", err)
		}
		above[k] = nil
	}
	p.segs = p.segs[:i+1]

	if pos == t.size {
		// The cut falls past the end of a sealed segment, in a gap before
		// the next: it stays whole, with its cloud pointer if it has one
		// (reopened, it would be uploaded again under a new name), and a
		// new active segment starts after it. The roll snapshots the producer state, which
		// must first forget the batches above.
		p.producers = nil
		p.rebuildProducers(s.opts)
		if err := p.roll(s, t.next); err != nil {
			s.failStorage(p, fmt.Errorf("new segment at %d after truncating: %w", t.next, err))
			return *p.failed.Load()
		}
	} else {
		if err := cutSegmentFile(t.logPath, pos); err != nil {
			s.failStorage(p, err)
			return *p.failed.Load()
		}
		if truncateHook != nil && !truncateHook(p, 3) {
			return errTruncateStopped
		}
		t.closeFiles()
		nt, err := recoverSegment(p.dir, t.base, s.opts, true, true)
		if err != nil {
			// The log is cut but could not be reopened: refuse produce
			// until a restart recovers it.
			s.failStorage(p, fmt.Errorf("reopen %s after truncating it: %w", t.logPath, err))
			return *p.failed.Load()
		}
		s.files.adopt(nt)
		p.segs[i] = nt
	}
	newEnd := p.leo()
	if err := s.opts.Catalog.PutSegment(p.record(p.active(), catalog.StateActive)); err != nil {
		// Recovery reconciles the record with the file.
		s.logLimited("truncate-record", "recording a truncated segment", "segment", p.active().logPath, "err", err)
	}

	p.durableEnd = newEnd
	p.hw = min(p.hw, newEnd)
	p.hwPos = hwPosition{}
	if p.truncateEpochs(newEnd) {
		if err := writeFileSynced(epochCheckpointPath(p.dir), encodeEpochs(p.epochs)); err != nil {
			s.logLimited("epoch-checkpoint", "writing the leader-epoch checkpoint", "partition", p.dir, "err", err)
		}
	}
	p.producers = nil
	p.rebuildProducers(s.opts)
	s.failWaiters(p, newEnd, fmt.Errorf("%w: %s/%d was truncated to %d under this append", ErrNotLeader, p.topic, p.id, newEnd))
	p.wakeAll()
	s.opts.Logger.Info("log truncated", "topic", p.topic, "partition", p.id, "to", newEnd, "asked", offset, "log_end_was", leo)
	return nil
}

var errTruncateStopped = fmt.Errorf("%w: truncation stopped by a test hook", ErrInvalidRequest)

// cutSegmentFile truncates a log file to size and makes that durable.
func cutSegmentFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("truncate %s to %d bytes: %w", path, size, err)
	}
	return nil
}

// removeSnapshotsAbove removes the producer snapshots of dir taken after
// offset end: they describe batches a truncation removes.
func removeSnapshotsAbove(dir string, end int64) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".snapshot") || len(name) != 29 {
			continue
		}
		if base, err := strconv.ParseInt(name[:20], 10, 64); err == nil && base > end {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}

// TruncateFully drops the whole local log and starts it again, empty, at
// offset, which becomes the log start (Kafka's truncateFullyAndStartAt): a
// follower whose leader's log now starts past its own log end (retention
// deleted what the follower lacks, so its fetches fail with
// ErrOffsetOutOfRange) starts over at the leader's log start. The producer
// state and the epoch cache go with the records. A leader's log, and one
// with segments in the cold tier, are refused with ErrInvalidRequest.
func (s *Store) TruncateFully(ctx context.Context, topic string, id int32, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start offset %d", ErrInvalidRequest, offset)
	}
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		return sh.truncateFully(p, offset)
	})
}

// truncateFully orders its steps as truncate does: the epoch checkpoint
// and snapshots go first, then the segments are marked deleting and the
// new log start recorded with one catalog sync, and only then do files
// go. Recovery after a crash in between finishes the deletion and starts
// the log at the recorded log start.
func (s *shard) truncateFully(p *partition, offset int64) error {
	if p.rep != nil && p.rep.role == RoleLeader {
		return fmt.Errorf("%w: %s/%d is led by this store; only a replica that follows starts over", ErrInvalidRequest, p.topic, p.id)
	}
	if len(p.remote) > 0 {
		return fmt.Errorf("%w: %s/%d has segments in the cold tier below its local log", ErrInvalidRequest, p.topic, p.id)
	}
	for _, seg := range p.segs {
		if seg.cloud.ObjectKey != "" {
			return fmt.Errorf("%w: %s/%d segment %d is in the cold tier", ErrInvalidRequest, p.topic, p.id, seg.base)
		}
	}
	if f := p.failed.Load(); f != nil {
		return *f
	}
	leo := p.leo()
	s.drainChores()
	p.epochs = nil
	if err := writeFileSynced(epochCheckpointPath(p.dir), encodeEpochs(nil)); err != nil {
		return fmt.Errorf("truncate %s/%d fully: %w", p.topic, p.id, err)
	}
	removeSnapshotsAbove(p.dir, -1)
	for _, seg := range p.segs {
		if err := s.opts.Catalog.PutSegmentUnsynced(p.record(seg, catalog.StateDeleting)); err != nil {
			return fmt.Errorf("truncate %s/%d fully: %w", p.topic, p.id, err)
		}
	}
	if err := s.opts.Catalog.SetLogStart(p.topic, p.id, offset); err != nil { // synced: covers the marks
		return fmt.Errorf("truncate %s/%d fully: %w", p.topic, p.id, err)
	}
	if truncateHook != nil && !truncateHook(p, 2) {
		return errTruncateStopped
	}
	p.truncGen++
	for i, seg := range p.segs {
		if err := seg.remove(); err != nil {
			s.logLimited("remove", "removing a truncated segment's files", "segment", seg.logPath, "err", err)
		}
		if err := s.opts.Catalog.DeleteSegment(p.topic, p.id, seg.base); err != nil {
			s.logLimited("drop-record", "dropping the record of a truncated segment", "segment", seg.logPath, "err", err)
		}
		p.segs[i] = nil
	}
	p.segs = p.segs[:0]
	if err := p.roll(s, offset); err != nil {
		// Recovery starts the log at the recorded log start.
		err = fmt.Errorf("%w: truncate %s/%d fully: new segment at %d: %w", ErrStorage, p.topic, p.id, offset, err)
		s.failStorage(p, err)
		return err
	}
	if err := s.opts.Catalog.Sync(); err != nil {
		s.logLimited("truncate-record", "recording a truncated partition's new segment", "partition", p.dir, "err", err)
	}
	p.logStart = offset
	p.durableEnd, p.hw = offset, offset
	p.hwPos = hwPosition{}
	p.producers = nil
	p.txn = txnState{}
	for _, r := range p.waitAcks {
		r.finish(fmt.Errorf("%w: %s/%d was truncated under this append", ErrNotLeader, p.topic, p.id))
	}
	clear(p.waitAcks)
	p.waitAcks = p.waitAcks[:0]
	p.wakeAll()
	s.opts.Logger.Info("log truncated fully", "topic", p.topic, "partition", p.id, "start", offset, "log_end_was", leo)
	return nil
}
