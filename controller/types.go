package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// TopicID is a topic's Kafka UUID. It is written as Kafka writes it: 22
// characters of unpadded URL-safe base64.
type TopicID [16]byte

// String is Kafka's textual form of the id.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// IsZero reports the zero id, which names no topic.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// MarshalText writes the Kafka form.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the Kafka form.
func (id *TopicID) UnmarshalText(b []byte) error {
	p, err := ParseTopicID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseTopicID parses the Kafka form of a topic id.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: topic id %q is not 22 characters of URL-safe base64", ErrInvalidRequest, s)
	}
	copy(id[:], b)
	return id, nil
}

// newTopicID draws a random version-4 UUID, skipping the ids Kafka reserves
// (zero, and the metadata topic's 1) and those whose text starts with '-',
// which Kafka avoids so the id cannot be mistaken for a flag.
func newTopicID() TopicID {
	for {
		var id TopicID
		_, _ = rand.Read(id[:]) // never fails (crypto/rand)
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id.IsZero() || id == (TopicID{15: 1}) || id.String()[0] == '-' {
			continue
		}
		return id
	}
}

// Node kinds.
const (
	KindStore   = "store"
	KindGateway = "gateway"
)

// NoLeader is the leader of a partition not yet placed on any store, or
// of one none of whose in-sync replicas is live.
const NoLeader int32 = -1

// MaxReplicationFactor bounds a topic's replication factor and a
// reassignment's target.
const MaxReplicationFactor = 3

// MaxPartitionsPerTopic bounds one topic's partition count, so that a single
// command cannot make every replica allocate without limit.
const MaxPartitionsPerTopic = 100000

// PartitionInfo is one partition's placement.
type PartitionInfo struct {
	Partition int32 `json:"partition"`
	// Leader is the store node that leads the partition: NoLeader while no
	// store has been available to place it on, and while none of its
	// in-sync replicas is live (unless unclean election is on).
	Leader int32 `json:"leader"`
	// LeaderEpoch starts at 0 when the partition is first placed and grows
	// each time its leader changes; -1 while unplaced.
	LeaderEpoch int32 `json:"leader_epoch"`
	// Replicas are the stores holding a copy, the preferred leader first.
	// Empty for a partition placed before replication existed: the leader
	// alone.
	Replicas []int32 `json:"replicas,omitempty"`
	// ISR is the in-sync subset of Replicas, leader included. Only the
	// controller changes it: on AlterPartition from the leader, and when a
	// store's session expires.
	ISR []int32 `json:"isr,omitempty"`
	// PartitionEpoch grows on every change of leader, ISR or replicas;
	// AlterPartition names the one it was computed from, so a stale
	// request is refused.
	PartitionEpoch int32 `json:"partition_epoch"`
	// TargetReplicas is set while a reassignment (or a drain) moves the
	// partition: Replicas holds the union of old and target until every
	// target replica is in the ISR, then becomes TargetReplicas.
	TargetReplicas []int32 `json:"target_replicas,omitempty"`
	// OriginalReplicas is what Replicas was before the reassignment began,
	// set while TargetReplicas is: a cancel reverts to it, and
	// ListPartitionReassignments reports adding and removing from it.
	OriginalReplicas []int32 `json:"original_replicas,omitempty"`
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name              string          `json:"name"`
	ID                TopicID         `json:"id"`
	ReplicationFactor int16           `json:"replication_factor"`
	Partitions        []PartitionInfo `json:"partitions"`
	// Configs holds the configs set on the topic itself (Kafka's
	// TOPIC_CONFIG source), normalized. DescribeConfigs gives every config
	// with its effective value.
	Configs map[string]string `json:"configs,omitempty"`
	// Version is the metadata version of the topic's last change.
	Version uint64 `json:"version"`
}

// DeletedTopic names a topic deletion.
type DeletedTopic struct {
	Name    string  `json:"name"`
	ID      TopicID `json:"id"`
	Version uint64  `json:"version"`
}

// RingInfo describes a store's shard ring.
type RingInfo struct {
	Shards  int32  `json:"shards"`
	Address string `json:"address"`
	// Version is assigned by the controller: the metadata version at which
	// the shard count or address last changed. Gateways rebuild their
	// connections to the store when it moves.
	Version uint64 `json:"version"`
}

