package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemberOptions configure RunMember.
type MemberOptions struct {
	// Registration says who the node is; KnownVersion is ignored.
	Registration RegisterNodeRequest
	// OnDelta is called, from RunMember's goroutine, after each change has
	// been folded into the view (and once after registration). An error is
	// logged, and OnDelta is called again after the next heartbeat even if
	// nothing changed, so that it can retry.
	OnDelta func(ctx context.Context, v *View, d Delta) error
	// ClashTimeout is how long registration may be refused with
	// ErrNodeIDInUse before RunMember gives up and returns the error; it
	// lets a node restarted at other addresses wait out its old session.
	// Default 2 * DefaultSessionTimeout.
	ClashTimeout time.Duration
	// OnHeartbeat, when set, is called after every successful registration
	// or heartbeat with the time the request was sent (plus how long the
	// controller held a long poll after first renewing the session,
	// HeartbeatResponse.HeldMs) and the session timeout the controller
	// keeps: the controller cannot mark the node down before sent +
	// sessionTimeout, so a store may hold its leadership lease until a
	// little before then. It is called after OnDelta has been given the
	// reply's changes; while a slow OnDelta runs, RunMember keeps the
	// session alive with heartbeats that renew no lease (keepAlive).
	OnHeartbeat func(sent time.Time, sessionTimeout time.Duration)
	// Healthy, when set, is asked before each heartbeat: while it answers
	// an error the member stops heartbeating (logging why once), so the
	// controller fences it when its session runs out and moves its
	// leaderships elsewhere; a store whose disk failed does this.
	Healthy func() error
	// Stats, when set, is asked before each heartbeat for what the store
	// reports of its storage (HeartbeatRequest.Stats). It must answer at
	// once: a store computes the figures in the background.
	Stats  func() *StoreStats
	Logger *slog.Logger
}

// minPoll is the shortest time between two heartbeats of a member.
const minPoll = 20 * time.Millisecond

