package logstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Role is a partition's part in replication.
type Role int8

// Roles. A partition no one has given a role (RoleStandalone) behaves as a
// single copy: produce and fetch are served, the high watermark is the
// durable end of the local log, and no lease is checked. serve runs so.
const (
	RoleStandalone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "standalone"
}

// ReplicaState is what the controller's metadata says of one partition, as
// the store's replica manager hands it to the log.
type ReplicaState struct {
	Role        Role
	LeaderEpoch int32
	// Leader is the leading store's node id (for a follower).
	Leader int32
	// LocalID is this store's node id.
	LocalID int32
	// Replicas are every store holding a copy, leader included.
	Replicas []int32
	// ISR is the in-sync replica set the leader computes the high
	// watermark over, leader included. The replica manager passes the
	// controller's ISR plus any member it has asked to add (the maximal
	// ISR of KIP-497), so the high watermark never passes a replica the
	// controller may elect.
	ISR []int32
	// MinISR is min.insync.replicas: an acks=all produce with fewer ISR
	// members fails with ErrNotEnoughReplicas. Zero counts as 1.
	MinISR int
}

// EpochEnd answers OffsetForLeaderEpoch: the largest epoch at or below the
// one asked for, and the offset after its last record (the start of the
// next epoch, or the log end for the latest). Both are -1 when the log
// knows no epoch at or below the one asked for.
type EpochEnd struct {
	LeaderEpoch int32
	EndOffset   int64
}

// FollowerStatus is a leader's view of one follower.
type FollowerStatus struct {
	ID int32
	// LEO is the follower's log end offset: the offset of its last fetch;
	// -1 until it has fetched from this leader in this epoch.
	LEO int64
	// LastCaughtUp is the last time the follower had fetched up to the
	// leader's log end (Kafka's lastCaughtUpTimeMs); zero if never. A new
	// leader starts its in-sync followers at the time it became leader,
	// as Kafka does, so they are not dropped from the ISR before they
	// could fetch.
	LastCaughtUp time.Time
}

// ReplicaStatus is a partition's replication state as the log holds it.
type ReplicaStatus struct {
	Topic       string
	Partition   int32
	Role        Role
	LeaderEpoch int32
	LogEnd      int64
	// HighWatermark: for a leader, the lowest log end over its ISR; for a
	// follower, the leader's high watermark as of its last fetch, capped
	// at the local log end.
	HighWatermark int64
	ISR           []int32
	// Followers lists, for a leader, every other replica in Replicas.
	Followers []FollowerStatus
}

// replica is a partition's replication state; it belongs to the shard
// goroutine like the rest of the partition.
type replica struct {
	role     Role
	epoch    int32
	leader   int32
	localID  int32
	replicas []int32
	isr      []int32
	minISR   int
	// followers are the other replicas, for a leader.
	followers []follower
	// leaderHW is, for a follower, the leader's high watermark as of the
	// last AppendReplica; -1 before the first.
	leaderHW int64
}

// follower is a leader's bookkeeping of one follower's fetches.
type follower struct {
	id           int32
	leo          int64 // -1: unknown
	lastCaughtUp time.Time
	// The leader's log end and the time at the follower's previous
	// fetch, for Kafka's catch-up rule (noteFollowerFetch).
	lastFetchLEO  int64
	lastFetchTime time.Time
}

func (r *replica) follower(id int32) *follower {
	for i := range r.followers {
		if r.followers[i].id == id {
			return &r.followers[i]
		}
	}
	return nil
}

// capHW lowers hw, the durable end of the local log, to what replication
// allows: a leader's high watermark waits for the log end of every other
// ISR member; a follower's for the leader's high watermark.
func (r *replica) capHW(hw int64) int64 {
	switch r.role {
	case RoleLeader:
		for _, id := range r.isr {
			if id == r.localID {
				continue
			}
			f := r.follower(id)
			if f == nil || f.leo < 0 {
				return -1 // unknown: the high watermark stays where it is
			}
			hw = min(hw, f.leo)
		}
	case RoleFollower:
		hw = min(hw, r.leaderHW)
	}
	return hw
}

