package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/logstore/ring"
)

// kafkaCluster is kafka.Cluster over the controller: the Kafka gateway's
// view of topics, configs and live gateways.
//
// The gateway registers with the controller as a gateway node (its Kafka
// address under "kafka") and heartbeats; each reply's delta is folded into
// a local copy of the metadata, which serves every read without a round
// trip. A write goes to the controller and, once applied, the written
// topic is re-read (Metadata) into an overlay, so the next read sees it
// before the next heartbeat does; overlay entries give way to the
// heartbeat view once its version reaches theirs.
//
// Partitions: the controller places them and each store's StoreAgent
// creates them on its next heartbeat. So that a topic is usable when
// CreateTopics answers, and while a single store is live (serve, or one
// store and its gateways), the gateway also creates the new partitions
// through the ring at once, with the configs the agent would use; the
// agent finds them there. With several stores the ring reaches only one of
// them, so the gateway waits (bounded) for the agents instead. A deletion
// waits (bounded) until the store has dropped the partitions, so that a
// topic deleted and created again never shows old records.
type kafkaCluster struct {
	api     controller.API
	backend ring.Backend
	nodeID  int32
	addr    string // this gateway's advertised Kafka address
	log     *slog.Logger

	ready     chan struct{} // closed at the first delta
	readyOnce sync.Once

	mu struct {
		sync.Mutex
		version       uint64
		clusterID     string
		topics        map[string]controller.TopicInfo
		nodes         map[int32]controller.NodeInfo
		brokerConfigs map[string]string
		overlay       map[string]overlayTopic
	}
}

// overlayTopic is a topic as a write left it: info nil for deleted.
type overlayTopic struct {
	info    *controller.TopicInfo
	version uint64
}

var _ kafka.Cluster = (*kafkaCluster)(nil)

func newKafkaCluster(api controller.API, backend ring.Backend, nodeID int32, addr string, log *slog.Logger) *kafkaCluster {
	c := &kafkaCluster{api: api, backend: backend, nodeID: nodeID, addr: addr, log: log.With("component", "kafka-cluster"), ready: make(chan struct{})}
	c.mu.topics = map[string]controller.TopicInfo{}
	c.mu.nodes = map[int32]controller.NodeInfo{}
	c.mu.overlay = map[string]overlayTopic{}
	return c
}

// run keeps the gateway registered until ctx ends.
func (c *kafkaCluster) run(ctx context.Context) error {
	return controller.RunMember(ctx, c.api, controller.MemberOptions{
		Registration: controller.RegisterNodeRequest{
			ID: c.nodeID, Kind: controller.KindGateway, Addresses: map[string]string{"kafka": c.addr},
		},
		OnDelta: c.onDelta,
		Logger:  c.log,
	})
}

func (c *kafkaCluster) onDelta(_ context.Context, v *controller.View, _ controller.Delta) error {
	topics := make(map[string]controller.TopicInfo, len(v.Topics))
	for k, t := range v.Topics {
		topics[k] = t
	}
	nodes := make(map[int32]controller.NodeInfo, len(v.Nodes))
	for k, n := range v.Nodes {
		nodes[k] = n
	}
	bc := make(map[string]string, len(v.BrokerConfigs))
	for k, val := range v.BrokerConfigs {
		bc[k] = val
	}
	c.mu.Lock()
	c.mu.version, c.mu.clusterID = v.Version, v.ClusterID
	c.mu.topics, c.mu.nodes, c.mu.brokerConfigs = topics, nodes, bc
	for name, o := range c.mu.overlay {
		if o.version <= v.Version {
			delete(c.mu.overlay, name)
		}
	}
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })
	return nil
}

// waitReady waits (at most 10s, so a client request does not hang on an
// unreachable controller) for the first metadata from the controller.
func (c *kafkaCluster) waitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	default:
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: no metadata from the controller yet", kafka.ErrUnavailable)
	case <-ctx.Done():
		return fmt.Errorf("%w: no metadata from the controller yet: %v", kafka.ErrUnavailable, ctx.Err())
	}
}

// topicLocked finds a topic in the overlay, then the view.
func (c *kafkaCluster) topicLocked(name string) (controller.TopicInfo, bool) {
	if o, ok := c.mu.overlay[name]; ok {
		if o.info == nil {
			return controller.TopicInfo{}, false
		}
		return *o.info, true
	}
	t, ok := c.mu.topics[name]
	return t, ok
}

