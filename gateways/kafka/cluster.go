package kafka

import (
	"context"
	"errors"
)

// Cluster is what the gateway needs from the metadata owner (the
// controller; kmeta implements it over the controller's client). Reads are
// served from a local, immutable snapshot (Metadata) that is swapped whole
// when the metadata moves: produce and fetch take one snapshot per request
// and look topics up in it without a lock or an allocation. ClusterID,
// ControllerID, Brokers, Topics, Topic and TopicByID answer from the
// current snapshot too. Writes go to the metadata owner and return once
// applied, and the next snapshot already shows them (read your writes);
// creating a topic or adding partitions also creates the partitions on the
// stores that lead them, before the call returns.
//
// Errors wrap the sentinels below (or a *kerr.Error), so the gateway maps
// them to Kafka codes through its one table. clustertest holds the
// conformance suite every implementation passes.
type Cluster interface {
	// Metadata returns the current snapshot. It waits (bounded) only
	// before the first metadata has arrived, then fails with
	// ErrUnavailable.
	Metadata(ctx context.Context) (*Metadata, error)

	// ClusterID is the cluster's id, as Kafka clients see it.
	ClusterID() string
	// ControllerID is the node id Metadata and DescribeCluster name as
	// the controller; admin requests are served by any gateway, so a
	// gateway may name itself.
	ControllerID() int32
	// Brokers lists the live Kafka gateways, the "brokers" of the cluster.
	Brokers(ctx context.Context) ([]Broker, error)

	Topics(ctx context.Context) ([]Topic, error)
	// Topic fails with ErrUnknownTopic.
	Topic(ctx context.Context, name string) (Topic, error)
	// TopicByID fails with ErrUnknownTopicID.
	TopicByID(ctx context.Context, id [16]byte) (Topic, error)

	// CreateTopic creates a topic and its partitions, or with
	// ValidateOnly only checks that it could.
	CreateTopic(ctx context.Context, req CreateTopic) (Topic, error)
	// DeleteTopic deletes a topic and its partitions' data.
	DeleteTopic(ctx context.Context, name string) error
	// CreatePartitions grows a topic to count partitions.
	CreatePartitions(ctx context.Context, topic string, count int32, validateOnly bool) error

	// DescribeConfigs returns every config of a resource with its current
	// value and source.
	DescribeConfigs(ctx context.Context, res ConfigResource) ([]ConfigEntry, error)
	// AlterConfigs replaces the resource's dynamic configs by set (Kafka's
	// legacy AlterConfigs: keys not in set return to their defaults).
	AlterConfigs(ctx context.Context, res ConfigResource, set map[string]*string, validateOnly bool) error
	// IncrementalAlterConfigs applies ops in order.
	IncrementalAlterConfigs(ctx context.Context, res ConfigResource, ops []ConfigOp, validateOnly bool) error

	// AlterPartitionReassignments starts, replaces or cancels (nil
	// Replicas) the reassignment of each partition. Replica ids are STORE
	// node ids: stores hold the data, gateways none. It returns one error
	// per reassignment, in order, nil where it was accepted; the call's
	// own error is for the request as a whole.
	AlterPartitionReassignments(ctx context.Context, rs []Reassignment) ([]error, error)
	// ListPartitionReassignments lists the reassignments in progress, of
	// the named partitions or, with none named, of every partition.
	ListPartitionReassignments(ctx context.Context, parts []TopicPartitions) ([]OngoingReassignment, error)
}

// Reassignment is one partition's target replica list, store node ids,
// the preferred leader first; nil Replicas cancels a reassignment.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// TopicPartitions names some partitions of a topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// OngoingReassignment is a partition being moved: its replicas now (the
// union of old and target), and the stores being added and removed.
type OngoingReassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// ProducerIDAllocator reserves producer ids for InitProducerID. Ids must
// never be handed out twice, across gateways and restarts. The default
// (Options.ProducerIDs nil) keeps its counter in the internal topic
// __producer_ids; see producer_ids.go.
type ProducerIDAllocator interface {
	// AllocateProducerIDs reserves n ids and returns them.
	AllocateProducerIDs(ctx context.Context, n int) ([]int64, error)
}

// Broker is a Kafka gateway as Metadata shows it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
}

// Topic is a topic's metadata.
type Topic struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Internal          bool
	// Configs holds the configs set on the topic (Kafka's dynamic topic
	// configs); a config not in it has the broker default.
	Configs map[string]string
	// Parts holds each partition's placement, by partition number; nil
	// (or a short slice) means no leader known and epoch 0.
	Parts []PartitionMeta
}

// NoLeader is PartitionMeta.Leader while no store leads the partition.
const NoLeader int32 = -1

