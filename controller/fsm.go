package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/aerostream/aerostream/auth"
)

// Bounds on what the FSM remembers besides the metadata itself.
const (
	// maxChanges is the length of the change log heartbeats are answered
	// from; a node further behind gets the full state.
	maxChanges = 4096
	// maxTombstones is how many topic deletions the FSM remembers, so that a
	// store that was away still deletes what it holds of them.
	maxTombstones = 1000
)

// FSM is the controller's replicated state machine. Raft calls Apply,
// Snapshot and Restore from its own goroutine; the client API reads
// concurrently, hence the lock. Topic and node values are never modified in
// place, only replaced, so a snapshot copies maps of pointers and encodes
// them outside the lock.
type FSM struct {
	log *slog.Logger

	mu struct {
		sync.RWMutex
		st state
		// changes lists what each applied command changed, in version order.
		// Every change with a version above logStart is in it.
		changes  []change
		logStart uint64
		// changed is closed (and replaced) when the version moves, waking
		// long-polling heartbeats.
		changed chan struct{}
	}
}

var _ raft.FSM = (*FSM)(nil)

type state struct {
	clusterID string
	version   uint64
	topics    map[string]*TopicInfo
	nodes     map[int32]*NodeInfo
	broker    map[string]string
	deleted   []DeletedTopic // oldest first, at most maxTombstones
	// createdBy is the RequestID each topic was created with, if any, so
	// that a retried create recognises its own topic.
	createdBy map[string]string
	// schemas is the schema registry's state (schemas.go).
	schemas schemaState
	// security is the users and ACLs (security.go).
	security securityState

	// Derived, rebuilt on Restore.
	byID    map[TopicID]string
	collide map[string]string // name with '.' as '_' -> name
	// load and rload count the partitions each store leads and holds a
	// replica of. Placement keeps them exact as it places; any other change
	// of leaders or replicas marks them stale, and loads() recounts.
	load      map[int32]int
	rload     map[int32]int
	loadStale bool
	// names are the topic names, sorted; nil when a topic was created or
	// deleted since they were.
	names []string
}

func newState() state {
	return state{
		topics:    map[string]*TopicInfo{},
		nodes:     map[int32]*NodeInfo{},
		broker:    map[string]string{},
		createdBy: map[string]string{},
		byID:      map[TopicID]string{},
		collide:   map[string]string{},
		load:      map[int32]int{},
		rload:     map[int32]int{},
	}
}

type change struct {
	version uint64
	topic   string // a created or changed topic
	deleted *DeletedTopic
	node    int32 // a changed node, or -1
	broker  bool  // the cluster defaults changed
}

// NewFSM returns an empty state machine.
func NewFSM(log *slog.Logger) *FSM {
	if log == nil {
		log = slog.Default()
	}
	f := &FSM{log: log}
	f.mu.st = newState()
	f.mu.st.security.init()
	f.mu.changed = make(chan struct{})
	return f
}

// applyResult is what Apply returns through raft's ApplyFuture.Response.
type applyResult struct {
	err    error   // the command as a whole failed
	items  []error // per-item outcome, in request order
	topics []TopicInfo
	// partition is the partition an AlterPartition left.
	partition *PartitionInfo
	version   uint64
	// schema is a schema registry write's outcome.
	schema *SchemaWriteResponse
	// acls are the ACLs each filter of a delete_acls removed.
	acls [][]auth.ACL
}

// Apply applies one committed log entry. It never panics on any input: an
// entry that does not decode, or whose values are invalid, is answered with
// an error and changes nothing.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return &applyResult{}
	}
	c, err := decodeCommand(l.Data)
	if err != nil {
		f.log.Warn("controller: undecodable log entry", "index", l.Index, "err", err)
		return &applyResult{err: err}
	}
	return f.apply(c)
}

