package controller

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aerostream/aerostream/topicconfig"
)

// The FSM's replication rules: placement of replicas, elections, the ISR,
// reassignment and drain. Everything here runs inside Apply (or, for the
// checks, on the leader's state before it proposes), so it depends on the
// replicated state alone and on no clock, and iterates maps in sorted
// order. Partition values are replaced, never changed in place: their
// slices are shared with snapshots and deltas being encoded.

// Config names the controller reads.
const (
	// configUnclean is both the topic config and its broker-level default.
	configUnclean = topicconfig.UncleanLeaderElectionEnable
)

// placeable lists the stores new replicas may go to: live and not
// draining, by id.
func (st *state) placeable() []int32 {
	var ids []int32
	for id, n := range st.nodes {
		if n.Kind == KindStore && n.Live && !n.Draining {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// live reports whether id is a registered store whose session is current.
func (st *state) live(id int32) bool {
	n, ok := st.nodes[id]
	return ok && n.Kind == KindStore && n.Live
}

// electable reports whether id may be elected leader: live and not in a
// controlled shutdown.
func (st *state) electable(id int32) bool {
	return st.live(id) && !st.nodes[id].ShuttingDown
}

// inSyncLeader is the first replica of p, in Replicas order, that is in
// its ISR, electable and not skip; NoLeader if none is.
func (st *state) inSyncLeader(p PartitionInfo, skip int32) int32 {
	for _, r := range p.Replicas {
		if r != skip && slices.Contains(p.ISR, r) && st.electable(r) {
			return r
		}
	}
	return NoLeader
}

// checkLiveFor refuses a replication factor above the stores that could
// take the replicas. One copy may wait for a first store (the partition is
// placed when one registers); more than one needs the stores now, as in
// Kafka.
func (st *state) checkLiveFor(rf int16) error {
	if rf <= 1 {
		return nil
	}
	if n := len(st.placeable()); int(rf) > n {
		return fmt.Errorf("%w: replication factor %d is larger than the %d live store(s)", ErrInvalidReplicationFactor, rf, n)
	}
	return nil
}

// budget is store id's partition budget; 0 for none.
func (st *state) budget(id int32) int {
	if n := st.nodes[id]; n != nil {
		return int(n.MaxPartitions)
	}
	return 0
}

// replicaLoad is rload, current, without updating the cache: the checks
// run under the FSM's read lock.
func (st *state) replicaLoad() map[int32]int {
	if !st.loadStale && st.rload != nil {
		return st.rload
	}
	rload := map[int32]int{}
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				rload[r]++
			}
		}
	}
	return rload
}

// checkRoom refuses a create of partitions new partitions of factor rf
// that placement cannot fit in the stores' partition budgets, so that no
// topic is ever left half-placed. It runs place's choice of stores (fewest
// replicas first, ties to the lowest id, only those with room) on a copy
// of the counts. With no live store the partitions wait unplaced, as
// before.
func (st *state) checkRoom(topic string, partitions int, rf int16) error {
	stores := st.placeable()
	if len(stores) == 0 || partitions <= 0 {
		return nil
	}
	limited := false
	for _, id := range stores {
		limited = limited || st.budget(id) > 0
	}
	if !limited {
		return nil
	}
	base := st.replicaLoad()
	rload := make(map[int32]int, len(stores))
	for _, id := range stores {
		rload[id] = base[id]
	}
	n := min(int(rf), len(stores))
	cands := make([]int32, 0, len(stores))
	for i := 0; i < partitions; i++ {
		cands = cands[:0]
		for _, id := range stores {
			if b := st.budget(id); b == 0 || rload[id] < b {
				cands = append(cands, id)
			}
		}
		if len(cands) < n {
			return st.roomErr(topic, partitions, rf, base)
		}
		sortByLoad(cands, rload)
		for _, id := range cands[:n] {
			rload[id]++
		}
	}
	return nil
}