func toKafkaTopic(t controller.TopicInfo) kafka.Topic {
	kt := kafka.Topic{
		Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions)), ReplicationFactor: t.ReplicationFactor,
		Internal: kafka.IsInternalTopic(t.Name), Configs: t.Configs,
		LeaderEpochs: make([]int32, len(t.Partitions)),
	}
	for _, p := range t.Partitions {
		if p.Partition >= 0 && int(p.Partition) < len(kt.LeaderEpochs) {
			kt.LeaderEpochs[p.Partition] = max(p.LeaderEpoch, 0)
		}
	}
	return kt
}

func (c *kafkaCluster) ClusterID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.clusterID
}

// ControllerID names the live gateway with the lowest id: Kafka clients
// send admin requests to "the controller", which must be a broker they can
// reach, and every gateway serves them.
func (c *kafkaCluster) ControllerID() int32 {
	id := c.nodeID
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.mu.nodes {
		if n.Kind == controller.KindGateway && n.Live && n.Addresses["kafka"] != "" && n.ID < id {
			id = n.ID
		}
	}
	return id
}

func (c *kafkaCluster) Brokers(ctx context.Context) ([]kafka.Broker, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kafka.Broker
	for _, n := range c.mu.nodes {
		if n.Kind != controller.KindGateway || !n.Live {
			continue
		}
		host, port, err := net.SplitHostPort(n.Addresses["kafka"])
		if err != nil {
			continue
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			continue
		}
		out = append(out, kafka.Broker{NodeID: n.ID, Host: host, Port: int32(p)})
	}
	return out, nil
}

