package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Backoffs of a fetcher: after a failed call to the leader, and for a
// partition the leader answered with an error.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// fetcher replicates, from one leader store, every partition this store
// follows there, in one long-poll fetch at a time.
type fetcher struct {
	m       *Manager
	leader  int32
	started bool // set and read by Run only
	cancel  context.CancelFunc
	done    chan struct{}
	wake    chan struct{}

	mu struct {
		sync.Mutex
		parts map[tp]*fpart
		gen   uint64
		// cancelPoll ends the long poll in flight, so that a partition
		// added (or resumed) meanwhile is fetched at once.
		cancelPoll context.CancelFunc
	}
}

// fpart is one followed partition, as its fetcher keeps it.
type fpart struct {
	key   tp
	epoch int32
	// gen identifies the assignment: a result for an assignment replaced
	// meanwhile is dropped.
	gen       uint64
	truncated bool // truncated by epoch; fetching from offset
	offset    int64
	hw        int64 // the leader's high watermark last handed to the store
	logStart  int64 // the leader's log start last applied locally
	lag       int64 // the leader's high watermark minus offset, last seen
	fails     int
	resumeAt  time.Time // paused until then, or until a new view
	pausedSeq uint64    // the view seq at which it was paused
	maxBytes  int32
}

func newFetcher(m *Manager, leader int32) *fetcher {
	f := &fetcher{m: m, leader: leader, wake: make(chan struct{}, 1)}
	f.mu.parts = map[tp]*fpart{}
	return f
}

// add hands the fetcher a partition to follow at epoch: it truncates it by
// epoch first. Called with roleMu held.
func (f *fetcher) add(k tp, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.gen++
	f.mu.parts[k] = &fpart{key: k, epoch: epoch, gen: f.mu.gen, hw: -1, maxBytes: f.m.opts.PartitionMaxBytes}
	f.pokeLocked()
}

// remove takes a partition off the fetcher. Called with roleMu held.
func (f *fetcher) remove(k tp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mu.parts, k)
}

// resume lets the partitions paused before view seq go again: the view
// that fences them may be the one that names the epoch they need.
func (f *fetcher) resume(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	poke := false
	for _, p := range f.mu.parts {
		if !p.resumeAt.IsZero() && p.pausedSeq < seq {
			p.resumeAt = time.Time{}
			poke = true
		}
	}
	if poke {
		f.pokeLocked()
	}
}

func (f *fetcher) pokeLocked() {
	if f.mu.cancelPoll != nil {
		f.mu.cancelPoll()
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.parts)
}

func (f *fetcher) start(ctx context.Context, wg *sync.WaitGroup) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	f.started = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(f.done)
		f.run(ctx)
	}()
}

func (f *fetcher) stop() {
	if f.cancel != nil {
		f.cancel()
	}
}

// lags reports the partitions' lag behind the leader's high watermark.
func (f *fetcher) lags() (sum, maxLag int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.mu.parts {
		sum += p.lag
		maxLag = max(maxLag, p.lag)
	}
	return sum, maxLag
}

// work is a copy of one partition's fetch state, taken for one round.
type work struct {
	fpart
}

// snapshot copies the partitions not paused; next is when the earliest
// paused one resumes (zero if none is).
func (f *fetcher) snapshot(now time.Time) (ws []work, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.mu.parts {
		if !p.resumeAt.IsZero() {
			if now.Before(p.resumeAt) {
				if next.IsZero() || p.resumeAt.Before(next) {
					next = p.resumeAt
				}
				continue
			}
			p.resumeAt = time.Time{}
		}
		ws = append(ws, work{fpart: *p})
	}
	return ws, next
}

// update applies fn to the partition if its assignment is still w's.
func (f *fetcher) update(w *work, fn func(p *fpart)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.mu.parts[w.key]; p != nil && p.gen == w.gen {
		fn(p)
	}
}

// current reports whether w's assignment still stands; the caller holds
// roleMu shared, so it stands until the caller lets go.
func (f *fetcher) current(w *work) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.mu.parts[w.key]
	return p != nil && p.gen == w.gen
}

// pause holds a partition back until the next view or a backoff,
// whichever comes first.
func (f *fetcher) pause(w *work) {
	f.update(w, func(p *fpart) {
		p.fails++
		p.resumeAt = time.Now().Add(backoff(p.fails))
		p.pausedSeq = f.m.seq.Load()
	})
}

