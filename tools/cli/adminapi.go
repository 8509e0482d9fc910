package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/http/adminapi"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/iceberg"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/registry"
	"github.com/aerostream/aerostream/topicconfig"
)

// adminSources implements the REST admin API's data interfaces over a
// node's parts: the controller (cluster, topics, configs), the store's
// backend and tier catalog (offsets, sizes, records), the Kafka gateway's
// group coordinator (groups, once the gateway runs) and the schema
// registry. In serve every route has its data; a node with no Kafka
// gateway of its own (a store) serves the groups routes through the
// cluster's Kafka gateways (remoteGroups), and its message inspector reads
// its own partitions in-process and the others through the gateways too.
type adminSources struct {
	api     controller.API // nil: no controller reachable
	backend ring.Backend   // nil: no log to read
	st      *logstore.Store
	cat     *catalog.Catalog
	tiering bool
	nodeID  int32 // the local store's id
	reg     *registry.Registry
	logger  *slog.Logger

	kafka   atomic.Pointer[kafka.Gateway]          // set once the gateway is built
	remote  *remoteGroups                          // groups through the Kafka gateways; nil without a controller
	iceberg atomic.Pointer[adminapi.IcebergSource] // set once the Iceberg manager runs
	running atomic.Bool                            // the daemon logged "running"
}

var (
	_ adminapi.ClusterSource = (*adminSources)(nil)
	_ adminapi.TopicSource   = (*adminSources)(nil)
	_ adminapi.LogSource     = (*adminSources)(nil)
	_ adminapi.SchemaSource  = (*adminSources)(nil)
	_ adminapi.GroupSource   = adminGroups{}
)

// newAdminAPI builds the admin API of d; the Kafka gateway is added later
// with setKafka.
func (d *daemon) newAdminAPI() (*adminSources, *adminapi.API, error) {
	src := &adminSources{st: d.st, cat: d.cat, tiering: d.tier != nil, nodeID: d.cfg.Controller.NodeID, logger: d.logger}
	if d.ctl != nil {
		src.api = d.ctl
	} else if api, ok := d.members.(controller.API); ok {
		src.api = api
	}
	src.backend = d.backend
	if src.backend == nil && d.st != nil {
		// A store reads its own partitions in-process, as serve does.
		src.backend = ring.NewInProcess(d.st)
		d.onClose("admin in-process ring", src.backend.Close)
	}
	if src.api != nil {
		src.remote = &remoteGroups{api: src.api, log: d.logger.With("part", "admin-api")}
		src.remote.opts, src.remote.optsErr = internalKafkaOpts(d.cfg, d.env.Environ) // security.go
		src.remote.refused = func(err error) error { return internalRefused(d.cfg, err) }
		d.onClose("admin groups client", src.remote.close)
		reg, err := newSchemaRegistry(d.cfg, src.api, d.logger)
		if err != nil {
			return nil, nil, err
		}
		src.reg = reg
	}
	opts := adminapi.Options{Log: src, Health: src.health, Metrics: d.reg, Logger: d.logger,
		Groups: adminGroups{src}, Iceberg: adminIceberg{src}, Authorizer: adminAuthorizer(d.httpGuard)} // security.go
	if src.api != nil {
		opts.Cluster, opts.Topics = src, src
	}
	if src.reg != nil {
		opts.Schemas = src
	}
	if d.iceberg != nil {
		src.setIceberg(icebergTables{d.iceberg})
	}
	return src, adminapi.New(opts), nil
}

func (s *adminSources) setKafka(g *kafka.Gateway) { s.kafka.Store(g) }

// setIceberg gives the admin API the status of the node's Iceberg topics;
// until then /api/iceberg lists none.
func (s *adminSources) setIceberg(src adminapi.IcebergSource) { s.iceberg.Store(&src) }

// adminIceberg is the Iceberg status set with setIceberg, if any.
type adminIceberg struct{ s *adminSources }

func (a adminIceberg) Tables(ctx context.Context) ([]adminapi.IcebergTable, error) {
	if src := a.s.iceberg.Load(); src != nil {
		return (*src).Tables(ctx)
	}
	return nil, nil
}

