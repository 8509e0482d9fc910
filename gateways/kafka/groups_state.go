package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is Kafka's classic group state.
type groupState int8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	}
	return "Dead"
}

// groupTick is how often a live group checks its deadlines (session
// timeouts, the end of a join or sync phase). Session timeouts are at
// least GroupMinSessionTimeout (6s by default), so this is fine grained
// enough.
const groupTick = 100 * time.Millisecond

// group is one live group. Everything in it belongs to its goroutine
// (loop); other goroutines reach it only through reqs.
type group struct {
	c    *coordinator
	id   string
	part int32
	reqs chan func(*group) // unbuffered: a send lands only while loop runs
	done chan struct{}     // closed when the group retires

	state        groupState
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string    // group.instance.id -> member id
	pending      map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED -> expiry
	offsets      map[tp]committed
	seq          uint64 // join order, for picking a leader

	// cg is set while the group uses the KIP-848 consumer protocol
	// (groups_consumer.go), sg for a KIP-932 share group
	// (groups_share.go); classic fields stay empty then.
	cg *consumerGroup
	sg *shareGroup

	rebalanceDeadline time.Time // PreparingRebalance: the join phase ends
	initialDelayUntil time.Time // PreparingRebalance of an empty group
	syncDeadline      time.Time // CompletingRebalance: members must have synced
}

// member is one member of a group.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []groupProtocol
	assignment       []byte
	seq              uint64

	join     chan<- joinResult // set while the member awaits a join response
	sync     chan<- syncResult // set while the member awaits a sync response
	deadline time.Time         // session expiry
}

type groupProtocol struct {
	name     string
	metadata []byte
}

type joinRequest struct {
	memberID         string
	instanceID       *string
	clientID         string
	clientHost       string
	protocolType     string
	protocols        []groupProtocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	requireKnownID   bool // v4+: a new dynamic member first gets MEMBER_ID_REQUIRED
}

type joinResult struct {
	err          error
	memberID     string
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      []kmsg.JoinGroupResponseMember
}

type syncRequest struct {
	memberID     string
	instanceID   *string
	generation   int32
	protocolType *string
	protocol     *string
	assignments  map[string][]byte
}

type syncResult struct {
	err          error
	assignment   []byte
	protocolType string
	protocol     string
}

func newGroup(c *coordinator, id string, part int32, offs map[tp]committed) *group {
	if offs == nil {
		offs = map[tp]committed{}
	}
	return &group{
		c: c, id: id, part: part,
		reqs:    make(chan func(*group)),
		done:    make(chan struct{}),
		members: map[string]*member{},
		static:  map[string]string{},
		pending: map[string]time.Time{},
		offsets: offs,
	}
}

// loop serves the group until it retires or ctx ends.
func (gr *group) loop(ctx context.Context) {
	t := time.NewTicker(groupTick)
	defer t.Stop()
	for {
		select {
		case fn := <-gr.reqs:
			fn(gr)
		case now := <-t.C:
			gr.tick(now)
		case <-ctx.Done():
			gr.shutdown()
			return
		}
		if gr.idle() && gr.c.retire(gr) {
			return
		}
	}
}

// idle: no members, none about to join, no rebalance under way.
func (gr *group) idle() bool {
	return len(gr.members) == 0 && len(gr.pending) == 0 && (gr.state == groupEmpty || gr.state == groupDead) &&
		(gr.cg == nil || len(gr.cg.Members) == 0) && (gr.sg == nil || len(gr.sg.members) == 0)
}

