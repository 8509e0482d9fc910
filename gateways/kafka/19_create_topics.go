package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics: v2-v7.
//
// Creates each topic through the Cluster, which places its partitions and
// creates them on the stores before answering, so a topic is usable as soon
// as the response arrives (the timeout is not needed). -1 partitions or
// replication factor (v4+) take num.partitions and 1. A replication factor
// above 1 is INVALID_REPLICATION_FACTOR (replication is not available yet);
// a manual replica assignment is INVALID_REPLICA_ASSIGNMENT, since the
// controller places partitions; a name twice in one request is
// INVALID_REQUEST for both entries; configs are validated by the Cluster
// (INVALID_CONFIG). ValidateOnly checks everything and creates nothing.
// v5+ answers the topic's partition count, replication factor and configs
// (no configs for ValidateOnly: the topic does not exist to be described),
// v7+ its id.
//
// Version notes: v3 and v4 only changed semantics Kafka-side (v4 allows
// -1 defaults), v5 flexible and configs in the response, v6 quota errors,
// v7 topic id.

func init() { regKey(19, 2, 7, (*Gateway).handleCreateTopics) }

func (g *Gateway) handleCreateTopics(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		t, err := g.createTopic(ctx, &rt, req.ValidateOnly, seen[rt.Topic] > 1)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions, st.ReplicationFactor = t.Partitions, t.ReplicationFactor
		if req.Version >= 5 && !req.ValidateOnly {
			entries, err := g.cluster.DescribeConfigs(ctx, ConfigResource{Type: ConfigResourceTopic, Name: t.Name})
			if err != nil {
				st.ConfigErrorCode = errorCode(err)
			}
			for _, e := range entries {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
				if e.Sensitive {
					c.Value = nil
				}
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (g *Gateway) createTopic(ctx context.Context, rt *kmsg.CreateTopicsRequestTopic, validateOnly, duplicate bool) (Topic, error) {
	if duplicate {
		return Topic{}, fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, rt.Topic)
	}
	if err := ValidTopicName(rt.Topic); err != nil {
		return Topic{}, err
	}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return Topic{}, fmt.Errorf("%w: a replica assignment needs -1 partitions and replication factor", kerr.InvalidRequest)
		}
		return Topic{}, fmt.Errorf("%w: manual replica assignment is not supported; the controller places partitions", ErrInvalidReplicaAssignment)
	}
	ct := CreateTopic{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, ValidateOnly: validateOnly}
	if ct.Partitions == -1 {
		ct.Partitions = g.opts.DefaultPartitions
	}
	if ct.ReplicationFactor == -1 {
		ct.ReplicationFactor = 1
	}
	if ct.Partitions <= 0 {
		return Topic{}, fmt.Errorf("%w: %d partitions; a topic needs at least 1", ErrInvalidPartitions, ct.Partitions)
	}
	if ct.ReplicationFactor <= 0 {
		return Topic{}, fmt.Errorf("%w: replication factor %d must be at least 1", ErrInvalidReplicationFactor, ct.ReplicationFactor)
	}
	if len(rt.Configs) > 0 {
		ct.Configs = make(map[string]*string, len(rt.Configs))
		for _, c := range rt.Configs {
			ct.Configs[c.Name] = c.Value
		}
	}
	return g.cluster.CreateTopic(ctx, ct)
}