// icebergTables shows an Iceberg manager's topics to the admin API
// (setIceberg(icebergTables{m})).
type icebergTables struct{ m *iceberg.Manager }

func (t icebergTables) Tables(context.Context) ([]adminapi.IcebergTable, error) {
	var out []adminapi.IcebergTable
	for _, st := range t.m.Status("") {
		tb := adminapi.IcebergTable{Topic: st.Topic, Table: st.Table, LagRecords: st.LagRecords,
			LagMs: int64(st.LagSeconds * 1000), Files: st.DataFiles, Bytes: st.DataBytes, SnapshotID: st.SnapshotID}
		if st.LastCommit != nil {
			tb.LastCommitMs = st.LastCommit.UnixMilli()
		}
		out = append(out, tb)
	}
	return out, nil
}

// health is /healthz: starting until the daemon runs, then ready while
// the controller has a leader.
func (s *adminSources) health(ctx context.Context) adminapi.Health {
	if !s.running.Load() {
		return adminapi.Health{Status: "starting", Reasons: []string{"the node is still starting"}}
	}
	if s.api != nil {
		info, err := s.api.ClusterInfo(ctx)
		switch {
		case err != nil:
			return adminapi.Health{Status: "failed", Reasons: []string{"controller: " + err.Error()}}
		case info.LeaderID < 0 && info.LeaderAddr == "":
			return adminapi.Health{Status: "failed", Reasons: []string{"the controller has no leader"}}
		}
	}
	return adminapi.Health{Status: "ready"}
}

// Cluster implements adminapi.ClusterSource.
func (s *adminSources) Cluster(ctx context.Context) (adminapi.Cluster, error) {
	info, err := s.api.ClusterInfo(ctx)
	if err != nil {
		return adminapi.Cluster{}, err
	}
	nodes, err := s.api.ListNodes(ctx)
	if err != nil {
		return adminapi.Cluster{}, err
	}
	md, err := s.api.Metadata(ctx, controller.MetadataRequest{})
	if err != nil {
		return adminapi.Cluster{}, err
	}
	c := adminapi.Cluster{ClusterID: info.ClusterID, Controller: adminapi.Controller{Leader: info.LeaderID}}
	for _, v := range info.Voters {
		av := adminapi.Voter{ID: v.ID, Addr: v.Address}
		if strings.EqualFold(v.Suffrage, "Voter") || v.Suffrage == "" {
			c.Controller.Voters = append(c.Controller.Voters, av)
		} else {
			c.Controller.NonVoters = append(c.Controller.NonVoters, av)
		}
	}
	for _, v := range info.Joining {
		c.Controller.NonVoters = append(c.Controller.NonVoters, adminapi.Voter{ID: v.ID, Addr: v.Address})
	}
	stores := map[int32]*adminapi.Store{}
	for _, n := range nodes.Nodes {
		switch n.Kind {
		case controller.KindStore:
			addr := n.Addresses["ring"]
			if addr == "" {
				addr = n.Ring.Address
			}
			st := adminapi.Store{ID: n.ID, Addr: addr, Live: n.Live, Draining: n.Draining}
			if n.Stats != nil { // the store's last report, with its heartbeat
				st.DiskBytes, st.ColdBytes = n.Stats.DiskBytes, n.Stats.ColdBytes
			}
			c.Stores = append(c.Stores, st)
		case controller.KindGateway:
			for kind, addr := range n.Addresses {
				c.Gateways = append(c.Gateways, adminapi.Gateway{ID: n.ID, Kind: kind, Addr: addr})
			}
		}
	}
	for i := range c.Stores {
		stores[c.Stores[i].ID] = &c.Stores[i]
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			c.Leadership = append(c.Leadership, adminapi.Leadership{Topic: t.Name, Partition: p.Partition,
				Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR})
			for _, r := range p.Replicas {
				if st := stores[r]; st != nil {
					st.Partitions++
				}
			}
			if st := stores[p.Leader]; st != nil {
				st.Leaders++
			}
		}
	}
	// The local store's sizes are counted afresh; the others' are their
	// last reports to the controller.
	if st := stores[s.nodeID]; st != nil && s.backend != nil {
		parts, err := s.backend.ListPartitions(ctx)
		if err == nil {
			st.DiskBytes, st.ColdBytes = 0, 0
			for _, p := range parts {
				st.DiskBytes += p.Size
				cold, _ := s.tierBytes(p.Topic, p.Partition)
				st.ColdBytes += cold
			}
		}
	}
	return c, nil
}