// roomErr names the budgets a create does not fit in.
func (st *state) roomErr(topic string, partitions int, rf int16, rload map[int32]int) error {
	var b strings.Builder
	for _, id := range st.placeable() {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if lim := st.budget(id); lim > 0 {
			fmt.Fprintf(&b, "store %d holds %d of its %d", id, rload[id], lim)
		} else {
			fmt.Fprintf(&b, "store %d has no budget", id)
		}
	}
	return fmt.Errorf("%w: topic %q: %d partition(s) of replication factor %d do not fit in the live stores' partition budgets (%s)",
		ErrTooManyPartitions, topic, partitions, rf, b.String())
}

// sortByLoad orders stores by the replicas they hold, ties to the lowest
// id: placement's order of preference.
func sortByLoad(ids []int32, rload map[int32]int) {
	sort.SliceStable(ids, func(x, y int) bool {
		rx, ry := rload[ids[x]], rload[ids[y]]
		if rx != ry {
			return rx < ry
		}
		return ids[x] < ids[y]
	})
}

// checkMinISR refuses a topic's min.insync.replicas above its replication
// factor: no acks=all produce could ever succeed.
func checkMinISR(cfg map[string]string, rf int16) error {
	n, ok, err := topicconfig.IntOf(cfg, topicconfig.MinInsyncReplicas)
	if err != nil {
		return configErr(err)
	}
	if ok && n > int64(rf) {
		return fmt.Errorf("%w: %s = %d is larger than the replication factor %d", ErrInvalidConfig, topicconfig.MinInsyncReplicas, n, rf)
	}
	return nil
}

// unclean reports whether t may elect a leader outside its ISR: the
// topic's own setting, else the cluster default, else Kafka's false.
func (st *state) unclean(t *TopicInfo) bool {
	v, ok := t.Configs[configUnclean]
	if !ok {
		v = st.broker[configUnclean]
	}
	return v == "true"
}

// loads makes load and rload current.
func (st *state) loads() {
	if !st.loadStale && st.load != nil {
		return
	}
	st.load, st.rload = map[int32]int{}, map[int32]int{}
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			if p.Leader != NoLeader {
				st.load[p.Leader]++
			}
			for _, r := range p.Replicas {
				st.rload[r]++
			}
		}
	}
	st.loadStale = false
}

// upgradePartition gives a partition placed before replication existed
// its implied replica set: the leader alone, in sync.
func upgradePartition(p *PartitionInfo) {
	if len(p.Replicas) == 0 && p.Leader != NoLeader {
		p.Replicas = []int32{p.Leader}
	}
	if len(p.ISR) == 0 && len(p.Replicas) > 0 {
		p.ISR = []int32{p.Replicas[0]}
		if p.Leader != NoLeader {
			p.ISR[0] = p.Leader
		}
	}
}

// place gives each unplaced partition of ps (no replicas yet) rf replicas
// on distinct stores of stores (fewer when there are fewer stores): the
// stores holding the fewest replicas, ties to the lowest id, among those
// with room in their partition budget; the leader, listed first as the
// preferred one, is the one of them leading the fewest partitions, so
// that leadership spreads as well as data, and not one shutting down. A partition that does not fit
// stays unplaced: creates were checked to fit (checkRoom), so only one
// waiting for a store can.
func (a *applier) place(ps []PartitionInfo, rf int, stores []int32) {
	if len(stores) == 0 || rf < 1 {
		return
	}
	st := a.st
	st.loads()
	n := min(rf, len(stores))
	cands := make([]int32, 0, len(stores))
	for i := range ps {
		if len(ps[i].Replicas) > 0 {
			continue
		}
		cands = cands[:0]
		for _, id := range stores {
			if b := st.budget(id); b == 0 || st.rload[id] < b {
				cands = append(cands, id)
			}
		}
		if len(cands) < n {
			continue
		}
		sortByLoad(cands, st.rload)
		chosen := cands[:n]
		lead := 0
		for j := range chosen {
			if st.leadsBefore(chosen[j], chosen[lead]) {
				lead = j
			}
		}
		replicas := make([]int32, 0, n)
		replicas = append(replicas, chosen[lead])
		for j, id := range chosen {
			if j != lead {
				replicas = append(replicas, id)
			}
		}
		ps[i].Replicas = replicas
		ps[i].ISR = slices.Clone(replicas)
		ps[i].Leader = replicas[0]
		ps[i].LeaderEpoch++
		ps[i].PartitionEpoch = 0
		st.load[replicas[0]]++
		for _, id := range replicas {
			st.rload[id]++
		}
	}
}

