package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic members of a consumer group: Kafka 4's online upgrade
// (KIP-848, group.consumer.migration.policy). When a consumer-protocol
// member's first heartbeat finds a classic group that still has members,
// the group becomes a consumer group at once, and its classic members
// stay in it as members of the new kind that speak the old protocol: each
// keeps its id, subscription and partitions, at an epoch equal to the
// classic generation. From then on the coordinator assigns for everyone
// (the server-side assignor), and a classic member learns of a change the
// classic way: its Heartbeat answers REBALANCE_IN_PROGRESS, it joins
// again (no member is the leader, so no client assigns), and its
// SyncGroup returns what it may own now. Its JoinGroup says what it
// still owns (ConsumerProtocol v1+ metadata), which is how it revokes: a
// partition taken from it is left out of its assignment, an eager client
// has given up everything before joining, a cooperative one gives up what
// it lost and joins once more. As for consumer-protocol members,
// partitions move only once their old owner has released them, so no
// partition is owned twice.
//
// The way back is Kafka's online downgrade (policy downgrade or
// bidirectional): when the last consumer-protocol member leaves, or its
// session ends, while classic members remain, the group becomes a classic
// group again at once (downgradeToClassic). The classic members keep
// their ids, protocols and the partitions the coordinator last meant for
// them, at a generation equal to the group epoch, and a rebalance starts,
// so they join again and their leader assigns. Under the other policies
// such a group stays a consumer group until it is empty.

// cgClassic is what a classic member of a consumer group joined with.
// Exported fields are the snapshot.
type cgClassic struct {
	ProtocolType string         `json:"protocol_type"`
	Protocols    []classicProto `json:"protocols"`
	SessionMs    int64          `json:"session_ms"`
	Synced       bool           `json:"synced"` // answered SyncGroup at its epoch
}

type classicProto struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// classicSubscription decodes the topics and partitions a classic member
// subscribes to and owns, from its ConsumerProtocol metadata.
func classicSubscription(metadata []byte) (topics []string, owned topicParts, err error) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(metadata); err != nil {
		return nil, nil, err
	}
	owned = topicParts{}
	for _, o := range md.OwnedPartitions {
		owned[o.Topic] = append(owned[o.Topic], o.Partitions...)
	}
	topics = slices.Clone(md.Topics)
	slices.Sort(topics)
	return slices.Compact(topics), sortedParts(owned), nil
}

// sortedParts sorts and dedups each topic's partitions, as the set
// operations on topicParts need.
func sortedParts(a topicParts) topicParts {
	for t, ps := range a {
		slices.Sort(ps)
		a[t] = slices.Compact(ps)
		if len(a[t]) == 0 {
			delete(a, t)
		}
	}
	return a
}

