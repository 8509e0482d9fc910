package kafka

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-932 share groups, the membership half. A share group lives on a
// group goroutine like the other kinds (group.sg is set) and shares the
// group id namespace with them. Members heartbeat with their
// subscription; the coordinator assigns partitions with Kafka's simple
// assignor: every partition of a subscribed topic to at least one member,
// and when there are more members than partitions, partitions to several
// members, which then share their records. No revocation round is needed:
// share partitions are not owned exclusively, so a new assignment takes
// effect at once. Membership is soft state, like a classic group's; the
// records' delivery state lives with the share partitions
// (share_partitions.go).

// shareGroup is the KIP-932 state of a group.
type shareGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*sgMember
	subscribed      map[string]int32 // partition counts the target was made from
}

type sgMember struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string
	topics     []string
	epoch      int32
	assigned   topicParts
	sent       topicParts // the assignment last answered
	deadline   time.Time
}

// sgAnswer is what the group goroutine answers a share heartbeat.
type sgAnswer struct {
	err        error
	memberID   string
	epoch      int32
	assignment topicParts // nil: unchanged, not sent
}

// shareHeartbeat serves ShareGroupHeartbeat on the group goroutine.
func (gr *group) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, host string, md *Metadata, now time.Time) sgAnswer {
	fail := func(err error) sgAnswer { return sgAnswer{err: err, memberID: req.MemberID, epoch: req.MemberEpoch} }
	if req.MemberID == "" {
		return fail(fmt.Errorf("%w: MemberId can't be empty", kerr.InvalidRequest))
	}
	if gr.sg == nil {
		if !gr.shareAllowed() {
			return fail(fmt.Errorf("%w: group %s is not a share group", kerr.GroupIDNotFound, gr.id))
		}
		if req.MemberEpoch != 0 {
			return fail(kerr.UnknownMemberID)
		}
		gr.sg = &shareGroup{members: map[string]*sgMember{}, subscribed: map[string]int32{}}
		gr.protocolType = "share"
	}
	sg := gr.sg
	session := gr.c.g.groupCfg.getDuration(gr.id, "share.session.timeout.ms")
	m := sg.members[req.MemberID]
	changed := false
	switch {
	case req.MemberEpoch == 0:
		if req.SubscribedTopicNames == nil {
			return fail(fmt.Errorf("%w: SubscribedTopicNames must be set in the first request", kerr.InvalidRequest))
		}
		if m == nil {
			m = &sgMember{id: req.MemberID}
			sg.members[m.id] = m
			changed = true
		}
		m.sent = nil
	case req.MemberEpoch == -1:
		if m == nil {
			return fail(kerr.UnknownMemberID)
		}
		delete(sg.members, m.id)
		sg.epoch++
		gr.shareAssign(md)
		gr.c.g.shares.memberGone(gr.c.ctx, gr.id, gr.part, m.id)
		return sgAnswer{memberID: m.id, epoch: -1}
	default:
		if m == nil {
			return fail(fmt.Errorf("%w: member %s is not in group %s", kerr.UnknownMemberID, req.MemberID, gr.id))
		}
		if req.MemberEpoch != m.epoch {
			return fail(fmt.Errorf("%w: epoch %d, the member is at %d", kerr.FencedMemberEpoch, req.MemberEpoch, m.epoch))
		}
	}
	m.deadline = now.Add(session)
	m.clientID, m.clientHost = clientID, host
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topics) {
			m.topics = names
			changed = true
		}
	}
	if changed {
		sg.epoch++
	}
	gr.shareAssign(md)
	ans := sgAnswer{memberID: m.id, epoch: m.epoch}
	if m.sent == nil || !m.sent.equal(m.assigned) {
		ans.assignment = m.assigned.union(nil)
		m.sent = ans.assignment
	}
	return ans
}

// shareAssign recomputes the assignment when the epoch moved or the
// subscribed topics changed. A member whose assignment changes moves to
// the new epoch.
func (gr *group) shareAssign(md *Metadata) {
	sg := gr.sg
	counts := map[string]int32{}
	for _, m := range sg.members {
		for _, t := range m.topics {
			if tt, ok := md.Topic(t); ok {
				counts[t] = tt.Partitions
			}
		}
	}
	if !mapsEqual(counts, sg.subscribed) {
		sg.subscribed = counts
		sg.epoch++
	}
	if sg.assignmentEpoch >= sg.epoch {
		return
	}
	members := make([]assignMember, 0, len(sg.members))
	for _, m := range sg.members {
		members = append(members, assignMember{id: m.id, topics: m.topics})
	}
	target := assignShare(members, counts)
	sg.assignmentEpoch = sg.epoch
	for _, m := range sg.members {
		t := target[m.id]
		if t == nil {
			t = topicParts{}
		}
		if !t.equal(m.assigned) || m.epoch == 0 {
			m.assigned = t
			m.epoch = sg.epoch
		}
	}
}

