package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups. A consumer group lives on the same group
// goroutine as a classic one (group.cg is set), so the two kinds share the
// group id namespace, the committed offsets and __consumer_offsets. The
// coordinator owns the assignment: each change of membership, of a
// subscription or of the subscribed topics' partition counts bumps the
// group epoch, and the target assignment is recomputed at once for that
// epoch. Each member then reconciles towards its target on its own
// heartbeats, Kafka's way: partitions it must give up are revoked first
// (its epoch stays put until it reports them gone), and partitions still
// held by another member are handed over only once that member released
// them, so no partition is ever owned twice.
//
// The group's state (epochs, members, their subscriptions and current
// assignments, the target assignment) is written to __consumer_offsets as
// one snapshot record each time it changes (key version cgSnapshotKey,
// a JSON value), so a gateway restart keeps the group: members find their
// epoch and assignment, and get a fresh session timeout. Kafka writes the
// same facts as several record types (ConsumerGroupMetadata,
// MemberMetadata, TargetAssignment, CurrentMemberAssignment); one record
// per change is simpler for a group of the size a gateway coordinates.

const (
	// cgSessionTimeout is Kafka's group.consumer.session.timeout.ms
	// default: a member read back after a restart gets it to come back
	// (the group config consumer.session.timeout.ms applies from its next
	// heartbeat).
	cgSessionTimeout = 45 * time.Second

	// cgSnapshotKey is the key version of our consumer group snapshot
	// records: outside Kafka's range of record types, so that no tool
	// takes them for one of Kafka's.
	cgSnapshotKey int16 = 0x7AE0
)

// Member states of the reconciliation.
const (
	cgStable     int8 = 0 // owns its target for the current epoch
	cgUnrevoked  int8 = 1 // must give up partitions before moving on
	cgUnreleased int8 = 2 // waits for partitions others still own
)

// cgMember is one consumer-protocol member. Exported fields are the
// snapshot.
type cgMember struct {
	ID               string     `json:"id"`
	InstanceID       *string    `json:"instance,omitempty"`
	RackID           *string    `json:"rack,omitempty"`
	ClientID         string     `json:"client"`
	ClientHost       string     `json:"host"`
	Topics           []string   `json:"topics,omitempty"`
	Regex            *string    `json:"regex,omitempty"`
	Assignor         *string    `json:"assignor,omitempty"`
	RebalanceTimeout int32      `json:"rebalance_ms"`
	Epoch            int32      `json:"epoch"`
	PrevEpoch        int32      `json:"prev_epoch"`
	State            int8       `json:"state"`
	Assigned         topicParts `json:"assigned"`
	Revoking         topicParts `json:"revoking,omitempty"`
	// Classic is set for a member that speaks the classic protocol
	// (groups_classic_members.go).
	Classic *cgClassic `json:"classic,omitempty"`

	deadline       time.Time // session expiry
	revokeDeadline time.Time // cgUnrevoked: must have revoked by then
	sentEpoch      int32     // the epoch and assignment last answered
	sentAssigned   topicParts
	re             *regexp.Regexp
}

// consumerGroup is the KIP-848 state of a group. Exported fields are the
// snapshot.
type consumerGroup struct {
	Version         int                   `json:"v"`
	Epoch           int32                 `json:"epoch"`
	AssignmentEpoch int32                 `json:"assignment_epoch"`
	Assignor        string                `json:"assignor"`
	Members         map[string]*cgMember  `json:"members"`
	Target          map[string]topicParts `json:"target"`
	// Subscribed is the subscribed topics' partition counts the target
	// was computed from: a change bumps the epoch.
	Subscribed map[string]int32 `json:"subscribed"`

	written []byte // the last snapshot written
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{Version: 1, Assignor: defaultAssignor, Members: map[string]*cgMember{}, Target: map[string]topicParts{}, Subscribed: map[string]int32{}}
}

