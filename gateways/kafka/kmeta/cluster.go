package kmeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Options configure a Cluster. API is required.
type Options struct {
	// API reaches the controller.
	API controller.API
	// Backend, when set, is the one ring the gateway serves from (serve's
	// in-process store, or gateway.ring_addr's single store): every
	// partition goes to it. Nil routes each partition to the store that
	// leads it, through a Router the Cluster keeps over every live store
	// (see Cluster.Backend).
	Backend ring.Backend
	// Dial opens a ring client to a store for the Router; nil means
	// ring.Dial. Unused with Backend set.
	Dial DialFunc
	// LeaderWait is the Router's (RouterOptions.LeaderWait).
	LeaderWait time.Duration
	// NodeID is this gateway's node id; Addr its advertised Kafka address.
	NodeID int32
	Addr   string
	// PartitionConfig maps a topic's effective configs (Kafka names) onto
	// the store's; nil gives every partition the store's defaults.
	PartitionConfig func(cfg map[string]string) (ring.PartitionConfig, error)
	// ReadyTimeout bounds how long a read waits for the first metadata,
	// so a client request does not hang on an unreachable controller;
	// default 10s.
	ReadyTimeout time.Duration
	// SettleTimeout bounds how long a create or delete waits for the
	// store to hold (or drop) the partitions; default 10s.
	SettleTimeout time.Duration
	Logger        *slog.Logger
}

// Cluster is kafka.Cluster over the controller.
//
// The gateway registers with the controller as a gateway node (its Kafka
// address under "kafka") and heartbeats (Run); each reply's view becomes a
// new snapshot, which serves every read without a round trip or a lock. A
// write goes to the controller and, once applied, the written topic is
// re-read (Metadata) into an overlay and a new snapshot is published, so
// the writer's next read sees it before the next heartbeat does; overlay
// entries give way to the heartbeat view once its version reaches theirs.
//
// Partitions: the controller places them and each store's StoreAgent
// creates them on its next heartbeat (the leader's and the followers').
// So that a topic is usable when CreateTopics answers, and while a single
// store is live (serve, or one store and its gateways), the Cluster also
// creates the new partitions on it at once, with the configs the agent
// would use; the agent finds them there. With several stores it waits
// (bounded) for the agents instead, asking each partition's leader. A
// deletion waits (bounded) until the stores that held the partitions have
// dropped them, so that a topic deleted and created again never shows old
// records.
type Cluster struct {
	opts    Options
	log     *slog.Logger
	snap    atomic.Pointer[kafka.Metadata]
	ready   chan struct{} // closed once snap is set
	router  *Router       // nil with Options.Backend
	backend ring.Backend  // Options.Backend, or router

	// mu serializes the builders of snapshots (heartbeats and writes);
	// readers never take it.
	mu struct {
		sync.Mutex
		version       uint64
		clusterID     string
		topics        map[string]viewTopic // the heartbeat view, converted
		nodes         map[int32]controller.NodeInfo
		brokerConfigs map[string]string
		overlay       map[string]overlayTopic
	}
}

// viewTopic is a topic of the heartbeat view and the controller version it
// was converted from.
type viewTopic struct {
	t       *kafka.Topic
	version uint64
}

// overlayTopic is a topic as a write left it: t nil for deleted.
type overlayTopic struct {
	t       *kafka.Topic
	version uint64
}

var _ kafka.Cluster = (*Cluster)(nil)

// New returns a Cluster that has no metadata until Run has heard from the
// controller.
func New(opts Options) *Cluster {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	if opts.SettleTimeout <= 0 {
		opts.SettleTimeout = 10 * time.Second
	}
	c := &Cluster{opts: opts, log: opts.Logger.With("component", "kafka-cluster"), ready: make(chan struct{})}
	c.backend = opts.Backend
	if c.backend == nil {
		c.router = NewRouter(RouterOptions{Dial: opts.Dial, LeaderWait: opts.LeaderWait, Logger: opts.Logger})
		c.backend = c.router
	}
	c.mu.topics = map[string]viewTopic{}
	c.mu.nodes = map[int32]controller.NodeInfo{}
	c.mu.overlay = map[string]overlayTopic{}
	return c
}