// upgradeClassic turns a classic group with members into a consumer
// group, its classic members kept with their subscriptions and
// partitions. It fails (and changes nothing) while the group is
// rebalancing, for a protocol type other than consumer, or when a
// member's metadata is not ConsumerProtocol's, as Kafka refuses then.
func (gr *group) upgradeClassic(md *Metadata) error {
	switch {
	case gr.c.g.opts.GroupConsumerMigrationPolicy == "disabled" || gr.c.g.opts.GroupConsumerMigrationPolicy == "downgrade":
		return fmt.Errorf("%w: group %s is a classic group with members and group.consumer.migration.policy=%s forbids the upgrade",
			kerr.GroupIDNotFound, gr.id, gr.c.g.opts.GroupConsumerMigrationPolicy)
	case gr.protocolType != "consumer":
		return fmt.Errorf("%w: group %s has protocol type %q, not consumer", kerr.GroupIDNotFound, gr.id, gr.protocolType)
	case gr.state != groupStable || len(gr.pending) > 0:
		// The classic rebalance finishes first; the heartbeat is
		// retried.
		return fmt.Errorf("%w: classic group %s is rebalancing; it is upgraded once stable", kerr.CoordinatorLoadInProgress, gr.id)
	}
	cg := newConsumerGroup()
	cg.Epoch, cg.AssignmentEpoch = gr.generation, gr.generation
	for _, m := range gr.members {
		topics, _, err := classicSubscription(m.metadataFor(gr.protocol))
		if err != nil {
			return fmt.Errorf("%w: member %s of group %s: consumer protocol metadata: %v", kerr.GroupIDNotFound, m.id, gr.id, err)
		}
		var asg kmsg.ConsumerMemberAssignment
		if err := asg.ReadFrom(m.assignment); err != nil && len(m.assignment) > 0 {
			return fmt.Errorf("%w: member %s of group %s: consumer protocol assignment: %v", kerr.GroupIDNotFound, m.id, gr.id, err)
		}
		assigned := topicParts{}
		for _, t := range asg.Topics {
			assigned[t.Topic] = append(assigned[t.Topic], t.Partitions...)
		}
		assigned = sortedParts(assigned)
		cm := &cgMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			Topics: topics, RebalanceTimeout: int32(m.rebalanceTimeout.Milliseconds()),
			Epoch: gr.generation, PrevEpoch: gr.generation, State: cgStable, Assigned: assigned,
			Classic:  &cgClassic{ProtocolType: gr.protocolType, SessionMs: m.sessionTimeout.Milliseconds(), Synced: true},
			deadline: m.deadline, sentEpoch: gr.generation, sentAssigned: assigned,
		}
		for _, p := range m.protocols {
			cm.Classic.Protocols = append(cm.Classic.Protocols, classicProto{Name: p.name, Metadata: p.metadata})
		}
		cg.Members[cm.ID] = cm
		cg.Target[cm.ID] = assigned.union(nil)
	}
	cg.Subscribed = cg.subscribedCounts(md)
	gr.cg = cg
	gr.members, gr.static, gr.pending = map[string]*member{}, map[string]string{}, map[string]time.Time{}
	gr.state, gr.leader, gr.protocol = groupEmpty, "", ""
	gr.protocolType = "consumer"
	gr.c.log.Info("classic group upgraded to the consumer protocol", "group", gr.id, "classic_members", len(cg.Members))
	return nil
}

// classicMember is the classic member id of the consumer group, or nil.
func (gr *group) classicMember(id string) *cgMember {
	m := gr.cg.Members[id]
	if m == nil || m.Classic == nil {
		return nil
	}
	return m
}

// classicOutOfDate reports whether a classic member must join again: its
// epoch or partitions are not the group's target yet.
func (gr *group) classicOutOfDate(m *cgMember) bool {
	return !m.Classic.Synced || m.Epoch != gr.cg.AssignmentEpoch || m.State != cgStable || !m.Assigned.equal(gr.cg.Target[m.ID])
}

