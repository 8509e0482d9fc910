package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/logstore/ring"
)

// KIP-932 share partitions: the delivery state of one group's records in
// one topic partition, held by the gateway that leads the partition
// (where share fetches go). A share partition keeps the window of
// in-flight records between the share-partition start offset (SPSO:
// everything before it is done) and end offset (SPEO: nothing at or after
// it was handed out yet). Each in-flight record is available, acquired by
// a member until its lock (share.record.lock.duration.ms) expires, or
// done: accepted, or archived (rejected, or released or timed out after
// share.delivery.count.limit deliveries). An archived record goes to the
// group's dead-letter topic first (errors.deadletterqueue.topic.name) and
// holds the SPSO back until it is written there, so none is lost. The
// window is bounded by share.partition.max.record.locks.
//
// The SPSO is written to __consumer_offsets (key version shareStateKey,
// the group's partition) about once a second when it or the in-flight
// window changed, with the window itself: each record's state and
// delivery count, as ranges (Kafka keeps the same in __share_group_state).
// A gateway opening the share partition again reads them back, so after a
// restart records already accepted or archived are not delivered again,
// delivery counts carry on (an acquired record comes back available,
// that delivery counted), and archived records not yet written to the
// dead-letter topic are written. What changed in the last second before a
// crash is delivered again (at least once).
//
// With share.isolation.level=read_committed, acquisition reads the log as
// a read_committed consumer does: up to the last stable offset, and the
// records of aborted transactions are skipped like control records (never
// delivered, never in the window, not dead letters), as Kafka's share
// partition archives them.

// shareMemberGoneKey marks a tombstone the group's coordinator writes
// when a share group member leaves or its session ends, so the gateways
// holding the group's share partitions release what it acquired there at
// once, not when its locks run out.
const shareMemberGoneKey int16 = 0x7AE3

const (
	shareStateKey int16 = 0x7AE2

	// Record states.
	recAvailable int8 = iota
	recAcquired
	recDone // accepted, or archived and written to the DLQ
	recDLQ  // archived, its DLQ record not written yet
)

// Acknowledge types (ShareFetch and ShareAcknowledge).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

// inflight is one in-flight record.
type inflight struct {
	state    int8
	count    int16 // deliveries so far
	member   string
	deadline time.Time
}

// shareLimits are the group configs a share partition works with.
type shareLimits struct {
	lock     time.Duration
	maxCount int16
	maxLocks int
}

// dlqEntry is an archived record to be written to the dead-letter topic.
type dlqEntry struct {
	offset int64
	count  int16
	reason string
}

// sharePartition is one group's delivery state of one partition. The
// guarded fields sit in mu.
type sharePartition struct {
	group, topic string
	part         int32

	mu struct {
		sync.Mutex
		init      bool
		start     int64   // SPSO
		end       int64   // SPEO
		offs      []int64 // in-flight offsets, ascending
		recs      map[int64]*inflight
		pending   []dlqEntry // archived, to write to the DLQ
		persisted int64      // the SPSO last written; -1 none
		savedWin  string     // the window last written (shareWindow's JSON)
	}
}

func newSharePartition(group, topic string, part int32) *sharePartition {
	sp := &sharePartition{group: group, topic: topic, part: part}
	sp.mu.recs = map[int64]*inflight{}
	sp.mu.persisted = -1
	return sp
}

// initLocked sets the window at offset.
func (sp *sharePartition) initLocked(offset int64) {
	sp.mu.init = true
	sp.mu.start, sp.mu.end = offset, offset
	sp.mu.offs = nil
	sp.mu.recs = map[int64]*inflight{}
}

// batchSpan is what acquisition needs of a batch: its offsets and kind.
type batchSpan struct {
	base, last int64
	control    bool // a control batch, or (read_committed) an aborted transaction's: skipped
	pos, end   int  // byte range in the data
	txn        bool
	pid        int64
}

