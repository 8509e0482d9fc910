package logstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aerostream/aerostream/catalog"
)

// This file is the store's side of tiering. tierd does the I/O (upload,
// delete, download); the shard that owns a partition stays the only writer
// of its catalog records and files, so tierd reports back through these
// methods instead of touching the catalog itself.

// ErrUnknownSegment: a tier callback names a segment the partition does not
// hold in the expected state.
var ErrUnknownSegment = fmt.Errorf("%w: unknown segment", ErrInvalidRequest)

// tierNote is a notification found during recovery: an upload to resume or
// a remote deletion to finish.
type tierNote struct {
	rec    catalog.Segment
	delete bool
}

func newSegmentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *shard) deleteRemote(rec catalog.Segment) {
	if s.opts.Tier != nil {
		s.opts.Tier.DeleteRemote(rec)
		return
	}
	s.opts.Logger.Warn("segment has a cloud copy but no tier is configured; its objects stay until `tier gc`",
		"topic", rec.Topic, "partition", rec.Partition, "base", rec.BaseOffset, "object", rec.ObjectKey)
}

// sendLoadNotes replays what recovery found to the tier.
func (s *shard) sendLoadNotes(p *partition) {
	notes := p.loadNotes
	p.loadNotes = nil
	if s.opts.Tier == nil {
		return
	}
	for _, n := range notes {
		if n.delete {
			s.opts.Tier.DeleteRemote(n.rec)
		} else {
			s.opts.Tier.Sealed(n.rec)
		}
	}
}

// onShard runs fn on the shard goroutine that owns the partition.
func (s *Store) onShard(ctx context.Context, topic string, partition int32, fn func(sh *shard, p *partition) error) error {
	if err := validName(topic, partition); err != nil {
		return err
	}
	r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
	var ferr error
	r.hook = func(sh *shard) {
		p, err := sh.lookup(topic, partition)
		if err != nil {
			ferr = err
			return
		}
		ferr = fn(sh, p)
	}
	if err := s.call(ctx, s.shardFor(topic, partition), r); err != nil {
		return err
	}
	return ferr
}

// SetRemote records a completed, verified upload: rec carries the cloud
// pointer (SegmentID, ObjectKey, ObjectSize, Checksum, ETag, UploadedAt) of
// a sealed local segment, which becomes local+remote and may be evicted
// under local.retention.*.
func (s *Store) SetRemote(ctx context.Context, rec catalog.Segment) error {
	return s.onShard(ctx, rec.Topic, rec.Partition, func(sh *shard, p *partition) error {
		for _, seg := range p.segs {
			if seg.base != rec.BaseOffset {
				continue
			}
			if !seg.sealed || seg.next != rec.EndOffset || seg.size != rec.Bytes {
				return fmt.Errorf("%w: %s/%d segment %d changed since it was sealed", ErrUnknownSegment, p.topic, p.id, seg.base)
			}
			if seg.cloud.SegmentID != "" && rec.SegmentID != seg.cloud.SegmentID {
				return fmt.Errorf("%w: %s/%d segment %d has id %s, upload named %s", ErrUnknownSegment,
					p.topic, p.id, seg.base, seg.cloud.SegmentID, rec.SegmentID)
			}
			seg.cloud.SegmentID, seg.cloud.ObjectKey, seg.cloud.ObjectSize = rec.SegmentID, rec.ObjectKey, rec.ObjectSize
			seg.cloud.Checksum, seg.cloud.ETag, seg.cloud.Epoch, seg.cloud.UploadedAt = rec.Checksum, rec.ETag, rec.Epoch, rec.UploadedAt
			// Unsynced: this runs on the shard goroutine, the produce
			// path, and a sync here would stall every produce of the
			// shard for an fsync per upload (milliseconds on a network
			// disk). A crash may lose the pointer; tierd's rescan then
			// finds the segment unrecorded and records its object again
			// (same name, bytes checked). Eviction, the one step that
			// relies on the pointer, deletes files only after a synced
			// write of its own, which makes this one durable too.
			if err := sh.opts.Catalog.PutSegmentUnsynced(p.record(seg, catalog.StateLocalRemote)); err != nil {
				return err
			}
			// Local retention applies now rather than at the next
			// retention check, so that local.retention.* = 0 means "as
			// soon as it is in the cold tier". The upload stands whatever
			// eviction does; the next check retries it.
			if n, err := p.evict(sh, time.Now()); err != nil {
				sh.limiter.Log(sh.opts.Logger, slog.LevelWarn, "evict", "evicting uploaded segments",
					"topic", p.topic, "partition", p.id, "err", err)
			} else if n > 0 {
				sh.opts.Logger.Debug("evicted uploaded segments", "topic", p.topic, "partition", p.id, "segments", n)
			}
			return nil
		}
		return fmt.Errorf("%w: %s/%d has no local segment at %d", ErrUnknownSegment, p.topic, p.id, rec.BaseOffset)
	})
}