// Topics implements adminapi.TopicSource.
func (s *adminSources) Topics(ctx context.Context) ([]adminapi.TopicMeta, error) {
	md, err := s.api.Metadata(ctx, controller.MetadataRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]adminapi.TopicMeta, 0, len(md.Topics))
	for _, t := range md.Topics {
		out = append(out, topicMeta(t))
	}
	return out, nil
}

func topicMeta(t controller.TopicInfo) adminapi.TopicMeta {
	m := adminapi.TopicMeta{Name: t.Name, ID: t.ID.String(), ReplicationFactor: int(t.ReplicationFactor),
		Internal: kafka.IsInternalTopic(t.Name) || strings.HasPrefix(t.Name, "__"),
		Iceberg:  t.Configs["iceberg.enabled"] == "true"}
	for _, p := range t.Partitions {
		m.Partitions = append(m.Partitions, adminapi.PartitionMeta{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR})
	}
	return m
}

// Topic implements adminapi.TopicSource.
func (s *adminSources) Topic(ctx context.Context, name string) (adminapi.TopicMeta, error) {
	md, err := s.api.Metadata(ctx, controller.MetadataRequest{Topics: []string{name}})
	if err != nil {
		return adminapi.TopicMeta{}, err
	}
	for _, t := range md.Topics {
		if t.Name == name {
			return topicMeta(t), nil
		}
	}
	return adminapi.TopicMeta{}, fmt.Errorf("%w: %s", adminapi.ErrUnknownTopic, name)
}

// Configs implements adminapi.TopicSource.
func (s *adminSources) Configs(ctx context.Context, name string) ([]adminapi.Config, error) {
	resp, err := s.api.DescribeConfigs(ctx, controller.DescribeConfigsRequest{
		Resources: []controller.ConfigResource{{Type: controller.ResourceTopic, Name: name}}})
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("describe configs of %s: %d answers", name, len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := r.Err(); err != nil {
		if errors.Is(err, controller.ErrUnknownTopic) {
			return nil, fmt.Errorf("%w: %s", adminapi.ErrUnknownTopic, name)
		}
		return nil, err
	}
	out := make([]adminapi.Config, 0, len(r.Configs))
	for _, e := range r.Configs {
		c := adminapi.Config{Name: e.Name, Value: e.Value, IsDefault: e.IsDefault, Doc: e.Doc}
		if d := topicconfig.Lookup(e.Name); d != nil {
			c.Dynamic = d.Dynamic && !e.ReadOnly
		}
		if e.Sensitive {
			c.Value = ""
		}
		out = append(out, c)
	}
	return out, nil
}

// AlterConfigs implements adminapi.TopicSource, as an incremental alter
// (the other configs stay).
func (s *adminSources) AlterConfigs(ctx context.Context, name string, set map[string]string) error {
	ops := make([]controller.ConfigOp, 0, len(set))
	for k, v := range set {
		ops = append(ops, controller.ConfigOp{Name: k, Op: controller.OpSet, Value: v})
	}
	resp, err := s.api.AlterConfigs(ctx, controller.AlterConfigsRequest{Resources: []controller.AlterConfigsResource{
		{Type: controller.ResourceTopic, Name: name, Incremental: true, Ops: ops}}})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Err()
	}
	switch {
	case errors.Is(err, controller.ErrUnknownTopic):
		return fmt.Errorf("%w: %s", adminapi.ErrUnknownTopic, name)
	case errors.Is(err, controller.ErrInvalidConfig):
		return fmt.Errorf("%w: %v", adminapi.ErrBadConfig, err)
	}
	return err
}