// RunMember keeps a store or gateway a member of the cluster until ctx
// ends: it registers, then heartbeats at the interval the controller asks
// for, keeping a View current from the replies. Heartbeats are long polls
// (HeartbeatRequest.WaitMs), so a change reaches the member as soon as it
// is committed. When the controller has
// forgotten the node (a leader that restored an older state), it registers
// again. It returns ctx's error, or an error wrapping ErrNodeIDInUse when
// another node holds this one's id for longer than ClashTimeout.
func RunMember(ctx context.Context, api Members, opts MemberOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.ClashTimeout <= 0 {
		opts.ClashTimeout = 2 * DefaultSessionTimeout
	}
	var clashSince time.Time
	reg := opts.Registration
	log = log.With("component", "member", "node", reg.ID, "kind", reg.Kind)
	var view View
	var applied uint64 // the version OnDelta last succeeded at
	interval := DefaultHeartbeatInterval
	registered := false
	retry := false
	failures := 0
	unhealthy := false
	for {
		if opts.Healthy != nil {
			if herr := opts.Healthy(); herr != nil {
				if !unhealthy {
					log.Error("stopped heartbeating: this node is unhealthy, so the controller fences it when its session runs out and moves its leaderships", "err", herr)
					unhealthy = true
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(interval):
				}
				continue
			}
			if unhealthy {
				log.Info("healthy again; heartbeating")
				unhealthy = false
			}
		}
		var resp HeartbeatResponse
		var err error
		sent := time.Now()
		if !registered {
			reg.KnownVersion, reg.AppliedVersion = view.Version, applied
			resp, err = api.RegisterNode(ctx, reg)
			switch {
			case err == nil:
				registered = true
				clashSince = time.Time{}
				log.Info("registered with the controller", "cluster_id", resp.Delta.ClusterID, "version", resp.Delta.Version)
			case errors.Is(err, ErrNodeIDInUse):
				if clashSince.IsZero() {
					clashSince = time.Now()
					log.Error("the controller refused this node's id", "err", err)
				}
				if time.Since(clashSince) >= opts.ClashTimeout {
					return fmt.Errorf("register %s %d: %w", reg.Kind, reg.ID, err)
				}
			}
		} else {
			hb := HeartbeatRequest{ID: reg.ID, KnownVersion: view.Version, AppliedVersion: applied, WaitMs: interval.Milliseconds()}
			if opts.Stats != nil {
				hb.Stats = opts.Stats()
			}
			resp, err = api.Heartbeat(ctx, hb)
			if errors.Is(err, ErrUnknownNode) {
				log.Warn("the controller does not know this node; registering again")
				registered = false
				continue
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A successful heartbeat was a long poll that waited up to the
		// interval itself; go again at once, but never spin faster than
		// minPoll.
		wait := max(minPoll-time.Since(sent), 0)
		if err != nil {
			wait = interval
			// Quiet through a start-up election; then one line, and one
			// more every 30 failures.
			failures++
			if (failures == 5 || failures%30 == 0) && !errors.Is(err, ErrNodeIDInUse) {
				log.Warn("controller unreachable", "err", err, "failures", failures)
			}
			if !registered {
				wait = registerRetry(failures, interval)
			}
		} else {
			if failures >= 5 {
				log.Info("controller reachable again", "after_failures", failures)
			}
			failures = 0
			if resp.HeartbeatIntervalMs > 0 {
				interval = time.Duration(resp.HeartbeatIntervalMs) * time.Millisecond
			}
			changed := !resp.Delta.Empty() || resp.Delta.Version != view.Version
			view.Apply(resp.Delta)
			if opts.OnDelta != nil && (changed || retry) {
				stop := keepAlive(ctx, api, reg.ID, view.Version, applied, interval)
				began := time.Now()
				err := opts.OnDelta(ctx, &view, resp.Delta)
				stop()
				if took := time.Since(began); took > interval {
					log.Info("applying metadata changes took longer than a heartbeat interval", "took", took.Round(time.Millisecond),
						"version", view.Version)
				}
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					log.Warn("applying metadata changes", "err", err)
					retry = true
				} else {
					retry = false
				}
			}
			// After OnDelta: a store fenced while it was away must take
			// the view that deposes it before its lease is renewed.
			if opts.OnHeartbeat != nil && resp.SessionTimeoutMs > 0 {
				// The session was renewed at the end of the long poll,
				// so the lease counts from there: from the sending, it
				// would leave the store only the session's quarter
				// minus a poll to heartbeat again in.
				opts.OnHeartbeat(sent.Add(time.Duration(resp.HeldMs)*time.Millisecond), time.Duration(resp.SessionTimeoutMs)*time.Millisecond)
			}
			if !retry {
				applied = view.Version
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// keepAlive heartbeats every interval, with no long poll and without
// taking the replies' changes, until stop is called: an OnDelta slower
// than the session (a store creating and deleting many partitions while
// its shards are busy) must not get the node fenced meanwhile, which would
// move its leaderships and make it count as a store short for placement.
// It renews no lease, since the changes being applied may depose the
// node.
func keepAlive(ctx context.Context, api Members, id int32, known, applied uint64, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, _ = api.Heartbeat(ctx, HeartbeatRequest{ID: id, KnownVersion: known, AppliedVersion: applied})
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// registerRetry is the wait before registering again after failures (>= 1)
// refusals in a row. The first retries come quickly because the usual
// refusal is from a controller still electing itself, often serve's own,
// which leads within milliseconds; later ones back off as before, so that
// a controller that stays away is neither hammered nor reported early.
func registerRetry(failures int, interval time.Duration) time.Duration {
	if failures <= 3 {
		return min(interval, minPoll<<max(failures-1, 0))
	}
	return min(interval, 50*time.Millisecond<<min(failures, 6))
}

// LocalPartition names a partition a store holds.
type LocalPartition struct {
	Topic     string
	Partition int32
}

// PartitionManager is the store as StoreAgent drives it. tools/ adapts
// logstore to it; the controller never imports the store.
type PartitionManager interface {
	// CreatePartition creates an empty partition with the topic's configs
	// (Kafka names; absent ones take the store's defaults). A partition that
	// exists already is not an error.
	CreatePartition(ctx context.Context, topic string, partition int32, cfg map[string]string) error
	// DeletePartition deletes a partition and its data.
	DeletePartition(ctx context.Context, topic string, partition int32) error
	// ListPartitions lists the partitions the store holds.
	ListPartitions(ctx context.Context) ([]LocalPartition, error)
}

// ConfigUpdater is implemented by a PartitionManager that can change the
// configs of an existing partition; the agent then applies a topic's
// config changes (AlterConfigs) to the partitions it holds.
type ConfigUpdater interface {
	UpdatePartitionConfig(ctx context.Context, topic string, partition int32, cfg map[string]string) error
}

// StoreAgentOptions configure a StoreAgent beyond what NewStoreAgent
// takes.
type StoreAgentOptions struct {
	Logger *slog.Logger
	// OnView, when set, is given the view after each reconcile (whether or
	// not every partition could be created or deleted), from Run's
	// goroutine: the store's replica manager takes leader and follower
	// roles, epochs and ISRs from it. It must not keep v, which changes
	// after it returns (v.Clone is a copy it may keep). An error is logged
	// and the view handed over again after the next heartbeat.
	OnView func(ctx context.Context, v *View) error
	// OnHeartbeat is MemberOptions.OnHeartbeat: the store renews its
	// leadership lease from it.
	OnHeartbeat func(sent time.Time, sessionTimeout time.Duration)
	// Healthy is MemberOptions.Healthy.
	Healthy func() error
	// Stats is MemberOptions.Stats.
	Stats func() *StoreStats
}

// StoreAgent makes a store do what placement says: it creates the
// partitions it holds a replica of, deletes those of deleted topics and
// those reassigned away from it, and hands each view to the replica
// manager. It does not touch a local partition the controller has no
// record of (data written before the store joined a controller, say),
// unless the controller remembers deleting that topic.
type StoreAgent struct {
	api  Members
	pm   PartitionManager
	reg  RegisterNodeRequest
	opts StoreAgentOptions
	base *slog.Logger // for RunMember, which adds its own attributes
	log  *slog.Logger

	// Owned by Run's goroutine.
	known   map[string]TopicID // topics this agent has seen, by name
	configs map[string]map[string]string
}

// NewStoreAgent returns an agent for the store described by reg (Kind
// must be KindStore).
func NewStoreAgent(api Members, pm PartitionManager, reg RegisterNodeRequest, log *slog.Logger) *StoreAgent {
	return NewStoreAgentWith(api, pm, reg, StoreAgentOptions{Logger: log})
}

// NewStoreAgentWith is NewStoreAgent with the hooks of a replicating
// store.
func NewStoreAgentWith(api Members, pm PartitionManager, reg RegisterNodeRequest, opts StoreAgentOptions) *StoreAgent {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	reg.Kind = KindStore
	return &StoreAgent{api: api, pm: pm, reg: reg, opts: opts, base: log, log: log.With("component", "store-agent", "node", reg.ID),
		known: map[string]TopicID{}, configs: map[string]map[string]string{}}
}

// Run registers the store and follows placement until ctx ends.
func (a *StoreAgent) Run(ctx context.Context) error {
	return RunMember(ctx, a.api, MemberOptions{Registration: a.reg, OnDelta: a.onDelta, OnHeartbeat: a.opts.OnHeartbeat,
		Healthy: a.opts.Healthy, Stats: a.opts.Stats, Logger: a.base})
}

// onDelta reconciles, then hands the view over.
func (a *StoreAgent) onDelta(ctx context.Context, v *View, d Delta) error {
	err := a.reconcile(ctx, v, d)
	if a.opts.OnView != nil {
		if verr := a.opts.OnView(ctx, v); verr != nil {
			err = errors.Join(err, fmt.Errorf("replica manager: %w", verr))
		}
	}
	return err
}

// holds reports whether store id holds a copy of p: it is one of its
// replicas (which, during a reassignment, include the new ones).
func holds(p PartitionInfo, id int32) bool {
	if len(p.Replicas) == 0 {
		return p.Leader == id // a partition from before replication
	}
	return slices.Contains(p.Replicas, id)
}

// reconcile brings the store in line with the view.
func (a *StoreAgent) reconcile(ctx context.Context, v *View, d Delta) error {
	local, err := a.pm.ListPartitions(ctx)
	if err != nil {
		return fmt.Errorf("list local partitions: %w", err)
	}
	have := map[string]map[int32]bool{}
	for _, p := range local {
		if have[p.Topic] == nil {
			have[p.Topic] = map[int32]bool{}
		}
		have[p.Topic][p.Partition] = true
	}
	tombstoned := map[string]bool{}
	for _, t := range d.DeletedTopics {
		tombstoned[t.Name] = true
	}
	var errs []error
	names := make([]string, 0, len(have))
	for name := range have {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cur, inView := v.Topics[name]
		knownID, had := a.known[name]
		var why string
		switch {
		case inView && had && cur.ID != knownID:
			why = "topic was deleted and created again"
		case !inView && (had || tombstoned[name]):
			why = "topic was deleted"
		case inView:
			a.deleteMoved(ctx, cur, have[name], &errs)
			continue
		default:
			continue
		}
		parts := slices.Collect(maps.Keys(have[name]))
		deleted := make([]bool, len(parts))
		errs = append(errs, inParallel(len(parts), func(i int) error {
			if err := a.pm.DeletePartition(ctx, name, parts[i]); err != nil {
				return fmt.Errorf("delete %s/%d: %w", name, parts[i], err)
			}
			deleted[i] = true
			a.log.Info("deleted partition", "topic", name, "partition", parts[i], "reason", why)
			return nil
		})...)
		for i, p := range parts {
			if deleted[i] {
				delete(have[name], p)
			}
		}
		if len(have[name]) == 0 {
			delete(a.known, name)
			delete(a.configs, name)
		}
	}
	for name := range a.known {
		if _, ok := v.Topics[name]; !ok && len(have[name]) == 0 {
			delete(a.known, name)
			delete(a.configs, name)
		}
	}

	names = names[:0]
	for name := range v.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	var creates []createJob
	cfgs := map[string]map[string]string{} // of the topics this store holds a replica of
	for _, name := range names {
		t := v.Topics[name]
		for _, p := range t.Partitions {
			if !holds(p, a.reg.ID) {
				continue
			}
			cfg, ok := cfgs[name]
			if !ok {
				cfg = EffectiveTopicConfig(t.Configs, v.BrokerConfigs)
				cfgs[name] = cfg
			}
			if !have[name][p.Partition] {
				creates = append(creates, createJob{topic: name, p: p, cfg: cfg})
			}
		}
	}
	errs = append(errs, inParallel(len(creates), func(i int) error {
		j := creates[i]
		if err := a.pm.CreatePartition(ctx, j.topic, j.p.Partition, j.cfg); err != nil {
			return fmt.Errorf("create %s/%d: %w", j.topic, j.p.Partition, err)
		}
		a.log.Info("created partition", "topic", j.topic, "partition", j.p.Partition, "leader_epoch", j.p.LeaderEpoch)
		return nil
	})...)
	for _, name := range names {
		t := v.Topics[name]
		cfg, mine := cfgs[name]
		if !mine {
			continue
		}
		if old, ok := a.configs[name]; ok && !mapsEqual(old, cfg) {
			if cu, ok := a.pm.(ConfigUpdater); ok {
				for _, p := range t.Partitions {
					if !holds(p, a.reg.ID) || !have[name][p.Partition] {
						continue
					}
					if err := cu.UpdatePartitionConfig(ctx, name, p.Partition, cfg); err != nil {
						errs = append(errs, fmt.Errorf("update configs of %s/%d: %w", name, p.Partition, err))
					}
				}
				a.log.Info("topic configs applied to local partitions", "topic", name)
			} else {
				a.log.Info("topic configs changed; partitions created from now on use them, existing ones keep theirs (this store cannot alter a partition's configs)", "topic", name)
			}
		}
		a.known[name] = t.ID
		a.configs[name] = cfg
	}
	return errors.Join(errs...)
}

// createJob is one partition for the store to create.
type createJob struct {
	topic string
	p     PartitionInfo
	cfg   map[string]string
}

// maxParallel bounds the partition creates or deletes in flight at once.
const maxParallel = 64

// inParallel runs f(0..n-1) side by side and returns their errors. The
// store's partition creates and deletes go so: a store makes the creates
// it has in hand durable with one sync, so a topic of many partitions
// costs a few syncs rather than one each, which kept the heartbeat loop
// (and the store's lease) waiting on a busy disk.
func inParallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// deleteMoved deletes the local copies of t's partitions that the store
// no longer holds a replica of: a reassignment or drain moved them away
// and has completed. A partition with no replicas yet (unplaced) or
// beyond the topic's count is left alone.
func (a *StoreAgent) deleteMoved(ctx context.Context, t TopicInfo, have map[int32]bool, errs *[]error) {
	for p := range have {
		if p < 0 || int(p) >= len(t.Partitions) {
			continue
		}
		pi := t.Partitions[p]
		if len(pi.Replicas) == 0 || holds(pi, a.reg.ID) {
			continue
		}
		if err := a.pm.DeletePartition(ctx, t.Name, p); err != nil {
			*errs = append(*errs, fmt.Errorf("delete %s/%d: %w", t.Name, p, err))
			continue
		}
		delete(have, p)
		a.log.Info("deleted partition", "topic", t.Name, "partition", p, "reason", "no longer a replica", "replicas", pi.Replicas)
	}
}