// leadsBefore reports whether store x is the better first replica (the
// new partition's leader) than y: one not shutting down, then the one
// leading fewer partitions.
func (st *state) leadsBefore(x, y int32) bool {
	if ex, ey := st.electable(x), st.electable(y); ex != ey {
		return ex
	}
	return st.load[x] < st.load[y]
}

// placeUnplaced places every partition that waits for a store, now that
// one is live.
func (a *applier) placeUnplaced() {
	stores := a.st.placeable()
	if len(stores) == 0 {
		return
	}
	for _, name := range a.sortedTopics() {
		t := a.st.topics[name]
		if !slices.ContainsFunc(t.Partitions, func(p PartitionInfo) bool { return len(p.Replicas) == 0 }) {
			continue
		}
		nt := *t
		nt.Partitions = slices.Clone(t.Partitions)
		nt.Version = a.next
		a.place(nt.Partitions, int(t.ReplicationFactor), stores)
		a.st.topics[name] = &nt
		a.record(change{topic: name, node: -1})
	}
}

// sortedTopics lists the topic names in order. The list is kept until a
// topic is created or deleted; callers must not change it.
func (a *applier) sortedTopics() []string {
	if a.st.names == nil {
		names := make([]string, 0, len(a.st.topics))
		for name := range a.st.topics {
			names = append(names, name)
		}
		sort.Strings(names)
		a.st.names = names
	}
	return a.st.names
}

// updatePartitions runs fn over the partitions of the named topics (all,
// sorted, when names is nil). fn returns the partition as it should become
// and whether it changed; changed topics are replaced, versioned and
// recorded, and the loads marked stale.
func (a *applier) updatePartitions(names []string, fn func(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool)) {
	if names == nil {
		names = a.sortedTopics()
	}
	for _, name := range names {
		t, ok := a.st.topics[name]
		if !ok {
			continue
		}
		var nt *TopicInfo
		for i, p := range t.Partitions {
			np, changed := fn(t, p)
			if !changed {
				continue
			}
			if nt == nil {
				c := *t
				c.Partitions = slices.Clone(t.Partitions)
				c.Version = a.next
				nt = &c
			}
			nt.Partitions[i] = np
		}
		if nt != nil {
			a.st.topics[name] = nt
			a.st.loadStale = true
			a.record(change{topic: name, node: -1})
		}
	}
}

// elect sets p's leader: the first replica, in Replicas order, that is in
// the ISR, live and not shutting down; then one that is shutting down, as
// leading on a store about to stop beats no leader at all; failing that,
// when the topic allows unclean election, the first live replica, which
// becomes the whole ISR; failing that, NoLeader. A change of leader bumps
// the leader epoch. The caller bumps the partition epoch.
func (a *applier) elect(t *TopicInfo, p *PartitionInfo) {
	leader := a.st.inSyncLeader(*p, -1)
	if leader == NoLeader {
		for _, r := range p.Replicas {
			if slices.Contains(p.ISR, r) && a.st.live(r) {
				leader = r
				break
			}
		}
	}
	if leader == NoLeader && !a.clean && a.st.unclean(t) {
		for _, r := range p.Replicas {
			if a.st.live(r) {
				leader = r
				p.ISR = []int32{r}
				a.f.log.Warn("unclean leader election: records acknowledged by the old in-sync replicas may be lost",
					"topic", t.Name, "partition", p.Partition, "leader", r)
				break
			}
		}
	}
	if leader != p.Leader {
		p.Leader = leader
		p.LeaderEpoch++
	}
}