// walkBatches lists the whole batches in data (a fetch may cut the last).
func walkBatches(data []byte) []batchSpan {
	var out []batchSpan
	pos := 0
	for len(data)-pos >= 61 {
		n := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if n < 61 || pos+n > len(data) {
			break
		}
		b := data[pos : pos+n]
		base := int64(binary.BigEndian.Uint64(b))
		last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
		attrs := binary.BigEndian.Uint16(b[21:])
		out = append(out, batchSpan{base: base, last: last, control: attrs&0x20 != 0, pos: pos, end: pos + n,
			txn: attrs&0x10 != 0, pid: int64(binary.BigEndian.Uint64(b[43:]))})
		pos += n
	}
	return out
}

// expireLocked releases the records whose lock ended, archiving those at
// the delivery limit.
func (sp *sharePartition) expireLocked(now time.Time, lim shareLimits) bool {
	released := false
	for _, o := range sp.mu.offs {
		r := sp.mu.recs[o]
		if r.state == recAcquired && now.After(r.deadline) {
			sp.releaseLocked(o, r, lim, "acquisition lock timed out")
			released = true
		}
	}
	return released
}

// releaseLocked makes an acquired record available again, or archives it
// once it was delivered share.delivery.count.limit times.
func (sp *sharePartition) releaseLocked(o int64, r *inflight, lim shareLimits, why string) {
	r.member = ""
	if r.count >= lim.maxCount {
		r.state = recDLQ
		sp.mu.pending = append(sp.mu.pending, dlqEntry{offset: o, count: r.count, reason: why + ": delivery count limit reached"})
		return
	}
	r.state = recAvailable
}

// firstAvailableLocked is where the next read starts: the lowest
// available record, else the end offset.
func (sp *sharePartition) firstAvailableLocked() int64 {
	for _, o := range sp.mu.offs {
		if sp.mu.recs[o].state == recAvailable {
			return o
		}
	}
	return sp.mu.end
}

// acquired is a range of acquired offsets with one delivery count.
type acquired struct {
	first, last int64
	count       int16
}

// acquireLocked acquires for member the available and new records among
// batches, at most maxRecords (rounded up to a batch boundary unless
// strict: ShareFetch's batch-optimized and record-limit modes), and
// returns them as ranges.
func (sp *sharePartition) acquireLocked(member string, batches []batchSpan, maxRecords int, strict bool, now time.Time, lim shareLimits) []acquired {
	var out []acquired
	n := 0
	add := func(o int64, count int16) {
		if k := len(out) - 1; k >= 0 && out[k].last == o-1 && out[k].count == count {
			out[k].last = o
		} else {
			out = append(out, acquired{first: o, last: o, count: count})
		}
		n++
	}
	for _, b := range batches {
		if n >= maxRecords {
			break
		}
		if b.control {
			if b.last >= sp.mu.end {
				sp.mu.end = b.last + 1
			}
			continue
		}
		for o := b.base; o <= b.last; o++ {
			if strict && n >= maxRecords {
				return out
			}
			switch {
			case o < sp.mu.start:
			case o < sp.mu.end:
				r := sp.mu.recs[o]
				if r == nil || r.state != recAvailable {
					continue
				}
				r.state, r.member, r.deadline = recAcquired, member, now.Add(lim.lock)
				r.count++
				add(o, r.count)
			default:
				if len(sp.mu.offs) >= lim.maxLocks {
					return out
				}
				sp.mu.recs[o] = &inflight{state: recAcquired, count: 1, member: member, deadline: now.Add(lim.lock)}
				sp.mu.offs = append(sp.mu.offs, o)
				sp.mu.end = o + 1
				add(o, 1)
			}
		}
	}
	return out
}

// errInvalidRecordState is Kafka's answer to an acknowledgement of a
// record the member does not hold.
var errInvalidRecordState = kerr.InvalidRecordState

// ackBatch is one acknowledgement batch of a request.
type ackBatch struct {
	first, last int64
	types       []int8
}

func (b ackBatch) typeAt(o int64) int8 {
	if len(b.types) == 1 {
		return b.types[0]
	}
	return b.types[o-b.first]
}