// tierBytes is the cold and tiering backlog bytes of a partition.
func (s *adminSources) tierBytes(topic string, partition int32) (cold, backlog int64) {
	return tierBytes(s.cat, s.tiering, topic, partition)
}

// remoteLog is the gateways' view of partitions this node does not hold:
// only on a node with no Kafka gateway of its own (in serve every
// partition is local).
func (s *adminSources) remoteLog() *remoteGroups {
	if s.kafka.Load() != nil {
		return nil
	}
	return s.remote
}

// PartitionStats implements adminapi.LogSource.
func (s *adminSources) PartitionStats(ctx context.Context, topic string, partition int32) (adminapi.PartitionStats, error) {
	if s.backend == nil {
		if s.remote != nil {
			return s.remote.partitionOffsets(ctx, topic, partition)
		}
		return adminapi.PartitionStats{}, fmt.Errorf("%w: no log here", adminapi.ErrUnavailable)
	}
	info, err := s.backend.DescribePartition(ctx, topic, partition)
	if err != nil {
		err = logErr(err, topic, partition)
		if errors.Is(err, adminapi.ErrUnavailable) && s.remoteLog() != nil {
			// Not held here: the offsets, at least, through the gateways.
			return s.remote.partitionOffsets(ctx, topic, partition)
		}
		return adminapi.PartitionStats{}, err
	}
	cold, backlog := s.tierBytes(topic, partition)
	st := adminapi.PartitionStats{LogStart: info.LogStartOffset, HighWatermark: info.HighWatermark,
		LastStable: info.HighWatermark, LocalBytes: info.Size, ColdBytes: cold, TierBacklogBytes: backlog}
	// The last stable offset is what a read-committed fetch at the high
	// watermark reports; it reads nothing.
	res, err := s.backend.Fetch(ctx, &ring.FetchRequest{IsolationLevel: ring.ReadCommitted,
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: partition, Offset: info.HighWatermark, MaxBytes: 1}}})
	if err == nil {
		if len(res.Partitions) == 1 && res.Partitions[0].Err == nil && res.Partitions[0].LastStableOffset >= 0 {
			st.LastStable = res.Partitions[0].LastStableOffset
		}
		res.Release()
	}
	return st, nil
}

// Fetch implements adminapi.LogSource: the backend fetch a consumer's goes
// through (hot from the segment files, cold through the tier's cache),
// without waiting for new records. A partition this node does not hold is
// fetched through the Kafka gateways (remoteFetch).
func (s *adminSources) Fetch(ctx context.Context, topic string, partition int32, offset int64, maxBytes int32) (adminapi.Fetched, error) {
	if s.backend == nil {
		if s.remote != nil {
			return s.remoteFetch(ctx, topic, partition, offset, maxBytes)
		}
		return adminapi.Fetched{}, fmt.Errorf("%w: no log here", adminapi.ErrUnavailable)
	}
	res, err := s.backend.Fetch(ctx, &ring.FetchRequest{MaxBytes: maxBytes, IsolationLevel: ring.ReadUncommitted,
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: partition, Offset: offset, MaxBytes: maxBytes}}})
	if err == nil && len(res.Partitions) == 1 && res.Partitions[0].Err != nil {
		err = res.Partitions[0].Err
		res.Release()
	}
	if err != nil {
		err = logErr(err, topic, partition)
		if errors.Is(err, adminapi.ErrUnavailable) && s.remoteLog() != nil {
			return s.remoteFetch(ctx, topic, partition, offset, maxBytes)
		}
		return adminapi.Fetched{}, err
	}
	defer res.Release()
	if len(res.Partitions) != 1 {
		return adminapi.Fetched{}, fmt.Errorf("fetch %s/%d: %d partitions answered", topic, partition, len(res.Partitions))
	}
	p := res.Partitions[0]
	b, err := p.Records.ReadAll(nil)
	if err != nil {
		return adminapi.Fetched{}, fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	return adminapi.Fetched{Batches: b, HighWatermark: p.HighWatermark, LogStart: p.LogStartOffset}, nil
}