func backoff(fails int) time.Duration {
	d := minBackoff << min(max(fails-1, 0), 10)
	return min(d, maxBackoff)
}

func (f *fetcher) run(ctx context.Context) {
	log := f.m.log.With("leader", f.leader)
	fails := 0
	for ctx.Err() == nil {
		ws, next := f.snapshot(time.Now())
		if len(ws) == 0 {
			f.sleep(ctx, next)
			continue
		}
		b, err := f.m.backend(ctx, f.leader)
		if err == nil {
			err = f.round(ctx, b, ws, log)
		}
		if err == nil {
			fails = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		fails++
		if fails%5 == 0 {
			f.m.resetPeer(f.leader)
		}
		f.m.rlog.Log(log, slog.LevelWarn, "leader:"+itoa(f.leader), "cannot replicate from the leader store; retrying",
			"partitions", len(ws), "failures", fails, "err", err)
		f.sleep(ctx, time.Now().Add(backoff(fails)))
	}
}

// sleep waits until t (forever if zero), a wake-up or ctx's end.
func (f *fetcher) sleep(ctx context.Context, t time.Time) {
	var c <-chan time.Time
	if !t.IsZero() {
		timer := time.NewTimer(time.Until(t))
		defer timer.Stop()
		c = timer.C
	}
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-c:
	}
}

// round truncates the partitions that need it, then fetches the others
// once. An error is the leader's as a whole (unreachable, closed).
func (f *fetcher) round(ctx context.Context, b ring.Backend, ws []work, log *slog.Logger) error {
	fetch := ws[:0:0]
	for i := range ws {
		w := &ws[i]
		if w.truncated {
			fetch = append(fetch, *w)
			continue
		}
		if err := f.truncate(ctx, b, w, log); err != nil {
			if isLeaderError(err) {
				return err
			}
			f.partitionError(w, err, log)
		}
	}
	if len(fetch) == 0 {
		return nil
	}
	req := &logstore.FetchRequest{
		MinBytes: 1,
		MaxBytes: f.m.opts.FetchMaxBytes,
		MaxWait:  f.m.opts.FetchMaxWait,
	}
	for _, w := range fetch {
		req.Partitions = append(req.Partitions, logstore.FetchPartition{
			Topic: w.key.topic, Partition: w.key.partition, Offset: w.offset, MaxBytes: w.maxBytes,
			FollowerID: f.m.opts.LocalID, LeaderEpoch: w.epoch,
		})
	}
	pctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	f.mu.cancelPoll = cancel
	f.mu.Unlock()
	res, err := b.Fetch(pctx, req)
	f.mu.Lock()
	f.mu.cancelPoll = nil
	f.mu.Unlock()
	polled := pctx.Err() != nil
	cancel()
	if err != nil {
		if polled && ctx.Err() == nil {
			return nil // cut short for a new partition
		}
		return err
	}
	defer res.Release()
	if len(res.Partitions) != len(fetch) {
		return errors.New("the leader answered a fetch with the wrong number of partitions")
	}
	for i := range fetch {
		w := &fetch[i]
		r := &res.Partitions[i]
		if r.Err != nil {
			if errors.Is(r.Err, logstore.ErrOffsetOutOfRange) && r.LogStartOffset > w.offset {
				// Truncating again cannot help: the leader no longer
				// holds the records this replica needs next (retention
				// deleted them), so the local log starts over at the
				// leader's log start, as Kafka's truncateFullyAndStartAt.
				if err := f.startOver(ctx, w, r.LogStartOffset, log); err != nil {
					f.partitionError(w, err, log)
				}
				continue
			}
			f.partitionError(w, r.Err, log)
			continue
		}
		if err := f.append(ctx, w, r); err != nil {
			f.partitionError(w, err, log)
		}
	}
	return nil
}

// startOver empties a follower's log and restarts it at the leader's log
// start.
func (f *fetcher) startOver(ctx context.Context, w *work, logStart int64, log *slog.Logger) error {
	f.m.roleMu.RLock()
	defer f.m.roleMu.RUnlock()
	if !f.current(w) {
		return nil
	}
	if err := f.m.opts.Store.TruncateFully(ctx, w.key.topic, w.key.partition, logStart); err != nil {
		return fmt.Errorf("start the log over at %d: %w", logStart, err)
	}
	log.Warn("a follower's log ended before its leader's log start; its log starts over there",
		"topic", w.key.topic, "partition", w.key.partition, "local_log_end", w.offset, "leader_log_start", logStart)
	f.update(w, func(p *fpart) { p.offset, p.logStart, p.fails = logStart, logStart, 0 })
	return nil
}

