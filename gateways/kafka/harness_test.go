package kafka

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/topicconfig"
)

// memCluster is a single-node Cluster for the tests: topics in memory,
// partitions created on the backend. Configs are the topicconfig
// registry's, and reach the store as a controller's store agent sends
// them (when setConfig is given).
type memCluster struct {
	backend ring.Backend
	// setConfig changes the config of a partition the store holds.
	setConfig func(ctx context.Context, topic string, partition int32, cfg logstore.PartitionConfig) error
	mu        struct {
		sync.Mutex
		topics  map[string]*Topic
		broker  map[string]string
		brokers []Broker
		// reassign holds the reassignments in progress; the fake's one
		// store is node 1, and nothing ever completes.
		reassign map[string]OngoingReassignment
	}
}

var _ Cluster = (*memCluster)(nil)

var memConfigTypes = map[topicconfig.Type]ConfigType{
	topicconfig.String: ConfigTypeString, topicconfig.Int: ConfigTypeInt, topicconfig.Long: ConfigTypeLong,
	topicconfig.Boolean: ConfigTypeBoolean, topicconfig.List: ConfigTypeList, topicconfig.Double: ConfigTypeDouble,
}

func newMemCluster(b ring.Backend) *memCluster {
	c := &memCluster{backend: b}
	c.mu.topics = map[string]*Topic{}
	c.mu.broker = map[string]string{}
	return c
}

func (c *memCluster) ClusterID() string   { return "test-cluster" }
func (c *memCluster) ControllerID() int32 { return 0 }
func (c *memCluster) Brokers(context.Context) ([]Broker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Broker(nil), c.mu.brokers...), nil
}

func (c *memCluster) Topics(context.Context) ([]Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Topic
	for _, t := range c.mu.topics {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *memCluster) Topic(_ context.Context, name string) (Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.mu.topics[name]; t != nil {
		return *t, nil
	}
	return Topic{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
}

func (c *memCluster) TopicByID(_ context.Context, id [16]byte) (Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.mu.topics {
		if t.ID == id {
			return *t, nil
		}
	}
	return Topic{}, ErrUnknownTopicID
}

// Metadata builds a snapshot of the fake's state on every call: a fake
// need not be fast, but a snapshot must not change once handed out, so the
// topics are copied.
func (c *memCluster) Metadata(context.Context) (*Metadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	topics := make([]*Topic, 0, len(c.mu.topics))
	for _, t := range c.mu.topics {
		cp := *t
		cp.Configs = maps.Clone(t.Configs)
		topics = append(topics, &cp)
	}
	return NewMetadata(MetadataSource{
		ClusterID: c.ClusterID(), ControllerID: c.ControllerID(), Brokers: c.mu.brokers, Topics: topics,
	}), nil
}

// checkConfigs validates a change (nil: delete) and returns the values
// normalized.
func (c *memCluster) checkConfigs(set map[string]*string, broker bool) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range set {
		if _, err := topicconfig.Find(k, broker); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if v != nil {
			n, err := topicconfig.CheckOne(k, *v, broker)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
			}
			out[k] = n
		}
	}
	return out, nil
}

// partitionConfig is what the store applies to t's partitions.
func (c *memCluster) partitionConfigLocked(t *Topic) ring.PartitionConfig {
	pc, err := logstore.PartitionConfigOf(topicconfig.Effective(t.Configs, c.mu.broker))
	if err != nil {
		panic(err) // validated above
	}
	return pc
}

// applyLocked sends the changed configs to the store, as the store agent
// does for a controller.
func (c *memCluster) applyLocked(ctx context.Context, ts ...*Topic) error {
	if c.setConfig == nil {
		return nil
	}
	for _, t := range ts {
		pc := c.partitionConfigLocked(t)
		for p := int32(0); p < t.Partitions; p++ {
			if err := c.setConfig(ctx, t.Name, p, pc); err != nil {
				return err
			}
		}
	}
	return nil
}

// changedLocked lists the topics a change of res touches.
func (c *memCluster) changedLocked(res ConfigResource) []*Topic {
	if res.Type == ConfigResourceTopic {
		return []*Topic{c.mu.topics[res.Name]}
	}
	var out []*Topic
	for _, t := range c.mu.topics {
		out = append(out, t)
	}
	return out
}

