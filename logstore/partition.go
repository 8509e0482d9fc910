package logstore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aerostream/aerostream/catalog"
)

// partition is one topic-partition's log. All fields belong to the owning
// shard goroutine.
type partition struct {
	topic string
	id    int32
	dir   string
	cfg   PartitionConfig

	segs     []*segment // ascending; the last one is active
	logStart int64
	hw       int64 // high watermark: offsets below it are durable and readable

	// notify is closed when the high watermark moves; it is made only when
	// a fetcher waits, so appends without waiters do no channel work.
	notify chan struct{}

	// Flush bookkeeping for interval/always.
	dirty    bool // bytes written since the last sync was requested
	waitAcks []*request
	remote   []catalog.Segment // cold-tier segment records below the local log
	deleted  bool

	// producers is the idempotent-producer state (producer.go).
	producers map[int64]*producerState
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
func createPartition(s *shard, topic string, id int32, cfg PartitionConfig) (*partition, error) {
	opts := s.opts
	p := &partition{topic: topic, id: id, dir: partitionDir(opts.Dir, topic, id), cfg: cfg.withDefaults(opts.Defaults)}
	if err := opts.Catalog.PutPartition(catalog.Partition{Topic: topic, Partition: id, Config: encodeConfig(p.cfg),
		CreatedAt: time.Now().UnixNano()}); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	if err := p.roll(s, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// roll seals the active segment (if any) and starts a new one at base.
func (p *partition) roll(s *shard, base int64) error {
	opts := s.opts
	if len(p.segs) > 0 {
		old := p.active()
		if opts.Flush != FlushNone && old.durable < old.size {
			// The old segment's tail must be durable before the new one
			// takes writes, or a later sync of the new file would advance
			// the high watermark over unsynced bytes.
			if err := old.syncData(); err != nil {
				return fmt.Errorf("sync %s before roll: %w", old.logPath, err)
			}
			old.durable = old.size
			p.advanceHW(old.next)
		}
		if err := old.seal(); err != nil {
			return err
		}
		if err := opts.Catalog.PutSegment(p.record(old, catalog.StateSealed)); err != nil {
			return err
		}
	}
	if err := p.writeProducerSnapshot(base); err != nil {
		// Without the snapshot recovery rescans older segments; slower, not
		// wrong, so the roll goes on.
		opts.Logger.Warn("writing producer snapshot", "topic", p.topic, "partition", p.id, "err", err)
	}
	logPath, _, _ := segmentPaths(p.dir, base)
	if err := opts.Catalog.PutSegment(catalog.Segment{Topic: p.topic, Partition: p.id, BaseOffset: base,
		EndOffset: base, State: catalog.StateActive, LocalPath: logPath, MinTimestamp: -1, MaxTimestamp: -1}); err != nil {
		return err
	}
	seg, err := createSegment(p.dir, base, opts)
	if err != nil {
		return err
	}
	p.segs = append(p.segs, seg)
	return nil
}

func (p *partition) record(seg *segment, st catalog.State) catalog.Segment {
	return catalog.Segment{Topic: p.topic, Partition: p.id, BaseOffset: seg.base, EndOffset: seg.next,
		Bytes: seg.size, MinTimestamp: seg.minTs, MaxTimestamp: seg.maxTs, State: st, LocalPath: seg.logPath}
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
		cfg: decodeConfig(meta.Config, opts.Defaults), logStart: meta.LogStartOffset}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	recs, err := opts.Catalog.Segments(p.topic, p.id)
	if err != nil {
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
			if err := opts.Catalog.DeleteSegment(p.topic, p.id, r.BaseOffset); err != nil {
				return nil, err
			}
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
		if len(p.segs) > 0 && p.segs[len(p.segs)-1].next != seg.base && seg.size > 0 {
			opts.Logger.Warn("gap between segments", "topic", p.topic, "partition", p.id,
				"prev_end", p.segs[len(p.segs)-1].next, "base", seg.base)
		}
		p.segs = append(p.segs, seg)
		st := catalog.StateSealed
		if last {
			st = catalog.StateActive
		}
		if !known || r.State != st && (r.State == catalog.StateActive || r.State == catalog.StateSealed) {
			if err := opts.Catalog.PutSegment(p.record(seg, st)); err != nil {
				p.close()
				return nil, err
			}
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
	p.rebuildProducers(opts)
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

// advanceHW moves the high watermark and wakes long-polling fetchers.
func (p *partition) advanceHW(hw int64) {
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

// deleteSegmentsBelow removes sealed segments that end at or before off,
// and those the retention predicate selects, oldest first. The catalog
// marks each as deleting before its files go, so a crash in between is
// finished by load().
func (p *partition) deleteOldest(s *shard, keep func(seg *segment, remaining int64) bool) (int, error) {
	removed := 0
	total := p.size()
	for len(p.segs) > 1 {
		seg := p.segs[0]
		if keep(seg, total) {
			break
		}
		rec := p.record(seg, catalog.StateDeleting)
		if err := s.opts.Catalog.PutSegment(rec); err != nil {
			return removed, err
		}
		if err := seg.remove(); err != nil {
			s.opts.Logger.Warn("removing segment files", "segment", seg.logPath, "err", err)
		}
		if err := s.opts.Catalog.DeleteSegment(p.topic, p.id, seg.base); err != nil {
			return removed, err
		}
		total -= seg.size
		p.segs[0] = nil
		p.segs = p.segs[1:]
		removed++
	}
	if removed > 0 {
		p.pruneSnapshots()
	}
	if removed > 0 && p.logStart < p.segs[0].base && len(p.remote) == 0 {
		p.logStart = p.segs[0].base
		if err := s.opts.Catalog.SetLogStart(p.topic, p.id, p.logStart); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// applyRetention enforces retention.ms, retention.bytes and the log start
// offset on sealed segments. The active segment is never deleted.
func (p *partition) applyRetention(s *shard, now time.Time) (int, error) {
	cfg := p.cfg
	return p.deleteOldest(s, func(seg *segment, total int64) bool {
		if seg.next <= p.logStart {
			return false
		}
		if cfg.RetentionBytes >= 0 && total-seg.size >= cfg.RetentionBytes {
			return false
		}
		if cfg.RetentionMs >= 0 {
			ts := seg.maxTs
			if ts < 0 {
				ts = seg.created.UnixMilli()
			}
			if now.UnixMilli()-ts > cfg.RetentionMs.Milliseconds() {
				return false
			}
		}
		return true
	})
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
	if p.notify != nil {
		close(p.notify)
		p.notify = nil
	}
}