// stampEpoch is the leader epoch written into the batches a produce
// appends: the leader's epoch, and 0 without a role, as before replication.
func (p *partition) stampEpoch() int32 {
	if p.rep != nil && p.rep.role == RoleLeader {
		return p.rep.epoch
	}
	return 0
}

// acked reports whether a parked append may be answered: acks=all once the
// high watermark passes it, acks=0/1 (and replica appends) once the local
// log is durable past it.
func (p *partition) acked(r *request) bool {
	if r.acks == -1 {
		return r.endOffset <= p.hw
	}
	return r.endOffset <= p.durableEnd
}

// afterAppendErr is what an acks=all produce answers once the high
// watermark passed it: an error when the ISR shrank below min.insync.replicas
// meanwhile (Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND), since the records
// are then on fewer copies than the client asked for.
func (p *partition) afterAppendErr(r *request) error {
	if r.acks != -1 || p.rep == nil || p.rep.role != RoleLeader || len(p.rep.isr) >= p.rep.minISR {
		return nil
	}
	return fmt.Errorf("%w: %s/%d has %d in-sync replicas after the append, min.insync.replicas is %d",
		ErrNotEnoughReplicas, p.topic, p.id, len(p.rep.isr), p.rep.minISR)
}

// appended wakes the follower fetches waiting at the log end.
func (p *partition) appended() {
	if p.appendNotify != nil {
		close(p.appendNotify)
		p.appendNotify = nil
	}
}

// waitChanFor returns the channel a long poll waits on: appends for a
// follower, high watermark moves for a consumer.
func (p *partition) waitChanFor(follower bool) chan struct{} {
	if !follower {
		return p.waitChan()
	}
	if p.appendNotify == nil {
		p.appendNotify = make(chan struct{})
	}
	return p.appendNotify
}

// wakeAll wakes every long poll on the partition, so that it looks again
// (after a role change or a truncation, or on close).
func (p *partition) wakeAll() {
	if p.notify != nil {
		close(p.notify)
		p.notify = nil
	}
	p.appended()
}

// hwPosition is where the high watermark lies in a segment.
type hwPosition struct {
	hw  int64
	seg *segment
	pos int64
}

// hwLimit is how far into seg a consumer may read when the high watermark
// trails the durable end: the whole durable part of a segment below it,
// nothing of one above it, and up to the batch at the high watermark in
// the one that holds it (found once per high watermark move).
func (p *partition) hwLimit(seg *segment, scratch []byte) (int64, error) {
	switch {
	case seg.next <= p.hw:
		return seg.durable, nil
	case seg.base >= p.hw:
		return 0, nil
	case p.hwPos.seg == seg && p.hwPos.hw == p.hw:
		return p.hwPos.pos, nil
	}
	pos, err := seg.findPosition(p.hw, seg.durable, scratch)
	if err != nil {
		return 0, err
	}
	p.hwPos = hwPosition{hw: p.hw, seg: seg, pos: pos}
	return pos, nil
}

// lease is the store-wide deadline of leadership (SetLease). It counts on
// the monotonic clock from base, so a wall clock step neither extends nor
// cuts it; 0 means no lease was ever set.
type lease struct {
	base  time.Time
	until atomic.Int64 // nanoseconds after base, at least 1; 0: none
}

// expired reports whether the lease has run out at now.
func (l *lease) expired(now time.Time) bool {
	u := l.until.Load()
	return u != 0 && int64(now.Sub(l.base)) >= u
}

// set reports whether a lease was ever given.
func (l *lease) set() bool { return l.until.Load() != 0 }