// fence applies the expiry of store id's session (id is marked down
// already): it leaves every ISR it is in, unless it is the last member
// (as KRaft keeps it, so that the partition waits for it), and the
// partitions it led get a new leader.
func (a *applier) fence(id int32) {
	a.updatePartitions(nil, func(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
		if !slices.Contains(p.Replicas, id) {
			return p, false
		}
		np := p
		if len(p.ISR) > 1 && slices.Contains(p.ISR, id) {
			np.ISR = without(p.ISR, id)
		}
		if p.Leader == id {
			a.elect(t, &np)
			a.completeReassignment(t, &np) // an unclean ISR may be the target
		}
		if np.Leader == p.Leader && slices.Equal(np.ISR, p.ISR) {
			return p, false
		}
		np.PartitionEpoch++
		return np, true
	})
}

// unfence applies the return of store id: partitions without a leader
// that it can lead (it is in their ISR, or unclean election is on) get it.
func (a *applier) unfence(id int32) {
	a.updatePartitions(nil, func(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
		if p.Leader != NoLeader || !slices.Contains(p.Replicas, id) {
			return p, false
		}
		return a.electNow(t, p)
	})
}

// electLeaderless elects a leader for the partitions of the named topics
// (nil: all) that have none, after something that may allow one (unclean
// election turned on).
func (a *applier) electLeaderless(names []string) {
	a.updatePartitions(names, func(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
		if p.Leader != NoLeader || len(p.Replicas) == 0 {
			return p, false
		}
		return a.electNow(t, p)
	})
}

func (a *applier) electNow(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
	np := p
	a.elect(t, &np)
	if np.Leader == p.Leader {
		return p, false
	}
	a.completeReassignment(t, &np)
	np.PartitionEpoch++
	return np, true
}

// The set helpers below return new slices without spare capacity: the
// partitions they build are shared, read-only, with snapshots, deltas and
// in-process callers, and an append by one of those must not write into
// memory another sees.

// without returns s less x, in a new slice.
func without(s []int32, x int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return slices.Clip(out)
}

// inOrder returns the members of set, in the order of order.
func inOrder(order, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, v := range order {
		if slices.Contains(set, v) {
			out = append(out, v)
		}
	}
	return slices.Clip(out)
}

// minus returns the members of a not in b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return slices.Clip(out)
}

// union returns a followed by the members of b not in a.
func union(a, b []int32) []int32 {
	return slices.Clip(append(slices.Clone(a), minus(b, a)...))
}

// partition resolves a topic and partition.
func (st *state) partition(topic string, partition int32) (*TopicInfo, PartitionInfo, error) {
	t, ok := st.topics[topic]
	if !ok {
		return nil, PartitionInfo{}, fmt.Errorf("%w: %q", ErrUnknownTopic, topic)
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, PartitionInfo{}, fmt.Errorf("%w: topic %q has no partition %d (it has %d)", ErrUnknownTopic, topic, partition, len(t.Partitions))
	}
	return t, t.Partitions[partition], nil
}

// setPartition replaces partition i of a topic.
func (a *applier) setPartition(t *TopicInfo, i int32, p PartitionInfo) {
	nt := *t
	nt.Partitions = slices.Clone(t.Partitions)
	nt.Partitions[i] = p
	nt.Version = a.next
	a.st.topics[t.Name] = &nt
	a.st.loadStale = true
	a.record(change{topic: t.Name, node: -1})
}