func (f *FSM) apply(c command) *applyResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := applier{f: f, st: &f.mu.st, next: f.mu.st.version + 1}
	var r *applyResult
	switch c.op {
	case opSetClusterID:
		r = a.setClusterID(c.setClusterID)
	case opCreateTopics:
		r = a.createTopics(c.createTopics)
	case opDeleteTopics:
		r = a.deleteTopics(c.deleteTopics)
	case opCreatePartitions:
		r = a.createPartitions(c.createPartitions)
	case opAlterConfigs:
		r = a.alterConfigs(c.alterConfigs)
	case opRegisterNode:
		r = a.registerNode(c.registerNode)
	case opSetLiveness:
		r = a.setLiveness(c.setLiveness)
	case opAlterPartition:
		r = a.alterPartition(c.alterPartition)
	case opReassign:
		r = a.reassign(c.reassign)
	case opDrainStore:
		r = a.drainStore(c.drainStore)
	case opElectPreferred:
		r = a.electPreferred()
	case opShutdownStore:
		r = a.shutdownStore(c.shutdownStore)
	case opSchema:
		r = a.schema(c.schema)
	case opSecurity:
		r = a.security(c.security)
	default:
		r = &applyResult{err: fmt.Errorf("%w: unknown op %d", ErrMalformedCommand, c.op)}
	}
	if a.changed {
		f.mu.st.version = a.next
		f.notifyLocked()
	}
	r.version = f.mu.st.version
	return r
}

func (f *FSM) notifyLocked() {
	close(f.mu.changed)
	f.mu.changed = make(chan struct{})
}

// changedSince returns a channel closed once the version is no longer
// known (at once if it already is not).
func (f *FSM) changedSince(known uint64) <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.mu.st.version != known {
		c := make(chan struct{})
		close(c)
		return c
	}
	return f.mu.changed
}

// applier applies one command; every change it records carries the
// command's version, which becomes current only if something changed.
type applier struct {
	f       *FSM
	st      *state
	next    uint64
	changed bool
	// clean forbids unclean elections while set.
	clean bool
}

func (a *applier) record(c change) {
	c.version = a.next
	a.changed = true
	f := a.f
	f.mu.changes = append(f.mu.changes, c)
	// Trimmed once it holds twice the bound, so that a command changing
	// many topics (a store's session expiring) does not move the whole
	// log down once per change.
	if len(f.mu.changes) > 2*maxChanges {
		drop := len(f.mu.changes) - maxChanges
		f.mu.logStart = f.mu.changes[drop-1].version
		f.mu.changes = slices.Delete(f.mu.changes, 0, drop)
	}
}

func (a *applier) setClusterID(c *cmdSetClusterID) *applyResult {
	switch {
	case c.ClusterID == "" || len(c.ClusterID) > 64:
		return &applyResult{err: fmt.Errorf("%w: cluster id must be 1 to 64 bytes", ErrInvalidRequest)}
	case a.st.clusterID == c.ClusterID:
		return &applyResult{}
	case a.st.clusterID != "":
		return &applyResult{err: fmt.Errorf("%w: cluster id is already %s", ErrInvalidRequest, a.st.clusterID)}
	}
	a.st.clusterID = c.ClusterID
	a.record(change{node: -1})
	return &applyResult{}
}

// checkNewTopic validates one topic of a CreateTopics against st and
// returns it with defaults resolved. Validate-only requests run the same
// check on the leader's state without proposing.
func checkNewTopic(st *state, t cmdNewTopic) (cmdNewTopic, error) {
	if err := validTopicName(t.Name); err != nil {
		return t, err
	}
	if _, ok := st.topics[t.Name]; ok {
		return t, fmt.Errorf("%w: %q", ErrTopicExists, t.Name)
	}
	if other, ok := st.collide[collisionKey(t.Name)]; ok {
		return t, fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are alike in metric names)", ErrInvalidTopic, t.Name, other)
	}
	if t.Partitions == -1 {
		t.Partitions = 1 // Kafka's num.partitions default
	}
	if t.Partitions < 1 || t.Partitions > MaxPartitionsPerTopic {
		return t, fmt.Errorf("%w: %d partitions; want 1 to %d (or -1 for the default, 1)", ErrInvalidPartitions, t.Partitions, MaxPartitionsPerTopic)
	}
	if t.ReplicationFactor == -1 {
		t.ReplicationFactor = 1
	}
	if t.ReplicationFactor < 1 {
		return t, fmt.Errorf("%w: %d; it must be at least 1", ErrInvalidReplicationFactor, t.ReplicationFactor)
	}
	if t.ReplicationFactor > MaxReplicationFactor {
		return t, fmt.Errorf("%w: %d; at most %d copies of a partition are kept", ErrInvalidReplicationFactor, t.ReplicationFactor, MaxReplicationFactor)
	}
	if err := st.checkLiveFor(t.ReplicationFactor); err != nil {
		return t, err
	}
	if err := st.checkRoom(t.Name, int(t.Partitions), t.ReplicationFactor); err != nil {
		return t, err
	}
	cfg, err := validateConfigs(t.Configs, false)
	if err != nil {
		return t, err
	}
	if err := checkMinISR(cfg, t.ReplicationFactor); err != nil {
		return t, err
	}
	t.Configs = cfg
	return t, nil
}

