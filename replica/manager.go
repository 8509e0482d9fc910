package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/internal/ratelog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/topicconfig"
)

// The package's sentinels.
var (
	// ErrInvalidNodeID: a replica manager for a store id that is not > 0.
	// Follower fetches carry the id, and 0 means "a consumer" there.
	ErrInvalidNodeID = errors.New("invalid store node id")
	// ErrInvalidOptions: Options without a store or a controller.
	ErrInvalidOptions = errors.New("invalid replica manager options")
)

// Store is the log as the manager drives it; *logstore.Store implements it.
type Store interface {
	SetReplicaState(ctx context.Context, topic string, partition int32, st logstore.ReplicaState) error
	AppendReplica(ctx context.Context, topic string, partition int32, records []byte, leaderHW int64) (int64, error)
	OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (logstore.EpochEnd, error)
	Truncate(ctx context.Context, topic string, partition int32, offset int64) error
	TruncateFully(ctx context.Context, topic string, partition int32, offset int64) error
	DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error)
	ReplicaStatuses(ctx context.Context) ([]logstore.ReplicaStatus, error)
	SetLease(until time.Time)
	DescribePartition(ctx context.Context, topic string, partition int32) (logstore.PartitionInfo, error)
	ListPartitions(ctx context.Context) ([]logstore.PartitionInfo, error)
	ListOffsets(ctx context.Context, topic string, partition int32, timestamp int64) (logstore.OffsetResult, error)
}

var _ Store = (*logstore.Store)(nil)

// Controller is the part of the controller's API a leader store calls to
// change an ISR; *controller.Controller and *controller.Client implement it.
type Controller interface {
	AlterPartition(ctx context.Context, req controller.AlterPartitionRequest) (controller.PartitionInfo, error)
}

// Defaults of Options.
const (
	DefaultISRInterval       = 200 * time.Millisecond
	DefaultFetchMaxWait      = 500 * time.Millisecond
	DefaultFetchMaxBytes     = 8 << 20
	DefaultPartitionMaxBytes = 1 << 20
	// DefaultReplicaLagTimeMax is Kafka's replica.lag.time.max.ms.
	DefaultReplicaLagTimeMax = 30 * time.Second
	// ReplicaLagTimeMaxConfig is the config (topic or broker) that bounds
	// how long an ISR member may go without catching up.
	ReplicaLagTimeMaxConfig = "replica.lag.time.max.ms"
)