// RemoteDeleted drops the record of a segment whose objects tierd has
// deleted. It is idempotent.
func (s *Store) RemoteDeleted(ctx context.Context, topic string, id int32, base int64) error {
	err := s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		rec, err := sh.opts.Catalog.GetSegment(topic, id, base)
		if err != nil {
			return nil // already gone
		}
		if rec.State != catalog.StateDeleting {
			return fmt.Errorf("%w: %s/%d segment %d is %s, not deleting", ErrUnknownSegment, topic, id, base, rec.State)
		}
		return sh.opts.Catalog.DeleteSegment(topic, id, base)
	})
	if err != nil && isUnknownPartition(err) {
		return nil // the id was deleted; so were its records
	}
	return err
}

func isUnknownPartition(err error) bool {
	return errors.Is(err, ErrUnknownPartition)
}

// Segments returns the catalog records of a partition (local and remote),
// read on its shard so they are consistent with the partition's state.
func (s *Store) Segments(ctx context.Context, topic string, id int32) ([]catalog.Segment, error) {
	var out []catalog.Segment
	err := s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		var err error
		out, err = sh.opts.Catalog.Segments(topic, id)
		return err
	})
	return out, err
}

// RestorePartition creates a partition whose history lives only in the cold
// tier (tier restore on an empty node): segs are its remote segment records,
// ascending; the local log starts empty after the last of them.
func (s *Store) RestorePartition(ctx context.Context, topic string, partition int32, cfg PartitionConfig, logStart int64, segs []catalog.Segment) error {
	if err := validName(topic, partition); err != nil {
		return err
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].BaseOffset < segs[j].BaseOffset })
	r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
	var ferr error
	r.hook = func(sh *shard) {
		if _, ok := sh.parts[partKey{topic, partition}]; ok {
			ferr = fmt.Errorf("%w: %s/%d", ErrPartitionExists, topic, partition)
			return
		}
		ferr = sh.restore(topic, partition, cfg, logStart, segs)
	}
	if err := s.call(ctx, s.shardFor(topic, partition), r); err != nil {
		return err
	}
	return ferr
}

func (sh *shard) restore(topic string, partition int32, cfg PartitionConfig, logStart int64, segs []catalog.Segment) error {
	c := sh.opts.Catalog
	if err := c.PutPartition(catalog.Partition{Topic: topic, Partition: partition, Config: encodeConfig(cfg.withDefaults(sh.opts.Defaults)),
		LogStartOffset: logStart}); err != nil {
		return err
	}
	for _, r := range segs {
		r.Topic, r.Partition, r.State, r.LocalPath = topic, partition, catalog.StateRemote, ""
		if err := c.PutSegment(r); err != nil {
			return err
		}
	}
	meta, err := c.GetPartition(topic, partition)
	if err != nil {
		return err
	}
	p, err := loadPartition(sh, meta)
	if err != nil {
		return err
	}
	sh.parts[partKey{topic, partition}] = p
	sh.budget.partitions.Add(1)
	if err := c.Sync(); err != nil { // loadPartition's records, before tierd hears of them
		return err
	}
	sh.sendLoadNotes(p)
	return nil
}