// ownTopic returns the topic named name if request id created it: a retry
// of a create whose answer was lost.
func (st *state) ownTopic(name, id string) (*TopicInfo, bool) {
	if id == "" || st.createdBy[name] != id {
		return nil, false
	}
	t, ok := st.topics[name]
	return t, ok
}

func (a *applier) createTopics(c *cmdCreateTopics) *applyResult {
	r := &applyResult{items: make([]error, len(c.Topics)), topics: make([]TopicInfo, len(c.Topics))}
	if len(c.RequestID) > MaxRequestIDLen {
		return &applyResult{err: fmt.Errorf("%w: request id longer than %d bytes", ErrInvalidRequest, MaxRequestIDLen)}
	}
	for i, t := range c.Topics {
		if own, ok := a.st.ownTopic(t.Name, c.RequestID); ok {
			r.topics[i] = *own
			continue
		}
		t, err := checkNewTopic(a.st, t)
		if err == nil && t.ID.IsZero() {
			err = fmt.Errorf("%w: topic %q has no id", ErrInvalidRequest, t.Name)
		}
		if err == nil {
			if other, ok := a.st.byID[t.ID]; ok {
				err = fmt.Errorf("%w: topic id %s is already topic %q", ErrInvalidRequest, t.ID, other)
			}
		}
		if err != nil {
			r.items[i] = err
			r.topics[i] = TopicInfo{Name: t.Name}
			continue
		}
		ti := &TopicInfo{
			Name:              t.Name,
			ID:                t.ID,
			ReplicationFactor: t.ReplicationFactor,
			Partitions:        make([]PartitionInfo, t.Partitions),
			Configs:           t.Configs,
			Version:           a.next,
		}
		for p := range ti.Partitions {
			ti.Partitions[p] = PartitionInfo{Partition: int32(p), Leader: NoLeader, LeaderEpoch: -1}
		}
		a.place(ti.Partitions, int(t.ReplicationFactor), a.st.placeable())
		a.st.topics[t.Name] = ti
		a.st.names = nil
		a.st.byID[t.ID] = t.Name
		a.st.collide[collisionKey(t.Name)] = t.Name
		if c.RequestID != "" {
			a.st.createdBy[t.Name] = c.RequestID
		}
		a.record(change{topic: t.Name, node: -1})
		r.topics[i] = *ti
	}
	return r
}

func (a *applier) deleteTopics(c *cmdDeleteTopics) *applyResult {
	r := &applyResult{items: make([]error, len(c.Topics))}
	for i, ref := range c.Topics {
		t, err := a.st.lookup(ref)
		if err != nil {
			r.items[i] = err
			continue
		}
		a.st.loadStale = true
		delete(a.st.topics, t.Name)
		a.st.names = nil
		delete(a.st.byID, t.ID)
		delete(a.st.collide, collisionKey(t.Name))
		delete(a.st.createdBy, t.Name)
		d := DeletedTopic{Name: t.Name, ID: t.ID, Version: a.next}
		a.st.deleted = append(a.st.deleted, d)
		if n := len(a.st.deleted) - maxTombstones; n > 0 {
			a.st.deleted = slices.Delete(slices.Clone(a.st.deleted), 0, n)
		}
		a.record(change{deleted: &d, node: -1})
	}
	return r
}