// Options configure a Manager.
type Options struct {
	Store      Store
	Controller Controller
	// LocalID is this store's node id (> 0).
	LocalID int32
	Logger  *slog.Logger
	// Dial opens a ring client to a peer store's ring address; default
	// ring.Dial.
	Dial func(ctx context.Context, addr string) (ring.Backend, error)
	// ISRInterval is how often a leader looks at its followers (default
	// DefaultISRInterval).
	ISRInterval time.Duration
	// FetchMaxWait bounds a follower's long poll (default
	// DefaultFetchMaxWait).
	FetchMaxWait time.Duration
	// FetchMaxBytes and PartitionMaxBytes bound one follower fetch and one
	// partition in it.
	FetchMaxBytes     int32
	PartitionMaxBytes int32
	// AlterTimeout bounds one AlterPartition call (default 5s).
	AlterTimeout time.Duration
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func (k tp) String() string { return k.topic + "/" + strconv.Itoa(int(k.partition)) }

// Manager is one store's replica manager. Apply hands it each new view of
// the metadata, OnHeartbeat each answered heartbeat; Run does the work
// until its ctx ends.
type Manager struct {
	opts Options
	log  *slog.Logger
	rlog *ratelog.Limiter
	met  *metrics

	// roleMu orders role changes against the fetchers' writes: Run holds
	// it to move a partition between fetchers and change its role; a
	// fetcher holds it shared around AppendReplica and Truncate, after
	// checking that its assignment still stands, so it never writes to a
	// partition that has just become a leader.
	roleMu sync.RWMutex

	// Apply hands the latest view to Run through next; kick wakes Run.
	// While a view waits or is being applied, a lease renewal waits in
	// lease too, so a store that the view deposes never serves as leader
	// on a renewed lease meanwhile.
	viewMu   sync.Mutex
	next     *snapshot
	applying bool
	lease    time.Time
	kick     chan struct{}
	// leaseUntil is the last lease given to the store (unix ns), so that
	// a renewal coming after it ran out is logged.
	leaseUntil atomic.Int64

	peersMu sync.Mutex
	peers   map[int32]*peer

	alterDone chan alterResult

	// seq counts the views applied (written by Run); a partition a
	// fetcher paused resumes at the next.
	seq atomic.Uint64

	// fenced are the partitions Fence made followers of no leader, until
	// the first view; written by Fence before Run starts, then Run's.
	fenced map[tp]bool

	// Owned by Run's goroutine.
	nodes    map[int32]nodeAddr // the stores of the last view applied
	parts    map[tp]*part
	dirty    map[tp]bool // partitions whose role the store has not taken yet
	fetchers map[int32]*fetcher
}

// New returns a Manager; Run starts it.
func New(opts Options) (*Manager, error) {
	if opts.LocalID <= 0 {
		return nil, fmt.Errorf("%w: %d (store ids must be > 0)", ErrInvalidNodeID, opts.LocalID)
	}
	if opts.Store == nil || opts.Controller == nil {
		return nil, fmt.Errorf("%w: a store and a controller are required", ErrInvalidOptions)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ISRInterval <= 0 {
		opts.ISRInterval = DefaultISRInterval
	}
	if opts.FetchMaxWait <= 0 {
		opts.FetchMaxWait = DefaultFetchMaxWait
	}
	if opts.FetchMaxBytes <= 0 {
		opts.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if opts.PartitionMaxBytes <= 0 {
		opts.PartitionMaxBytes = DefaultPartitionMaxBytes
	}
	if opts.AlterTimeout <= 0 {
		opts.AlterTimeout = 5 * time.Second
	}
	log := opts.Logger.With("component", "replica", "node", opts.LocalID)
	if opts.Dial == nil {
		opts.Dial = func(ctx context.Context, addr string) (ring.Backend, error) {
			return ring.Dial(ctx, addr, ring.DialOptions{DialTimeout: 2 * time.Second, Logger: log})
		}
	}
	return &Manager{
		opts:      opts,
		log:       log,
		rlog:      ratelog.New(10 * time.Second),
		met:       newMetrics(),
		kick:      make(chan struct{}, 1),
		peers:     map[int32]*peer{},
		alterDone: make(chan alterResult),
		parts:     map[tp]*part{},
		dirty:     map[tp]bool{},
		fetchers:  map[int32]*fetcher{},
	}, nil
}

// snapshot is what the manager keeps of a view: the partitions that list
// this store, and the stores' ring addresses.
type snapshot struct {
	version uint64
	parts   map[tp]partView
	nodes   map[int32]nodeAddr
}

type partView struct {
	topicID controller.TopicID
	info    controller.PartitionInfo
	minISR  int
	lagMax  time.Duration
}

type nodeAddr struct {
	addr    string
	version uint64
	// live: the controller would let the store join an ISR (it is live
	// and not in a controlled shutdown, which takes it out of them).
	live bool
}

// Apply hands the manager a new view of the metadata (the store agent's
// OnView). It copies what it needs and returns at once; a bad config value
// is logged and its default used, so the error is always nil. The roles
// are applied by Run, so that a view with many changes never holds up the
// heartbeats that keep the store's session (and lease) alive.
func (m *Manager) Apply(ctx context.Context, v *controller.View) error {
	snap := &snapshot{version: v.Version, parts: map[tp]partView{}, nodes: map[int32]nodeAddr{}}
	for name, t := range v.Topics {
		var cfg map[string]string
		for _, p := range t.Partitions {
			if !isReplica(p, m.opts.LocalID) {
				continue
			}
			if cfg == nil {
				cfg = controller.EffectiveTopicConfig(t.Configs, v.BrokerConfigs)
			}
			minISR, err := intConfig(cfg, topicconfig.MinInsyncReplicas, 1)
			if err != nil {
				m.rlog.Log(m.log, slog.LevelWarn, "config:"+name, "bad topic config; using the default", "topic", name, "err", err)
			}
			lagMs, err := lagTimeMaxMs(t.Configs, v.BrokerConfigs)
			if err != nil {
				m.rlog.Log(m.log, slog.LevelWarn, "config:"+name, "bad topic config; using the default", "topic", name, "err", err)
			}
			info := p
			info.Replicas = slices.Clone(p.Replicas)
			info.ISR = slices.Clone(p.ISR)
			info.TargetReplicas = nil
			snap.parts[tp{name, p.Partition}] = partView{topicID: t.ID, info: info, minISR: int(minISR),
				lagMax: time.Duration(lagMs) * time.Millisecond}
		}
	}
	for id, n := range v.Nodes {
		if n.Kind != controller.KindStore {
			continue
		}
		addr := n.Addresses["ring"]
		if addr == "" {
			addr = n.Ring.Address
		}
		snap.nodes[id] = nodeAddr{addr: addr, version: n.Ring.Version, live: n.Live && !n.ShuttingDown}
	}
	m.viewMu.Lock()
	m.next = snap
	m.viewMu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
	return nil
}

// isReplica reports whether store id holds a copy of p; a partition
// placed before replication existed lists no replicas and lives on its
// leader alone.
func isReplica(p controller.PartitionInfo, id int32) bool {
	if len(p.Replicas) == 0 {
		return p.Leader == id
	}
	return slices.Contains(p.Replicas, id)
}

// intConfig reads an integer config, def when absent or unreadable.
func intConfig(cfg map[string]string, name string, def int64) (int64, error) {
	n, ok, err := topicconfig.IntOf(cfg, name)
	if err != nil || !ok {
		return def, err
	}
	return n, nil
}

// lagTimeMaxMs reads replica.lag.time.max.ms from the topic's configs, then
// the broker's, as a raw key: it is a broker setting in Kafka, which the
// topic config registry may not list.
func lagTimeMaxMs(topic, broker map[string]string) (int64, error) {
	for _, cfg := range []map[string]string{topic, broker} {
		if s, ok := cfg[ReplicaLagTimeMaxConfig]; ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return DefaultReplicaLagTimeMax.Milliseconds(), fmt.Errorf("%s = %q is not a positive integer; using %d",
					ReplicaLagTimeMaxConfig, s, DefaultReplicaLagTimeMax.Milliseconds())
			}
			return n, nil
		}
	}
	return DefaultReplicaLagTimeMax.Milliseconds(), nil
}

// OnHeartbeat extends the store's leadership lease after a heartbeat the
// controller answered: sent is when it was sent, sessionTimeout how long
// the controller waits before it fences a silent store. The margin keeps
// the lease ending before the controller can have elected a successor,
// even with some clock drift between the two. The store agent calls it
// after Apply of the same reply; when that view is not applied yet, the
// renewal waits for it.
func (m *Manager) OnHeartbeat(sent time.Time, sessionTimeout time.Duration) {
	if sessionTimeout <= 0 {
		return
	}
	until := sent.Add(sessionTimeout - sessionTimeout/4)
	m.viewMu.Lock()
	if m.next != nil || m.applying {
		if until.After(m.lease) {
			m.lease = until
		}
		m.viewMu.Unlock()
		return
	}
	m.viewMu.Unlock()
	m.setLease(until)
}

// setLease gives the store its lease, saying so when the last one ran out
// first: meanwhile the store refused every produce and fetch of the
// partitions it leads (NOT_LEADER_OR_FOLLOWER).
func (m *Manager) setLease(until time.Time) {
	now := time.Now()
	for {
		prev := m.leaseUntil.Load()
		if until.UnixNano() <= prev {
			break
		}
		if m.leaseUntil.CompareAndSwap(prev, until.UnixNano()) {
			if prev != 0 && now.UnixNano() > prev && until.After(now) {
				m.rlog.Log(m.log, slog.LevelWarn, "lease", "the leadership lease ran out before its renewal; the store refused to lead meanwhile",
					"for", now.Sub(time.Unix(0, prev)).Round(time.Millisecond))
			}
			break
		}
	}
	m.opts.Store.SetLease(until)
}

// Run applies views and runs the fetchers and the ISR checks until ctx
// ends; it returns ctx's error once everything it started has stopped.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer func() {
		for id, f := range m.fetchers {
			f.stop()
			delete(m.fetchers, id)
		}
		wg.Wait()
		m.peersMu.Lock()
		for id, p := range m.peers {
			p.close()
			delete(m.peers, id)
		}
		m.peersMu.Unlock()
	}()
	tick := time.NewTicker(m.opts.ISRInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.kick:
			m.viewMu.Lock()
			snap := m.next
			m.next, m.applying = nil, snap != nil
			m.viewMu.Unlock()
			if snap != nil {
				m.reconcile(ctx, snap)
			}
			m.viewMu.Lock()
			lease := m.lease
			m.lease, m.applying = time.Time{}, false
			m.viewMu.Unlock()
			if !lease.IsZero() {
				m.setLease(lease)
			}
		case <-tick.C:
			m.retryDirty(ctx)
			m.checkISR(ctx, &wg)
		case r := <-m.alterDone:
			m.alterFinished(ctx, r)
		}
		m.startFetchers(ctx, &wg)
		m.updateMetrics()
	}
}