// checkProduce refuses a produce the partition's role does not allow.
func (s *shard) checkProduce(p *partition, r *request) error {
	if p.rep == nil {
		return errNoRole(p) // Options.RequireRole
	}
	switch p.rep.role {
	case RoleFollower:
		return fmt.Errorf("%w: %s/%d follows store %d", ErrNotLeader, p.topic, p.id, p.rep.leader)
	case RoleLeader:
		if s.lease != nil && s.lease.expired(r.appendedAt) {
			return fmt.Errorf("%w: %s/%d: this store's lease on leadership ran out", ErrNotLeader, p.topic, p.id)
		}
		if r.acks == -1 && len(p.rep.isr) < p.rep.minISR {
			return fmt.Errorf("%w: %s/%d has %d in-sync replicas, min.insync.replicas is %d",
				ErrNotEnoughReplicas, p.topic, p.id, len(p.rep.isr), p.rep.minISR)
		}
	}
	return nil
}

func errNoRole(p *partition) error {
	return fmt.Errorf("%w: %s/%d has no role yet on this store", ErrNotLeader, p.topic, p.id)
}

// checkConsumer refuses a consumer's read (fetch, ListOffsets) the
// partition's role does not allow: a follower's, or a leader's whose
// lease ran out at now.
func (s *shard) checkConsumer(p *partition, now time.Time) error {
	if p.rep == nil {
		if s.opts.RequireRole {
			return errNoRole(p)
		}
		return nil
	}
	switch p.rep.role {
	case RoleFollower:
		return fmt.Errorf("%w: %s/%d follows store %d", ErrNotLeader, p.topic, p.id, p.rep.leader)
	case RoleLeader:
		if s.lease != nil && s.lease.expired(now) {
			return fmt.Errorf("%w: %s/%d: this store's lease on leadership ran out", ErrNotLeader, p.topic, p.id)
		}
	}
	return nil
}

// checkFetch refuses a fetch the partition's role does not allow, and for
// a follower fetch records how far the follower has replicated.
func (s *shard) checkFetch(p *partition, fp *FetchPartition, now time.Time) error {
	if fp.FollowerID <= 0 {
		return s.checkConsumer(p, now)
	}
	if p.rep == nil || p.rep.role != RoleLeader {
		return fmt.Errorf("%w: store %d fetched %s/%d as a follower, but this store does not lead it",
			ErrNotLeader, fp.FollowerID, p.topic, p.id)
	}
	switch {
	case fp.LeaderEpoch < p.rep.epoch:
		return fmt.Errorf("%w: store %d fetched %s/%d at leader epoch %d, the leader is at %d",
			ErrFencedLeaderEpoch, fp.FollowerID, p.topic, p.id, fp.LeaderEpoch, p.rep.epoch)
	case fp.LeaderEpoch > p.rep.epoch:
		return fmt.Errorf("%w: store %d fetched %s/%d at leader epoch %d, the leader is at %d",
			ErrUnknownLeaderEpoch, fp.FollowerID, p.topic, p.id, fp.LeaderEpoch, p.rep.epoch)
	}
	f := p.rep.follower(fp.FollowerID)
	if f == nil {
		return fmt.Errorf("%w: store %d is not a replica of %s/%d", ErrNotLeader, fp.FollowerID, p.topic, p.id)
	}
	leo := p.leo()
	if fp.Offset < p.logStart || fp.Offset > leo {
		return nil // the read answers ErrOffsetOutOfRange; not a log end to record
	}
	s.noteFollowerFetch(p, f, fp.Offset, leo, now)
	return nil
}

// noteFollowerFetch records a follower's fetch offset as its log end and
// applies Kafka's catch-up rule: a fetch at the leader's log end makes the
// follower caught up now; a fetch at or past the log end as of its
// previous fetch makes it caught up as of that fetch. The high watermark
// may then move, which answers acks=all produces and wakes consumers.
func (s *shard) noteFollowerFetch(p *partition, f *follower, offset, leo int64, now time.Time) {
	switch {
	case offset >= leo:
		if now.After(f.lastCaughtUp) {
			f.lastCaughtUp = now
		}
	case f.lastFetchLEO >= 0 && offset >= f.lastFetchLEO:
		if f.lastFetchTime.After(f.lastCaughtUp) {
			f.lastCaughtUp = f.lastFetchTime
		}
	}
	f.lastFetchLEO, f.lastFetchTime = leo, now
	if offset == f.leo {
		return
	}
	f.leo = offset
	hw := p.hw
	p.updateHW()
	if p.hw != hw {
		s.ackDurable(p)
	}
}