// lookup resolves a TopicRef.
func (st *state) lookup(ref TopicRef) (*TopicInfo, error) {
	switch {
	case ref.Name == "" && ref.ID.IsZero():
		return nil, fmt.Errorf("%w: a topic must be named by name or id", ErrInvalidRequest)
	case ref.Name == "":
		name, ok := st.byID[ref.ID]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopicID, ref.ID)
		}
		return st.topics[name], nil
	}
	t, ok := st.topics[ref.Name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, ref.Name)
	}
	if !ref.ID.IsZero() && ref.ID != t.ID {
		return nil, fmt.Errorf("%w: topic %q has id %s, not %s", ErrUnknownTopicID, ref.Name, t.ID, ref.ID)
	}
	return t, nil
}

// checkPartitionCount validates a CreatePartitions item.
func checkPartitionCount(st *state, pc PartitionCount) (*TopicInfo, error) {
	t, ok := st.topics[pc.Name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, pc.Name)
	}
	cur := int32(len(t.Partitions))
	switch {
	case pc.Count < cur:
		return nil, fmt.Errorf("%w: topic %q has %d partitions; the count can only grow, not shrink to %d", ErrInvalidPartitions, pc.Name, cur, pc.Count)
	case pc.Count == cur:
		return nil, fmt.Errorf("%w: topic %q already has %d partitions", ErrInvalidPartitions, pc.Name, cur)
	case pc.Count > MaxPartitionsPerTopic:
		return nil, fmt.Errorf("%w: %d partitions; at most %d", ErrInvalidPartitions, pc.Count, MaxPartitionsPerTopic)
	}
	if err := st.checkLiveFor(t.ReplicationFactor); err != nil {
		return nil, fmt.Errorf("topic %q: %w", pc.Name, err)
	}
	if err := st.checkRoom(pc.Name, int(pc.Count)-len(t.Partitions), t.ReplicationFactor); err != nil {
		return nil, err
	}
	return t, nil
}

func (a *applier) createPartitions(c *cmdCreatePartitions) *applyResult {
	r := &applyResult{items: make([]error, len(c.Topics))}
	for i, pc := range c.Topics {
		t, err := checkPartitionCount(a.st, pc)
		if err != nil {
			r.items[i] = err
			continue
		}
		nt := *t
		nt.Version = a.next
		nt.Partitions = make([]PartitionInfo, pc.Count)
		copy(nt.Partitions, t.Partitions)
		for p := len(t.Partitions); p < int(pc.Count); p++ {
			nt.Partitions[p] = PartitionInfo{Partition: int32(p), Leader: NoLeader, LeaderEpoch: -1}
		}
		a.place(nt.Partitions[len(t.Partitions):], int(t.ReplicationFactor), a.st.placeable())
		a.st.topics[pc.Name] = &nt
		a.record(change{topic: pc.Name, node: -1})
	}
	return r
}