func (c *memCluster) CreateTopic(ctx context.Context, req CreateTopic) (Topic, error) {
	if err := ValidTopicName(req.Name); err != nil {
		return Topic{}, err
	}
	if req.Partitions < 1 {
		return Topic{}, fmt.Errorf("%w: %d partitions; want at least 1", ErrInvalidPartitions, req.Partitions)
	}
	if req.ReplicationFactor != 1 {
		return Topic{}, fmt.Errorf("%w: %d", ErrInvalidReplicationFactor, req.ReplicationFactor)
	}
	cfgs, err := c.checkConfigs(req.Configs, false)
	if err != nil {
		return Topic{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.topics[req.Name] != nil {
		return Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, req.Name)
	}
	t := &Topic{Name: req.Name, Partitions: req.Partitions, ReplicationFactor: 1, Internal: req.Internal, Configs: cfgs}
	_, _ = rand.Read(t.ID[:])
	if req.ValidateOnly {
		return *t, nil
	}
	for p := int32(0); p < t.Partitions; p++ {
		if err := c.backend.CreatePartition(ctx, t.Name, p, c.partitionConfigLocked(t)); err != nil {
			return Topic{}, err
		}
	}
	c.mu.topics[t.Name] = t
	return *t, nil
}

func (c *memCluster) DeleteTopic(ctx context.Context, name string) error {
	c.mu.Lock()
	t := c.mu.topics[name]
	delete(c.mu.topics, name)
	c.mu.Unlock()
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	for p := int32(0); p < t.Partitions; p++ {
		if err := c.backend.DeletePartition(ctx, name, p); err != nil {
			return err
		}
	}
	return nil
}

func (c *memCluster) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.mu.topics[name]
	if t == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if count <= t.Partitions {
		return fmt.Errorf("%w: topic has %d partitions", ErrInvalidPartitions, t.Partitions)
	}
	if validateOnly {
		return nil
	}
	for p := t.Partitions; p < count; p++ {
		if err := c.backend.CreatePartition(ctx, name, p, c.partitionConfigLocked(t)); err != nil {
			return err
		}
	}
	t.Partitions = count
	return nil
}

func (c *memCluster) DescribeConfigs(_ context.Context, res ConfigResource) ([]ConfigEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.mu.broker
	if res.Type == ConfigResourceTopic && res.Name != "" {
		t := c.mu.topics[res.Name]
		if t == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, res.Name)
		}
		set = t.Configs
	}
	var out []ConfigEntry
	for _, d := range topicconfig.Defs() {
		name := d.Name
		if res.Type == ConfigResourceBroker {
			if name = d.Broker; name == "" {
				continue
			}
		}
		def := d.Default
		e := ConfigEntry{Name: name, Value: &def, Source: ConfigSourceDefault, Type: memConfigTypes[d.Type], Default: &def, Doc: d.Doc}
		if v, ok := set[name]; ok {
			e.Value = &v
			e.Source = ConfigSourceDynamicTopic
			if res.Type == ConfigResourceBroker {
				e.Source = ConfigSourceDynamicDefaultBroker
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (c *memCluster) configsOf(res ConfigResource) (map[string]string, error) {
	if res.Type == ConfigResourceBroker {
		return c.mu.broker, nil
	}
	t := c.mu.topics[res.Name]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, res.Name)
	}
	return t.Configs, nil
}

func (c *memCluster) AlterConfigs(ctx context.Context, res ConfigResource, set map[string]*string, validateOnly bool) error {
	next, err := c.checkConfigs(set, res.Type == ConfigResourceBroker)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.configsOf(res)
	if err != nil || validateOnly {
		return err
	}
	for k := range cur {
		delete(cur, k)
	}
	for k, v := range next {
		cur[k] = v
	}
	return c.applyLocked(ctx, c.changedLocked(res)...)
}

func (c *memCluster) IncrementalAlterConfigs(ctx context.Context, res ConfigResource, ops []ConfigOp, validateOnly bool) error {
	set := map[string]*string{}
	for _, op := range ops {
		set[op.Name] = op.Value
	}
	norm, err := c.checkConfigs(set, res.Type == ConfigResourceBroker)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.configsOf(res)
	if err != nil || validateOnly {
		return err
	}
	for _, op := range ops {
		switch op.Op {
		case ConfigOpSet:
			cur[op.Name] = norm[op.Name]
		case ConfigOpDelete:
			delete(cur, op.Name)
		default:
			return fmt.Errorf("%w: op %d on %s", ErrInvalidConfig, op.Op, op.Name)
		}
	}
	return c.applyLocked(ctx, c.changedLocked(res)...)
}

func (c *memCluster) AlterPartitionReassignments(_ context.Context, rs []Reassignment) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.reassign == nil {
		c.mu.reassign = map[string]OngoingReassignment{}
	}
	errs := make([]error, len(rs))
	for i, r := range rs {
		key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
		switch _, ongoing := c.mu.reassign[key]; {
		case c.mu.topics[r.Topic] == nil:
			errs[i] = fmt.Errorf("%w: %s", ErrUnknownTopic, r.Topic)
		case r.Replicas == nil && !ongoing:
			errs[i] = fmt.Errorf("%w: %s/%d", kerr.NoReassignmentInProgress, r.Topic, r.Partition)
		case r.Replicas == nil:
			delete(c.mu.reassign, key)
		case len(r.Replicas) == 0:
			errs[i] = fmt.Errorf("%w: empty replica list", ErrInvalidReplicaAssignment)
		default:
			o := OngoingReassignment{Topic: r.Topic, Partition: r.Partition, Replicas: []int32{1}, Removing: []int32{1}}
			for _, id := range r.Replicas {
				if id == 1 {
					o.Removing = nil
					continue
				}
				o.Replicas = append(o.Replicas, id)
				o.Adding = append(o.Adding, id)
			}
			c.mu.reassign[key] = o
		}
	}
	return errs, nil
}