// Backend is the ring the gateway serves from: Options.Backend, or the
// Router over every store, which the caller closes once the gateway has
// stopped.
func (c *Cluster) Backend() ring.Backend { return c.backend }

// Run keeps the gateway registered with the controller, and the snapshot
// current, until ctx ends. It returns ctx's error.
func (c *Cluster) Run(ctx context.Context) error {
	return controller.RunMember(ctx, c.opts.API, controller.MemberOptions{
		Registration: controller.RegisterNodeRequest{
			ID: c.opts.NodeID, Kind: controller.KindGateway, Addresses: map[string]string{"kafka": c.opts.Addr},
		},
		OnDelta: c.onDelta,
		Logger:  c.log,
	})
}

func (c *Cluster) onDelta(_ context.Context, v *controller.View, _ controller.Delta) error {
	c.apply(v)
	return nil
}

// apply makes v the heartbeat view and publishes a snapshot of it.
func (c *Cluster) apply(v *controller.View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := make(map[string]viewTopic, len(v.Topics))
	for name, ti := range v.Topics {
		topics[name] = reuse(c.mu.topics[name], ti)
	}
	nodes := make(map[int32]controller.NodeInfo, len(v.Nodes))
	for k, n := range v.Nodes {
		nodes[k] = n
	}
	bc := make(map[string]string, len(v.BrokerConfigs))
	for k, val := range v.BrokerConfigs {
		bc[k] = val
	}
	c.mu.version, c.mu.clusterID = v.Version, v.ClusterID
	c.mu.topics, c.mu.nodes, c.mu.brokerConfigs = topics, nodes, bc
	for name, o := range c.mu.overlay {
		if o.version <= v.Version {
			delete(c.mu.overlay, name)
		}
	}
	c.publishLocked()
}

// reuse converts ti, or returns old when it is ti unchanged (the
// controller moves a topic's version on every change to it), so that a
// heartbeat copies no topic that did not move.
func reuse(old viewTopic, ti controller.TopicInfo) viewTopic {
	if old.t != nil && old.t.ID == ti.ID && old.version == ti.Version && old.t.Partitions == int32(len(ti.Partitions)) {
		return old
	}
	return viewTopic{t: toKafkaTopic(ti), version: ti.Version}
}

// publishLocked builds a snapshot of the view with the overlay on top and
// swaps it in.
func (c *Cluster) publishLocked() {
	topics := make([]*kafka.Topic, 0, len(c.mu.topics)+len(c.mu.overlay))
	for name, vt := range c.mu.topics {
		if _, ok := c.mu.overlay[name]; !ok {
			topics = append(topics, vt.t)
		}
	}
	for _, o := range c.mu.overlay {
		if o.t != nil {
			topics = append(topics, o.t)
		}
	}
	var brokers []kafka.Broker
	ctl := c.opts.NodeID
	for _, n := range c.mu.nodes {
		if n.Kind != controller.KindGateway || !n.Live {
			continue
		}
		b, ok := broker(n)
		if !ok {
			continue
		}
		brokers = append(brokers, b)
		// Kafka clients send admin requests to "the controller", which
		// must be a broker they can reach, and every gateway serves them:
		// name the live gateway with the lowest id.
		ctl = min(ctl, n.ID)
	}
	version := c.mu.version
	for _, o := range c.mu.overlay {
		version = max(version, o.version)
	}
	first := c.snap.Load() == nil
	md := kafka.NewMetadata(kafka.MetadataSource{
		Version: version, ClusterID: c.mu.clusterID, ControllerID: ctl, Brokers: brokers, Topics: topics,
	})
	// The router switches to the snapshot the gateway answers from in the
	// same step, so Metadata never names a leader the router does not
	// route to.
	if c.router != nil {
		c.router.Update(md, c.storesLocked())
	}
	c.snap.Store(md)
	if first {
		close(c.ready)
	}
}