// newConfigs computes what a resource's configs become, without changing
// anything.
func newConfigs(st *state, res AlterConfigsResource) (map[string]string, error) {
	broker := false
	var cur map[string]string
	switch res.Type {
	case ResourceTopic:
		t, ok := st.topics[res.Name]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, res.Name)
		}
		cur = t.Configs
	case ResourceBroker:
		if res.Name != "" {
			return nil, fmt.Errorf("%w: broker %q: per-broker dynamic configs are not supported; alter the cluster default (empty broker name)", ErrInvalidRequest, res.Name)
		}
		broker, cur = true, st.broker
	default:
		return nil, fmt.Errorf("%w: resource type %q (want topic or broker)", ErrInvalidRequest, res.Type)
	}
	rf := int16(0)
	if !broker {
		rf = st.topics[res.Name].ReplicationFactor
	}
	if !res.Incremental {
		if len(res.Ops) > 0 {
			return nil, fmt.Errorf("%w: ops given without incremental", ErrInvalidRequest)
		}
		next, err := validateConfigs(res.Configs, broker)
		if err == nil {
			err = checkChange(cur, next, broker)
		}
		if err == nil && !broker {
			err = checkMinISR(next, rf)
		}
		return next, err
	}
	if len(res.Configs) > 0 {
		return nil, fmt.Errorf("%w: configs given with incremental; use ops", ErrInvalidRequest)
	}
	next := make(map[string]string, len(cur)+len(res.Ops))
	for k, v := range cur {
		next[k] = v
	}
	for _, o := range res.Ops {
		// Validate the name even for delete: Kafka refuses unknown names.
		def, err := lookupConfig(o.Name, broker)
		if err != nil {
			return nil, err
		}
		switch o.Op {
		case OpSet:
			v, err := checkConfig(o.Name, o.Value, broker)
			if err != nil {
				return nil, err
			}
			next[o.Name] = v
		case OpDelete:
			delete(next, o.Name)
		case OpAppend, OpSubtract:
			if def.Type != TypeList {
				return nil, fmt.Errorf("%w: %s on %s, which is not a list config", ErrInvalidConfig, o.Op, o.Name)
			}
			cv := next[o.Name]
			if cv == "" {
				cv = def.Default
			}
			items := splitList(cv)
			for _, x := range splitList(o.Value) {
				if o.Op == OpAppend && !slices.Contains(items, x) {
					items = append(items, x)
				}
				if o.Op == OpSubtract {
					items = slices.DeleteFunc(items, func(s string) bool { return s == x })
				}
			}
			if len(items) == 0 {
				delete(next, o.Name)
				continue
			}
			v, err := checkConfig(o.Name, strings.Join(items, ","), broker)
			if err != nil {
				return nil, err
			}
			next[o.Name] = v
		default:
			return nil, fmt.Errorf("%w: config op %q (want set, delete, append or subtract)", ErrInvalidRequest, o.Op)
		}
	}
	if err := crossCheck(next, broker); err != nil {
		return nil, err
	}
	if err := checkChange(cur, next, broker); err != nil {
		return nil, err
	}
	if !broker {
		if err := checkMinISR(next, rf); err != nil {
			return nil, err
		}
	}
	if len(next) == 0 {
		return nil, nil
	}
	return next, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (a *applier) alterConfigs(c *cmdAlterConfigs) *applyResult {
	r := &applyResult{items: make([]error, len(c.Resources))}
	for i, res := range c.Resources {
		cfg, err := newConfigs(a.st, res)
		if err != nil {
			r.items[i] = err
			continue
		}
		if res.Type == ResourceBroker {
			if cfg == nil {
				cfg = map[string]string{}
			}
			if !mapsEqual(cfg, a.st.broker) {
				a.st.broker = cfg
				a.record(change{broker: true, node: -1})
				// Unclean election may just have been allowed.
				a.electLeaderless(nil)
			}
			continue
		}
		t := a.st.topics[res.Name]
		if mapsEqual(cfg, t.Configs) {
			continue
		}
		nt := *t
		nt.Configs, nt.Version = cfg, a.next
		a.st.topics[res.Name] = &nt
		a.record(change{topic: res.Name, node: -1})
		a.electLeaderless([]string{res.Name})
	}
	return r
}