// OffsetForTimestamp implements adminapi.LogSource.
func (s *adminSources) OffsetForTimestamp(ctx context.Context, topic string, partition int32, ts int64) (int64, error) {
	if s.backend == nil {
		if s.remote != nil {
			return s.remote.offsetAfter(ctx, topic, partition, ts)
		}
		return 0, fmt.Errorf("%w: no log here", adminapi.ErrUnavailable)
	}
	r, err := s.backend.ListOffsets(ctx, topic, partition, ts)
	if err != nil {
		err = logErr(err, topic, partition)
		if errors.Is(err, adminapi.ErrUnavailable) && s.remoteLog() != nil {
			return s.remote.offsetAfter(ctx, topic, partition, ts)
		}
		return 0, err
	}
	return r.Offset, nil
}

// logErr maps the backend's sentinels onto the API's.
func logErr(err error, topic string, partition int32) error {
	switch {
	case errors.Is(err, ring.ErrOffsetOutOfRange):
		return fmt.Errorf("%w: %s/%d: %v", adminapi.ErrOffsetOutOfRange, topic, partition, err)
	case errors.Is(err, ring.ErrUnknownPartition), errors.Is(err, ring.ErrNotLeader), errors.Is(err, ring.ErrNotLocal):
		return fmt.Errorf("%w: partition %s/%d is not held by this node: %v", adminapi.ErrUnavailable, topic, partition, err)
	}
	return err
}

// Schema implements adminapi.SchemaSource.
// The schema comes with the schemas its references import, transitively,
// for the decoder to link (Avro named types, Protobuf imports). A schema
// deleted since the record was written still decodes, when it needs no
// references.
func (s *adminSources) Schema(ctx context.Context, id int32) (adminapi.Schema, error) {
	res, err := s.reg.Resolve(ctx, id)
	if err == nil {
		out := adminapi.Schema{Type: res.Type, Text: res.Schema}
		for _, r := range res.References {
			out.Refs = append(out.Refs, adminapi.SchemaRef{Name: r.Name, Text: r.Schema})
		}
		return out, nil
	}
	if !registry.NotFound(err) {
		return adminapi.Schema{}, err
	}
	sch, _, err := s.reg.SchemaByID(ctx, id, true, false)
	if err != nil {
		return adminapi.Schema{}, err
	}
	return adminapi.Schema{Type: sch.Type, Text: sch.Schema}, nil
}

// adminGroups is the group coordinator of the node's Kafka gateway, in
// process; without one, those of the cluster's Kafka gateways, through
// remoteGroups.
type adminGroups struct{ s *adminSources }

// gw is the local gateway; nil, with the remote source to use instead (or
// an error when there is none).
func (a adminGroups) gw() (*kafka.Gateway, adminapi.GroupSource, error) {
	if g := a.s.kafka.Load(); g != nil {
		return g, nil, nil
	}
	if a.s.remote != nil {
		return nil, a.s.remote, nil
	}
	return nil, nil, fmt.Errorf("%w: this node runs no Kafka gateway, whose coordinator holds the groups, and reaches no controller to find one", adminapi.ErrUnavailable)
}

// groupErr maps the coordinator's Kafka errors onto the API's.
func groupErr(err error) error {
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("%w: %v", adminapi.ErrUnknownGroup, err)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("%w: %v", adminapi.ErrGroupNotEmpty, err)
	case errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator):
		return fmt.Errorf("%w: %v", adminapi.ErrUnavailable, err)
	}
	return err
}

func (a adminGroups) ListGroups(ctx context.Context) ([]adminapi.GroupSummary, error) {
	g, remote, err := a.gw()
	switch {
	case err != nil:
		return nil, err
	case remote != nil:
		return remote.ListGroups(ctx)
	}
	list, err := g.AdminListGroups(ctx)
	if err != nil {
		return nil, groupErr(err)
	}
	out := make([]adminapi.GroupSummary, 0, len(list))
	for _, v := range list {
		out = append(out, adminapi.GroupSummary{Group: v.ID, Type: v.Type, State: v.State, Protocol: v.ProtocolType})
	}
	return out, nil
}