// part is one partition's replication state, owned by Run.
type part struct {
	key     tp
	topicID controller.TopicID
	// info is the controller's latest word on the partition: from a view,
	// or from an AlterPartition answer newer than the last view.
	info   controller.PartitionInfo
	minISR int
	lagMax time.Duration
	// have is the state the store last accepted; nil before.
	have *logstore.ReplicaState
	// leaderSince is when this store last became the leader: a follower
	// is not counted lagging for the time before.
	leaderSince time.Time
	// following is the leader whose fetcher holds the partition, 0 for
	// none, and the epoch it was handed with.
	following      int32
	followingEpoch int32
	// added are followers in the local ISR that the controller's is not
	// known to hold yet (KIP-497's maximal ISR), proposed at partition
	// epoch addedAt; addSent once the controller has answered the
	// proposal, after which only a newer partition epoch clears them.
	added   []int32
	addedAt int32
	addSent bool
	// altering is set while an AlterPartition is in flight.
	altering bool
}

// Fence makes every local partition a follower of no known leader until
// the first view arrives, so it refuses produce and consumer reads: a
// store restarted after the controller deposed it must not serve its old
// leadership (as a single copy, even) before it learns so. A cluster store
// calls it before its ring serves; the partitions the first view does not
// give the store go back to standalone then. Call it before Run.
func (m *Manager) Fence(ctx context.Context) error {
	infos, err := m.opts.Store.ListPartitions(ctx)
	if err != nil {
		return fmt.Errorf("fence local partitions: %w", err)
	}
	m.fenced = map[tp]bool{}
	for _, in := range infos {
		st := logstore.ReplicaState{Role: logstore.RoleFollower, LeaderEpoch: 0, Leader: controller.NoLeader, LocalID: m.opts.LocalID}
		if err := m.opts.Store.SetReplicaState(ctx, in.Topic, in.Partition, st); err != nil {
			return fmt.Errorf("fence %s/%d: %w", in.Topic, in.Partition, err)
		}
		m.fenced[tp{in.Topic, in.Partition}] = true
	}
	return nil
}