// AdoptSegment brings a remote segment back to local disk (tier
// rehydrate): logFile holds the segment's log bytes downloaded and verified
// by the caller; it is moved into the partition directory, its indexes are
// rebuilt, and the segment becomes local+remote. Local retention may evict
// it again later.
func (s *Store) AdoptSegment(ctx context.Context, topic string, id int32, base int64, logFile string) error {
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		i := -1
		for j := range p.remote {
			if p.remote[j].BaseOffset == base {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("%w: %s/%d has no remote segment at %d", ErrUnknownSegment, topic, id, base)
		}
		if i != len(p.remote)-1 {
			// Local segments must stay contiguous with the local log, so
			// only the newest remote segment can come back; rehydrating a
			// range means walking back from it.
			return fmt.Errorf("%w: %s/%d segment %d is not adjacent to the local log (rehydrate newer segments first)",
				ErrInvalidRequest, topic, id, base)
		}
		rec := p.remote[i]
		logPath, _, _ := segmentPaths(p.dir, base)
		if err := os.Rename(logFile, logPath); err != nil {
			return err
		}
		seg, err := recoverSegment(p.dir, base, sh.opts, true, false)
		if err != nil {
			return err
		}
		sh.files.adopt(seg)
		if seg.next != rec.EndOffset || seg.size != rec.Bytes {
			seg.remove()
			return fmt.Errorf("%w: rehydrated %s/%d segment %d holds offsets to %d (%d bytes), catalog says %d (%d bytes)",
				ErrCorruptSegment, topic, id, base, seg.next, seg.size, rec.EndOffset, rec.Bytes)
		}
		seg.cloud = rec
		rec.State, rec.LocalPath = catalog.StateLocalRemote, logPath
		if err := sh.opts.Catalog.PutSegment(rec); err != nil {
			seg.remove()
			return err
		}
		p.remote = p.remote[:i]
		p.segs = append([]*segment{seg}, p.segs...)
		return nil
	})
}

// PartitionDir is where a partition's segment files live; tierd stages
// sealed segments by hard-linking from here.
func (s *Store) PartitionDir(topic string, partition int32) string {
	return partitionDir(s.opts.Dir, topic, partition)
}

// StagingDir is the folder tierd hard-links segments into before upload,
// on the same filesystem as the logs so links work.
func (s *Store) StagingDir() string { return filepath.Join(s.opts.Dir, "staging") }

// Settle waits until the chores that rolls and evictions of the shard
// owning topic/partition have handed over so far have run: after it, every
// segment sealed before the call has its indexes shrunk and its catalog
// record durable. tierd calls it before staging a segment, whether a seal
// notice or a catalog rescan found it, so that it neither uploads index
// files still at their preallocated size nor names an object after a
// record a crash could lose. It waits on the chore goroutine only, never
// on the shard's.
func (s *Store) Settle(ctx context.Context, topic string, partition int32) error {
	if err := validName(topic, partition); err != nil {
		return err
	}
	sh := s.shardFor(topic, partition)
	// Writeback jobs queued before now hold their logs' descriptors until
	// their syscalls run, so they are waited for as well as the chores.
	flushed := make(chan struct{})
	r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
	r.hook = func(sh *shard) { sh.wb <- wbJob{barrier: flushed} }
	if err := s.call(ctx, sh, r); err != nil {
		return err
	}
	select {
	case <-flushed:
	case <-s.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return sh.settle(ctx, s.closed)
}

// RollPartition seals the active segment now if it holds data, so that
// `tier offload --now` can upload everything written so far.
func (s *Store) RollPartition(ctx context.Context, topic string, id int32) error {
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		seg := p.active()
		if seg.size == 0 {
			return nil
		}
		return p.roll(sh, seg.next)
	})
}

// RunRetention applies retention, local retention (eviction) and log start
// now on every partition, instead of waiting for the next tick.
func (s *Store) RunRetention(ctx context.Context) error {
	for _, sh := range s.shards {
		r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
		r.hook = func(sh *shard) { sh.retention(time.Now()) }
		if err := s.call(ctx, sh, r); err != nil {
			return err
		}
	}
	return nil
}

