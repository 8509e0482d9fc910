package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata: v0-v13.
//
// Brokers are the live Kafka gateways (this one at least, at its
// advertised address). Any gateway serves any partition, routing it to the
// store that leads it; a partition's "leader" here is the gateway that
// rendezvous hashing of (topic, partition) over the live gateways picks,
// and its replicas and ISR are the first replication-factor gateways in
// that order (doc.go says why). The leader epoch is the leader store's. A
// partition that no store leads right now answers LEADER_NOT_AVAILABLE
// with leader -1 and an empty ISR, and the client asks again; a Cluster
// that records no placement (Topic.Parts nil) has every partition
// served. A null topic list (v1+, or
// an empty one in v0) asks for every topic; topics may be named by id
// (v10+). An unknown topic is created when auto.create.topics.enable is on
// and the client allows it (always before v4), with num.partitions
// partitions; otherwise it gets UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID
// by id). Authorized operations (v8+) are all operations, as no ACLs exist.
//
// Version notes: v1 controller id and internal flag, v2 cluster id, v4
// AllowAutoTopicCreation, v5 offline replicas, v7 leader epoch, v8
// authorized operations, v9 flexible, v10 topic ids, v13 top-level error.

func init() { regKey(3, 0, 13, (*Gateway).handleMetadata) }

// Authorized-operation bitfields (bit n set = operation n allowed) for a
// cluster without ACLs. Operations: 3 READ, 4 WRITE, 5 CREATE, 6 DELETE,
// 7 ALTER, 8 DESCRIBE, 9 CLUSTER_ACTION, 10 DESCRIBE_CONFIGS,
// 11 ALTER_CONFIGS, 12 IDEMPOTENT_WRITE.
const (
	topicOps   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	clusterOps int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	groupOps   int32 = 1<<3 | 1<<6 | 1<<8
	opsOmitted int32 = math.MinInt32
)

func (g *Gateway) handleMetadata(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	// One snapshot answers the request, so brokers, controller and topics
	// agree with each other.
	md, err := g.cluster.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	brokers := withSelf(md.Brokers(), g.self())
	for _, b := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := md.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = md.ControllerID()
	resp.AuthorizedOperations = opsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterOps
	}

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range md.Topics() {
			resp.Topics = append(resp.Topics, g.metadataTopic(req, t, brokers))
		}
		return resp, nil
	}

	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		var (
			t   *Topic
			err error
		)
		if rt.Topic == nil {
			var ok bool
			if t, ok = md.TopicByID(rt.TopicID); !ok {
				err = ErrUnknownTopicID
			}
		} else if tt, ok := md.Topic(*rt.Topic); ok {
			t = tt
		} else if g.opts.AutoCreateTopics && allowCreate {
			var ct Topic
			if ct, err = g.autoCreate(ctx, *rt.Topic); err == nil {
				t = &ct
			}
		} else {
			err = fmt.Errorf("%w: %s", ErrUnknownTopic, *rt.Topic)
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = errorCode(err)
			mt.AuthorizedOperations = opsOmitted
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, g.metadataTopic(req, t, brokers))
	}
	return resp, nil
}

// autoCreate creates a topic for Metadata. A topic created meanwhile by
// someone else is as good.
func (g *Gateway) autoCreate(ctx context.Context, name string) (Topic, error) {
	if err := ValidTopicName(name); err != nil {
		return Topic{}, err
	}
	t, err := g.cluster.CreateTopic(ctx, CreateTopic{Name: name, Partitions: g.opts.DefaultPartitions, ReplicationFactor: 1})
	if errors.Is(err, ErrTopicExists) {
		return g.cluster.Topic(ctx, name)
	}
	if err == nil {
		g.log.Info("auto-created topic", "topic", name, "partitions", t.Partitions)
	}
	return t, err
}

func (g *Gateway) metadataTopic(req *kmsg.MetadataRequest, t *Topic, brokers []Broker) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	mt.AuthorizedOperations = opsOmitted
	if req.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = topicOps
	}
	th := topicHash(t.Name)
	rf := min(int(max(t.ReplicationFactor, 1)), len(brokers))
	// One array holds every partition's replicas; the ISR shares it.
	ids := make([]int32, 0, int(t.Partitions)*rf)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, t.Partitions)
	for p := int32(0); p < t.Partitions; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		from := len(ids)
		ids = rendezvous(ids, th, p, brokers, rf)
		mp.Replicas = ids[from:len(ids):len(ids)]
		mp.Leader = mp.Replicas[0]
		mp.ISR = mp.Replicas
		mp.LeaderEpoch = t.LeaderEpoch(p)
		mp.OfflineReplicas = []int32{}
		if int(p) < len(t.Parts) && t.Parts[p].Leader == NoLeader {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
			mp.ISR = []int32{}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