// unfence gives back their single-copy role to the fenced partitions the
// first view does not give this store (data from before it joined a
// cluster, say).
func (m *Manager) unfence(ctx context.Context, snap *snapshot) {
	for k := range m.fenced {
		if _, ok := snap.parts[k]; ok {
			continue
		}
		if err := m.opts.Store.SetReplicaState(ctx, k.topic, k.partition, logstore.ReplicaState{Role: logstore.RoleStandalone}); err != nil &&
			!errors.Is(err, logstore.ErrUnknownPartition) {
			m.log.Warn("a local partition the controller does not give this store stays fenced", "topic", k.topic, "partition", k.partition, "err", err)
		}
	}
	m.fenced = nil
}

// reconcile brings the partitions and fetchers in line with a new view.
func (m *Manager) reconcile(ctx context.Context, snap *snapshot) {
	seq := m.seq.Add(1)
	if m.fenced != nil {
		m.unfence(ctx, snap)
	}
	m.updatePeers(snap.nodes)
	m.nodes = snap.nodes
	for k, p := range m.parts {
		if _, ok := snap.parts[k]; ok {
			continue
		}
		// No longer a replica here (or the topic is gone): stop following.
		// The store agent deletes the local copy; its role stays as it was
		// until then.
		m.roleMu.Lock()
		m.unfollowLocked(p)
		m.roleMu.Unlock()
		delete(m.parts, k)
		delete(m.dirty, k)
	}
	for k, pv := range snap.parts {
		p := m.parts[k]
		if p == nil || p.topicID != pv.topicID {
			if p != nil {
				m.roleMu.Lock()
				m.unfollowLocked(p)
				m.roleMu.Unlock()
			}
			p = &part{key: k, topicID: pv.topicID, info: controller.PartitionInfo{PartitionEpoch: -1}}
			m.parts[k] = p
		}
		p.minISR, p.lagMax = max(pv.minISR, 1), pv.lagMax
		if newer(pv.info, p.info) {
			p.info = pv.info
		}
		if p.info.PartitionEpoch != p.addedAt {
			p.added, p.addSent = nil, false
		}
		m.applyPart(ctx, p)
	}
	for _, f := range m.fetchers {
		f.resume(seq)
	}
}

// newer reports whether a is a later state of the partition than b.
func newer(a, b controller.PartitionInfo) bool {
	if a.LeaderEpoch != b.LeaderEpoch {
		return a.LeaderEpoch > b.LeaderEpoch
	}
	return a.PartitionEpoch >= b.PartitionEpoch
}