// NodeInfo describes a registered store or gateway.
type NodeInfo struct {
	ID   int32  `json:"id"`
	Kind string `json:"kind"`
	// Addresses are the node's listeners by name: "ring" for a store's shard
	// ring, "kafka" and "native" for a gateway's client listeners.
	Addresses map[string]string `json:"addresses,omitempty"`
	Ring      RingInfo          `json:"ring"`
	Live      bool              `json:"live"`
	// LastHeartbeatMs is the Unix time in ms of the last heartbeat the
	// leader saw. It is replicated only when the node registers or changes
	// liveness; the leader reports its own, newer, value.
	LastHeartbeatMs int64  `json:"last_heartbeat_ms"`
	Version         uint64 `json:"version"`
	// Draining is set by DrainStore: placement skips the store, and every
	// replica it holds is being reassigned away.
	Draining bool `json:"draining,omitempty"`
	// ShuttingDown is set by a leadership-only drain (a controlled
	// shutdown): the store is not elected leader, and its registering
	// again (a new incarnation) clears it.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// MaxPartitions is the partition budget the store registered with
	// (RegisterNodeRequest.MaxPartitions); 0 for none.
	MaxPartitions int32 `json:"max_partitions,omitempty"`
	// Stats is the store's last report of its storage
	// (HeartbeatRequest.Stats). It is not replicated: the leader holds it
	// in memory, and a follower's ListNodes asks the leader for it.
	Stats *StoreStats `json:"stats,omitempty"`
}

// Delta is what changed in the metadata since a node's known version, as a
// heartbeat reply carries it. When Full is set it is the whole state
// instead: the node's version was 0, ahead of the controller's, or older
// than the bounded change log.
type Delta struct {
	ClusterID string `json:"cluster_id"`
	// Version is the current metadata version; the node sends it back as
	// its known version in the next heartbeat.
	Version uint64 `json:"version"`
	Full    bool   `json:"full"`
	// Topics created or changed (configs, partitions, placement); with Full,
	// every topic.
	Topics []TopicInfo `json:"topics,omitempty"`
	// DeletedTopics since the known version; with Full, the most recent
	// deletions the controller remembers.
	DeletedTopics []DeletedTopic `json:"deleted_topics,omitempty"`
	// Nodes whose registration, ring or liveness changed; with Full, all.
	Nodes []NodeInfo `json:"nodes,omitempty"`
	// BrokerConfigs is the whole set of dynamic cluster-default configs,
	// present (BrokerConfigsChanged) when it changed.
	BrokerConfigsChanged bool              `json:"broker_configs_changed,omitempty"`
	BrokerConfigs        map[string]string `json:"broker_configs,omitempty"`
}

// Empty reports a delta that changes nothing.
func (d *Delta) Empty() bool {
	return !d.Full && len(d.Topics) == 0 && len(d.DeletedTopics) == 0 && len(d.Nodes) == 0 && !d.BrokerConfigsChanged
}

// View is a node's copy of the metadata, kept up to date by applying the
// deltas of heartbeat replies. It is not safe for concurrent use.
type View struct {
	ClusterID     string
	Version       uint64
	Topics        map[string]TopicInfo
	Nodes         map[int32]NodeInfo
	BrokerConfigs map[string]string
}

// Apply folds d into v.
func (v *View) Apply(d Delta) {
	if d.Full || v.Topics == nil {
		v.Topics = map[string]TopicInfo{}
		v.Nodes = map[int32]NodeInfo{}
		v.BrokerConfigs = map[string]string{}
	}
	v.ClusterID = d.ClusterID
	v.Version = d.Version
	for _, t := range d.DeletedTopics {
		if cur, ok := v.Topics[t.Name]; ok && cur.ID == t.ID {
			delete(v.Topics, t.Name)
		}
	}
	for _, t := range d.Topics {
		v.Topics[t.Name] = t
	}
	for _, n := range d.Nodes {
		v.Nodes[n.ID] = n
	}
	if d.Full || d.BrokerConfigsChanged {
		v.BrokerConfigs = map[string]string{}
		for k, val := range d.BrokerConfigs {
			v.BrokerConfigs[k] = val
		}
	}
}

// Clone copies v, so that a holder (a replica manager given the view by
// StoreAgentOptions.OnView) can keep it while the original moves on. The
// topics' partition slices are shared: they are never changed in place.
func (v *View) Clone() *View {
	c := &View{ClusterID: v.ClusterID, Version: v.Version,
		Topics:        make(map[string]TopicInfo, len(v.Topics)),
		Nodes:         make(map[int32]NodeInfo, len(v.Nodes)),
		BrokerConfigs: make(map[string]string, len(v.BrokerConfigs)),
	}
	for k, t := range v.Topics {
		c.Topics[k] = t
	}
	for k, n := range v.Nodes {
		c.Nodes[k] = n
	}
	for k, s := range v.BrokerConfigs {
		c.BrokerConfigs[k] = s
	}
	return c
}