// decodeConsumerGroup reads a snapshot value; it is fuzzed
// (FuzzConsumerGroupSnapshot).
func decodeConsumerGroup(b []byte) (*consumerGroup, error) {
	cg := newConsumerGroup()
	if err := json.Unmarshal(b, cg); err != nil {
		return nil, fmt.Errorf("consumer group snapshot: %w", err)
	}
	if cg.Version != 1 {
		return nil, fmt.Errorf("consumer group snapshot: version %d", cg.Version)
	}
	if cg.Members == nil {
		cg.Members = map[string]*cgMember{}
	}
	if cg.Target == nil {
		cg.Target = map[string]topicParts{}
	}
	if cg.Subscribed == nil {
		cg.Subscribed = map[string]int32{}
	}
	now := time.Now()
	for id, m := range cg.Members {
		if m == nil || m.ID != id {
			return nil, fmt.Errorf("consumer group snapshot: member %q is malformed", id)
		}
		if m.Regex != nil {
			re, err := compileSubscription(*m.Regex)
			if err != nil {
				return nil, err
			}
			m.re = re
		}
		if m.Assigned == nil {
			m.Assigned = topicParts{}
		}
		for _, ps := range m.Assigned {
			slices.Sort(ps)
		}
		for _, ps := range m.Revoking {
			slices.Sort(ps)
		}
		m.deadline = now.Add(cgSessionTimeout)
		m.revokeDeadline = now.Add(time.Duration(max(m.RebalanceTimeout, 0)) * time.Millisecond)
		m.sentEpoch = -1
	}
	for _, tps := range cg.Target {
		for _, ps := range tps {
			slices.Sort(ps)
		}
	}
	cg.written = b
	return cg, nil
}

// cgSnapshotRecord is the snapshot record of group id; cg nil deletes it.
func cgSnapshotRecord(id string, cg *consumerGroup) (record, []byte) {
	k := kbinKey(cgSnapshotKey, id)
	if cg == nil {
		return record{key: k}, nil
	}
	v, _ := json.Marshal(cg) // cannot fail: plain data
	return record{key: k, value: v}, v
}

// kbinKey encodes a record key as Kafka's group keys are: an int16
// version then the group id as a string.
func kbinKey(version int16, id string) []byte {
	b := make([]byte, 0, 4+len(id))
	b = append(b, byte(version>>8), byte(version), byte(len(id)>>8), byte(len(id)))
	return append(b, id...)
}

// readKbinKey is kbinKey's inverse.
func readKbinKey(b []byte) (int16, string, bool) {
	if len(b) < 4 {
		return 0, "", false
	}
	n := int(b[2])<<8 | int(b[3])
	if len(b) != 4+n {
		return 0, "", false
	}
	return int16(b[0])<<8 | int16(b[1]), string(b[4:]), true
}

// applyConsumerSnapshotLocked applies a snapshot record read back from
// __consumer_offsets to the dormant state.
func (c *coordinator) applyConsumerSnapshotLocked(r record) {
	_, id, ok := readKbinKey(r.key)
	if !ok {
		c.log.Warn("skipping a malformed consumer group key")
		return
	}
	if c.mu.active[id] != nil {
		return
	}
	if r.value == nil {
		delete(c.mu.dormantConsumer, id)
		return
	}
	cg, err := decodeConsumerGroup(r.value)
	if err != nil {
		c.log.Warn("skipping a malformed consumer group snapshot", "group", id, "err", err)
		return
	}
	c.mu.dormantConsumer[id] = cg
	if _, ok := c.mu.dormant[id]; !ok {
		c.mu.dormant[id] = map[tp]committed{}
	}
}

// storeConsumer writes the group's snapshot when it changed. A failure
// is logged: the group carries on, and the next change writes it again.
func (gr *group) storeConsumer() {
	rec, v := cgSnapshotRecord(gr.id, gr.cg)
	if gr.cg != nil && string(v) == string(gr.cg.written) {
		return
	}
	ctx, cancel := context.WithTimeout(gr.c.ctx, 30*time.Second)
	defer cancel()
	if err := gr.c.write(ctx, gr.part, []record{rec}); err != nil {
		gr.c.log.Warn("writing consumer group state", "group", gr.id, "err", err)
		return
	}
	if gr.cg != nil {
		gr.cg.written = v
	}
}

// compileSubscription compiles a KIP-848 topic regex (RE2/J syntax, which
// Go's RE2 reads alike), anchored as Java's matches() is.
func compileSubscription(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", kerr.InvalidRegularExpression, s, err)
	}
	return re, nil
}