// storesLocked lists the live stores and their rings.
func (c *Cluster) storesLocked() []StoreRing {
	var out []StoreRing
	for _, n := range c.mu.nodes {
		if n.Kind != controller.KindStore || !n.Live {
			continue
		}
		addr := n.Ring.Address
		if addr == "" {
			addr = n.Addresses["ring"]
		}
		if addr == "" {
			continue
		}
		out = append(out, StoreRing{ID: n.ID, Addr: addr, Version: n.Ring.Version})
	}
	return out
}

// broker is a gateway node as Kafka clients see it; ok is false when its
// Kafka address does not parse.
func broker(n controller.NodeInfo) (kafka.Broker, bool) {
	host, port, err := net.SplitHostPort(n.Addresses["kafka"])
	if err != nil {
		return kafka.Broker{}, false
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return kafka.Broker{}, false
	}
	return kafka.Broker{NodeID: n.ID, Host: host, Port: int32(p)}, true
}

func toKafkaTopic(ti controller.TopicInfo) *kafka.Topic {
	t := &kafka.Topic{
		Name: ti.Name, ID: ti.ID, Partitions: int32(len(ti.Partitions)), ReplicationFactor: ti.ReplicationFactor,
		Internal: kafka.IsInternalTopic(ti.Name), Configs: make(map[string]string, len(ti.Configs)),
		Parts: make([]kafka.PartitionMeta, len(ti.Partitions)),
	}
	for k, v := range ti.Configs {
		t.Configs[k] = v
	}
	for i := range t.Parts {
		t.Parts[i] = kafka.PartitionMeta{Leader: kafka.NoLeader}
	}
	for _, p := range ti.Partitions {
		if p.Partition >= 0 && int(p.Partition) < len(t.Parts) {
			leader := p.Leader
			if leader == controller.NoLeader {
				leader = kafka.NoLeader
			}
			var replicas []int32
			if len(p.Replicas) > 0 {
				replicas = slices.Clone(p.Replicas)
			}
			t.Parts[p.Partition] = kafka.PartitionMeta{Leader: leader, LeaderEpoch: max(p.LeaderEpoch, 0), Replicas: replicas}
		}
	}
	return t
}

// Metadata returns the current snapshot, waiting (at most ReadyTimeout)
// for the first one.
func (c *Cluster) Metadata(ctx context.Context) (*kafka.Metadata, error) {
	if m := c.snap.Load(); m != nil {
		return m, nil
	}
	t := time.NewTimer(c.opts.ReadyTimeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return c.snap.Load(), nil
	case <-t.C:
		return nil, fmt.Errorf("%w: no metadata from the controller yet", kafka.ErrUnavailable)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: no metadata from the controller yet: %w", kafka.ErrUnavailable, ctx.Err())
	}
}

// ClusterID is "" until the first metadata has arrived.
func (c *Cluster) ClusterID() string {
	if m := c.snap.Load(); m != nil {
		return m.ClusterID()
	}
	return ""
}

// ControllerID names the live gateway with the lowest id (this one until
// the first metadata has arrived).
func (c *Cluster) ControllerID() int32 {
	if m := c.snap.Load(); m != nil {
		return m.ControllerID()
	}
	return c.opts.NodeID
}

func (c *Cluster) Brokers(ctx context.Context) ([]kafka.Broker, error) {
	m, err := c.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	return append([]kafka.Broker(nil), m.Brokers()...), nil
}

func (c *Cluster) Topics(ctx context.Context) ([]kafka.Topic, error) {
	m, err := c.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]kafka.Topic, len(m.Topics()))
	for i, t := range m.Topics() {
		out[i] = *t
	}
	return out, nil
}