func mapsEqual(a, b map[string]string) bool {
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

// Limits on a node registration.
const (
	maxAddresses  = 16
	maxAddressLen = 256
	maxShards     = 1 << 16
)

func checkRegistration(c *cmdRegisterNode) error {
	if c.ID < 0 {
		return fmt.Errorf("%w: node id %d is negative", ErrInvalidRequest, c.ID)
	}
	switch c.Kind {
	case KindStore:
		if c.Shards < 1 || c.Shards > maxShards || c.RingAddr == "" {
			return fmt.Errorf("%w: a store registers its shard ring: 1 to %d shards and an address (got %d, %q)", ErrInvalidRequest, maxShards, c.Shards, c.RingAddr)
		}
	case KindGateway:
		if c.Shards != 0 || c.RingAddr != "" {
			return fmt.Errorf("%w: a gateway serves no shard ring", ErrInvalidRequest)
		}
	default:
		return fmt.Errorf("%w: node kind %q (want store or gateway)", ErrInvalidRequest, c.Kind)
	}
	if len(c.RingAddr) > maxAddressLen {
		return fmt.Errorf("%w: ring address longer than %d bytes", ErrInvalidRequest, maxAddressLen)
	}
	if c.MaxPartitions < 0 || (c.MaxPartitions > 0 && c.Kind != KindStore) {
		return fmt.Errorf("%w: a partition budget of %d (a store's is 0, for none, or more)", ErrInvalidRequest, c.MaxPartitions)
	}
	if len(c.Addresses) > maxAddresses {
		return fmt.Errorf("%w: %d addresses, at most %d", ErrInvalidRequest, len(c.Addresses), maxAddresses)
	}
	for k, v := range c.Addresses {
		if k == "" || len(k) > maxAddressLen || len(v) > maxAddressLen {
			return fmt.Errorf("%w: address %q = %q: names and addresses are 1 to %d bytes", ErrInvalidRequest, k, v, maxAddressLen)
		}
	}
	return nil
}

func (a *applier) registerNode(c *cmdRegisterNode) *applyResult {
	if err := checkRegistration(c); err != nil {
		return &applyResult{err: err}
	}
	old := a.st.nodes[c.ID]
	if old != nil && old.Kind != c.Kind {
		return &applyResult{err: fmt.Errorf("%w: node id %d is registered to a %s at %s; give this %s an id of its own", ErrNodeIDInUse, c.ID, old.Kind, nodeAddrs(old.Kind, old.Ring.Address, old.Addresses), c.Kind)}
	}
	n := &NodeInfo{
		ID:              c.ID,
		Kind:            c.Kind,
		Addresses:       c.Addresses,
		Ring:            RingInfo{Shards: c.Shards, Address: c.RingAddr, Version: a.next},
		Live:            true,
		LastHeartbeatMs: c.NowMs,
		Version:         a.next,
		MaxPartitions:   c.MaxPartitions,
	}
	if old != nil {
		n.Draining = old.Draining
		if old.Ring.Shards == c.Shards && old.Ring.Address == c.RingAddr {
			n.Ring.Version = old.Ring.Version
		}
	}
	if c.Kind == KindStore && old != nil && old.Live {
		// A live store registering again is a new incarnation (a restart
		// within its session): its old session is fenced first, as a
		// session expiry would, so it comes back as a follower that
		// truncates and catches up rather than as a leader whose log may
		// have been cut short.
		// No unclean election here: the store is back this very moment,
		// and leads again below what only it has in sync.
		down := *old
		down.Live = false
		a.st.nodes[c.ID] = &down
		a.clean = true
		a.fence(c.ID)
		a.clean = false
	}
	a.st.nodes[c.ID] = n
	a.record(change{node: c.ID})
	if c.Kind == KindStore {
		a.unfence(c.ID)
		a.placeUnplaced()
	}
	return &applyResult{}
}

// nodeAddrs describes where a node is, for messages: a store by its ring,
// a gateway by its listeners.
func nodeAddrs(kind, ring string, addrs map[string]string) string {
	if kind == KindStore && ring != "" {
		return ring
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(addrs)) {
		parts = append(parts, k+"="+addrs[k])
	}
	if len(parts) == 0 {
		return "no address"
	}
	return strings.Join(parts, " ")
}

func (a *applier) setLiveness(c *cmdSetLiveness) *applyResult {
	up := false
	var fenced, unfenced []int32
	for _, list := range []struct {
		ids  []int32
		live bool
	}{{c.Down, false}, {c.Up, true}} {
		for _, id := range list.ids {
			old, ok := a.st.nodes[id]
			if !ok || old.Live == list.live {
				continue
			}
			n := *old
			n.Live, n.Version = list.live, a.next
			if list.live {
				n.LastHeartbeatMs = c.NowMs
				up = up || n.Kind == KindStore
			}
			a.st.nodes[id] = &n
			a.record(change{node: id})
			if n.Kind == KindStore && list.live {
				unfenced = append(unfenced, id)
			} else if n.Kind == KindStore {
				fenced = append(fenced, id)
			}
		}
	}
	// Every liveness change is in place before any election, so that no
	// partition is handed to a store this same command marks down.
	for _, id := range fenced {
		a.fence(id)
	}
	for _, id := range unfenced {
		a.unfence(id)
	}
	if up {
		a.placeUnplaced()
	}
	return &applyResult{}
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: %d bytes; at most 249", ErrInvalidTopic, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q: only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidTopic, name)
		}
	}
	return nil
}

func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// Read side. Callers get copies they may keep.

// Version returns the current metadata version.
func (f *FSM) Version() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mu.st.version
}

// ClusterID returns the cluster id, "" until the first leader has set it.
func (f *FSM) ClusterID() string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mu.st.clusterID
}