// alterPartition sets a partition's ISR at its leader's request.
func (a *applier) alterPartition(c *cmdAlterPartition) *applyResult {
	t, p, err := a.st.partition(c.Topic, c.Partition)
	if err != nil {
		return &applyResult{err: err}
	}
	switch {
	case c.LeaderID != p.Leader || c.LeaderEpoch != p.LeaderEpoch:
		return &applyResult{err: fmt.Errorf("%w: %s/%d: request from leader %d at epoch %d, but the leader is %d at epoch %d",
			ErrStaleRequest, c.Topic, c.Partition, c.LeaderID, c.LeaderEpoch, p.Leader, p.LeaderEpoch)}
	case c.PartitionEpoch != p.PartitionEpoch:
		return &applyResult{err: fmt.Errorf("%w: %s/%d: request computed at partition epoch %d, which is now %d",
			ErrStaleRequest, c.Topic, c.Partition, c.PartitionEpoch, p.PartitionEpoch)}
	case !a.st.live(c.LeaderID):
		return &applyResult{err: fmt.Errorf("%w: %s/%d: leader store %d has been fenced (its session expired)", ErrStaleRequest, c.Topic, c.Partition, c.LeaderID)}
	}
	if err := checkISR(c, p); err != nil {
		return &applyResult{err: err}
	}
	for _, r := range minus(c.ISR, p.ISR) {
		if !a.st.live(r) {
			return &applyResult{err: fmt.Errorf("%w: %s/%d: store %d cannot join the ISR: it is not live", ErrIneligibleReplica, c.Topic, c.Partition, r)}
		}
	}
	isr := inOrder(p.Replicas, c.ISR)
	if slices.Equal(isr, p.ISR) {
		return &applyResult{partition: &p}
	}
	np := p
	np.ISR = isr
	np.PartitionEpoch++
	a.completeReassignment(t, &np)
	a.setPartition(t, c.Partition, np)
	return &applyResult{partition: &np}
}

// checkISR validates the shape of a proposed ISR.
func checkISR(c *cmdAlterPartition, p PartitionInfo) error {
	if len(c.ISR) == 0 {
		return fmt.Errorf("%w: %s/%d: an empty ISR", ErrInvalidRequest, c.Topic, c.Partition)
	}
	for i, r := range c.ISR {
		if slices.Contains(c.ISR[:i], r) {
			return fmt.Errorf("%w: %s/%d: store %d twice in the ISR %v", ErrInvalidRequest, c.Topic, c.Partition, r, c.ISR)
		}
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("%w: %s/%d: store %d is in the ISR %v but not a replica (replicas %v)", ErrInvalidRequest, c.Topic, c.Partition, r, c.ISR, p.Replicas)
		}
	}
	if !slices.Contains(c.ISR, c.LeaderID) {
		return fmt.Errorf("%w: %s/%d: the ISR %v leaves out its leader %d", ErrInvalidRequest, c.Topic, c.Partition, c.ISR, c.LeaderID)
	}
	return nil
}

// completeReassignment finishes p's reassignment once every target
// replica is in sync: the target becomes the replicas, the ISR keeps only
// target members, and a leader outside the target hands over to the
// first in-sync target replica that is live. The caller bumps the
// partition epoch.
func (a *applier) completeReassignment(t *TopicInfo, p *PartitionInfo) bool {
	if len(p.TargetReplicas) == 0 {
		return false
	}
	for _, r := range p.TargetReplicas {
		if !slices.Contains(p.ISR, r) {
			return false
		}
	}
	p.Replicas = p.TargetReplicas
	p.ISR = inOrder(p.TargetReplicas, p.ISR)
	p.TargetReplicas, p.OriginalReplicas = nil, nil
	if !slices.Contains(p.Replicas, p.Leader) {
		a.elect(t, p)
	}
	return true
}

// checkTarget validates a reassignment target against the registered
// stores.
func (st *state) checkTarget(topic string, partition int32, target []int32) error {
	if len(target) == 0 || len(target) > MaxReplicationFactor {
		return fmt.Errorf("%w: %s/%d: %d replicas %v; want 1 to %d", ErrInvalidReplicaAssignment, topic, partition, len(target), target, MaxReplicationFactor)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: %s/%d: store %d twice in %v", ErrInvalidReplicaAssignment, topic, partition, r, target)
		}
		n, ok := st.nodes[r]
		switch {
		case !ok || n.Kind != KindStore:
			return fmt.Errorf("%w: %s/%d: %d is not a registered store (replica ids are store node ids)", ErrInvalidReplicaAssignment, topic, partition, r)
		case n.Draining:
			return fmt.Errorf("%w: %s/%d: store %d is draining", ErrInvalidReplicaAssignment, topic, partition, r)
		}
	}
	return nil
}