// retryDirty gives again the roles the store refused (a partition the
// store agent had not created yet, say).
func (m *Manager) retryDirty(ctx context.Context) {
	for k := range m.dirty {
		if p := m.parts[k]; p != nil {
			m.applyPart(ctx, p)
		} else {
			delete(m.dirty, k)
		}
	}
}

// wantState is the role the view gives p.
func (m *Manager) wantState(p *part) logstore.ReplicaState {
	info := p.info
	replicas := info.Replicas
	if len(replicas) == 0 && info.Leader >= 0 {
		replicas = []int32{info.Leader}
	}
	isr := info.ISR
	if len(isr) == 0 && info.Leader >= 0 {
		isr = []int32{info.Leader}
	}
	st := logstore.ReplicaState{
		Role:        logstore.RoleFollower,
		LeaderEpoch: max(info.LeaderEpoch, 0), // -1 while unplaced; the log takes no negative epoch
		Leader:      info.Leader,
		LocalID:     m.opts.LocalID,
		Replicas:    slices.Clone(replicas),
		ISR:         slices.Clone(isr),
		MinISR:      p.minISR,
	}
	if info.Leader == m.opts.LocalID {
		st.Role = logstore.RoleLeader
		for _, id := range p.added {
			if !slices.Contains(st.ISR, id) {
				st.ISR = append(st.ISR, id)
			}
		}
	}
	return st
}

func sameState(a, b logstore.ReplicaState) bool {
	return a.Role == b.Role && a.LeaderEpoch == b.LeaderEpoch && a.Leader == b.Leader && a.LocalID == b.LocalID &&
		a.MinISR == b.MinISR && slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR)
}

// applyPart gives the store p's role when it changed, and moves p to the
// fetcher of its leader.
func (m *Manager) applyPart(ctx context.Context, p *part) {
	want := m.wantState(p)
	if p.have != nil && sameState(*p.have, want) {
		delete(m.dirty, p.key)
		return
	}
	m.roleMu.Lock()
	defer m.roleMu.Unlock()
	if p.following != 0 && (want.Role != logstore.RoleFollower || want.Leader != p.following || want.LeaderEpoch != p.followingEpoch) {
		m.unfollowLocked(p)
	}
	if err := m.opts.Store.SetReplicaState(ctx, p.key.topic, p.key.partition, want); err != nil {
		if ctx.Err() == nil {
			m.rlog.Log(m.log, slog.LevelWarn, "role:"+p.key.String(), "the store refused a partition's role; retrying",
				"topic", p.key.topic, "partition", p.key.partition, "role", want.Role, "leader_epoch", want.LeaderEpoch, "err", err)
		}
		p.have = nil
		m.dirty[p.key] = true
		return
	}
	delete(m.dirty, p.key)
	if want.Role == logstore.RoleLeader && (p.have == nil || p.have.Role != logstore.RoleLeader || p.have.LeaderEpoch != want.LeaderEpoch) {
		p.leaderSince = time.Now()
		m.log.Info("leading partition", "topic", p.key.topic, "partition", p.key.partition,
			"leader_epoch", want.LeaderEpoch, "isr", want.ISR, "replicas", want.Replicas)
	}
	if want.Role == logstore.RoleFollower && (p.have == nil || p.have.Role != logstore.RoleFollower || p.have.LeaderEpoch != want.LeaderEpoch) {
		m.log.Info("following partition", "topic", p.key.topic, "partition", p.key.partition,
			"leader", want.Leader, "leader_epoch", want.LeaderEpoch)
	}
	p.have = &want
	if want.Role == logstore.RoleFollower && want.Leader > 0 && p.following == 0 {
		f := m.fetchers[want.Leader]
		if f == nil {
			f = newFetcher(m, want.Leader)
			m.fetchers[want.Leader] = f
		}
		f.add(p.key, want.LeaderEpoch)
		p.following, p.followingEpoch = want.Leader, want.LeaderEpoch
	}
}

// unfollowLocked takes p off its fetcher; roleMu is held.
func (m *Manager) unfollowLocked(p *part) {
	if p.following == 0 {
		return
	}
	if f := m.fetchers[p.following]; f != nil {
		f.remove(p.key)
	}
	p.following, p.followingEpoch = 0, 0
}

// startFetchers starts the fetchers that have partitions and stops those
// left with none.
func (m *Manager) startFetchers(ctx context.Context, wg *sync.WaitGroup) {
	for id, f := range m.fetchers {
		switch n := f.size(); {
		case n == 0:
			f.stop()
			delete(m.fetchers, id)
		case !f.started:
			f.start(ctx, wg)
		}
	}
}