// assignShare is Kafka's simple share assignor: per topic, with at least
// as many partitions as subscribed members, partition p goes to member
// p mod members; with more members than partitions, member i gets
// partition i mod partitions, so every member has work and every
// partition a consumer.
func assignShare(members []assignMember, counts map[string]int32) map[string]topicParts {
	out := make(map[string]topicParts, len(members))
	byTopic := map[string][]string{}
	for _, m := range members {
		out[m.id] = topicParts{}
		for _, t := range m.topics {
			if _, ok := counts[t]; ok {
				byTopic[t] = append(byTopic[t], m.id)
			}
		}
	}
	for t, ids := range byTopic {
		sort.Strings(ids)
		ids = slices.Compact(ids)
		n := int(counts[t])
		if n == 0 {
			continue
		}
		if len(ids) <= n {
			for p := 0; p < n; p++ {
				id := ids[p%len(ids)]
				out[id][t] = append(out[id][t], int32(p))
			}
			continue
		}
		for i, id := range ids {
			out[id][t] = append(out[id][t], int32(i%n))
		}
	}
	return out
}

// shareTick expires members whose session ended.
func (gr *group) shareTick(now time.Time) {
	sg := gr.sg
	var gone []string
	for id, m := range sg.members {
		if now.After(m.deadline) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, id := range gone {
		gr.c.log.Info("share group member session expired", "group", gr.id, "member", id)
		delete(sg.members, id)
		gr.c.g.shares.memberGone(gr.c.ctx, gr.id, gr.part, id)
	}
	sg.epoch++
	if md, err := gr.c.g.cluster.Metadata(gr.c.ctx); err == nil {
		gr.shareAssign(md)
	}
}

func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// describeShare is ShareGroupDescribe's view of the group.
func (gr *group) describeShare(md *Metadata) kmsg.ShareGroupDescribeResponseGroup {
	sg := gr.sg
	dg := kmsg.NewShareGroupDescribeResponseGroup()
	dg.GroupID, dg.GroupState, dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = gr.id, sg.state(), sg.epoch, sg.assignmentEpoch, "simple"
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := sg.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.rackID, m.epoch, m.clientID, m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.topics)
		if dm.SubscribedTopicNames == nil {
			dm.SubscribedTopicNames = []string{}
		}
		for _, t := range slices.Sorted(mapKeys(m.assigned)) {
			tt, ok := md.Topic(t)
			if !ok || len(m.assigned[t]) == 0 {
				continue
			}
			at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			at.TopicID, at.Topic, at.Partitions = tt.ID, t, slices.Clone(m.assigned[t])
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// isShare reports whether the group is a share group, live or dormant.
func (gr *group) isShare() bool {
	return gr.sg != nil || (gr.protocolType == "share" && gr.cg == nil && len(gr.members) == 0)
}

// ensureEmptyShare makes the group an empty share group when it may be
// one, for the share offset admin APIs.
func (gr *group) ensureEmptyShare() error {
	switch {
	case gr.sg != nil && len(gr.sg.members) > 0:
		return fmt.Errorf("%w: share group %s has members", kerr.NonEmptyGroup, gr.id)
	case gr.sg != nil:
		return nil
	case !gr.shareAllowed():
		return fmt.Errorf("%w: %s is not a share group", kerr.GroupIDNotFound, gr.id)
	}
	gr.sg = &shareGroup{members: map[string]*sgMember{}, subscribed: map[string]int32{}}
	gr.protocolType = "share"
	return nil
}

// shareAllowed: a group that is not a share group may become one only
// when it is an empty group of no other kind.
func (gr *group) shareAllowed() bool {
	if gr.protocolType == "share" {
		return gr.cg == nil && len(gr.members) == 0
	}
	return gr.cg == nil && len(gr.members) == 0 && len(gr.pending) == 0 && gr.state == groupEmpty && len(gr.offsets) == 0 && gr.protocolType == ""
}
