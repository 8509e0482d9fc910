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
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
)

// memCluster is a single-node Cluster for the tests: topics in memory,
// partitions created on the backend. It knows a few configs, enough to
// exercise the config keys.
type memCluster struct {
	backend ring.Backend
	mu      struct {
		sync.Mutex
		topics  map[string]*Topic
		broker  map[string]string
		brokers []Broker
	}
}

var _ Cluster = (*memCluster)(nil)

var memConfigs = []struct {
	name, def string
	typ       ConfigType
}{
	{"cleanup.policy", "delete", ConfigTypeList},
	{"max.message.bytes", "1048588", ConfigTypeInt},
	{"retention.bytes", "-1", ConfigTypeLong},
	{"retention.ms", "604800000", ConfigTypeLong},
	{"segment.bytes", "134217728", ConfigTypeInt},
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

func (c *memCluster) checkConfigs(set map[string]*string) error {
	for k, v := range set {
		known := false
		for _, mc := range memConfigs {
			known = known || mc.name == k
		}
		if !known {
			return fmt.Errorf("%w: unknown config %q", ErrInvalidConfig, k)
		}
		if v != nil && k != "cleanup.policy" {
			if _, err := strconv.ParseInt(*v, 10, 64); err != nil {
				return fmt.Errorf("%w: %s=%q is not a number", ErrInvalidConfig, k, *v)
			}
		}
	}
	return nil
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
	if err := c.checkConfigs(req.Configs); err != nil {
		return Topic{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.topics[req.Name] != nil {
		return Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, req.Name)
	}
	t := &Topic{Name: req.Name, Partitions: req.Partitions, ReplicationFactor: 1, Internal: req.Internal, Configs: map[string]string{}}
	_, _ = rand.Read(t.ID[:])
	for k, v := range req.Configs {
		if v != nil {
			t.Configs[k] = *v
		}
	}
	if req.ValidateOnly {
		return *t, nil
	}
	for p := int32(0); p < t.Partitions; p++ {
		if err := c.backend.CreatePartition(ctx, t.Name, p, ring.PartitionConfig{MaxMessageBytes: 10 << 20}); err != nil {
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
		if err := c.backend.CreatePartition(ctx, name, p, ring.PartitionConfig{}); err != nil {
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
	for _, mc := range memConfigs {
		def := mc.def
		e := ConfigEntry{Name: mc.name, Value: &def, Source: ConfigSourceDefault, Type: mc.typ, Default: &def, Doc: "the " + mc.name}
		if v, ok := set[mc.name]; ok {
			v := v
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

func (c *memCluster) AlterConfigs(_ context.Context, res ConfigResource, set map[string]*string, validateOnly bool) error {
	if err := c.checkConfigs(set); err != nil {
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
	for k, v := range set {
		if v != nil {
			cur[k] = *v
		}
	}
	return nil
}

func (c *memCluster) IncrementalAlterConfigs(_ context.Context, res ConfigResource, ops []ConfigOp, validateOnly bool) error {
	set := map[string]*string{}
	for _, op := range ops {
		set[op.Name] = op.Value
	}
	if err := c.checkConfigs(set); err != nil {
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
			cur[op.Name] = *op.Value
		case ConfigOpDelete:
			delete(cur, op.Name)
		default:
			return fmt.Errorf("%w: op %d on %s", ErrInvalidConfig, op.Op, op.Name)
		}
	}
	return nil
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