func (c *kafkaCluster) Topics(ctx context.Context) ([]kafka.Topic, error) {
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	names := map[string]bool{}
	for n := range c.mu.topics {
		names[n] = true
	}
	for n := range c.mu.overlay {
		names[n] = true
	}
	out := make([]kafka.Topic, 0, len(names))
	for n := range names {
		if t, ok := c.topicLocked(n); ok {
			out = append(out, toKafkaTopic(t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *kafkaCluster) Topic(ctx context.Context, name string) (kafka.Topic, error) {
	if err := c.waitReady(ctx); err != nil {
		return kafka.Topic{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.topicLocked(name); ok {
		return toKafkaTopic(t), nil
	}
	return kafka.Topic{}, fmt.Errorf("%w: %s", kafka.ErrUnknownTopic, name)
}

func (c *kafkaCluster) TopicByID(ctx context.Context, id [16]byte) (kafka.Topic, error) {
	if err := c.waitReady(ctx); err != nil {
		return kafka.Topic{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, o := range c.mu.overlay {
		if o.info != nil && o.info.ID == id {
			return toKafkaTopic(*o.info), nil
		}
		if o.info == nil {
			if t, ok := c.mu.topics[name]; ok && t.ID == id {
				return kafka.Topic{}, kafka.ErrUnknownTopicID
			}
		}
	}
	for _, t := range c.mu.topics {
		if t.ID == id {
			return toKafkaTopic(t), nil
		}
	}
	return kafka.Topic{}, kafka.ErrUnknownTopicID
}

// refresh re-reads one topic from the controller into the overlay and
// returns it (ok false: it does not exist).
func (c *kafkaCluster) refresh(ctx context.Context, name string) (controller.TopicInfo, bool, error) {
	resp, err := c.api.Metadata(ctx, controller.MetadataRequest{Topics: []string{name}})
	if err != nil {
		return controller.TopicInfo{}, false, clusterErr(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range resp.Topics {
		if resp.Topics[i].Name == name {
			t := resp.Topics[i]
			if resp.Version > c.mu.version {
				c.mu.overlay[name] = overlayTopic{info: &t, version: resp.Version}
			}
			return t, true, nil
		}
	}
	if resp.Version > c.mu.version {
		c.mu.overlay[name] = overlayTopic{version: resp.Version}
	}
	return controller.TopicInfo{}, false, nil
}

func (c *kafkaCluster) CreateTopic(ctx context.Context, req kafka.CreateTopic) (kafka.Topic, error) {
	cfgs := map[string]string{}
	for k, v := range req.Configs {
		if v != nil {
			cfgs[k] = *v
		}
	}
	resp, err := c.api.CreateTopics(ctx, controller.CreateTopicsRequest{
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
		return kafka.Topic{Name: req.Name, ID: r.ID, Partitions: int32(len(r.Partitions)), ReplicationFactor: r.ReplicationFactor, Configs: cfgs}, nil
	}
	t, ok, err := c.refresh(ctx, req.Name)
	if err != nil {
		return kafka.Topic{}, err
	}
	if !ok {
		return kafka.Topic{}, fmt.Errorf("%w: topic %s vanished after its creation", kafka.ErrUnavailable, req.Name)
	}
	c.ensurePartitions(ctx, t, 0)
	return toKafkaTopic(t), nil
}

func (c *kafkaCluster) DeleteTopic(ctx context.Context, name string) error {
	c.mu.Lock()
	old, had := c.topicLocked(name)
	c.mu.Unlock()
	resp, err := c.api.DeleteTopics(ctx, controller.DeleteTopicsRequest{Topics: []controller.TopicRef{{Name: name}}})
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
		c.awaitPartitions(ctx, name, int32(len(old.Partitions)), false)
	}
	return nil
}

func (c *kafkaCluster) CreatePartitions(ctx context.Context, name string, count int32, validateOnly bool) error {
	c.mu.Lock()
	old, _ := c.topicLocked(name)
	c.mu.Unlock()
	resp, err := c.api.CreatePartitions(ctx, controller.CreatePartitionsRequest{
		Topics: []controller.PartitionCount{{Name: name, Count: count}}, ValidateOnly: validateOnly,
	})
	if err == nil && len(resp.Topics) == 1 {
		err = resp.Topics[0].Err()
	}
	if err != nil || validateOnly {
		return clusterErr(err)
	}
	t, ok, err := c.refresh(ctx, name)
	if err != nil || !ok {
		return err
	}
	c.ensurePartitions(ctx, t, int32(len(old.Partitions)))
	return nil
}

// singleStore reports whether exactly one store is live: then the ring
// this gateway holds reaches every partition.
func (c *kafkaCluster) singleStore() bool {
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

// ensurePartitions makes the partitions of t from `from` on exist before a
// create returns (see the type's comment).
func (c *kafkaCluster) ensurePartitions(ctx context.Context, t controller.TopicInfo, from int32) {
	if c.singleStore() {
		c.mu.Lock()
		cfg := controller.EffectiveTopicConfig(t.Configs, c.mu.brokerConfigs)
		c.mu.Unlock()
		pc, err := partitionConfig(cfg)
		if err != nil {
			c.log.Warn("topic configs", "topic", t.Name, "err", err)
		}
		for _, p := range t.Partitions {
			if p.Partition < from || p.Leader == controller.NoLeader {
				continue
			}
			err := c.backend.CreatePartition(ctx, t.Name, p.Partition, pc)
			if err != nil && !errors.Is(err, ring.ErrPartitionExists) {
				c.log.Warn("creating partition", "topic", t.Name, "partition", p.Partition, "err", err)
			}
		}
	}
	c.awaitPartitions(ctx, t.Name, int32(len(t.Partitions)), true)
}

// awaitPartitions waits, at most 10s, until partitions [0, n) of topic
// exist (or, with exist false, are gone) on the store the ring reaches.
func (c *kafkaCluster) awaitPartitions(ctx context.Context, topic string, n int32, exist bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for p := int32(0); p < n; p++ {
		for {
			_, err := c.backend.DescribePartition(ctx, topic, p)
			if (err == nil) == exist && (exist || errors.Is(err, ring.ErrUnknownPartition)) {
				break
			}
			select {
			case <-ctx.Done():
				c.log.Warn("partitions not settled on the store yet", "topic", topic, "want_exist", exist)
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// configResource maps a Kafka config resource onto the controller's.
func (c *kafkaCluster) configResource(ctx context.Context, res kafka.ConfigResource) (controller.ConfigResource, error) {
	if res.Type == kafka.ConfigResourceTopic {
		return controller.ConfigResource{Type: controller.ResourceTopic, Name: res.Name}, nil
	}
	// Broker configs are cluster-wide: "" (the default) and any live
	// gateway's id name the same set.
	if res.Name != "" {
		id, err := strconv.ParseInt(res.Name, 10, 32)
		known := false
		if err == nil {
			bs, _ := c.Brokers(ctx)
			for _, b := range bs {
				known = known || b.NodeID == int32(id)
			}
			known = known || int32(id) == c.nodeID
		}
		if !known {
			return controller.ConfigResource{}, fmt.Errorf("%w: broker %q", kafka.ErrUnknownResource, res.Name)
		}
	}
	return controller.ConfigResource{Type: controller.ResourceBroker, Name: ""}, nil
}

var configSources = map[controller.ConfigSource]kafka.ConfigSource{
	controller.SourceTopic:              kafka.ConfigSourceDynamicTopic,
	controller.SourceDynamicBrokerDeflt: kafka.ConfigSourceDynamicDefaultBroker,
	controller.SourceStaticBroker:       kafka.ConfigSourceStaticBroker,
	controller.SourceDefault:            kafka.ConfigSourceDefault,
}

var configTypes = map[controller.ConfigType]kafka.ConfigType{
	controller.TypeString:  kafka.ConfigTypeString,
	controller.TypeInt:     kafka.ConfigTypeInt,
	controller.TypeLong:    kafka.ConfigTypeLong,
	controller.TypeBoolean: kafka.ConfigTypeBoolean,
	controller.TypeList:    kafka.ConfigTypeList,
}

func (c *kafkaCluster) DescribeConfigs(ctx context.Context, res kafka.ConfigResource) ([]kafka.ConfigEntry, error) {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return nil, err
	}
	resp, err := c.api.DescribeConfigs(ctx, controller.DescribeConfigsRequest{Resources: []controller.ConfigResource{cr}})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Err()
	}
	if err != nil {
		return nil, clusterErr(err)
	}
	out := make([]kafka.ConfigEntry, 0, len(resp.Resources[0].Configs))
	for _, e := range resp.Resources[0].Configs {
		v := e.Value
		out = append(out, kafka.ConfigEntry{
			Name: e.Name, Value: &v, Source: configSources[e.Source], ReadOnly: e.ReadOnly,
			Sensitive: e.Sensitive, Type: configTypes[e.Type], Doc: e.Doc,
		})
	}
	return out, nil
}

func (c *kafkaCluster) AlterConfigs(ctx context.Context, res kafka.ConfigResource, set map[string]*string, validateOnly bool) error {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return err
	}
	cfgs := map[string]string{}
	for k, v := range set {
		if v != nil {
			cfgs[k] = *v
		}
	}
	return c.alter(ctx, res, controller.AlterConfigsResource{Type: cr.Type, Name: cr.Name, Configs: cfgs}, validateOnly)
}

var configOps = map[kafka.ConfigOpType]string{
	kafka.ConfigOpSet:      controller.OpSet,
	kafka.ConfigOpDelete:   controller.OpDelete,
	kafka.ConfigOpAppend:   controller.OpAppend,
	kafka.ConfigOpSubtract: controller.OpSubtract,
}

func (c *kafkaCluster) IncrementalAlterConfigs(ctx context.Context, res kafka.ConfigResource, ops []kafka.ConfigOp, validateOnly bool) error {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return err
	}
	r := controller.AlterConfigsResource{Type: cr.Type, Name: cr.Name, Incremental: true}
	for _, op := range ops {
		co := controller.ConfigOp{Name: op.Name, Op: configOps[op.Op]}
		if op.Value != nil {
			co.Value = *op.Value
		}
		r.Ops = append(r.Ops, co)
	}
	return c.alter(ctx, res, r, validateOnly)
}

func (c *kafkaCluster) alter(ctx context.Context, res kafka.ConfigResource, r controller.AlterConfigsResource, validateOnly bool) error {
	resp, err := c.api.AlterConfigs(ctx, controller.AlterConfigsRequest{Resources: []controller.AlterConfigsResource{r}, ValidateOnly: validateOnly})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Err()
	}
	if err != nil {
		return clusterErr(err)
	}
	if res.Type == kafka.ConfigResourceTopic && !validateOnly {
		_, _, err = c.refresh(ctx, res.Name)
	}
	return err
}

// clusterErrors maps the controller's sentinels onto the Cluster
// contract's; an error wrapping none keeps the Kafka error the controller's
// own table gives it.
var clusterErrors = []struct{ from, to error }{
	{controller.ErrTopicExists, kafka.ErrTopicExists},
	{controller.ErrUnknownTopic, kafka.ErrUnknownTopic},
	{controller.ErrUnknownTopicID, kafka.ErrUnknownTopicID},
	{controller.ErrInvalidTopic, kafka.ErrInvalidTopic},
	{controller.ErrInvalidPartitions, kafka.ErrInvalidPartitions},
	{controller.ErrInvalidReplicationFactor, kafka.ErrInvalidReplicationFactor},
	{controller.ErrInvalidConfig, kafka.ErrInvalidConfig},
	{controller.ErrNotLeader, kafka.ErrUnavailable},
	{controller.ErrTimeout, kafka.ErrUnavailable},
	{controller.ErrClosed, kafka.ErrUnavailable},
}

// mappedError keeps the controller's message and unwraps to both the
// contract's sentinel (or Kafka error) and the controller's error.
type mappedError struct {
	to, err error
}

func (e *mappedError) Error() string   { return e.err.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.to, e.err} }

func clusterErr(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range clusterErrors {
		if errors.Is(err, m.from) {
			return &mappedError{to: m.to, err: err}
		}
	}
	if ke := controller.KafkaError(err); ke != kerr.UnknownServerError {
		return &mappedError{to: ke, err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return &mappedError{to: kafka.ErrUnavailable, err: err}
}