// SetReplicaState gives a partition its role. A leader with a new epoch
// records the epoch's start offset (the log end) in the partition's
// leader-epoch cache and stamps that epoch on every batch it appends. An
// epoch older than the partition's fails with ErrFencedLeaderEpoch. A
// leader that stops leading fails its acks=all produces still waiting with
// ErrNotLeader. RoleStandalone takes the role away.
func (s *Store) SetReplicaState(ctx context.Context, topic string, id int32, st ReplicaState) error {
	if st.Role < RoleStandalone || st.Role > RoleFollower {
		return fmt.Errorf("%w: role %d", ErrInvalidRequest, st.Role)
	}
	if st.Role != RoleStandalone && st.LeaderEpoch < 0 {
		return fmt.Errorf("%w: leader epoch %d", ErrInvalidRequest, st.LeaderEpoch)
	}
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	now := time.Now()
	return s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		return sh.setReplicaState(p, st, now)
	})
}

func (s *shard) setReplicaState(p *partition, st ReplicaState, now time.Time) error {
	old := p.rep
	if old != nil && st.Role != RoleStandalone && st.LeaderEpoch < old.epoch {
		return fmt.Errorf("%w: %s/%d is at leader epoch %d, the state given names %d",
			ErrFencedLeaderEpoch, p.topic, p.id, old.epoch, st.LeaderEpoch)
	}
	if st.Role == RoleLeader {
		if e, ok := p.latestEpoch(); ok && e > st.LeaderEpoch {
			return fmt.Errorf("%w: %s/%d holds records of leader epoch %d, the state given names %d",
				ErrFencedLeaderEpoch, p.topic, p.id, e, st.LeaderEpoch)
		}
	}
	wasLeader := old != nil && old.role == RoleLeader
	if st.Role == RoleStandalone {
		p.rep = nil
	} else {
		rep := &replica{role: st.Role, epoch: st.LeaderEpoch, leader: st.Leader, localID: st.LocalID,
			replicas: st.Replicas, isr: st.ISR, minISR: max(1, st.MinISR), leaderHW: -1}
		if old != nil && old.role == RoleFollower && st.Role == RoleFollower {
			rep.leaderHW = old.leaderHW
		}
		newLeader := st.Role == RoleLeader && (!wasLeader || old.epoch != st.LeaderEpoch)
		if st.Role == RoleLeader {
			for _, id := range st.Replicas {
				if id == st.LocalID {
					continue
				}
				f := follower{id: id, leo: -1, lastFetchLEO: -1}
				if !newLeader {
					if of := old.follower(id); of != nil {
						f = *of
					}
				} else if slices.Contains(st.ISR, id) {
					f.lastCaughtUp = now
				}
				rep.followers = append(rep.followers, f)
			}
		}
		p.rep = rep
		if st.Role == RoleLeader {
			s.startEpoch(p, st.LeaderEpoch, p.leo())
		}
	}
	if wasLeader && st.Role != RoleLeader {
		s.failWaiters(p, -1, fmt.Errorf("%w: %s/%d is no longer led by this store", ErrNotLeader, p.topic, p.id))
	}
	p.hwPos = hwPosition{}
	p.updateHW()
	s.ackDurable(p)
	if old == nil || old.role != st.Role || old.epoch != st.LeaderEpoch {
		p.wakeAll() // long polls look again, and answer under the new role
	}
	return nil
}