// shutdown answers whoever waits, so no handler hangs on a stopping
// gateway; the clients find the coordinator again.
func (gr *group) shutdown() {
	for _, m := range gr.members {
		if m.join != nil {
			m.join <- joinResult{err: kerr.NotCoordinator, memberID: m.id, generation: -1}
			m.join = nil
		}
		if m.sync != nil {
			m.sync <- syncResult{err: kerr.NotCoordinator}
			m.sync = nil
		}
	}
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

// candidates are the protocols every member supports.
func (gr *group) candidates() map[string]bool {
	var out map[string]bool
	for _, m := range gr.members {
		names := map[string]bool{}
		for _, p := range m.protocols {
			if out == nil || out[p.name] {
				names[p.name] = true
			}
		}
		out = names
	}
	return out
}

// supports reports whether a member with these protocols may join.
func (gr *group) supports(protocolType string, protocols []groupProtocol) bool {
	if len(gr.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != gr.protocolType {
		return false
	}
	cands := gr.candidates()
	for _, p := range protocols {
		if cands[p.name] {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's vote: each member votes for the first of its
// protocols that every member supports; the most votes win, ties going to
// the earliest-joined member's choice.
func (gr *group) selectProtocol() string {
	cands := gr.candidates()
	votes := map[string]int{}
	var order []string
	for _, m := range gr.sortedMembers() {
		for _, p := range m.protocols {
			if cands[p.name] {
				if votes[p.name] == 0 {
					order = append(order, p.name)
				}
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func (gr *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(gr.members))
	for _, m := range gr.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

func sameProtocols(a, b []groupProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].metadata, b[i].metadata) {
			return false
		}
	}
	return true
}

// fenced reports a static member whose instance id now belongs to another
// member id.
func (gr *group) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := gr.static[*instanceID]
	return ok && id != memberID
}

func (gr *group) touch(m *member, now time.Time) { m.deadline = now.Add(m.sessionTimeout) }

func (gr *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range gr.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// join serves JoinGroup.
func (gr *group) join(r joinRequest, reply chan<- joinResult) {
	fail := func(err error) { reply <- joinResult{err: err, memberID: r.memberID, generation: -1} }
	if gr.state == groupDead {
		fail(kerr.CoordinatorNotAvailable)
		return
	}
	if gr.cg != nil && len(gr.cg.Members) > 0 {
		gr.classicJoin(r, reply) // groups_classic_members.go
		return
	}
	if !gr.classicJoinable() {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if !gr.supports(r.protocolType, r.protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	now := time.Now()
	if r.memberID == "" {
		id := newMemberID(r.clientID)
		if r.instanceID != nil {
			if old, ok := gr.static[*r.instanceID]; ok {
				gr.replaceStatic(old, id, r, reply, now)
				return
			}
			gr.addMember(id, r, reply, now)
			return
		}
		if r.requireKnownID {
			gr.pending[id] = now.Add(r.sessionTimeout)
			reply <- joinResult{err: kerr.MemberIDRequired, memberID: id, generation: -1}
			return
		}
		gr.addMember(id, r, reply, now)
		return
	}

	if _, ok := gr.pending[r.memberID]; ok {
		delete(gr.pending, r.memberID)
		gr.addMember(r.memberID, r, reply, now)
		return
	}
	m := gr.members[r.memberID]
	switch {
	case m == nil:
		fail(kerr.UnknownMemberID)
		return
	case gr.fenced(r.instanceID, r.memberID):
		fail(kerr.FencedInstanceID)
		return
	}
	gr.touch(m, now)
	switch gr.state {
	case groupPreparingRebalance:
		gr.updateMember(m, r, reply)
		gr.maybeCompleteJoin(now)
	case groupCompletingRebalance:
		if sameProtocols(m.protocols, r.protocols) {
			// A retry of a join whose answer was lost: answer it again.
			reply <- gr.joinResultFor(m)
			return
		}
		gr.updateMember(m, r, reply)
		gr.prepareRebalance(now, "member "+m.id+" rejoined with new metadata")
	case groupStable:
		if m.id == gr.leader || !sameProtocols(m.protocols, r.protocols) {
			gr.updateMember(m, r, reply)
			gr.prepareRebalance(now, "member "+m.id+" rejoined")
			return
		}
		res := gr.joinResultFor(m)
		res.members = nil
		reply <- res
	default:
		fail(kerr.UnknownMemberID)
	}
}

func (gr *group) updateMember(m *member, r joinRequest, reply chan<- joinResult) {
	if m.join != nil && m.join != reply {
		// A second join while the first still waits: the first is
		// superseded.
		m.join <- joinResult{err: kerr.RebalanceInProgress, memberID: m.id, generation: -1}
	}
	m.protocols = r.protocols
	m.sessionTimeout, m.rebalanceTimeout = r.sessionTimeout, r.rebalanceTimeout
	m.clientID, m.clientHost = r.clientID, r.clientHost
	m.join = reply
}

func (gr *group) addMember(id string, r joinRequest, reply chan<- joinResult, now time.Time) {
	gr.seq++
	m := &member{
		id: id, instanceID: r.instanceID, clientID: r.clientID, clientHost: r.clientHost,
		sessionTimeout: r.sessionTimeout, rebalanceTimeout: r.rebalanceTimeout,
		protocols: r.protocols, seq: gr.seq, join: reply,
	}
	gr.touch(m, now)
	if len(gr.members) == 0 {
		gr.protocolType = r.protocolType
	}
	gr.members[id] = m
	if r.instanceID != nil {
		gr.static[*r.instanceID] = id
	}
	if gr.state == groupPreparingRebalance {
		gr.maybeCompleteJoin(now)
	} else {
		gr.prepareRebalance(now, "member "+id+" joined")
	}
}

// replaceStatic gives a rejoining static member (known instance id, no
// member id) a new member id, fencing the old one, as Kafka does. In a
// stable group whose protocol would not change, the member gets the
// current generation back without a rebalance, and keeps its assignment.
func (gr *group) replaceStatic(oldID, newID string, r joinRequest, reply chan<- joinResult, now time.Time) {
	old := gr.members[oldID]
	if old == nil { // cannot happen: static ids point at members
		delete(gr.static, *r.instanceID)
		gr.addMember(newID, r, reply, now)
		return
	}
	if old.join != nil {
		old.join <- joinResult{err: kerr.FencedInstanceID, memberID: oldID, generation: -1}
		old.join = nil
	}
	if old.sync != nil {
		old.sync <- syncResult{err: kerr.FencedInstanceID}
		old.sync = nil
	}
	currentLeader := gr.leader
	delete(gr.members, oldID)
	old.id = newID
	gr.members[newID] = old
	gr.static[*r.instanceID] = newID
	if gr.leader == oldID {
		gr.leader = newID
	}
	gr.touch(old, now)
	gr.updateMember(old, r, reply)
	switch gr.state {
	case groupStable:
		if gr.selectProtocol() == gr.protocol {
			old.join = nil
			// The old leader id is returned on purpose: a static leader
			// coming back must not assign (a stable group would not pass
			// the new assignment on), and the new member id does not
			// match it.
			reply <- joinResult{memberID: newID, generation: gr.generation, protocolType: gr.protocolType, protocol: gr.protocol, leader: currentLeader}
			return
		}
		gr.prepareRebalance(now, "static member "+*r.instanceID+" rejoined with a protocol change")
	case groupCompletingRebalance:
		gr.prepareRebalance(now, "static member "+*r.instanceID+" rejoined during sync")
	case groupPreparingRebalance:
		gr.maybeCompleteJoin(now)
	default:
		gr.prepareRebalance(now, "static member "+*r.instanceID+" rejoined")
	}
}

// prepareRebalance starts a join phase.
func (gr *group) prepareRebalance(now time.Time, why string) {
	if gr.state == groupCompletingRebalance {
		for _, m := range gr.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync <- syncResult{err: kerr.RebalanceInProgress}
				m.sync = nil
			}
		}
	}
	wasEmpty := gr.state == groupEmpty
	gr.state = groupPreparingRebalance
	gr.syncDeadline = time.Time{}
	timeout := gr.maxRebalanceTimeout()
	gr.rebalanceDeadline = now.Add(timeout)
	gr.initialDelayUntil = time.Time{}
	if wasEmpty && gr.c.g.opts.GroupInitialRebalanceDelay > 0 {
		gr.initialDelayUntil = now.Add(min(gr.c.g.opts.GroupInitialRebalanceDelay, timeout))
	}
	gr.c.log.Debug("preparing rebalance", "group", gr.id, "generation", gr.generation, "members", len(gr.members), "reason", why)
	gr.maybeCompleteJoin(now)
}

// maybeCompleteJoin ends the join phase once every member (and every member
// id handed out with MEMBER_ID_REQUIRED) has joined.
func (gr *group) maybeCompleteJoin(now time.Time) {
	if gr.state != groupPreparingRebalance || now.Before(gr.initialDelayUntil) || len(gr.pending) > 0 {
		return
	}
	for _, m := range gr.members {
		if m.join == nil {
			return
		}
	}
	gr.completeJoin(now)
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation moves on, a protocol is chosen and every waiting
// member gets its answer, the leader with the member list.
func (gr *group) completeJoin(now time.Time) {
	for id, m := range gr.members {
		if m.join == nil {
			gr.c.log.Debug("removing member that did not rejoin", "group", gr.id, "member", id)
			gr.dropMember(m)
		}
	}
	gr.generation++
	if len(gr.members) == 0 {
		gr.state, gr.protocol, gr.leader = groupEmpty, "", ""
		gr.c.log.Debug("group is empty", "group", gr.id, "generation", gr.generation)
		gr.storeMetadata()
		return
	}
	gr.protocol = gr.selectProtocol()
	gr.state = groupCompletingRebalance
	if gr.members[gr.leader] == nil {
		gr.leader = gr.sortedMembers()[0].id
	}
	gr.syncDeadline = now.Add(gr.maxRebalanceTimeout())
	for _, m := range gr.members {
		res := gr.joinResultFor(m)
		m.join <- res
		m.join = nil
		gr.touch(m, now)
	}
	gr.c.log.Debug("join complete", "group", gr.id, "generation", gr.generation, "protocol", gr.protocol, "leader", gr.leader, "members", len(gr.members))
}

// joinResultFor is the current generation as member m sees it.
func (gr *group) joinResultFor(m *member) joinResult {
	res := joinResult{memberID: m.id, generation: gr.generation, protocolType: gr.protocolType, protocol: gr.protocol, leader: gr.leader}
	if m.id == gr.leader {
		for _, o := range gr.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(gr.protocol)
			res.members = append(res.members, jm)
		}
	}
	return res
}

// dropMember removes a member, answering what it waits for.
func (gr *group) dropMember(m *member) {
	if m.join != nil {
		m.join <- joinResult{err: kerr.UnknownMemberID, memberID: m.id, generation: -1}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncResult{err: kerr.UnknownMemberID}
		m.sync = nil
	}
	delete(gr.members, m.id)
	if m.instanceID != nil && gr.static[*m.instanceID] == m.id {
		delete(gr.static, *m.instanceID)
	}
}

// membersChanged reacts to members leaving or expiring.
func (gr *group) membersChanged(now time.Time, why string) {
	switch gr.state {
	case groupStable, groupCompletingRebalance:
		gr.prepareRebalance(now, why)
	case groupPreparingRebalance:
		gr.maybeCompleteJoin(now)
	}
}

// sync serves SyncGroup.
func (gr *group) sync(r syncRequest, reply chan<- syncResult) {
	if gr.cg != nil && gr.classicMember(r.memberID) != nil {
		gr.classicSync(r, reply)
		return
	}
	m := gr.members[r.memberID]
	var err error
	switch {
	case m == nil:
		err = kerr.UnknownMemberID
	case gr.fenced(r.instanceID, r.memberID):
		err = kerr.FencedInstanceID
	case r.generation != gr.generation:
		err = kerr.IllegalGeneration
	case r.protocolType != nil && *r.protocolType != gr.protocolType, r.protocol != nil && *r.protocol != gr.protocol:
		err = kerr.InconsistentGroupProtocol
	case gr.state == groupPreparingRebalance:
		err = kerr.RebalanceInProgress
	case gr.state != groupCompletingRebalance && gr.state != groupStable:
		err = kerr.UnknownMemberID
	}
	if err != nil {
		reply <- syncResult{err: err}
		return
	}
	now := time.Now()
	gr.touch(m, now)
	if gr.state == groupStable {
		reply <- syncResult{assignment: m.assignment, protocolType: gr.protocolType, protocol: gr.protocol}
		return
	}
	if m.sync != nil {
		m.sync <- syncResult{err: kerr.RebalanceInProgress}
	}
	m.sync = reply
	if m.id != gr.leader {
		return
	}
	for id, o := range gr.members {
		o.assignment = r.assignments[id]
	}
	gr.state = groupStable
	gr.syncDeadline = time.Time{}
	gr.storeMetadata()
	for _, o := range gr.members {
		if o.sync != nil {
			o.sync <- syncResult{assignment: o.assignment, protocolType: gr.protocolType, protocol: gr.protocol}
			o.sync = nil
		}
	}
	gr.c.log.Debug("group stable", "group", gr.id, "generation", gr.generation)
}

// heartbeat serves Heartbeat.
func (gr *group) heartbeat(memberID string, instanceID *string, generation int32) error {
	if gr.cg != nil && gr.classicMember(memberID) != nil {
		return gr.classicHeartbeat(memberID, generation)
	}
	m := gr.members[memberID]
	switch {
	case gr.state == groupEmpty || gr.state == groupDead:
		return kerr.UnknownMemberID
	case gr.fenced(instanceID, memberID):
		return kerr.FencedInstanceID
	case m == nil:
		return kerr.UnknownMemberID
	case generation != gr.generation:
		return kerr.IllegalGeneration
	}
	gr.touch(m, time.Now())
	if gr.state == groupPreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// leave serves one member of LeaveGroup.
func (gr *group) leave(memberID string, instanceID *string) error {
	id := memberID
	if instanceID != nil {
		sid, ok := gr.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case id != "" && id != sid:
			return kerr.FencedInstanceID
		}
		id = sid
	}
	if gr.cg != nil && gr.classicMember(id) != nil {
		return gr.classicLeave(id)
	}
	now := time.Now()
	if _, ok := gr.pending[id]; ok {
		delete(gr.pending, id)
		gr.maybeCompleteJoin(now)
		return nil
	}
	m := gr.members[id]
	if m == nil {
		return kerr.UnknownMemberID
	}
	gr.dropMember(m)
	gr.membersChanged(now, "member "+id+" left")
	return nil
}

// tick enforces deadlines: session timeouts, the end of the join phase, the
// end of the sync phase, and pending member ids never used.
func (gr *group) tick(now time.Time) {
	if gr.cg != nil {
		gr.consumerTick(now)
	}
	if gr.sg != nil {
		gr.shareTick(now)
	}
	for id, exp := range gr.pending {
		if now.After(exp) {
			delete(gr.pending, id)
			gr.maybeCompleteJoin(now)
		}
	}
	expired := false
	for _, m := range gr.members {
		// A member waiting for a join or sync answer is alive: it is
		// the group that keeps it waiting.
		if m.join == nil && m.sync == nil && now.After(m.deadline) {
			gr.c.log.Info("member session expired", "group", gr.id, "member", m.id, "session_timeout", m.sessionTimeout)
			gr.dropMember(m)
			expired = true
		}
	}
	if expired {
		gr.membersChanged(now, "member session expired")
	}
	switch gr.state {
	case groupPreparingRebalance:
		if !now.Before(gr.rebalanceDeadline) {
			gr.completeJoin(now)
		} else {
			gr.maybeCompleteJoin(now)
		}
	case groupCompletingRebalance:
		if !gr.syncDeadline.IsZero() && now.After(gr.syncDeadline) {
			for _, m := range gr.members {
				if m.sync == nil {
					gr.c.log.Info("removing member that did not sync", "group", gr.id, "member", m.id)
					gr.dropMember(m)
				}
			}
			gr.prepareRebalance(now, "members did not sync in time")
		}
	}
}

// subscribedTopics is the union of the consumer members' subscriptions,
// for OffsetDelete.
func (gr *group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	if gr.protocolType != "consumer" || gr.state == groupEmpty {
		return out
	}
	for _, m := range gr.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(gr.protocol)); err != nil {
			continue
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out
}

// commitCheck applies Kafka's rules for who may commit: anyone to an empty
// group with generation -1, else a current member of the current
// generation, and not while the group waits for its leader's assignment.
func (gr *group) commitCheck(memberID string, instanceID *string, generation int32) error {
	if gr.cg != nil && gr.state != groupDead {
		return gr.consumerCommitCheck(memberID, generation)
	}
	if gr.isShare() {
		return fmt.Errorf("%w: group %s is a share group", kerr.GroupIDNotFound, gr.id)
	}
	switch {
	case gr.state == groupDead:
		return kerr.CoordinatorNotAvailable
	case generation < 0 && gr.state == groupEmpty:
		return nil
	case gr.fenced(instanceID, memberID):
		return kerr.FencedInstanceID
	case gr.state == groupCompletingRebalance:
		return kerr.RebalanceInProgress
	case gr.members[memberID] == nil:
		return kerr.UnknownMemberID
	case generation != gr.generation:
		return kerr.IllegalGeneration
	}
	return nil
}

// commit makes offsets durable in __consumer_offsets, then current.
func (gr *group) commit(memberID string, offs map[tp]committed) error {
	recs := make([]record, 0, len(offs))
	for k, c := range offs {
		recs = append(recs, offsetRecord(gr.id, k, &c))
	}
	ctx, cancel := context.WithTimeout(gr.c.ctx, 30*time.Second)
	defer cancel()
	if err := gr.c.write(ctx, gr.part, recs); err != nil {
		return err
	}
	for k, c := range offs {
		gr.offsets[k] = c
	}
	if m := gr.members[memberID]; m != nil {
		gr.touch(m, time.Now())
	}
	return nil
}

// deleteOffsets removes the matching offsets, writing tombstones.
func (gr *group) deleteOffsets(match func(tp) bool) error {
	var recs []record
	var keys []tp
	for k := range gr.offsets {
		if match(k) {
			recs = append(recs, offsetRecord(gr.id, k, nil))
			keys = append(keys, k)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(gr.c.ctx, 30*time.Second)
	defer cancel()
	if err := gr.c.write(ctx, gr.part, recs); err != nil {
		return fmt.Errorf("deleting offsets of group %s: %w", gr.id, err)
	}
	for _, k := range keys {
		delete(gr.offsets, k)
	}
	return nil
}