// SetPartitionConfig replaces a partition's configs (AlterConfigs on its
// topic). Zero fields take the store defaults. The new retention applies at
// the next retention tick; segment size and age at the next append.
func (s *Store) SetPartitionConfig(ctx context.Context, topic string, id int32, cfg PartitionConfig) error {
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		cfg = cfg.withDefaults(sh.opts.Defaults)
		meta, err := sh.opts.Catalog.GetPartition(topic, id)
		if err != nil {
			return err
		}
		meta.Config = encodeConfig(cfg)
		if err := sh.opts.Catalog.PutPartition(meta); err != nil {
			return err
		}
		p.cfg = cfg
		return nil
	})
}

// AdoptRemote takes in the cold tier another store uploaded: that of a
// partition this store follows, or has just come to lead. cold lists the
// bucket's segments of the partition, ascending (the leader's manifest).
// Only a leader uploads, so a follower's own segments never get a cloud
// pointer of their own; this is how they get one, and how the follower's
// local retention keeps the rule that only what the cold tier holds is
// evicted. A replica rolls its segments on its own, so its boundaries
// need not be the leader's:
//   - a sealed local segment with the same offsets and bytes as a cold one
//     takes that one's cloud pointer, and from then on is evicted under
//     local.retention.* like a segment it uploaded itself;
//   - a sealed local segment the cold tier covers whole on other
//     boundaries is evicted under the same rules when this is a follower
//     (evictAll false), and at once when this store has just become leader
//     (evictAll true): a leader's catalog must name every cold segment, for
//     the manifest it rewrites and for its own retention, and a record
//     that overlaps local files cannot be kept. Either way the cold
//     segments that cover it take its place in the catalog.
//
// A segment the cold tier covers only in part stays local, without a
// pointer: a leader uploads it whole. Remote records that end before the
// cold tier's first segment are dropped: the leader's retention deleted
// them. It returns how many local segments were evicted.
func (s *Store) AdoptRemote(ctx context.Context, topic string, id int32, cold []catalog.Segment, evictAll bool) (int, error) {
	cold = append([]catalog.Segment(nil), cold...)
	sort.Slice(cold, func(i, j int) bool { return cold[i].BaseOffset < cold[j].BaseOffset })
	var n int
	err := s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		var err error
		n, err = p.adoptRemote(sh, cold, evictAll, time.Now())
		return err
	})
	return n, err
}