// cgHeartbeat is a ConsumerGroupHeartbeat with what the handler adds.
type cgHeartbeat struct {
	req        *kmsg.ConsumerGroupHeartbeatRequest
	clientID   string
	clientHost string
	md         *Metadata
	now        time.Time
}

// cgAnswer is what the group goroutine answers a heartbeat.
type cgAnswer struct {
	err        error
	memberID   string
	epoch      int32
	assignment topicParts // nil: unchanged, not sent
}

// consumerHeartbeat serves ConsumerGroupHeartbeat on the group goroutine.
func (gr *group) consumerHeartbeat(h cgHeartbeat) cgAnswer {
	req := h.req
	fail := func(err error) cgAnswer { return cgAnswer{err: err, memberID: req.MemberID, epoch: req.MemberEpoch} }
	if gr.isShare() {
		return fail(fmt.Errorf("%w: group %s is a share group", kerr.GroupIDNotFound, gr.id))
	}
	if gr.cg == nil {
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID)
		}
		if len(gr.members) > 0 || len(gr.pending) > 0 || gr.state != groupEmpty {
			// Kafka 4's online upgrade: the classic members stay, as
			// classic members of the consumer group.
			if err := gr.upgradeClassic(h.md); err != nil {
				return fail(err)
			}
		} else {
			gr.cg = newConsumerGroup()
			gr.protocolType = "consumer"
			gr.c.log.Info("group uses the consumer protocol", "group", gr.id)
		}
	}
	cg := gr.cg
	var assignorName string
	if req.ServerAssignor != nil {
		assignorName = *req.ServerAssignor
		if assignors[assignorName] == nil {
			return fail(fmt.Errorf("%w: server assignor %q (served: range, uniform)", kerr.UnsupportedAssignor, assignorName))
		}
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		var err error
		if re, err = compileSubscription(*req.SubscribedTopicRegex); err != nil {
			return fail(err)
		}
	}
	changed := false
	var m *cgMember
	switch {
	case req.MemberEpoch == 0:
		if req.MemberID == "" {
			if req.Version >= 1 {
				return fail(fmt.Errorf("%w: MemberId can't be empty", kerr.InvalidRequest))
			}
			req.MemberID = newMemberID("")[1:]
		}
		if req.RebalanceTimeoutMillis < 0 {
			return fail(fmt.Errorf("%w: RebalanceTimeoutMs must be provided in the first request", kerr.InvalidRequest))
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return fail(fmt.Errorf("%w: SubscribedTopicNames or SubscribedTopicRegex must be set in the first request", kerr.InvalidRequest))
		}
		if len(req.Topics) > 0 {
			return fail(fmt.Errorf("%w: TopicPartitions must be empty when (re-)joining", kerr.InvalidRequest))
		}
		if req.InstanceID != nil {
			for _, o := range cg.Members {
				if o.InstanceID == nil || *o.InstanceID != *req.InstanceID || o.ID == req.MemberID {
					continue
				}
				if o.Epoch != -2 {
					return fail(fmt.Errorf("%w: instance %s is held by member %s", kerr.UnreleasedInstanceID, *req.InstanceID, o.ID))
				}
				// A static member coming back takes over its old
				// assignment under the new member id.
				delete(cg.Members, o.ID)
				cg.Target[req.MemberID] = cg.Target[o.ID]
				delete(cg.Target, o.ID)
				o.ID = req.MemberID
				o.Epoch = o.PrevEpoch
				o.sentEpoch = -1
				cg.Members[o.ID] = o
				m = o
				break
			}
		}
		if m == nil {
			if old := cg.Members[req.MemberID]; old != nil {
				// Rejoining with epoch 0: it starts over.
				gr.removeConsumerMember(old)
			}
			m = &cgMember{ID: req.MemberID, Assigned: topicParts{}, sentEpoch: -1}
			cg.Members[m.ID] = m
			changed = true
		}
	case req.MemberEpoch == -1 || req.MemberEpoch == -2:
		m = cg.Members[req.MemberID]
		if m == nil {
			return fail(kerr.UnknownMemberID)
		}
		if req.MemberEpoch == -2 && m.InstanceID != nil {
			// A static member leaving for a while keeps its
			// partitions until its session ends.
			m.PrevEpoch, m.Epoch = m.Epoch, -2
			m.deadline = h.now.Add(gr.c.g.groupCfg.getDuration(gr.id, "consumer.session.timeout.ms"))
			gr.storeConsumer()
		} else {
			epoch := cg.Epoch
			gr.removeConsumerMember(m)
			gr.consumerMembersGone(h.md, epoch, "member "+m.ID+" left")
		}
		return cgAnswer{memberID: req.MemberID, epoch: req.MemberEpoch}
	default:
		m = cg.Members[req.MemberID]
		if m == nil || m.Epoch == -2 {
			return fail(fmt.Errorf("%w: member %s is not in group %s", kerr.UnknownMemberID, req.MemberID, gr.id))
		}
		if req.MemberEpoch != m.Epoch {
			// A lost response: the member may still be at the previous
			// epoch as long as it owns nothing it should not.
			ok := req.MemberEpoch == m.PrevEpoch && req.Topics != nil && ownedSubset(req.Topics, m.Assigned.union(m.Revoking), h.md)
			if !ok {
				return fail(fmt.Errorf("%w: epoch %d, the member is at %d", kerr.FencedMemberEpoch, req.MemberEpoch, m.Epoch))
			}
		}
	}
	m.deadline = h.now.Add(gr.c.g.groupCfg.getDuration(gr.id, "consumer.session.timeout.ms"))
	m.ClientID, m.ClientHost = h.clientID, h.clientHost
	if req.InstanceID != nil {
		m.InstanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.RackID = req.RackID
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.RebalanceTimeout = req.RebalanceTimeoutMillis
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.Topics) {
			m.Topics = names
			changed = true
		}
	}
	if req.SubscribedTopicRegex != nil {
		cur := ""
		if m.Regex != nil {
			cur = *m.Regex
		}
		if *req.SubscribedTopicRegex != cur {
			m.Regex, m.re = nil, nil
			if re != nil {
				m.Regex, m.re = req.SubscribedTopicRegex, re
			}
			changed = true
		}
	}
	if req.ServerAssignor != nil && (m.Assignor == nil || *m.Assignor != assignorName) {
		m.Assignor = &assignorName
		changed = true
	}
	if changed {
		cg.Epoch++
	}
	gr.consumerChanged(h.md, changed)
	gr.reconcile(m, req.Topics, h.md, h.now)
	gr.storeConsumer()

	ans := cgAnswer{memberID: m.ID, epoch: m.Epoch}
	if req.MemberEpoch == 0 || req.Topics != nil || m.sentEpoch != m.Epoch || !m.sentAssigned.equal(m.Assigned) {
		ans.assignment = m.Assigned.union(nil)
		m.sentEpoch, m.sentAssigned = m.Epoch, ans.assignment
	}
	return ans
}