// checkAckBatches validates the shape of acknowledgement batches.
func checkAckBatches(bs []ackBatch, renewOK bool) error {
	prev := int64(-1)
	for _, b := range bs {
		switch {
		case b.first < 0 || b.last < b.first:
			return fmt.Errorf("%w: acknowledgement batch [%d, %d]", kerr.InvalidRequest, b.first, b.last)
		case b.first <= prev:
			return fmt.Errorf("%w: acknowledgement batches overlap or are out of order at %d", kerr.InvalidRequest, b.first)
		case len(b.types) != 1 && int64(len(b.types)) != b.last-b.first+1:
			return fmt.Errorf("%w: %d acknowledge types for [%d, %d]", kerr.InvalidRequest, len(b.types), b.first, b.last)
		}
		for _, t := range b.types {
			if t < ackGap || t > ackRenew || (t == ackRenew && !renewOK) {
				return fmt.Errorf("%w: acknowledge type %d", kerr.InvalidRequest, t)
			}
		}
		prev = b.last
	}
	return nil
}

// acknowledgeLocked applies a member's acknowledgements, all or none: a
// record it does not hold (never acquired, acquired by another member,
// already acknowledged, or its lock expired) is INVALID_RECORD_STATE.
func (sp *sharePartition) acknowledgeLocked(member string, bs []ackBatch, now time.Time, lim shareLimits) error {
	for _, b := range bs {
		for o := b.first; o <= b.last; o++ {
			r := sp.mu.recs[o]
			if b.typeAt(o) == ackGap && (r == nil || o < sp.mu.start) {
				continue // no record there: nothing to acknowledge
			}
			if o < sp.mu.start || o >= sp.mu.end || r == nil {
				return fmt.Errorf("%w: offset %d of %s-%d was not acquired by member %s", errInvalidRecordState, o, sp.topic, sp.part, member)
			}
			if r.state != recAcquired || r.member != member {
				return fmt.Errorf("%w: offset %d of %s-%d is not held by member %s", errInvalidRecordState, o, sp.topic, sp.part, member)
			}
		}
	}
	for _, b := range bs {
		for o := b.first; o <= b.last; o++ {
			r := sp.mu.recs[o]
			if r == nil {
				continue
			}
			switch b.typeAt(o) {
			case ackAccept, ackGap:
				r.state, r.member = recDone, ""
			case ackRelease:
				sp.releaseLocked(o, r, lim, "released")
			case ackReject:
				r.state, r.member = recDLQ, ""
				sp.mu.pending = append(sp.mu.pending, dlqEntry{offset: o, count: r.count, reason: "rejected"})
			case ackRenew:
				r.deadline = now.Add(lim.lock)
			}
		}
	}
	sp.advanceLocked()
	return nil
}

// releaseMemberLocked releases every record member holds (its share
// session closed, or it left the group).
func (sp *sharePartition) releaseMemberLocked(member string, lim shareLimits) bool {
	any := false
	for _, o := range sp.mu.offs {
		if r := sp.mu.recs[o]; r.state == recAcquired && r.member == member {
			sp.releaseLocked(o, r, lim, "released when the member left")
			any = true
		}
	}
	return any
}

// advanceLocked moves the SPSO past the records that are done.
func (sp *sharePartition) advanceLocked() {
	i := 0
	for ; i < len(sp.mu.offs); i++ {
		o := sp.mu.offs[i]
		if sp.mu.recs[o].state != recDone {
			break
		}
		delete(sp.mu.recs, o)
	}
	sp.mu.offs = sp.mu.offs[i:]
	if len(sp.mu.offs) > 0 {
		sp.mu.start = sp.mu.offs[0]
	} else {
		sp.mu.start = sp.mu.end
	}
}

// dlqWrittenLocked marks DLQ entries written: their records are done.
func (sp *sharePartition) dlqWrittenLocked(es []dlqEntry) {
	for _, e := range es {
		if r := sp.mu.recs[e.offset]; r != nil && r.state == recDLQ {
			r.state = recDone
		}
	}
	sp.advanceLocked()
}

// shareKey names a share partition.
type shareKey struct {
	group, topic string
	part         int32
}

// shareSession is a member's share fetch session (KIP-932's share
// sessions): the partitions it fetches and the epoch it must send next.
// It holds every partition the client named, servable here or not, as the
// client's mirror of the session does; each fetch resolves them afresh.
type shareSession struct {
	epoch int32
	parts map[sharePartID]bool
	conn  *session // the connection that opened it
}