// reassign starts, replaces or cancels reassignments.
func (a *applier) reassign(c *cmdReassign) *applyResult {
	r := &applyResult{items: make([]error, len(c.Reassignments))}
	for i, ra := range c.Reassignments {
		r.items[i] = a.reassignOne(ra)
	}
	return r
}

func (a *applier) reassignOne(ra Reassignment) error {
	t, p, err := a.st.partition(ra.Topic, ra.Partition)
	if err != nil {
		return err
	}
	if ra.Replicas == nil {
		if len(p.TargetReplicas) == 0 {
			return fmt.Errorf("%w: %s/%d", ErrNoReassignmentInProgress, ra.Topic, ra.Partition)
		}
		np, err := a.revert(t, p)
		if err != nil {
			return err
		}
		np.PartitionEpoch++
		a.setPartition(t, ra.Partition, np)
		return nil
	}
	if err := a.st.checkTarget(ra.Topic, ra.Partition, ra.Replicas); err != nil {
		return err
	}
	np, changed, err := a.startReassignment(t, p, ra.Replicas)
	if err != nil || !changed {
		return err
	}
	a.setPartition(t, ra.Partition, np)
	return nil
}

// revert undoes p's reassignment: back to the original replicas, the ISR
// restricted to them, a leader elected among them if it was not one.
func (a *applier) revert(t *TopicInfo, p PartitionInfo) (PartitionInfo, error) {
	orig := p.OriginalReplicas
	isr := inOrder(orig, p.ISR)
	if len(isr) == 0 {
		return p, fmt.Errorf("%w: %s/%d: no replica of the original assignment %v is in sync (ISR %v)", ErrInvalidRequest, t.Name, p.Partition, orig, p.ISR)
	}
	np := p
	np.Replicas, np.ISR = orig, isr
	np.TargetReplicas, np.OriginalReplicas = nil, nil
	if !slices.Contains(orig, np.Leader) {
		a.elect(t, &np)
	}
	return np, nil
}

// startReassignment moves p towards target: replicas become the original
// ones followed by the new ones, until the new ones are in sync (which
// may be at once, when the target only drops or reorders replicas). A
// reassignment in progress is replaced, relative to the original
// replicas.
func (a *applier) startReassignment(t *TopicInfo, p PartitionInfo, target []int32) (PartitionInfo, bool, error) {
	if len(p.Replicas) == 0 {
		return p, false, fmt.Errorf("%w: %s/%d is not placed yet", ErrInvalidRequest, t.Name, p.Partition)
	}
	base := p.Replicas
	if len(p.TargetReplicas) > 0 {
		if slices.Equal(target, p.TargetReplicas) {
			return p, false, nil
		}
		base = p.OriginalReplicas
	}
	if slices.Equal(target, base) {
		if len(p.TargetReplicas) == 0 {
			return p, false, nil
		}
		np, err := a.revert(t, p)
		if err != nil {
			return p, false, err
		}
		np.PartitionEpoch++
		return np, true, nil
	}
	np := p
	np.Replicas = union(base, target)
	np.ISR = inOrder(np.Replicas, p.ISR)
	if len(np.ISR) == 0 {
		return p, false, fmt.Errorf("%w: %s/%d: no in-sync replica would remain (ISR %v)", ErrInvalidRequest, t.Name, p.Partition, p.ISR)
	}
	np.TargetReplicas = slices.Clone(target)
	np.OriginalReplicas = slices.Clone(base)
	if !slices.Contains(np.Replicas, np.Leader) {
		a.elect(t, &np)
	}
	a.completeReassignment(t, &np)
	np.PartitionEpoch++
	return np, true, nil
}