// PartitionMeta is one partition's placement as the metadata owner
// records it.
type PartitionMeta struct {
	// Leader is the store node that leads the partition, or NoLeader.
	Leader int32
	// LeaderEpoch grows each time the leader changes; never negative.
	LeaderEpoch int32
	// Replicas are the store nodes that hold a copy, leader first; nil
	// means the leader alone.
	Replicas []int32
}

// Partition returns partition p's placement.
func (t *Topic) Partition(p int32) PartitionMeta {
	if p >= 0 && int(p) < len(t.Parts) {
		return t.Parts[p]
	}
	return PartitionMeta{Leader: NoLeader}
}

// LeaderEpoch returns partition p's leader epoch.
func (t *Topic) LeaderEpoch(p int32) int32 {
	if p >= 0 && int(p) < len(t.Parts) {
		return t.Parts[p].LeaderEpoch
	}
	return 0
}

// CreateTopic is a topic creation request. Partitions and
// ReplicationFactor are resolved (no -1) by the gateway.
type CreateTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]*string
	ValidateOnly      bool
	// Internal marks a topic the gateway itself owns
	// (__consumer_offsets): clients may read it but not write or delete
	// it.
	Internal bool
}

// ConfigResourceType is Kafka's resource type for configs.
type ConfigResourceType int8

// The resource types that carry configs.
const (
	ConfigResourceTopic  ConfigResourceType = 2
	ConfigResourceBroker ConfigResourceType = 4
)

// ConfigResource names a topic or a broker ("" or a node id: the cluster
// default or one broker).
type ConfigResource struct {
	Type ConfigResourceType
	Name string
}

// ConfigSource is where a config's value comes from, with Kafka's numbers.
type ConfigSource int8

// Config sources, as Kafka numbers them.
const (
	ConfigSourceDynamicTopic         ConfigSource = 1
	ConfigSourceDynamicBroker        ConfigSource = 2
	ConfigSourceDynamicDefaultBroker ConfigSource = 3
	ConfigSourceStaticBroker         ConfigSource = 4
	ConfigSourceDefault              ConfigSource = 5
)

// ConfigType is a config's value type, with Kafka's numbers.
type ConfigType int8

// Config types, as Kafka numbers them.
const (
	ConfigTypeBoolean  ConfigType = 1
	ConfigTypeString   ConfigType = 2
	ConfigTypeInt      ConfigType = 3
	ConfigTypeShort    ConfigType = 4
	ConfigTypeLong     ConfigType = 5
	ConfigTypeDouble   ConfigType = 6
	ConfigTypeList     ConfigType = 7
	ConfigTypeClass    ConfigType = 8
	ConfigTypePassword ConfigType = 9
)

// ConfigEntry is one config of a resource.
type ConfigEntry struct {
	Name      string
	Value     *string
	Source    ConfigSource
	ReadOnly  bool
	Sensitive bool
	Type      ConfigType
	Doc       string
	// Default is the value the config falls back to when unset; shown
	// as a synonym by DescribeConfigs.
	Default *string
}

// ConfigOpType is an IncrementalAlterConfigs operation, with Kafka's
// numbers.
type ConfigOpType int8

// Incremental config operations.
const (
	ConfigOpSet      ConfigOpType = 0
	ConfigOpDelete   ConfigOpType = 1
	ConfigOpAppend   ConfigOpType = 2
	ConfigOpSubtract ConfigOpType = 3
)

// ConfigOp is one IncrementalAlterConfigs change.
type ConfigOp struct {
	Name  string
	Op    ConfigOpType
	Value *string
}

// Sentinel errors of the Cluster contract. Implementations wrap them (with
// a message for the client, which Kafka shows for admin requests); the
// gateway maps each to its Kafka code in errors.go.
var (
	// ErrUnknownTopic: no topic has that name.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrUnknownTopicID: no topic has that id.
	ErrUnknownTopicID = errors.New("unknown topic id")
	// ErrTopicExists: CreateTopic for a name already taken.
	ErrTopicExists = errors.New("topic already exists")
	// ErrInvalidTopic: a topic name Kafka does not allow (empty, too long,
	// characters outside [a-zA-Z0-9._-], "." or "..").
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrInvalidPartitions: a partition count below 1, or one that would
	// shrink a topic.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidReplicationFactor: a replication factor that cannot be
	// served (above 1: replication is not available yet).
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidReplicaAssignment: a manual replica assignment that cannot
	// be honoured.
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrInvalidConfig: an unknown config name or a value out of its
	// domain.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrUnknownResource: a config resource that does not exist (a broker
	// id that is not a live gateway, an unsupported resource type).
	ErrUnknownResource = errors.New("unknown config resource")
	// ErrUnavailable: the metadata owner cannot be reached right now; the
	// client should retry.
	ErrUnavailable = errors.New("metadata unavailable")
)