func (p *partition) adoptRemote(sh *shard, cold []catalog.Segment, evictAll bool, now time.Time) (int, error) {
	c := sh.opts.Catalog
	// Remote segments older than the whole cold tier were deleted by the
	// leader's retention: the objects are gone, so the records go too.
	for len(cold) > 0 && len(p.remote) > 0 && p.remote[0].EndOffset <= cold[0].BaseOffset {
		if err := c.DeleteSegment(p.topic, p.id, p.remote[0].BaseOffset); err != nil {
			return 0, err
		}
		p.remote = p.remote[1:]
	}
	for _, seg := range p.segs {
		if !seg.sealed || seg.cloud.ObjectKey != "" {
			continue
		}
		for _, r := range cold {
			if r.BaseOffset == seg.base && r.EndOffset == seg.next && r.Bytes == seg.size && r.ObjectKey != "" {
				seg.cloud.SegmentID, seg.cloud.ObjectKey, seg.cloud.ObjectSize = r.SegmentID, r.ObjectKey, r.ObjectSize
				seg.cloud.Checksum, seg.cloud.ETag, seg.cloud.Epoch, seg.cloud.UploadedAt = r.Checksum, r.ETag, r.Epoch, r.UploadedAt
				// Unsynced, as SetRemote: eviction syncs before files go.
				if err := c.PutSegmentUnsynced(p.record(seg, catalog.StateLocalRemote)); err != nil {
					return 0, err
				}
				break
			}
		}
	}
	// coveredTo: the end of the run of cold segments that holds every
	// offset from the local log's start on.
	coveredTo := p.segs[0].base
	for _, r := range cold {
		if r.BaseOffset <= coveredTo && r.EndOffset > coveredTo && r.ObjectKey != "" {
			coveredTo = r.EndOffset
		}
	}
	// With evictAll, everything up to the last covered segment that has no
	// pointer goes, so the local log stays contiguous.
	lastForeign := -1
	if evictAll {
		for i, seg := range p.segs[:len(p.segs)-1] {
			if !seg.sealed || seg.next > coveredTo {
				break
			}
			if seg.cloud.ObjectKey == "" {
				lastForeign = i
			}
		}
	}
	locBytes, locMs := int64(-1), time.Duration(-1)
	if l := p.cfg.LocalRetentionBytes; l != nil && *l >= 0 {
		locBytes = *l
	}
	if l := p.cfg.LocalRetentionMs; l != nil && *l >= 0 {
		locMs = *l
	}
	atOnce := locBytes == 0 || locMs == 0
	local := p.size()
	var gone []*segment
	var err error
	for i := 0; len(p.segs) > 1; i++ {
		seg := p.segs[0]
		own := seg.cloud.ObjectKey != ""
		if !seg.sealed || !own && seg.next > coveredTo {
			break
		}
		if i > lastForeign && !atOnce && (locBytes < 0 && locMs < 0 ||
			!expired(seg.next, seg.size, seg.maxTs, seg.created, local, -1, locBytes, locMs, now)) {
			break
		}
		var recs []catalog.Segment
		if own {
			rec := p.record(seg, catalog.StateRemote)
			rec.LocalPath = ""
			recs = append(recs, rec)
		} else if recs, err = p.coverOf(seg, cold); err != nil {
			break
		}
		replaced := false
		for _, r := range recs {
			replaced = replaced || r.BaseOffset == seg.base
			if err = c.PutSegmentUnsynced(r); err != nil {
				break
			}
		}
		if err == nil && !replaced {
			err = c.DeleteSegment(p.topic, p.id, seg.base)
		}
		if err != nil {
			break
		}
		local -= seg.size
		p.segs[0] = nil
		p.segs = p.segs[1:]
		p.remote = append(p.remote, recs...)
		gone = append(gone, seg)
	}
	if len(gone) > 0 {
		sh.removeLater(p.dir, p.segs[0].base, gone, nil)
	}
	return len(gone), errors.Join(err, p.raiseLogStart(sh))
}

// coverOf returns, as remote records, the cold segments holding the offsets
// of seg that the partition's remote records do not hold yet.
func (p *partition) coverOf(seg *segment, cold []catalog.Segment) ([]catalog.Segment, error) {
	heldTo, lastBase := int64(-1), int64(-1)
	if n := len(p.remote); n > 0 {
		heldTo, lastBase = p.remote[n-1].EndOffset, p.remote[n-1].BaseOffset
	}
	var out []catalog.Segment
	for _, r := range cold {
		if r.EndOffset <= max(seg.base, heldTo) || r.BaseOffset >= seg.next {
			continue
		}
		if r.BaseOffset <= lastBase {
			// Its catalog key is taken by a record the partition keeps.
			return nil, fmt.Errorf("%w: %s/%d cold segment %d overlaps remote segment %d", ErrUnknownSegment, p.topic, p.id, r.BaseOffset, lastBase)
		}
		r.Topic, r.Partition, r.State, r.LocalPath = p.topic, p.id, catalog.StateRemote, ""
		out = append(out, r)
		lastBase = r.BaseOffset
	}
	return out, nil
}

// TierRole is what tierd needs of a partition's replication: its role
// (Role.String: only a leader, or a standalone partition, touches the
// bucket; "unassigned" for a partition that waits for its role under
// Options.RequireRole), its leader epoch (a new one means tierd must take
// the cold tier over before uploading), and its high watermark (a leader
// uploads only below it, what every later leader will hold too).
func (s *Store) TierRole(ctx context.Context, topic string, id int32) (string, int32, int64, error) {
	role, epoch, hw := RoleStandalone.String(), int32(0), int64(0)
	err := s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		switch {
		case p.rep != nil:
			role, epoch = p.rep.role.String(), p.rep.epoch
		case sh.opts.RequireRole:
			role = "unassigned"
		}
		hw = p.hw
		return nil
	})
	return role, epoch, hw, err
}