// failWaiters fails the parked appends that match: acks=all ones when
// acks is -1, every one ending past end when end >= 0.
func (s *shard) failWaiters(p *partition, end int64, err error) {
	n := 0
	for _, r := range p.waitAcks {
		if end >= 0 && r.endOffset > end || end < 0 && r.acks == -1 {
			r.finish(err)
			continue
		}
		p.waitAcks[n] = r
		n++
	}
	clear(p.waitAcks[n:])
	p.waitAcks = p.waitAcks[:n]
}

// AppendReplica appends batches a follower fetched from its leader, keeping
// their offsets and leader epochs. The first batch must start at the local
// log end. leaderHW, the leader's high watermark, caps the follower's own.
// It returns the new log end. Empty records only pass on leaderHW. The
// batches are validated as a produce's are; the append is made durable as
// an acks=1 produce is, under the flush policy. Each batch's producer
// fields update the idempotent-producer state, so a producer's retry is
// still recognised once this replica leads.
func (s *Store) AppendReplica(ctx context.Context, topic string, partition int32, records []byte, leaderHW int64) (int64, error) {
	if err := validName(topic, partition); err != nil {
		return 0, err
	}
	if len(records) > 0 {
		// Stored batches: the leader's cleaner may have compacted them.
		if _, _, err := ValidateStoredBatches(records); err != nil {
			return 0, err
		}
	}
	r := getRequest(reqAppendReplica)
	r.topic, r.partition, r.acks, r.records, r.ts = topic, partition, 1, records, leaderHW
	r.appendedAt = time.Now()
	if err := s.call(ctx, s.shardFor(topic, partition), r); err != nil {
		if !isCtxErr(err) {
			putRequest(r)
		}
		return 0, err
	}
	end := r.endOffset
	putRequest(r)
	return end, nil
}

func (s *shard) appendReplica(r *request) {
	p, err := s.lookup(r.topic, r.partition)
	if err != nil {
		r.finish(err)
		return
	}
	if p.rep == nil || p.rep.role != RoleFollower {
		role := RoleStandalone
		if p.rep != nil {
			role = p.rep.role
		}
		r.finish(fmt.Errorf("%w: %s/%d is %s here; only a follower takes replicated records", ErrNotLeader, p.topic, p.id, role))
		return
	}
	if f := p.failed.Load(); f != nil {
		r.finish(*f)
		return
	}
	p.followLeaderHW(r.ts)
	seg := p.active()
	next := seg.next
	if len(r.records) == 0 {
		r.endOffset = next
		r.finish(nil)
		return
	}
	for off := 0; off < len(r.records); {
		h, _ := ParseBatchHeader(r.records[off:]) // validated by the caller
		// In a compacted topic a gap is where the leader's cleaner removed
		// batches; elsewhere the offsets must follow on.
		if h.BaseOffset != next && (h.BaseOffset < next || !p.cfg.compacts()) {
			if off == 0 {
				r.finish(fmt.Errorf("%w: %s/%d: replicated records start at offset %d, the local log ends at %d",
					ErrInvalidRequest, p.topic, p.id, h.BaseOffset, next))
			} else {
				r.finish(fmt.Errorf("%w: %s/%d: replicated batch at offset %d follows one ending at %d",
					ErrInvalidRequest, p.topic, p.id, h.BaseOffset, next))
			}
			return
		}
		next = h.NextOffset()
		off += int(h.Length)
	}
	if seg.size > 0 && (seg.size+int64(len(r.records)) > p.cfg.SegmentBytes ||
		r.appendedAt.Sub(seg.created) >= p.cfg.SegmentMs || seg.indexFull() ||
		next-seg.base > math.MaxUint32/2) {
		if err := p.roll(s, seg.next); err != nil {
			if !errors.Is(err, ErrStorage) {
				err = fmt.Errorf("%w: %w", ErrStorage, err)
			}
			r.finish(fmt.Errorf("roll %s/%d: %w", p.topic, p.id, err))
			return
		}
		seg = p.active()
	}
	if err := seg.appendBatches(r.records, s.opts.IndexIntervalBytes); err != nil {
		if ref, ferr := seg.file(); ferr == nil {
			_ = ref.f.Truncate(seg.size) // as produce: keep the log valid for the next append
		}
		s.logAppendError(p, err)
		r.finish(err)
		return
	}
	ts := r.appendedAt.UnixMilli()
	newEpoch := false
	for off := 0; off < len(r.records); {
		h, _ := ParseBatchHeader(r.records[off:])
		if e, ok := p.latestEpoch(); !ok || h.LeaderEpoch > e {
			p.epochs = append(p.epochs, epochEntry{epoch: h.LeaderEpoch, start: h.BaseOffset})
			newEpoch = true
		}
		if h.ProducerID >= 0 {
			p.noteAppendTxn(&h, r.records[off:off+int(h.Length)], ts)
		}
		off += int(h.Length)
	}
	if newEpoch {
		s.saveEpochsLater(p)
	}
	s.paceWriteback(p, seg)
	r.endOffset = next
	s.ackAppend(p, seg, r)
}