// ownedSubset reports whether the partitions a member says it owns are
// all in allowed.
func ownedSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, allowed topicParts, md *Metadata) bool {
	for _, t := range owned {
		tt, ok := md.TopicByID(t.TopicID)
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if !allowed.has(tt.Name, p) {
				return false
			}
		}
	}
	return true
}

// removeConsumerMember drops a member; the caller recomputes the target.
func (gr *group) removeConsumerMember(m *cgMember) {
	delete(gr.cg.Members, m.ID)
	delete(gr.cg.Target, m.ID)
	gr.cg.Epoch++
}

// subscribedCounts resolves every member's subscription against the
// metadata: the partition count of each subscribed topic that exists.
func (cg *consumerGroup) subscribedCounts(md *Metadata) map[string]int32 {
	out := map[string]int32{}
	for _, m := range cg.Members {
		for _, t := range m.resolve(md) {
			if tt, ok := md.Topic(t); ok {
				out[t] = tt.Partitions
			}
		}
	}
	return out
}

// resolve is the topics a member subscribes to: its names, and the
// topics its regex matches whole, internal ones included, as Kafka's
// coordinator resolves them (a client that wants no internal topics says
// so in its regex).
func (m *cgMember) resolve(md *Metadata) []string {
	out := slices.Clone(m.Topics)
	if m.re != nil {
		for _, t := range md.Topics() {
			if m.re.MatchString(t.Name) {
				out = append(out, t.Name)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// consumerChanged bumps the epoch when the subscribed topics changed
// (unless the caller bumped it already), then computes the target
// assignment for the epoch if it is not yet.
func (gr *group) consumerChanged(md *Metadata, bumped bool) {
	cg := gr.cg
	counts := cg.subscribedCounts(md)
	if !mapsEqual(counts, cg.Subscribed) {
		cg.Subscribed = counts
		if !bumped {
			cg.Epoch++
		}
	}
	if cg.AssignmentEpoch >= cg.Epoch {
		return
	}
	name := cg.chooseAssignor()
	members := make([]assignMember, 0, len(cg.Members))
	for _, m := range cg.Members {
		members = append(members, assignMember{id: m.ID, topics: m.resolve(md), current: m.Assigned.union(m.Revoking)})
	}
	cg.Target = assignors[name](members, counts)
	cg.Assignor = name
	cg.AssignmentEpoch = cg.Epoch
	gr.c.log.Debug("consumer group target assignment", "group", gr.id, "epoch", cg.Epoch, "assignor", name, "members", len(members))
}

// chooseAssignor is the assignor most members ask for (ties to the
// smaller name), or the default.
func (cg *consumerGroup) chooseAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.Members {
		if m.Assignor != nil {
			votes[*m.Assignor]++
		}
	}
	best := ""
	for _, name := range []string{"range", "uniform"} {
		if votes[name] > 0 && (best == "" || votes[name] > votes[best]) {
			best = name
		}
	}
	if best == "" {
		return defaultAssignor
	}
	return best
}

func mapsEqual(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// reconcile moves member m towards its target: revoke first, then take
// what is free. owned, when not nil, is what the member says it owns.
func (gr *group) reconcile(m *cgMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, md *Metadata, now time.Time) {
	cg := gr.cg
	if m.State == cgUnrevoked {
		if owned == nil || ownsAny(owned, m.Revoking, md) {
			return
		}
		m.Revoking = nil
		m.State = cgStable
	}
	target := cg.Target[m.ID]
	if target == nil {
		target = topicParts{}
	}
	if revoke := m.Assigned.minus(target); revoke.size() > 0 {
		m.Assigned = m.Assigned.intersect(target)
		m.Revoking = revoke
		m.State = cgUnrevoked
		m.revokeDeadline = now.Add(time.Duration(m.RebalanceTimeout) * time.Millisecond)
		return
	}
	held := topicParts{}
	for _, o := range cg.Members {
		if o != m {
			held = held.union(o.Assigned).union(o.Revoking)
		}
	}
	m.Assigned = m.Assigned.union(target.minus(m.Assigned).minus(held))
	if m.Epoch != cg.AssignmentEpoch {
		m.PrevEpoch, m.Epoch = m.Epoch, cg.AssignmentEpoch
	}
	m.State = cgStable
	if !m.Assigned.equal(target) {
		m.State = cgUnreleased
	}
}

func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, parts topicParts, md *Metadata) bool {
	for _, t := range owned {
		tt, ok := md.TopicByID(t.TopicID)
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if parts.has(tt.Name, p) {
				return true
			}
		}
	}
	return false
}

// consumerTick expires members whose session ended or who did not revoke
// within their rebalance timeout.
func (gr *group) consumerTick(now time.Time) {
	cg := gr.cg
	var gone []*cgMember
	for _, m := range cg.Members {
		switch {
		case now.After(m.deadline):
			gr.c.log.Info("consumer group member session expired", "group", gr.id, "member", m.ID)
			gone = append(gone, m)
		case m.State == cgUnrevoked && m.RebalanceTimeout > 0 && now.After(m.revokeDeadline):
			gr.c.log.Info("consumer group member did not revoke in time", "group", gr.id, "member", m.ID)
			gone = append(gone, m)
		}
	}
	if len(gone) == 0 {
		return
	}
	epoch := cg.Epoch
	for _, m := range gone {
		gr.removeConsumerMember(m)
	}
	md, err := gr.c.g.cluster.Metadata(gr.c.ctx)
	if err != nil {
		md = nil
	}
	gr.consumerMembersGone(md, epoch, "members expired")
}

// consumerCommitCheck is OffsetCommit's check for a consumer group: an
// admin commit (epoch < 0, no member id) only while the group is empty,
// else a member at its current epoch.
func (gr *group) consumerCommitCheck(memberID string, epoch int32) error {
	m := gr.cg.Members[memberID]
	switch {
	case epoch < 0 && memberID == "" && len(gr.cg.Members) == 0:
		return nil
	case epoch < 0 && memberID == "":
		return kerr.UnknownMemberID
	case m == nil:
		return kerr.UnknownMemberID
	case epoch != m.Epoch && m.Classic != nil:
		return fmt.Errorf("%w: generation %d, the member is at %d", kerr.IllegalGeneration, epoch, m.Epoch)
	case epoch != m.Epoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", kerr.StaleMemberEpoch, epoch, m.Epoch)
	}
	return nil
}

// consumerState is Kafka's consumer group state name.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.Members) == 0:
		return "Empty"
	case cg.AssignmentEpoch < cg.Epoch:
		return "Assigning"
	}
	for _, m := range cg.Members {
		if m.Epoch != cg.AssignmentEpoch || m.State != cgStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// toAssignment turns an assignment into topic ids for the wire, dropping
// topics that no longer exist.
func toAssignment(a topicParts, md *Metadata) []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
	out := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range slices.Sorted(mapKeys(a)) {
		tt, ok := md.Topic(t)
		if !ok || len(a[t]) == 0 {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID, at.Partitions = tt.ID, slices.Clone(a[t])
		out = append(out, at)
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// describeConsumer is ConsumerGroupDescribe's view of the group.
func (gr *group) describeConsumer(md *Metadata) kmsg.ConsumerGroupDescribeResponseGroup {
	cg := gr.cg
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group, dg.State, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = gr.id, cg.state(), cg.Epoch, cg.AssignmentEpoch, cg.Assignor
	dg.AuthorizedOperations = opsOmitted
	ids := slices.Sorted(mapKeys(cg.Members))
	for _, id := range ids {
		m := cg.Members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.ID, m.InstanceID, m.RackID, m.Epoch
		dm.ClientID, dm.ClientHost, dm.SubscribedTopicRegex = m.ClientID, m.ClientHost, m.Regex
		dm.SubscribedTopics = slices.Clone(m.Topics)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.MemberType = 1 // consumer protocol
		if m.Classic != nil {
			dm.MemberType = 0
		}
		dm.Assignment = describeAssignment(m.Assigned, md)
		dm.TargetAssignment = describeAssignment(cg.Target[m.ID], md)
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

func describeAssignment(a topicParts, md *Metadata) kmsg.Assignment {
	out := kmsg.NewAssignment()
	for _, t := range slices.Sorted(mapKeys(a)) {
		tt, ok := md.Topic(t)
		if !ok || len(a[t]) == 0 {
			continue
		}
		at := kmsg.NewAssignmentTopicPartition()
		at.TopicID, at.Topic, at.Partitions = tt.ID, t, slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, at)
	}
	return out
}

// classicJoinable reports whether a classic JoinGroup may proceed: not
// while consumer-protocol members are in the group. An empty consumer
// group goes back to the classic protocol, as Kafka's downgrade does.
func (gr *group) classicJoinable() bool {
	if gr.isShare() {
		return false
	}
	if gr.cg == nil {
		return true
	}
	if len(gr.cg.Members) > 0 {
		return false
	}
	gr.cg = nil
	gr.storeConsumer() // a tombstone: a restart finds a classic group
	gr.c.log.Info("group uses the classic protocol", "group", gr.id)
	return true
}

// summary is what ListGroups shows of a live group.
func (gr *group) summary() groupSummary {
	if gr.cg != nil {
		return groupSummary{id: gr.id, protocolType: "consumer", state: gr.cg.state(), typ: "consumer"}
	}
	if gr.isShare() {
		state := "Empty"
		if gr.sg != nil {
			state = gr.sg.state()
		}
		return groupSummary{id: gr.id, protocolType: "share", state: state, typ: "share"}
	}
	return groupSummary{id: gr.id, protocolType: gr.protocolType, state: gr.state.String(), typ: "classic"}
}