// Topics describes the named topics, or all of them (sorted by name) when
// names is empty. A missing name is reported in missing.
func (f *FSM) Topics(names []string) (topics []TopicInfo, missing []string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(names) == 0 {
		topics = make([]TopicInfo, 0, len(f.mu.st.topics))
		for _, t := range f.mu.st.topics {
			topics = append(topics, *t)
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
		return topics, nil
	}
	for _, n := range names {
		if t, ok := f.mu.st.topics[n]; ok {
			topics = append(topics, *t)
		} else {
			missing = append(missing, n)
		}
	}
	return topics, missing
}

// Topic resolves one topic by name or id.
func (f *FSM) Topic(ref TopicRef) (TopicInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, err := f.mu.st.lookup(ref)
	if err != nil {
		return TopicInfo{}, err
	}
	return *t, nil
}

// Nodes lists the registered nodes by id.
func (f *FSM) Nodes() []NodeInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]NodeInfo, 0, len(f.mu.st.nodes))
	for _, n := range f.mu.st.nodes {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Node returns one registered node.
func (f *FSM) Node(id int32) (NodeInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.mu.st.nodes[id]
	if !ok {
		return NodeInfo{}, false
	}
	return *n, true
}

// BrokerConfigs returns the dynamic cluster-default configs.
func (f *FSM) BrokerConfigs() map[string]string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]string, len(f.mu.st.broker))
	for k, v := range f.mu.st.broker {
		out[k] = v
	}
	return out
}

// read runs fn on the state under the read lock.
func (f *FSM) read(fn func(st *state)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(&f.mu.st)
}

// DeltaSince answers a heartbeat from a node that knows version known.
func (f *FSM) DeltaSince(known uint64) Delta {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := &f.mu.st
	d := Delta{ClusterID: st.clusterID, Version: st.version}
	switch {
	case known == st.version:
		return d
	case known == 0 || known > st.version || known < f.mu.logStart:
		d.Full = true
		for _, t := range st.topics {
			d.Topics = append(d.Topics, *t)
		}
		sort.Slice(d.Topics, func(i, j int) bool { return d.Topics[i].Name < d.Topics[j].Name })
		d.DeletedTopics = slices.Clone(st.deleted)
		for _, n := range st.nodes {
			d.Nodes = append(d.Nodes, *n)
		}
		sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].ID < d.Nodes[j].ID })
		d.BrokerConfigs = st.broker
		d.BrokerConfigsChanged = true
		return d
	}
	ch := f.mu.changes
	i := sort.Search(len(ch), func(i int) bool { return ch[i].version > known })
	topics := map[string]bool{}
	nodes := map[int32]bool{}
	for _, c := range ch[i:] {
		switch {
		case c.deleted != nil:
			d.DeletedTopics = append(d.DeletedTopics, *c.deleted)
		case c.topic != "":
			topics[c.topic] = true
		case c.node >= 0:
			nodes[c.node] = true
		case c.broker:
			d.BrokerConfigsChanged = true
		}
	}
	for name := range topics {
		if t, ok := st.topics[name]; ok {
			d.Topics = append(d.Topics, *t)
		}
	}
	sort.Slice(d.Topics, func(i, j int) bool { return d.Topics[i].Name < d.Topics[j].Name })
	for id := range nodes {
		if n, ok := st.nodes[id]; ok {
			d.Nodes = append(d.Nodes, *n)
		}
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].ID < d.Nodes[j].ID })
	if d.BrokerConfigsChanged {
		d.BrokerConfigs = st.broker
	}
	return d
}

// Snapshots.

// snapshotFormat versions the snapshot encoding.
const snapshotFormat = 1

// snapshotData is the encoded form of the state: one JSON object.
type snapshotData struct {
	Format        int               `json:"format"`
	ClusterID     string            `json:"cluster_id"`
	Version       uint64            `json:"version"`
	Topics        []*TopicInfo      `json:"topics"`
	Nodes         []*NodeInfo       `json:"nodes"`
	BrokerConfigs map[string]string `json:"broker_configs"`
	Deleted       []DeletedTopic    `json:"deleted"`
	// CreatedBy maps topic names to the RequestID that created them.
	CreatedBy map[string]string `json:"created_by,omitempty"`
	// Schemas is the schema registry's state, absent if never written.
	Schemas *schemaSnapshot `json:"schemas,omitempty"`
	// Security is the users and ACLs, absent if never written.
	Security *securitySnapshot `json:"security,omitempty"`
}