// shares is the gateway's registry of share partitions and sessions.
type shares struct {
	g *Gateway

	mu struct {
		sync.Mutex
		parts     map[shareKey]*sharePartition
		sessions  map[[2]string]*shareSession // group, member
		persisted map[shareKey]int64          // SPSOs read back from __consumer_offsets
		windows   map[shareKey]shareWindow    // in-flight windows read back with them
		wake      chan struct{}               // closed when records become available
		// departed are group members whose departure was read from
		// __consumer_offsets, to release here (persist).
		departed [][2]string
	}
}

func newShares(g *Gateway) *shares {
	s := &shares{g: g}
	s.mu.parts = map[shareKey]*sharePartition{}
	s.mu.sessions = map[[2]string]*shareSession{}
	s.mu.persisted = map[shareKey]int64{}
	s.mu.windows = map[shareKey]shareWindow{}
	s.mu.wake = make(chan struct{})
	return s
}

// woken returns a channel closed the next time records become available
// (released or timed out).
func (s *shares) woken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.wake
}

func (s *shares) wakeUp() {
	s.mu.Lock()
	close(s.mu.wake)
	s.mu.wake = make(chan struct{})
	s.mu.Unlock()
}

func (s *shares) limits(group string) shareLimits {
	gc := &s.g.groupCfg
	return shareLimits{
		lock:     gc.getDuration(group, "share.record.lock.duration.ms"),
		maxCount: int16(gc.getInt(group, "share.delivery.count.limit")),
		maxLocks: int(gc.getInt(group, "share.partition.max.record.locks")),
	}
}

// partition returns the share partition, opening it (at its persisted
// SPSO, else by share.auto.offset.reset) on first use.
func (s *shares) partition(ctx context.Context, group, topic string, part int32) (*sharePartition, error) {
	k := shareKey{group, topic, part}
	s.mu.Lock()
	sp := s.mu.parts[k]
	if sp == nil {
		sp = newSharePartition(group, topic, part)
		s.mu.parts[k] = sp
	}
	s.mu.Unlock()
	sp.mu.Lock()
	inited := sp.mu.init
	sp.mu.Unlock()
	if inited {
		return sp, nil
	}
	// Read the group's offsets partition first: its SPSO and configs.
	c := s.g.groups
	select {
	case <-c.ready:
	default:
		return nil, errCoordinatorLoading
	}
	if err := c.catchUp(ctx, c.partitionFor(group)); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	info, err := s.g.backend.DescribePartition(ctx, topic, part)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	start, ok := s.mu.persisted[k]
	win, hasWin := s.mu.windows[k]
	s.mu.Unlock()
	if !ok {
		start = info.HighWatermark
		if s.g.groupCfg.get(group, "share.auto.offset.reset") == "earliest" {
			start = info.LogStartOffset
		}
	}
	start = max(start, info.LogStartOffset)
	sp.mu.Lock()
	if !sp.mu.init {
		sp.initLocked(start)
		if ok {
			sp.mu.persisted = start
		}
		if ok && hasWin {
			sp.restoreLocked(win)
		}
	}
	sp.mu.Unlock()
	return sp, nil
}

// loaded returns the share partition if this gateway has it open.
func (s *shares) loaded(k shareKey) *sharePartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.parts[k]
}

// memberLeft releases what a member holds in every share partition of
// its group here, and drops its share session.
func (s *shares) memberLeft(group, member string) {
	s.mu.Lock()
	delete(s.mu.sessions, [2]string{group, member})
	var sps []*sharePartition
	for k, sp := range s.mu.parts {
		if k.group == group {
			sps = append(sps, sp)
		}
	}
	s.mu.Unlock()
	lim := s.limits(group)
	released := false
	for _, sp := range sps {
		sp.mu.Lock()
		if sp.releaseMemberLocked(member, lim) {
			released = true
		}
		sp.mu.Unlock()
	}
	if released {
		s.wakeUp()
	}
}

