package kafka

import (
	"cmp"
	"slices"
)

// Metadata is an immutable snapshot of the cluster's metadata: the topics,
// their partitions' placement, the live gateways. A Cluster builds a new one
// whenever its metadata moves and swaps it in whole, so that produce and
// fetch read it without a lock and find a topic by name or by id through
// maps built once per snapshot. Nothing reachable from a Metadata (a
// Topic's Configs or Parts, the Brokers slice) may be modified.
type Metadata struct {
	version      uint64
	clusterID    string
	controllerID int32
	brokers      []Broker
	topics       []*Topic // by name
	byName       map[string]*Topic
	byID         map[[16]byte]*Topic
}

// MetadataSource is what a snapshot is built from. New fields may be
// added (the next ones: store nodes and their rings), so build it with
// field names.
type MetadataSource struct {
	// Version orders snapshots: a later snapshot of the same Cluster has
	// a version at least as high.
	Version      uint64
	ClusterID    string
	ControllerID int32
	// Brokers are the live Kafka gateways, in any order.
	Brokers []Broker
	// Topics are owned by the snapshot from here on: the caller must not
	// modify them, or what their Configs and Parts hold, afterwards. A
	// topic may be shared between snapshots when it did not change.
	Topics []*Topic
}

// NewMetadata builds a snapshot. Topics with the same name or id keep
// the last one given.
func NewMetadata(src MetadataSource) *Metadata {
	m := &Metadata{
		version:      src.Version,
		clusterID:    src.ClusterID,
		controllerID: src.ControllerID,
		brokers:      slices.Clone(src.Brokers),
		byName:       make(map[string]*Topic, len(src.Topics)),
		byID:         make(map[[16]byte]*Topic, len(src.Topics)),
	}
	slices.SortFunc(m.brokers, func(a, b Broker) int { return cmp.Compare(a.NodeID, b.NodeID) })
	// A clip keeps an append by a reader from writing into the snapshot.
	m.brokers = slices.Clip(m.brokers)
	for _, t := range src.Topics {
		if old := m.byName[t.Name]; old != nil {
			delete(m.byID, old.ID)
		}
		m.byName[t.Name] = t
		m.byID[t.ID] = t
	}
	m.topics = make([]*Topic, 0, len(m.byName))
	for _, t := range m.byName {
		if m.byID[t.ID] == t {
			m.topics = append(m.topics, t)
		}
	}
	slices.SortFunc(m.topics, func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) })
	return m
}

// Version is the version of the metadata the snapshot was built from.
func (m *Metadata) Version() uint64 { return m.version }

// ClusterID is the cluster's id, as Kafka clients see it.
func (m *Metadata) ClusterID() string { return m.clusterID }

// ControllerID is the node id Metadata and DescribeCluster name as the
// controller.
func (m *Metadata) ControllerID() int32 { return m.controllerID }

// Brokers lists the live Kafka gateways in node id order. The slice is the
// snapshot's own: read it, do not modify it.
func (m *Metadata) Brokers() []Broker { return m.brokers }

// Topics lists the topics in name order. The slice is the snapshot's own.
func (m *Metadata) Topics() []*Topic { return m.topics }

// Topic finds a topic by name.
func (m *Metadata) Topic(name string) (*Topic, bool) {
	t, ok := m.byName[name]
	return t, ok
}

// TopicByID finds a topic by its Kafka topic id.
func (m *Metadata) TopicByID(id [16]byte) (*Topic, bool) {
	t, ok := m.byID[id]
	return t, ok
}