// drainStore marks a store draining and gives every partition it holds a
// target without it. Either every such partition finds a store to move to,
// or nothing changes.
func (a *applier) drainStore(c *cmdDrainStore) *applyResult {
	n, ok := a.st.nodes[c.ID]
	if !ok || n.Kind != KindStore {
		return &applyResult{err: fmt.Errorf("%w: %d is not a registered store", ErrUnknownNode, c.ID)}
	}
	type move struct {
		topic  string
		p      int32
		target []int32
	}
	var moves []move
	a.st.loads()
	rload := maps32(a.st.rload)
	var cands []int32
	for _, id := range a.st.placeable() {
		if id != c.ID {
			cands = append(cands, id)
		}
	}
	for _, name := range a.sortedTopics() {
		for i, p := range a.st.topics[name].Partitions {
			target, ok := drainTarget(p, c.ID)
			if !ok {
				continue
			}
			best := NoLeader
			for _, id := range cands {
				if slices.Contains(p.Replicas, id) || slices.Contains(target, id) {
					continue
				}
				if best == NoLeader || rload[id] < rload[best] {
					best = id
				}
			}
			if best == NoLeader {
				return &applyResult{err: fmt.Errorf("%w: cannot drain store %d: partition %s/%d (replicas %v) has no store to move to: %d live store(s) not draining, all holding a replica of it already",
					ErrInvalidReplicaAssignment, c.ID, name, p.Partition, p.Replicas, len(cands))}
			}
			rload[best]++
			next := slices.Clone(target)
			next[slices.Index(next, c.ID)] = best
			moves = append(moves, move{name, int32(i), next})
		}
	}
	if !n.Draining {
		nn := *n
		nn.Draining, nn.Version = true, a.next
		a.st.nodes[c.ID] = &nn
		a.record(change{node: c.ID})
	}
	for _, m := range moves {
		t := a.st.topics[m.topic]
		np, changed, err := a.startReassignment(t, t.Partitions[m.p], m.target)
		if err != nil {
			// Cannot happen for a target built from live stores and an
			// ISR-holding partition; logged rather than half-applied.
			a.f.log.Warn("drain: partition not moved", "topic", m.topic, "partition", m.p, "err", err)
			continue
		}
		if changed {
			a.setPartition(t, m.p, np)
		}
	}
	return &applyResult{}
}

// drainTarget is the assignment p moves from while store id drains: its
// target when one is set, else its replicas; ok is false when that does
// not include id (nothing to do).
func drainTarget(p PartitionInfo, id int32) ([]int32, bool) {
	cur := p.Replicas
	if len(p.TargetReplicas) > 0 {
		cur = p.TargetReplicas
	}
	return cur, slices.Contains(cur, id)
}

func maps32(m map[int32]int) map[int32]int {
	out := make(map[int32]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// needsPreferred reports whether p's preferred replica should take over
// its leadership.
func (st *state) needsPreferred(p PartitionInfo) bool {
	if len(p.Replicas) == 0 {
		return false
	}
	pref := p.Replicas[0]
	n := st.nodes[pref]
	return pref != p.Leader && st.electable(pref) && !n.Draining && slices.Contains(p.ISR, pref)
}

// electPreferred hands leadership back to preferred replicas.
func (a *applier) electPreferred() *applyResult {
	a.updatePartitions(nil, func(t *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
		if !a.st.needsPreferred(p) {
			return p, false
		}
		np := p
		np.Leader = p.Replicas[0]
		np.LeaderEpoch++
		np.PartitionEpoch++
		return np, true
	})
	return &applyResult{}
}

// preferredPending counts the partitions electPreferred would move.
func (st *state) preferredPending() int {
	n := 0
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			if st.needsPreferred(p) {
				n++
			}
		}
	}
	return n
}