// applyShareStateLocked applies an SPSO record read back from
// __consumer_offsets (called with the coordinator's lock held).
func (c *coordinator) applyShareStateLocked(r record) {
	k, ok := readShareKey(r.key)
	if !ok {
		c.log.Warn("skipping a malformed share state key")
		return
	}
	s := c.g.shares
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.windows, k)
	if r.value == nil {
		// Deleted (DeleteShareGroupOffsets, DeleteGroups), possibly
		// through another gateway: nothing open here survives it.
		delete(s.mu.persisted, k)
		delete(s.mu.parts, k)
		return
	}
	var v struct {
		Start int64 `json:"start"`
		Reset bool  `json:"reset,omitempty"`
		shareWindow
	}
	if err := json.Unmarshal(r.value, &v); err != nil || v.Start < 0 {
		c.log.Warn("skipping a malformed share state record", "group", k.group, "err", err)
		return
	}
	if v.Reset {
		// An admin moved the SPSO, possibly through another gateway:
		// a share partition open here starts again from it.
		delete(s.mu.parts, k)
	}
	s.mu.persisted[k] = v.Start
	if v.End > 0 {
		s.mu.windows[k] = v.shareWindow
	}
}

// shareMaxWindow bounds a window read back: the largest
// share.partition.max.record.locks, so a damaged record cannot have a
// gateway allocate without end.
const shareMaxWindow = 10000

// shareWindow is a share partition's in-flight window as written: its end
// offset and ranges of records [first, last, state, delivery count].
type shareWindow struct {
	End    int64      `json:"end,omitempty"`
	Ranges [][4]int64 `json:"win,omitempty"`
}

// windowLocked is the window to write: an acquired record is written
// available (its delivery counted), since its lock does not outlive the
// gateway that holds it.
func (sp *sharePartition) windowLocked() shareWindow {
	w := shareWindow{End: sp.mu.end}
	for _, o := range sp.mu.offs {
		r := sp.mu.recs[o]
		st := r.state
		if st == recAcquired {
			st = recAvailable
		}
		if n := len(w.Ranges) - 1; n >= 0 && w.Ranges[n][1] == o-1 && w.Ranges[n][2] == int64(st) && w.Ranges[n][3] == int64(r.count) {
			w.Ranges[n][1] = o
			continue
		}
		w.Ranges = append(w.Ranges, [4]int64{o, o, int64(st), int64(r.count)})
	}
	return w
}