func (c *Cluster) Topic(ctx context.Context, name string) (kafka.Topic, error) {
	m, err := c.Metadata(ctx)
	if err != nil {
		return kafka.Topic{}, err
	}
	if t, ok := m.Topic(name); ok {
		return *t, nil
	}
	return kafka.Topic{}, fmt.Errorf("%w: %s", kafka.ErrUnknownTopic, name)
}

func (c *Cluster) TopicByID(ctx context.Context, id [16]byte) (kafka.Topic, error) {
	m, err := c.Metadata(ctx)
	if err != nil {
		return kafka.Topic{}, err
	}
	if t, ok := m.TopicByID(id); ok {
		return *t, nil
	}
	return kafka.Topic{}, kafka.ErrUnknownTopicID
}

// current finds a topic in the current snapshot, if there is one.
func (c *Cluster) current(name string) (*kafka.Topic, bool) {
	if m := c.snap.Load(); m != nil {
		return m.Topic(name)
	}
	return nil, false
}

// refresh re-reads one topic from the controller into the overlay,
// publishes a snapshot with it, and returns it (ok false: it does not
// exist).
func (c *Cluster) refresh(ctx context.Context, name string) (controller.TopicInfo, bool, error) {
	resp, err := c.opts.API.Metadata(ctx, controller.MetadataRequest{Topics: []string{name}})
	if err != nil {
		return controller.TopicInfo{}, false, clusterErr(err)
	}
	var (
		ti    controller.TopicInfo
		found bool
	)
	for i := range resp.Topics {
		if resp.Topics[i].Name == name {
			ti, found = resp.Topics[i], true
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.Version > c.mu.version && resp.Version >= c.mu.overlay[name].version {
		o := overlayTopic{version: resp.Version}
		if found {
			o.t = toKafkaTopic(ti)
		}
		c.mu.overlay[name] = o
		c.publishLocked()
	}
	return ti, found, nil
}

func (c *Cluster) CreateTopic(ctx context.Context, req kafka.CreateTopic) (kafka.Topic, error) {
	cfgs := map[string]string{}
	for k, v := range req.Configs {
		if v != nil {
			cfgs[k] = *v
		}
	}
	resp, err := c.opts.API.CreateTopics(ctx, controller.CreateTopicsRequest{
		Topics:       []controller.NewTopic{{Name: req.Name, Partitions: req.Partitions, ReplicationFactor: req.ReplicationFactor, Configs: cfgs}},
		ValidateOnly: req.ValidateOnly,
	})
	if err == nil && len(resp.Topics) == 1 {
		err = resp.Topics[0].Err()
	}
	if err != nil {
		return kafka.Topic{}, clusterErr(err)
	}
	r := resp.Topics[0]
	if req.ValidateOnly {
		return kafka.Topic{Name: req.Name, ID: r.ID, Partitions: int32(len(r.Partitions)), ReplicationFactor: r.ReplicationFactor,
			Internal: kafka.IsInternalTopic(req.Name), Configs: cfgs}, nil
	}
	ti, ok, err := c.refresh(ctx, req.Name)
	if err != nil {
		return kafka.Topic{}, err
	}
	if !ok {
		return kafka.Topic{}, fmt.Errorf("%w: topic %s vanished after its creation", kafka.ErrUnavailable, req.Name)
	}
	c.ensurePartitions(ctx, ti, 0)
	return *toKafkaTopic(ti), nil
}

func (c *Cluster) DeleteTopic(ctx context.Context, name string) error {
	old, had := c.current(name)
	resp, err := c.opts.API.DeleteTopics(ctx, controller.DeleteTopicsRequest{Topics: []controller.TopicRef{{Name: name}}})
	if err == nil && len(resp.Topics) == 1 {
		err = resp.Topics[0].Err()
	}
	if err != nil {
		return clusterErr(err)
	}
	if _, _, err := c.refresh(ctx, name); err != nil {
		return err
	}
	if had {
		c.awaitDeleted(ctx, old)
	}
	return nil
}

func (c *Cluster) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	var from int32
	if old, ok := c.current(name); ok {
		from = old.Partitions
	}
	resp, err := c.opts.API.CreatePartitions(ctx, controller.CreatePartitionsRequest{
		Topics: []controller.PartitionCount{{Name: name, Count: count}}, ValidateOnly: validateOnly,
	})
	if err == nil && len(resp.Topics) == 1 {
		err = resp.Topics[0].Err()
	}
	if err != nil || validateOnly {
		return clusterErr(err)
	}
	ti, ok, err := c.refresh(ctx, name)
	if err != nil || !ok {
		return err
	}
	c.ensurePartitions(ctx, ti, from)
	return nil
}

// singleStore reports whether exactly one store is live: then the ring
// this gateway holds reaches every partition.
func (c *Cluster) singleStore() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, node := range c.mu.nodes {
		if node.Kind == controller.KindStore && node.Live {
			n++
		}
	}
	return n == 1
}