func (a adminGroups) DescribeGroup(ctx context.Context, id string) (adminapi.Group, error) {
	g, remote, err := a.gw()
	switch {
	case err != nil:
		return adminapi.Group{}, err
	case remote != nil:
		return remote.DescribeGroup(ctx, id)
	}
	v, err := g.AdminDescribeGroup(ctx, id)
	if err != nil {
		return adminapi.Group{}, groupErr(err)
	}
	out := adminapi.Group{Group: v.ID, Type: v.Type, State: v.State, Protocol: v.Protocol}
	for _, m := range v.Members {
		am := adminapi.Member{MemberID: m.ID, ClientID: m.ClientID, Host: m.Host}
		for t, ps := range m.Assigned {
			am.Assignments = append(am.Assignments, adminapi.Assignment{Topic: t, Partitions: ps})
		}
		out.Members = append(out.Members, am)
	}
	for _, o := range v.Offsets {
		out.Offsets = append(out.Offsets, adminapi.CommittedOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
	}
	return out, nil
}

func (a adminGroups) CommitOffsets(ctx context.Context, id string, offs []adminapi.CommittedOffset) error {
	g, remote, err := a.gw()
	if err != nil {
		return err
	}
	if remote != nil {
		return remote.CommitOffsets(ctx, id, offs)
	}
	in := make([]kafka.GroupOffset, 0, len(offs))
	for _, o := range offs {
		in = append(in, kafka.GroupOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
	}
	return groupErr(g.AdminCommitOffsets(ctx, id, in))
}

func (a adminGroups) DeleteGroup(ctx context.Context, id string) error {
	g, remote, err := a.gw()
	if err != nil {
		return err
	}
	if remote != nil {
		return remote.DeleteGroup(ctx, id)
	}
	return groupErr(g.AdminDeleteGroup(ctx, id))
}

// meteredBackend counts what clients produce and fetch through a node's
// backend, for the admin API's throughput samples; the internal topics'
// traffic (group commits, their loading) is not client traffic and is
// left out.
type meteredBackend struct {
	ring.Backend
	produceBytes, produceRecords, fetchBytes prometheus.Counter
}

func meterBackend(b ring.Backend, reg prometheus.Registerer) ring.Backend {
	m := &meteredBackend{Backend: b,
		produceBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: adminapi.MetricProduceBytes,
			Help: "Record batch bytes produced to client topics through this node."}),
		produceRecords: prometheus.NewCounter(prometheus.CounterOpts{Name: adminapi.MetricProduceRecords,
			Help: "Records produced to client topics through this node."}),
		fetchBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: adminapi.MetricFetchBytes,
			Help: "Record batch bytes fetched from client topics through this node (consumers, the admin API's inspector)."}),
	}
	reg.MustRegister(m.produceBytes, m.produceRecords, m.fetchBytes)
	return m
}

func (m *meteredBackend) Produce(ctx context.Context, req *ring.ProduceRequest) (ring.ProduceResult, error) {
	n, recs := len(req.Records), batchRecords(req.Records) // before the append patches the batch
	res, err := m.Backend.Produce(ctx, req)
	if err == nil && !strings.HasPrefix(req.Topic, "__") {
		m.produceBytes.Add(float64(n))
		m.produceRecords.Add(float64(recs))
	}
	return res, err
}

func (m *meteredBackend) Fetch(ctx context.Context, req *ring.FetchRequest) (ring.FetchResult, error) {
	res, err := m.Backend.Fetch(ctx, req)
	if err == nil {
		var n int
		for i := range res.Partitions {
			if !strings.HasPrefix(res.Partitions[i].Topic, "__") {
				n += res.Partitions[i].Records.Size()
			}
		}
		m.fetchBytes.Add(float64(n))
	}
	return res, err
}

// batchRecords counts the records of the RecordBatch v2 in b from their
// headers.
func batchRecords(b []byte) int64 {
	var n int64
	for len(b) >= 61 {
		size := int(binary.BigEndian.Uint32(b[8:12]))
		if size < 49 || len(b)-12 < size {
			break
		}
		n += int64(int32(binary.BigEndian.Uint32(b[57:61])))
		b = b[12+size:]
	}
	return n
}