func (c *memCluster) ListPartitionReassignments(_ context.Context, parts []TopicPartitions) ([]OngoingReassignment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []OngoingReassignment
	for _, o := range c.mu.reassign {
		named := len(parts) == 0
		for _, p := range parts {
			named = named || p.Topic == o.Topic && slices.Contains(p.Partitions, o.Partition)
		}
		if named {
			out = append(out, o)
		}
	}
	return out, nil
}

// testEnv is a gateway over a real store, on a loopback port.
type testEnv struct {
	t       *testing.T
	dir     string
	store   *logstore.Store
	cat     *catalog.Catalog
	backend ring.Backend
	cluster *memCluster
	gw      *Gateway
	addr    string
	cancel  context.CancelFunc
	done    chan error
	// keepAddr: start listens on addr again after stopGateway.
	keepAddr bool
}

func quietLogger() *slog.Logger {
	if os.Getenv("KAFKA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestEnv opens a store in a temp dir and starts a gateway on it.
func newTestEnv(t *testing.T, tweak ...func(*Options)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir()}
	e.openStore()
	e.cluster = newMemCluster(e.backend)
	e.cluster.setConfig = func(ctx context.Context, topic string, p int32, cfg logstore.PartitionConfig) error {
		return e.store.SetPartitionConfig(ctx, topic, p, cfg)
	}
	e.start(tweak...)
	t.Cleanup(e.close)
	return e
}

func (e *testEnv) openStore() {
	cat, err := catalog.Open(filepath.Join(e.dir, "catalog"), catalog.Options{Logger: quietLogger()})
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := logstore.Open(logstore.Options{Dir: e.dir, Catalog: cat, Shards: 2, Logger: quietLogger()})
	if err != nil {
		cat.Close()
		e.t.Fatal(err)
	}
	e.cat, e.store, e.backend = cat, st, ring.NewInProcess(st)
}

func (e *testEnv) start(tweak ...func(*Options)) {
	listen := "127.0.0.1:0"
	if e.keepAddr && e.addr != "" {
		listen = e.addr // a restart where clients left running find it again
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		e.t.Fatal(err)
	}
	opts := Options{
		Backend: e.backend, Cluster: e.cluster, Logger: quietLogger(),
		AdvertisedAddr: ln.Addr().String(), AutoCreateTopics: true,
		OffsetsPartitions: 4,
	}
	for _, f := range tweak {
		f(&opts)
	}
	gw, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.gw, e.addr, e.cancel, e.done = gw, ln.Addr().String(), cancel, make(chan error, 1)
	go func() { e.done <- gw.Serve(ctx, ln) }()
}

// stopGateway stops the gateway only (the store stays open).
func (e *testEnv) stopGateway() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			e.t.Errorf("gateway Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.t.Fatal("gateway did not stop within 30s")
	}
	e.cancel = nil
}

func (e *testEnv) close() {
	e.stopGateway()
	e.backend.Close()
	e.store.Close()
	e.cat.Close()
}