// shutdownStore marks store id shutting down and moves the leadership of
// every partition it leads to another in-sync, electable replica, as
// Kafka's controlled shutdown does. Its replicas stay where they are, so
// that a restart costs no copying; a partition whose only in-sync replica
// is id keeps it as leader, since moving would lose acknowledged records.
// With ShrinkISR it also leaves the ISR of every partition it no longer
// leads, as Kafka's controlled shutdown does, so that acks=all producers
// stop waiting for a store about to stop instead of waiting out its
// session.
func (a *applier) shutdownStore(c *cmdShutdownStore) *applyResult {
	n, ok := a.st.nodes[c.ID]
	if !ok || n.Kind != KindStore {
		return &applyResult{err: fmt.Errorf("%w: %d is not a registered store", ErrUnknownNode, c.ID)}
	}
	if !n.ShuttingDown {
		nn := *n
		nn.ShuttingDown, nn.Version = true, a.next
		a.st.nodes[c.ID] = &nn
		a.record(change{node: c.ID})
	}
	a.updatePartitions(nil, func(_ *TopicInfo, p PartitionInfo) (PartitionInfo, bool) {
		np := p
		if p.Leader == c.ID {
			next := a.st.inSyncLeader(p, c.ID)
			if next == NoLeader {
				return p, false
			}
			np.Leader = next
			np.LeaderEpoch++
		}
		if c.ShrinkISR && leavesISR(np, c.ID) {
			np.ISR = without(np.ISR, c.ID)
		}
		if np.Leader == p.Leader && slices.Equal(np.ISR, p.ISR) {
			return p, false
		}
		np.PartitionEpoch++
		return np, true
	})
	return &applyResult{}
}

// leavesISR reports whether store id, shutting down, can leave p's ISR:
// it is in it and does not lead (a leader is always in its ISR).
func leavesISR(p PartitionInfo, id int32) bool {
	return p.Leader != id && len(p.ISR) > 1 && slices.Contains(p.ISR, id)
}

// shutdownPending reports whether a shutdownStore for id (with
// ShrinkISR) would change anything: it is not marked yet, a partition it
// leads has another in-sync replica to lead, or it is in the ISR of a
// partition it does not lead.
func (st *state) shutdownPending(id int32) bool {
	if n := st.nodes[id]; n == nil || !n.ShuttingDown {
		return true
	}
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			if (p.Leader == id && st.inSyncLeader(p, id) != NoLeader) || leavesISR(p, id) {
				return true
			}
		}
	}
	return false
}

// drainStatus counts what store id still holds and leads.
func (st *state) drainStatus(id int32) DrainStatus {
	s := DrainStatus{ID: id}
	if n, ok := st.nodes[id]; ok {
		s.Draining = n.Draining
		s.ShuttingDown = n.ShuttingDown
	}
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				s.Replicas++
			}
			if p.Leader == id {
				s.Leaders++
			}
		}
	}
	return s
}

// drainPending reports whether a DrainStore of id would change anything:
// the store is not marked draining yet, or a partition still lacks a
// target without it.
func (st *state) drainPending(id int32) bool {
	if n, ok := st.nodes[id]; !ok || !n.Draining {
		return true
	}
	for _, t := range st.topics {
		for _, p := range t.Partitions {
			if _, ok := drainTarget(p, id); ok {
				return true
			}
		}
	}
	return false
}

// reassignments lists the partitions being moved, of the named ones (all
// when req names none), sorted.
func (st *state) reassignments(req ListReassignmentsRequest) []OngoingReassignment {
	out := []OngoingReassignment{}
	add := func(t *TopicInfo, p PartitionInfo) {
		if len(p.TargetReplicas) == 0 {
			return
		}
		out = append(out, OngoingReassignment{
			Topic: t.Name, Partition: p.Partition, Replicas: p.Replicas,
			Adding:   nonNil(minus(p.TargetReplicas, p.OriginalReplicas)),
			Removing: nonNil(minus(p.OriginalReplicas, p.TargetReplicas)),
		})
	}
	if len(req.Topics) == 0 {
		for _, t := range st.topics {
			for _, p := range t.Partitions {
				add(t, p)
			}
		}
	}
	for _, tp := range req.Topics {
		t, ok := st.topics[tp.Topic]
		if !ok {
			continue
		}
		for _, i := range tp.Partitions {
			if i >= 0 && int(i) < len(t.Partitions) {
				add(t, t.Partitions[i])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return slices.CompactFunc(out, func(x, y OngoingReassignment) bool { return x.Topic == y.Topic && x.Partition == y.Partition })
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