type fsmSnapshot struct{ data snapshotData }

// Snapshot captures the state. Values are immutable, so copying the
// pointers is a point-in-time copy; encoding happens in Persist.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := &f.mu.st
	d := snapshotData{
		Format:        snapshotFormat,
		ClusterID:     st.clusterID,
		Version:       st.version,
		Topics:        make([]*TopicInfo, 0, len(st.topics)),
		Nodes:         make([]*NodeInfo, 0, len(st.nodes)),
		BrokerConfigs: st.broker,
		Deleted:       st.deleted,
		CreatedBy:     maps.Clone(st.createdBy),
		Schemas:       st.schemas.snapshot(),
		Security:      st.security.snapshot(),
	}
	for _, t := range st.topics {
		d.Topics = append(d.Topics, t)
	}
	for _, n := range st.nodes {
		d.Nodes = append(d.Nodes, n)
	}
	return &fsmSnapshot{data: d}, nil
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	sort.Slice(s.data.Topics, func(i, j int) bool { return s.data.Topics[i].Name < s.data.Topics[j].Name })
	sort.Slice(s.data.Nodes, func(i, j int) bool { return s.data.Nodes[i].ID < s.data.Nodes[j].ID })
	if err := json.NewEncoder(sink).Encode(&s.data); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("controller: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// Restore replaces the state with a snapshot. The change log restarts at
// the snapshot's version, so nodes behind it get the full state.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("controller: restore: %w", err)
	}
	st, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.st = st
	f.mu.changes = nil
	f.mu.logStart = st.version
	f.notifyLocked()
	return nil
}

// decodeSnapshot parses and checks a snapshot, and rebuilds the derived
// indexes.
func decodeSnapshot(b []byte) (state, error) {
	bad := func(format string, args ...any) (state, error) {
		return state{}, fmt.Errorf("controller: restore: %w: "+format, append([]any{ErrMalformedCommand}, args...)...)
	}
	var d snapshotData
	if err := strictJSON(b, &d); err != nil {
		return bad("%v", err)
	}
	if d.Format != snapshotFormat {
		return bad("snapshot format %d, want %d", d.Format, snapshotFormat)
	}
	st := newState()
	st.clusterID, st.version, st.deleted = d.ClusterID, d.Version, d.Deleted
	for name, id := range d.CreatedBy {
		if len(id) > MaxRequestIDLen {
			return bad("request id of topic %q longer than %d bytes", name, MaxRequestIDLen)
		}
		st.createdBy[name] = id
	}
	if d.BrokerConfigs != nil {
		st.broker = d.BrokerConfigs
	}
	if err := st.schemas.restore(d.Schemas); err != nil {
		return bad("%v", err)
	}
	if err := st.security.restore(d.Security); err != nil {
		return bad("%v", err)
	}
	for _, t := range d.Topics {
		if t == nil || validTopicName(t.Name) != nil || t.ID.IsZero() {
			return bad("invalid topic in snapshot")
		}
		if _, dup := st.topics[t.Name]; dup {
			return bad("topic %q twice", t.Name)
		}
		if _, dup := st.byID[t.ID]; dup {
			return bad("topic id %s twice", t.ID)
		}
		for i := range t.Partitions {
			if t.Partitions[i].Partition != int32(i) {
				return bad("topic %q: partition %d listed as %d", t.Name, i, t.Partitions[i].Partition)
			}
			upgradePartition(&t.Partitions[i])
		}
		st.topics[t.Name] = t
		st.byID[t.ID] = t.Name
		st.collide[collisionKey(t.Name)] = t.Name
	}
	for _, n := range d.Nodes {
		if n == nil {
			return bad("null node")
		}
		if _, dup := st.nodes[n.ID]; dup {
			return bad("node %d twice", n.ID)
		}
		st.nodes[n.ID] = n
	}
	st.loadStale = true
	st.loads()
	return st, nil
}