// classicJoin serves JoinGroup for a classic member of a consumer group.
func (gr *group) classicJoin(r joinRequest, reply chan<- joinResult) {
	fail := func(err error) { reply <- joinResult{err: err, memberID: r.memberID, generation: -1} }
	if r.protocolType != "consumer" {
		fail(fmt.Errorf("%w: group %s is a consumer group, protocol type %q", kerr.InconsistentGroupProtocol, gr.id, r.protocolType))
		return
	}
	md, err := gr.c.g.cluster.Metadata(gr.c.ctx)
	if err != nil {
		fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
		return
	}
	cg := gr.cg
	now := time.Now()
	var m *cgMember
	if r.memberID != "" {
		if m = cg.Members[r.memberID]; m == nil || m.Classic == nil {
			fail(fmt.Errorf("%w: member %s is not a classic member of group %s", kerr.UnknownMemberID, r.memberID, gr.id))
			return
		}
	}
	// The member's first protocol is the one it runs: there is no vote,
	// as no client assigns.
	topics, owned, err := classicSubscription(r.protocols[0].metadata)
	if err != nil {
		fail(fmt.Errorf("%w: consumer protocol metadata: %v", kerr.InconsistentGroupProtocol, err))
		return
	}
	changed := false
	if m == nil {
		id := newMemberID(r.clientID)
		m = &cgMember{ID: id, InstanceID: r.instanceID, Assigned: topicParts{}, sentEpoch: -1}
		cg.Members[id] = m
		changed = true
	}
	m.Classic = &cgClassic{ProtocolType: r.protocolType, SessionMs: r.sessionTimeout.Milliseconds()}
	for _, p := range r.protocols {
		m.Classic.Protocols = append(m.Classic.Protocols, classicProto{Name: p.name, Metadata: p.metadata})
	}
	m.ClientID, m.ClientHost = r.clientID, r.clientHost
	m.RebalanceTimeout = int32(r.rebalanceTimeout.Milliseconds())
	m.deadline = now.Add(r.sessionTimeout)
	if !slices.Equal(topics, m.Topics) {
		m.Topics = topics
		changed = true
	}
	if changed {
		cg.Epoch++
	}
	gr.consumerChanged(md, changed)
	// What it owns now, as the consumer protocol's heartbeat says it.
	var ownedTopics []kmsg.ConsumerGroupHeartbeatRequestTopic
	for t, ps := range owned {
		if tt, ok := md.Topic(t); ok {
			ot := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			ot.TopicID, ot.Partitions = tt.ID, ps
			ownedTopics = append(ownedTopics, ot)
		}
	}
	if ownedTopics == nil {
		ownedTopics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if m.State == cgStable && m.Assigned.minus(owned).size() > 0 {
		// An eager client gave everything up before joining; what it
		// no longer owns is free for it, or others, again.
		m.Assigned = m.Assigned.intersect(owned)
	}
	gr.reconcile(m, ownedTopics, md, now)
	gr.storeConsumer()
	reply <- joinResult{memberID: m.ID, generation: m.Epoch, protocolType: r.protocolType, protocol: r.protocols[0].name}
}

// classicSync serves SyncGroup for a classic member of a consumer group:
// its assignment is the coordinator's.
func (gr *group) classicSync(r syncRequest, reply chan<- syncResult) {
	m := gr.classicMember(r.memberID)
	switch {
	case m == nil:
		reply <- syncResult{err: kerr.UnknownMemberID}
		return
	case r.generation != m.Epoch:
		reply <- syncResult{err: fmt.Errorf("%w: generation %d, the member is at %d", kerr.IllegalGeneration, r.generation, m.Epoch)}
		return
	}
	assignment := classicAssignment(0, m.Assigned)
	m.Classic.Synced = true
	m.deadline = time.Now().Add(time.Duration(m.Classic.SessionMs) * time.Millisecond)
	m.sentEpoch, m.sentAssigned = m.Epoch, m.Assigned.union(nil)
	gr.storeConsumer()
	protocol := ""
	if len(m.Classic.Protocols) > 0 {
		protocol = m.Classic.Protocols[0].Name
	}
	reply <- syncResult{assignment: assignment, protocolType: m.Classic.ProtocolType, protocol: protocol}
}

// classicAssignment encodes partitions as ConsumerProtocol's assignment
// at the given version.
func classicAssignment(version int16, a topicParts) []byte {
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Version = version
	for _, t := range slices.Sorted(mapKeys(a)) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = t, slices.Clone(a[t])
		asg.Topics = append(asg.Topics, at)
	}
	return asg.AppendTo(nil)
}

// classicHeartbeat serves Heartbeat for a classic member of a consumer
// group: REBALANCE_IN_PROGRESS while its assignment is not the target.
func (gr *group) classicHeartbeat(memberID string, generation int32) error {
	m := gr.classicMember(memberID)
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case generation != m.Epoch:
		return fmt.Errorf("%w: generation %d, the member is at %d", kerr.IllegalGeneration, generation, m.Epoch)
	}
	m.deadline = time.Now().Add(time.Duration(m.Classic.SessionMs) * time.Millisecond)
	if gr.classicOutOfDate(m) {
		return kerr.RebalanceInProgress
	}
	return nil
}

// classicLeave serves LeaveGroup for a classic member of a consumer
// group.
func (gr *group) classicLeave(memberID string) error {
	m := gr.classicMember(memberID)
	if m == nil {
		return kerr.UnknownMemberID
	}
	epoch := gr.cg.Epoch
	gr.removeConsumerMember(m)
	md, err := gr.c.g.cluster.Metadata(gr.c.ctx)
	if err != nil {
		md = nil
	}
	gr.consumerMembersGone(md, epoch, "classic member "+memberID+" left")
	return nil
}