// restoreLocked sets the window read back over the one initLocked set at
// the SPSO; records before the SPSO (the log start may have moved) are
// dropped, and archived records not yet in the dead-letter topic are
// queued for it again.
func (sp *sharePartition) restoreLocked(w shareWindow) {
	if w.End <= sp.mu.start {
		return
	}
	for _, rg := range w.Ranges {
		st, count := int8(rg[2]), int16(rg[3])
		if st != recAvailable && st != recDone && st != recDLQ {
			continue
		}
		for o := max(rg[0], sp.mu.start); o <= rg[1] && o < w.End && len(sp.mu.offs) < shareMaxWindow; o++ {
			if _, dup := sp.mu.recs[o]; dup || (len(sp.mu.offs) > 0 && o < sp.mu.offs[len(sp.mu.offs)-1]) {
				continue
			}
			sp.mu.recs[o] = &inflight{state: st, count: count}
			sp.mu.offs = append(sp.mu.offs, o)
			if st == recDLQ {
				sp.mu.pending = append(sp.mu.pending, dlqEntry{offset: o, count: count, reason: "archived before the share partition was reloaded"})
			}
		}
	}
	sp.mu.end = w.End
	sp.mu.savedWin = string(mustJSON(sp.windowLocked()))
	sp.advanceLocked()
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// shareStateRecord is the SPSO record of a share partition; start < 0
// deletes it. win, when set, is the window's JSON (shareWindow).
func shareStateRecord(k shareKey, start int64, win ...[]byte) record {
	key := kbinKey(shareStateKey, k.group)
	key = binary.BigEndian.AppendUint16(key, uint16(len(k.topic)))
	key = append(key, k.topic...)
	key = binary.BigEndian.AppendUint32(key, uint32(k.part))
	r := record{key: key}
	if start >= 0 {
		r.value = []byte(`{"start":` + strconv.FormatInt(start, 10) + `}`)
		if len(win) > 0 && len(win[0]) > 2 { // more than "{}"
			r.value = append(append(r.value[:len(r.value)-1], ','), win[0][1:]...)
		}
	}
	return r
}

// shareMemberGoneRecord is the tombstone that says member left group.
func shareMemberGoneRecord(group, member string) record {
	key := kbinKey(shareMemberGoneKey, group)
	key = binary.BigEndian.AppendUint16(key, uint16(len(member)))
	return record{key: append(key, member...)}
}

// readShareMemberGone is shareMemberGoneRecord's key decoder; it is
// fuzzed (FuzzShareMemberGoneKey).
func readShareMemberGone(b []byte) (group, member string, ok bool) {
	if len(b) < 4 {
		return "", "", false
	}
	gl := int(binary.BigEndian.Uint16(b[2:]))
	if len(b) < 4+gl+2 {
		return "", "", false
	}
	group = string(b[4 : 4+gl])
	b = b[4+gl:]
	ml := int(binary.BigEndian.Uint16(b))
	if len(b) != 2+ml || ml == 0 {
		return "", "", false
	}
	return group, string(b[2:]), true
}

// applyShareMemberGoneLocked notes a departure read from the log; persist
// releases what the member holds here, outside the coordinator's lock.
func (c *coordinator) applyShareMemberGoneLocked(r record) {
	group, member, ok := readShareMemberGone(r.key)
	if !ok {
		c.log.Warn("skipping a malformed share member record")
		return
	}
	s := c.g.shares
	s.mu.Lock()
	s.mu.departed = append(s.mu.departed, [2]string{group, member})
	s.mu.Unlock()
}

// memberGone is a share group member's departure on the group's
// coordinator: released here at once, and announced to the gateways
// holding the group's other share partitions. Called on the group
// goroutine.
func (s *shares) memberGone(ctx context.Context, group string, part int32, member string) {
	s.memberLeft(group, member)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.g.groups.write(ctx, part, []record{shareMemberGoneRecord(group, member)}); err != nil && ctx.Err() == nil {
		s.g.log.Warn("announcing a share member's departure; its locks will time out elsewhere", "group", group, "member", member, "err", err)
	}
}

// shareResetRecord is an admin's move of a share partition's SPSO (or,
// with start < 0, its deletion): marked as a reset, so that the gateway
// holding the partition open, which may not be the one that wrote it,
// starts it again from there when it reads the record.
func shareResetRecord(k shareKey, start int64) record {
	r := shareStateRecord(k, start)
	if start >= 0 {
		r.value = []byte(`{"start":` + strconv.FormatInt(start, 10) + `,"reset":true}`)
	}
	return r
}

// readShareKey is shareStateRecord's key decoder; it is fuzzed
// (FuzzShareStateKey).
func readShareKey(b []byte) (shareKey, bool) {
	if len(b) < 4 {
		return shareKey{}, false
	}
	gl := int(binary.BigEndian.Uint16(b[2:]))
	if len(b) < 4+gl+2 {
		return shareKey{}, false
	}
	group := string(b[4 : 4+gl])
	b = b[4+gl:]
	tl := int(binary.BigEndian.Uint16(b))
	if len(b) != 2+tl+4 {
		return shareKey{}, false
	}
	return shareKey{group: group, topic: string(b[2 : 2+tl]), part: int32(binary.BigEndian.Uint32(b[2+tl:]))}, true
}

// run expires locks, writes the DLQ and persists SPSOs until ctx ends.
func (s *shares) run(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	lastPersist := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sweep(ctx, now)
			if now.Sub(lastPersist) >= time.Second {
				s.persist(ctx)
				lastPersist = now
			}
		}
	}
}

// sweep expires locks and writes pending DLQ records.
func (s *shares) sweep(ctx context.Context, now time.Time) {
	s.mu.Lock()
	sps := make([]*sharePartition, 0, len(s.mu.parts))
	for _, sp := range s.mu.parts {
		sps = append(sps, sp)
	}
	s.mu.Unlock()
	released := false
	for _, sp := range sps {
		lim := s.limits(sp.group)
		sp.mu.Lock()
		if sp.expireLocked(now, lim) {
			released = true
		}
		pending := sp.mu.pending
		sp.mu.pending = nil
		sp.mu.Unlock()
		if len(pending) == 0 {
			continue
		}
		if err := s.g.writeDLQ(ctx, sp, pending); err != nil {
			s.g.log.Warn("writing to the dead-letter topic, will retry", "group", sp.group, "topic", sp.topic, "partition", sp.part, "records", len(pending), "err", err)
			sp.mu.Lock()
			sp.mu.pending = append(pending, sp.mu.pending...)
			sp.mu.Unlock()
			continue
		}
		sp.mu.Lock()
		sp.dlqWrittenLocked(pending)
		sp.mu.Unlock()
	}
	if released {
		s.wakeUp()
	}
}