// isLeaderError reports an error that is the leader's as a whole (it is
// unreachable, or went away) rather than one partition's.
func isLeaderError(err error) bool {
	for _, e := range []error{logstore.ErrNotLeader, logstore.ErrFencedLeaderEpoch, logstore.ErrUnknownLeaderEpoch,
		logstore.ErrUnknownPartition, logstore.ErrOffsetOutOfRange, logstore.ErrInvalidRequest,
		logstore.ErrCorruptBatch, errDiverged} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// errDiverged: the leader sent a batch that does not start at the local
// log end, so the logs have diverged; the partition is truncated again.
var errDiverged = errors.New("the leader's batches do not continue the local log")

// partitionError reacts to one partition's error: a fenced or unknown
// epoch, or a leader that is not (yet) the leader, waits for the next view
// (or a backoff: the leader may just not have applied it yet); an offset
// out of range or a diverged log truncates again.
func (f *fetcher) partitionError(w *work, err error, log *slog.Logger) {
	resync := errors.Is(err, logstore.ErrOffsetOutOfRange) || errors.Is(err, errDiverged)
	f.update(w, func(p *fpart) {
		if resync {
			p.truncated = false
		}
	})
	f.pause(w)
	level := slog.LevelWarn
	if errors.Is(err, logstore.ErrUnknownLeaderEpoch) || errors.Is(err, logstore.ErrNotLeader) || errors.Is(err, logstore.ErrUnknownPartition) {
		level = slog.LevelInfo // the usual moments of a leader change
	}
	f.m.rlog.Log(log, level, "part:"+w.key.String(), "replicating a partition failed; retrying",
		"topic", w.key.topic, "partition", w.key.partition, "leader_epoch", w.epoch, "offset", w.offset, "resync", resync, "err", err)
}

// append hands a fetched range to the store.
func (f *fetcher) append(ctx context.Context, w *work, r *logstore.FetchPartitionResult) error {
	var data []byte
	if n := r.Records.Size(); n > 0 {
		if r.Records.File == nil && len(r.Records.More) == 0 {
			data = r.Records.Bytes
		} else {
			var err error
			if data, err = r.Records.ReadAll(make([]byte, 0, n)); err != nil {
				return err
			}
		}
	}
	data, err := wholeBatches(data, w.offset)
	if err != nil {
		return err
	}
	if len(data) == 0 && r.Records.Size() > 0 {
		// One batch larger than the partition's byte limit: ask for more
		// next time.
		f.update(w, func(p *fpart) { p.maxBytes = int32(min(int64(p.maxBytes)*2, math.MaxInt32)) })
		return nil
	}
	if len(data) == 0 && r.HighWatermark == w.hw {
		f.update(w, func(p *fpart) { p.fails = 0; p.lag = max(r.HighWatermark-p.offset, 0) })
		return nil
	}
	f.m.roleMu.RLock()
	if !f.current(w) {
		f.m.roleMu.RUnlock()
		return nil
	}
	leo, err := f.m.opts.Store.AppendReplica(ctx, w.key.topic, w.key.partition, data, r.HighWatermark)
	f.m.roleMu.RUnlock()
	if err != nil {
		return err
	}
	f.update(w, func(p *fpart) {
		p.offset, p.hw, p.fails = leo, r.HighWatermark, 0
		p.lag = max(r.HighWatermark-leo, 0)
	})
	f.followLogStart(ctx, w, r.LogStartOffset, min(leo, r.HighWatermark))
	return nil
}

// followLogStart moves the local log start up to the leader's (DeleteRecords
// or retention there), as far as the local high watermark allows, so that
// records deleted on the leader are not served again by this replica once
// it leads.
func (f *fetcher) followLogStart(ctx context.Context, w *work, leaderStart, localHW int64) {
	to := min(leaderStart, localHW)
	if to <= w.logStart {
		return
	}
	f.m.roleMu.RLock()
	defer f.m.roleMu.RUnlock()
	if !f.current(w) {
		return
	}
	if _, err := f.m.opts.Store.DeleteRecords(ctx, w.key.topic, w.key.partition, to); err != nil {
		f.m.rlog.Log(f.m.log, slog.LevelWarn, "logstart:"+w.key.String(), "moving a follower's log start up to its leader's failed; retrying",
			"topic", w.key.topic, "partition", w.key.partition, "to", to, "err", err)
		return
	}
	f.update(w, func(p *fpart) { p.logStart = max(p.logStart, to) })
}

// wholeBatches cuts data to the whole batches in it, skipping any that end
// before offset (the local log end). A batch that straddles offset means
// the logs diverged.
func wholeBatches(data []byte, offset int64) ([]byte, error) {
	start, end := 0, 0
	for end+logstore.BatchHeaderSize <= len(data) {
		base := int64(binary.BigEndian.Uint64(data[end:]))
		length := int(int32(binary.BigEndian.Uint32(data[end+8:])))
		if length < logstore.BatchHeaderSize-12 {
			return nil, errDiverged
		}
		n := 12 + length
		if end+n > len(data) {
			break
		}
		last := base + int64(int32(binary.BigEndian.Uint32(data[end+23:])))
		switch {
		case last < offset:
			start = end + n
		case base < offset:
			return nil, errDiverged
		}
		end += n
	}
	if start > end {
		start = end
	}
	return data[start:end], nil
}

// truncate cuts a newly followed partition's log back to where it agrees
// with the leader's, by leader epoch: the local latest epoch le, the
// leader's end of its largest epoch E <= le, and the local end of E.
func (f *fetcher) truncate(ctx context.Context, b ring.Backend, w *work, log *slog.Logger) error {
	st := f.m.opts.Store
	t, p := w.key.topic, w.key.partition
	desc, err := st.DescribePartition(ctx, t, p)
	if err != nil {
		return err
	}
	leo := desc.LogEndOffset
	target := leo
	local, err := st.OffsetForLeaderEpoch(ctx, t, p, math.MaxInt32)
	if err != nil {
		return err
	}
	how := "none"
	switch {
	case leo <= desc.LogStartOffset:
		// Nothing held locally, nothing to cut.
	case local.LeaderEpoch < 0:
		// A log written before it had epochs: keep what the high
		// watermark covers (committed, so the leader has it).
		target, how = min(desc.HighWatermark, leo), "no local epochs: to the high watermark"
	default:
		remote, err := b.OffsetForLeaderEpoch(ctx, t, p, local.LeaderEpoch)
		if err != nil {
			return err
		}
		switch {
		case remote.LeaderEpoch < 0:
			target, how = min(desc.HighWatermark, leo), "leader knows no earlier epoch: to the high watermark"
		case remote.LeaderEpoch >= local.LeaderEpoch:
			target, how = min(remote.EndOffset, leo), "same epoch"
		default:
			mine, err := st.OffsetForLeaderEpoch(ctx, t, p, remote.LeaderEpoch)
			if err != nil {
				return err
			}
			end := leo
			if mine.LeaderEpoch >= 0 {
				end = mine.EndOffset
			}
			target, how = min(remote.EndOffset, end), "earlier epoch"
		}
	}
	target = max(target, desc.LogStartOffset)
	if target < leo {
		// Only records below the high watermark reach the cold tier, so
		// every leader holds them: the cut never goes below the local log
		// (which the log refuses).
		if local, err := st.ListOffsets(ctx, t, p, logstore.TimestampEarliestLocal); err == nil && target < local.Offset {
			log.Warn("a truncation by epoch reached below the local log; cutting at its start", "topic", t, "partition", p,
				"asked", target, "local_log_start", local.Offset)
			target = local.Offset
		}
	}
	if target < leo {
		f.m.roleMu.RLock()
		if !f.current(w) {
			f.m.roleMu.RUnlock()
			return nil
		}
		err := st.Truncate(ctx, t, p, target)
		f.m.roleMu.RUnlock()
		if err != nil {
			return err
		}
		log.Info("truncated a diverged log tail", "topic", t, "partition", p, "leader_epoch", w.epoch,
			"local_epoch", local.LeaderEpoch, "from", leo, "to", target, "rule", how)
	}
	f.update(w, func(fp *fpart) {
		fp.truncated, fp.offset = true, target
	})
	w.truncated, w.offset = true, target
	return nil
}