// consumerMembersGone follows the removal of members from the consumer
// group (left, or their session ended), epoch being the group epoch
// before it: the group goes back to the classic protocol if it may
// (downgradable), else the target assignment is computed again (when md
// is known). Either way the group's state is stored.
func (gr *group) consumerMembersGone(md *Metadata, epoch int32, why string) {
	if gr.downgradable() {
		gr.downgradeToClassic(epoch, why)
		return
	}
	if md != nil {
		gr.consumerChanged(md, true)
	}
	gr.storeConsumer()
}

// downgradable is Kafka's validateOnlineDowngradeWithFencedMembers, asked
// once the leaving members are gone: members remain, all of them classic
// with a protocol in common, and the policy allows the downgrade.
func (gr *group) downgradable() bool {
	if p := gr.c.g.opts.GroupConsumerMigrationPolicy; p != "downgrade" && p != "bidirectional" {
		return false
	}
	if len(gr.cg.Members) == 0 {
		return false
	}
	var common map[string]bool
	for _, m := range gr.cg.Members {
		if m.Classic == nil {
			return false
		}
		names := map[string]bool{}
		for _, p := range m.Classic.Protocols {
			if common == nil || common[p.Name] {
				names[p.Name] = true
			}
		}
		common = names
	}
	return len(common) > 0
}

// downgradeToClassic turns the consumer group, whose members are all
// classic (downgradable), back into a classic group at generation epoch,
// as Kafka's convertToClassicGroup does: each member keeps its id, static
// instance, protocols and timeouts, and the partitions of its target
// assignment; the group is stable, then prepares a rebalance, so each
// member learns of it from its next heartbeat and joins again. The
// consumer group's snapshot is deleted and the classic group's metadata
// written in one append, so a restart finds a classic group.
func (gr *group) downgradeToClassic(epoch int32, why string) {
	cg := gr.cg
	now := time.Now()
	gr.members, gr.static, gr.pending = map[string]*member{}, map[string]string{}, map[string]time.Time{}
	gr.leader = ""
	for _, id := range slices.Sorted(mapKeys(cg.Members)) {
		cm := cg.Members[id]
		gr.seq++
		m := &member{
			id: cm.ID, instanceID: cm.InstanceID, clientID: cm.ClientID, clientHost: cm.ClientHost,
			sessionTimeout:   time.Duration(cm.Classic.SessionMs) * time.Millisecond,
			rebalanceTimeout: time.Duration(cm.RebalanceTimeout) * time.Millisecond,
			seq:              gr.seq, deadline: cm.deadline,
		}
		for _, p := range cm.Classic.Protocols {
			m.protocols = append(m.protocols, groupProtocol{name: p.Name, metadata: p.Metadata})
		}
		gr.members[id] = m
		if m.instanceID != nil {
			gr.static[*m.instanceID] = id
		}
		if gr.leader == "" {
			gr.leader = id
		}
		gr.protocolType = cm.Classic.ProtocolType
	}
	gr.cg = nil
	gr.generation, gr.state = epoch, groupStable
	gr.protocol = gr.selectProtocol()
	for _, m := range gr.members {
		var md kmsg.ConsumerMemberMetadata
		_ = md.ReadFrom(m.metadataFor(gr.protocol)) // read when it joined: cannot fail
		m.assignment = classicAssignment(md.Version, cg.Target[m.id])
	}
	tombstone, _ := cgSnapshotRecord(gr.id, nil)
	ctx, cancel := context.WithTimeout(gr.c.ctx, 30*time.Second)
	defer cancel()
	if err := gr.c.write(ctx, gr.part, []record{tombstone, groupMetadataRecord(gr, now)}); err != nil {
		// A restart finds the consumer group with its classic members,
		// which goes on serving them; their next departure downgrades it.
		gr.c.log.Warn("writing the downgrade of a consumer group", "group", gr.id, "err", err)
	}
	gr.c.log.Info("consumer group downgraded to the classic protocol", "group", gr.id, "members", len(gr.members), "generation", epoch)
	gr.prepareRebalance(now, "downgraded from the consumer protocol: "+why)
}