// persist writes the SPSOs that moved.
func (s *shares) persist(ctx context.Context) {
	c := s.g.groups
	select {
	case <-c.ready:
	default:
		return
	}
	// Read what other gateways wrote for the groups open here first:
	// an admin's reset of a partition this gateway holds
	// (applyShareStateLocked).
	s.mu.Lock()
	groupParts := map[int32]bool{}
	for k := range s.mu.parts {
		groupParts[c.partitionFor(k.group)] = true
	}
	s.mu.Unlock()
	for p := range groupParts {
		if err := c.catchUp(ctx, p); err != nil {
			if ctx.Err() == nil {
				s.g.log.Warn("reading share-partition state", "partition", p, "err", err)
			}
			return
		}
	}
	s.mu.Lock()
	departed := s.mu.departed
	s.mu.departed = nil
	s.mu.Unlock()
	for _, d := range departed {
		s.memberLeft(d[0], d[1])
	}
	s.mu.Lock()
	sps := make([]*sharePartition, 0, len(s.mu.parts))
	for _, sp := range s.mu.parts {
		sps = append(sps, sp)
	}
	s.mu.Unlock()
	byPart := map[int32][]record{}
	type moved struct {
		sp    *sharePartition
		start int64
		win   string
	}
	var done []moved
	for _, sp := range sps {
		sp.mu.Lock()
		if sp.mu.init {
			win := mustJSON(sp.windowLocked())
			if sp.mu.start != sp.mu.persisted || string(win) != sp.mu.savedWin {
				k := shareKey{sp.group, sp.topic, sp.part}
				p := c.partitionFor(sp.group)
				byPart[p] = append(byPart[p], shareStateRecord(k, sp.mu.start, win))
				done = append(done, moved{sp, sp.mu.start, string(win)})
			}
		}
		sp.mu.Unlock()
	}
	for p, recs := range byPart {
		if err := c.write(ctx, p, recs); err != nil {
			if ctx.Err() == nil {
				s.g.log.Warn("persisting share-partition start offsets", "partition", p, "err", err)
			}
			return
		}
	}
	for _, m := range done {
		m.sp.mu.Lock()
		m.sp.mu.persisted, m.sp.mu.savedWin = m.start, m.win
		m.sp.mu.Unlock()
	}
}

// reset moves a share partition's SPSO (AlterShareGroupOffsets) or, with
// start < 0, forgets it (DeleteShareGroupOffsets), durably.
func (s *shares) reset(ctx context.Context, k shareKey, start int64) error {
	c := s.g.groups
	if err := c.write(ctx, c.partitionFor(k.group), []record{shareResetRecord(k, start)}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.windows, k)
	if start < 0 {
		delete(s.mu.persisted, k)
		delete(s.mu.parts, k)
		return nil
	}
	s.mu.persisted[k] = start
	if sp := s.mu.parts[k]; sp != nil {
		sp.mu.Lock()
		sp.initLocked(start)
		sp.mu.persisted = start
		sp.mu.Unlock()
	}
	return nil
}

