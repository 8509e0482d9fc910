package native

import (
	"context"
	"fmt"
	"sort"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Metadata and admin: Lookup (0x02) turns names into the topic ids that the
// hot path carries; ListOffsets (0x05) finds an offset by time; CreateTopic
// (0x06), DeleteTopic (0x07), ListTopics (0x08) and Describe (0x09) go to
// the metadata owner (the controller, through Cluster) and the stores.

func info(t *Topic, code int16) wire.TopicInfo {
	return wire.TopicInfo{Code: code, Name: t.Name, ID: t.ID, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor}
}

func (s *session) lookup(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.Lookup
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	out := wire.Topics{Topics: make([]wire.TopicInfo, 0, len(m.Names))}
	for _, name := range m.Names {
		if !s.can(auth.OpDescribe, auth.ResourceTopic, name) {
			out.Topics = append(out.Topics, wire.TopicInfo{Code: codeFor(s.denied(auth.OpDescribe, auth.ResourceTopic, name)), Name: name})
			continue
		}
		t, err := s.g.opts.Cluster.Topic(ctx, name)
		if err != nil {
			out.Topics = append(out.Topics, wire.TopicInfo{Code: codeFor(err), Name: name})
			continue
		}
		s.remember(t)
		out.Topics = append(out.Topics, info(&t, 0))
	}
	return s.respond(wire.OpLookup, ok(corr), out.Append), nil
}

func (s *session) listOffsets(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.ListOffsets
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil {
		err = s.topicErr(t, opDescribe) // authz.go
	}
	if err != nil {
		return s.fail(wire.OpListOffsets, corr, err, -1), nil
	}
	res, err := s.g.opts.Backend.ListOffsets(ctx, t.Name, m.Partition, m.Timestamp)
	if err != nil {
		return s.fail(wire.OpListOffsets, corr, err, t.leader(m.Partition).Node), nil
	}
	out := wire.OffsetAt{Offset: res.Offset, Timestamp: res.Timestamp}
	return s.respond(wire.OpListOffsets, ok(corr), out.Append), nil
}

func (s *session) createTopic(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.CreateTopic
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	// As Kafka: CREATE on the cluster, or else on the topic.
	if !s.quiet(auth.OpCreate, auth.ResourceCluster, auth.ClusterName) && !s.can(auth.OpCreate, auth.ResourceTopic, m.Name) {
		return s.fail(wire.OpCreateTopic, corr, s.denied(auth.OpCreate, auth.ResourceTopic, m.Name), -1), nil
	}
	if m.Partitions == -1 {
		m.Partitions = s.g.opts.DefaultPartitions
	}
	if m.ReplicationFactor == -1 {
		m.ReplicationFactor = s.g.opts.DefaultReplicationFactor
	}
	if m.Partitions <= 0 || m.ReplicationFactor <= 0 {
		err := fmt.Errorf("%w: %d partitions, replication factor %d", ErrBadRequest, m.Partitions, m.ReplicationFactor)
		return s.fail(wire.OpCreateTopic, corr, err, -1), nil
	}
	cfg := make(map[string]*string, len(m.Configs))
	for _, c := range m.Configs {
		cfg[c.Key] = &c.Value
	}
	t, err := s.g.opts.Cluster.CreateTopic(ctx, m.Name, m.Partitions, m.ReplicationFactor, cfg)
	if err != nil {
		return s.fail(wire.OpCreateTopic, corr, err, -1), nil
	}
	s.remember(t)
	out := wire.Topics{Topics: []wire.TopicInfo{info(&t, 0)}}
	return s.respond(wire.OpCreateTopic, ok(corr), out.Append), nil
}

func (s *session) deleteTopic(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.TopicName
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if !s.can(auth.OpDelete, auth.ResourceTopic, m.Name) {
		return s.fail(wire.OpDeleteTopic, corr, s.denied(auth.OpDelete, auth.ResourceTopic, m.Name), -1), nil
	}
	t, err := s.g.opts.Cluster.Topic(ctx, m.Name)
	if err == nil && t.Internal {
		err = fmt.Errorf("%w: %s cannot be deleted", ErrInternalTopic, t.Name)
	}
	if err == nil {
		err = s.g.opts.Cluster.DeleteTopic(ctx, m.Name)
	}
	if err != nil {
		return s.fail(wire.OpDeleteTopic, corr, err, -1), nil
	}
	delete(s.topics, t.ID)
	return s.respond(wire.OpDeleteTopic, ok(corr), nil), nil
}

func (s *session) listTopics(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	if err := r.End("ListTopics"); err != nil {
		return nil, err
	}
	ts, err := s.g.opts.Cluster.Topics(ctx)
	if err != nil {
		return s.fail(wire.OpListTopics, corr, err, -1), nil
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	out := wire.Topics{Topics: make([]wire.TopicInfo, 0, len(ts))}
	for i := range ts {
		if !s.quiet(auth.OpDescribe, auth.ResourceTopic, ts[i].Name) {
			continue // hidden, as Kafka's Metadata of all topics hides it
		}
		out.Topics = append(out.Topics, info(&ts[i], 0))
	}
	return s.respond(wire.OpListTopics, ok(corr), out.Append), nil
}

// describe answers a topic's configs and each partition's log: start
// offset and high watermark, from the store that leads it, which is what
// a client needs for lag. The configs are left out for a principal that
// may DESCRIBE the topic but not DESCRIBE_CONFIGS it, so that a reader
// still gets its offsets.
func (s *session) describe(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.TopicName
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if !s.can(auth.OpDescribe, auth.ResourceTopic, m.Name) {
		return s.fail(wire.OpDescribe, corr, s.denied(auth.OpDescribe, auth.ResourceTopic, m.Name), -1), nil
	}
	t, err := s.g.opts.Cluster.Topic(ctx, m.Name)
	if err != nil {
		return s.fail(wire.OpDescribe, corr, err, -1), nil
	}
	out := wire.Description{Topic: info(&t, 0)}
	if !s.quiet(auth.OpDescribeConfigs, auth.ResourceTopic, t.Name) {
		t.Configs = nil
	}
	for k, v := range t.Configs {
		out.Configs = append(out.Configs, wire.Config{Key: k, Value: v})
	}
	sort.Slice(out.Configs, func(i, j int) bool { return out.Configs[i].Key < out.Configs[j].Key })
	for p := range t.Partitions {
		l := t.leader(p)
		ps := wire.PartitionState{Partition: p, Leader: l.Node, LeaderEpoch: l.Epoch, LogStartOffset: -1, HighWatermark: -1}
		pi, err := s.g.opts.Backend.DescribePartition(ctx, t.Name, p)
		if err != nil {
			ps.Code = codeFor(err)
		} else {
			ps.LogStartOffset, ps.HighWatermark = pi.LogStartOffset, pi.HighWatermark
		}
		out.Partitions = append(out.Partitions, ps)
	}
	return s.respond(wire.OpDescribe, ok(corr), out.Append), nil
}

// alterConfigs (0x14) changes a topic's configs through the metadata owner,
// which the stores then apply.
func (s *session) alterConfigs(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.AlterConfigs
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if !s.can(auth.OpAlterConfigs, auth.ResourceTopic, m.Name) {
		return s.fail(wire.OpAlterConfigs, corr, s.denied(auth.OpAlterConfigs, auth.ResourceTopic, m.Name), -1), nil
	}
	set := make(map[string]*string, len(m.Set)+len(m.Deleted))
	for _, c := range m.Set {
		set[c.Key] = &c.Value
	}
	for _, k := range m.Deleted {
		set[k] = nil
	}
	if len(set) == 0 {
		return s.fail(wire.OpAlterConfigs, corr, fmt.Errorf("%w: no config to alter", ErrBadRequest), -1), nil
	}
	if err := s.g.opts.Cluster.AlterConfigs(ctx, m.Name, set); err != nil {
		return s.fail(wire.OpAlterConfigs, corr, err, -1), nil
	}
	return s.respond(wire.OpAlterConfigs, ok(corr), nil), nil
}