// ensurePartitions makes the partitions of ti from `from` on exist before
// a create returns (see the type's comment).
func (c *Cluster) ensurePartitions(ctx context.Context, ti controller.TopicInfo, from int32) {
	if c.singleStore() {
		c.mu.Lock()
		cfg := controller.EffectiveTopicConfig(ti.Configs, c.mu.brokerConfigs)
		c.mu.Unlock()
		var pc ring.PartitionConfig
		if c.opts.PartitionConfig != nil {
			var err error
			if pc, err = c.opts.PartitionConfig(cfg); err != nil {
				c.log.Warn("topic configs", "topic", ti.Name, "err", err)
			}
		}
		for _, p := range ti.Partitions {
			if p.Partition < from || p.Leader == controller.NoLeader {
				continue
			}
			err := c.backend.CreatePartition(ctx, ti.Name, p.Partition, pc)
			if err != nil && !errors.Is(err, ring.ErrPartitionExists) {
				c.log.Warn("creating partition", "topic", ti.Name, "partition", p.Partition, "err", err)
			}
		}
	}
	c.awaitPartitions(ctx, ti.Name, int32(len(ti.Partitions)), true)
}

// awaitPartitions waits, at most SettleTimeout, until partitions [0, n) of
// topic exist on the stores that lead them.
func (c *Cluster) awaitPartitions(ctx context.Context, topic string, n int32, exist bool) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.SettleTimeout)
	defer cancel()
	for p := int32(0); p < n; p++ {
		if !c.await(ctx, c.backend, topic, p, exist) {
			return
		}
	}
}

// awaitDeleted waits, at most SettleTimeout, until every store that held
// a partition of the deleted topic t has dropped it. With a single ring
// that is the one store; with the router, each partition's leader and
// replicas that are live (a store that is down drops them when its agent
// catches up, before it serves again).
func (c *Cluster) awaitDeleted(ctx context.Context, t *kafka.Topic) {
	if c.router == nil {
		c.awaitPartitions(ctx, t.Name, t.Partitions, false)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.SettleTimeout)
	defer cancel()
	for p := int32(0); p < t.Partitions; p++ {
		pm := t.Partition(p)
		for _, id := range append([]int32{pm.Leader}, pm.Replicas...) {
			b, err := c.router.on(ctx, id)
			if err != nil {
				continue // not live, or no leader
			}
			if !c.await(ctx, b, t.Name, p, false) {
				return
			}
		}
	}
}

// await polls b until topic/partition exists (or is gone); false when ctx
// ended first.
func (c *Cluster) await(ctx context.Context, b ring.Backend, topic string, p int32, exist bool) bool {
	for {
		_, err := b.DescribePartition(ctx, topic, p)
		if (err == nil) == exist && (exist || errors.Is(err, ring.ErrUnknownPartition)) {
			return true
		}
		select {
		case <-ctx.Done():
			c.log.Warn("partitions not settled on the stores yet", "topic", topic, "partition", p, "want_exist", exist, "err", err)
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