// startOffset is a share partition's SPSO as this gateway knows it: from
// the open partition, else the persisted one; ok false when it has none.
func (s *shares) startOffset(k shareKey) (int64, bool) {
	if sp := s.loaded(k); sp != nil {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if sp.mu.init {
			return sp.mu.start, true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.mu.persisted[k]
	return v, ok
}

// topicsOf lists the topics a group has share state for.
func (s *shares) topicsOf(group string) map[string][]int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]int32{}
	add := func(k shareKey) {
		if k.group == group && !slices.Contains(out[k.topic], k.part) {
			out[k.topic] = append(out[k.topic], k.part)
		}
	}
	for k := range s.mu.parts {
		add(k)
	}
	for k := range s.mu.persisted {
		add(k)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// shareIsolation is the group's share.isolation.level as a fetch's.
func (g *Gateway) shareIsolation(group string) int8 {
	if g.groupCfg.get(group, "share.isolation.level") == "read_committed" {
		return ring.ReadCommitted
	}
	return ring.ReadUncommitted
}

// readShareLog reads a share partition's log from offset, for
// acquisition, under the group's isolation level: under read_committed
// the store stops at the last stable offset and lists the aborted
// transactions of the range.
func (g *Gateway) readShareLog(ctx context.Context, topic string, part int32, from int64, maxBytes int32, iso int8) ([]byte, []ring.AbortedTxn, error) {
	res, err := g.backend.Fetch(ctx, &ring.FetchRequest{
		Partitions:     []ring.FetchPartition{{Topic: topic, Partition: part, Offset: from, MaxBytes: maxBytes}},
		MaxBytes:       maxBytes,
		IsolationLevel: iso,
	})
	if err != nil {
		return nil, nil, err
	}
	defer res.Release()
	pr := res.Partitions[0]
	if pr.Err != nil {
		if errors.Is(pr.Err, ring.ErrOffsetOutOfRange) {
			return nil, nil, nil
		}
		return nil, nil, pr.Err
	}
	data, err := pr.Records.ReadAll(nil)
	return data, pr.AbortedTransactions, err
}

// skipAborted marks the batches of aborted transactions to be skipped as
// control batches are: a transactional batch of a producer whose aborted
// transaction spans its base offset.
func skipAborted(batches []batchSpan, aborted []ring.AbortedTxn) {
	for i := range batches {
		b := &batches[i]
		if !b.txn || b.control {
			continue
		}
		for _, a := range aborted {
			if a.ProducerID == b.pid && a.FirstOffset <= b.base && b.base <= a.LastOffset {
				b.control = true
				break
			}
		}
	}
}

// shareFetchPartition acquires records of one share partition for member:
// it reads the log from the first available record and returns the
// batches that hold what it acquired.
func (g *Gateway) shareFetchPartition(ctx context.Context, sp *sharePartition, member string, maxRecords int, strict bool, maxBytes int32) ([]byte, []acquired, error) {
	lim := g.shares.limits(sp.group)
	now := time.Now()
	sp.mu.Lock()
	if sp.expireLocked(now, lim) {
		defer g.shares.wakeUp()
	}
	from := sp.firstAvailableLocked()
	full := len(sp.mu.offs) >= lim.maxLocks && from == sp.mu.end
	sp.mu.Unlock()
	if full {
		return nil, nil, nil
	}
	data, aborted, err := g.readShareLog(ctx, sp.topic, sp.part, from, maxBytes, g.shareIsolation(sp.group))
	if err != nil || len(data) == 0 {
		return nil, nil, err
	}
	batches := walkBatches(data)
	skipAborted(batches, aborted)
	sp.mu.Lock()
	acq := sp.acquireLocked(member, batches, maxRecords, strict, time.Now(), lim)
	sp.mu.Unlock()
	if len(acq) == 0 {
		return nil, nil, nil
	}
	// Keep only the batches that hold acquired records.
	var out []byte
	for _, b := range batches {
		for _, a := range acq {
			if a.first <= b.last && a.last >= b.base {
				out = append(out, data[b.pos:b.end]...)
				break
			}
		}
	}
	return out, acq, nil
}

// deleteGroup forgets a deleted share group's state, durably.
func (s *shares) deleteGroup(ctx context.Context, group string) error {
	for topic, ps := range s.topicsOf(group) {
		for _, p := range ps {
			if err := s.reset(ctx, shareKey{group, topic, p}, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// connClosed releases what a member holds when the connection that
// opened its share session closes, unless a newer session (on another
// connection) replaced it. It runs on the connection's goroutine, which
// also serves the session's requests, so conn.shareSessions needs no
// lock.
func (s *shares) connClosed(conn *session, group, member string) {
	s.mu.Lock()
	ss := s.mu.sessions[[2]string{group, member}]
	mine := ss != nil && ss.conn == conn
	s.mu.Unlock()
	if mine {
		s.memberLeft(group, member)
	}
}