// followLeaderHW sets a follower's high watermark to the leader's, capped
// at the local durable end. Unlike a leader's it may move back, as
// Kafka's follower does: after a restart it starts at the log end, which
// may hold records the leader never committed, and this replica must not
// count them as committed should it lead next. Followers serve no
// consumer, so none sees it move back.
func (p *partition) followLeaderHW(hw int64) {
	if hw < 0 {
		return
	}
	p.rep.leaderHW = hw
	if c := min(hw, p.durableEnd); c < p.hw {
		p.hw = c
		p.hwPos = hwPosition{}
	}
	p.updateHW()
}

// ReplicaStatuses lists the replication state of every partition that has
// a role.
func (s *Store) ReplicaStatuses(ctx context.Context) ([]ReplicaStatus, error) {
	var out []ReplicaStatus
	for _, sh := range s.shards {
		r := &request{kind: reqTestHook, done: make(chan struct{}, 1)}
		var got []ReplicaStatus
		r.hook = func(sh *shard) {
			for _, p := range sh.parts {
				if p.rep != nil {
					got = append(got, p.replicaStatus())
				}
			}
		}
		if err := s.call(ctx, sh, r); err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func (p *partition) replicaStatus() ReplicaStatus {
	rs := ReplicaStatus{Topic: p.topic, Partition: p.id, Role: p.rep.role, LeaderEpoch: p.rep.epoch,
		LogEnd: p.leo(), HighWatermark: p.hw, ISR: slices.Clone(p.rep.isr)}
	for _, f := range p.rep.followers {
		rs.Followers = append(rs.Followers, FollowerStatus{ID: f.id, LEO: f.leo, LastCaughtUp: f.lastCaughtUp})
	}
	return rs
}

// OffsetForLeaderEpoch answers from the partition's leader-epoch cache.
func (s *Store) OffsetForLeaderEpoch(ctx context.Context, topic string, id int32, epoch int32) (EpochEnd, error) {
	var out EpochEnd
	err := s.onShard(ctx, topic, id, func(sh *shard, p *partition) error {
		out = p.endOfEpoch(epoch)
		return nil
	})
	if err != nil {
		return EpochEnd{}, err // out may still be written by the shard when ctx ended
	}
	return out, nil
}

// SetLease extends how long this store may act as a leader without
// hearing from the controller. Once it passes, produce and consumer fetches
// on led partitions fail with ErrNotLeader until the lease is extended: a
// store the controller has fenced must not serve stale reads. Until the
// first call there is no lease and nothing is refused. A deadline earlier
// than the one held is ignored (a late heartbeat answer must not cut it).
func (s *Store) SetLease(until time.Time) {
	d := max(1, int64(until.Sub(s.lease.base)))
	for {
		cur := s.lease.until.Load()
		if cur >= d || s.lease.until.CompareAndSwap(cur, d) {
			return
		}
	}
}
