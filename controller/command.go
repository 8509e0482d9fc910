package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// A command is one Raft log entry: what the leader proposes and every
// replica applies. Encoding:
//
//	byte 0     format version, commandVersion (1)
//	byte 1     op
//	bytes 2..  the op's payload, one JSON object
//
// JSON keeps the log readable with standard tools and costs nothing that
// matters at metadata rates. Decoding rejects an unknown version or op,
// unknown JSON fields and trailing bytes, and never panics (FuzzDecodeCommand);
// the values inside are checked by Apply, which answers a bad one with an
// error, so every replica reaches the same verdict on the same entry.
const commandVersion = 1

type op byte

const (
	opSetClusterID     op = 1
	opCreateTopics     op = 2
	opDeleteTopics     op = 3
	opCreatePartitions op = 4
	opAlterConfigs     op = 5
	opRegisterNode     op = 6
	opSetLiveness      op = 7
	opAlterPartition   op = 8
	opReassign         op = 9
	opDrainStore       op = 10
	opElectPreferred   op = 11
	opShutdownStore    op = 12
	// opSchema carries every schema registry write (schemas.go).
	opSchema op = 40
	// opSecurity carries every user and ACL write (security.go).
	opSecurity op = 41
)

func (o op) String() string {
	switch o {
	case opSetClusterID:
		return "set_cluster_id"
	case opCreateTopics:
		return "create_topics"
	case opDeleteTopics:
		return "delete_topics"
	case opCreatePartitions:
		return "create_partitions"
	case opAlterConfigs:
		return "alter_configs"
	case opRegisterNode:
		return "register_node"
	case opSetLiveness:
		return "set_liveness"
	case opAlterPartition:
		return "alter_partition"
	case opReassign:
		return "reassign"
	case opDrainStore:
		return "drain_store"
	case opElectPreferred:
		return "elect_preferred"
	case opShutdownStore:
		return "shutdown_store"
	case opSchema:
		return "schema"
	case opSecurity:
		return "security"
	}
	return fmt.Sprintf("op(%d)", byte(o))
}

// command is a decoded log entry: exactly one payload field is set, the one
// of op.
type command struct {
	op               op
	setClusterID     *cmdSetClusterID
	createTopics     *cmdCreateTopics
	deleteTopics     *cmdDeleteTopics
	createPartitions *cmdCreatePartitions
	alterConfigs     *cmdAlterConfigs
	registerNode     *cmdRegisterNode
	setLiveness      *cmdSetLiveness
	alterPartition   *cmdAlterPartition
	reassign         *cmdReassign
	drainStore       *cmdDrainStore
	electPreferred   *cmdElectPreferred
	shutdownStore    *cmdShutdownStore
	schema           *cmdSchema
	security         *cmdSecurity
}

type cmdSetClusterID struct {
	ClusterID string `json:"cluster_id"`
}

type cmdCreateTopics struct {
	Topics []cmdNewTopic `json:"topics"`
	// RequestID is the client's idempotency token (CreateTopicsRequest).
	RequestID string `json:"request_id,omitempty"`
}

type cmdNewTopic struct {
	Name              string            `json:"name"`
	ID                TopicID           `json:"id"` // drawn by the leader, so every replica agrees
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

type cmdDeleteTopics struct {
	Topics []TopicRef `json:"topics"`
}

// TopicRef names a topic by name or by id (one of the two).
type TopicRef struct {
	Name string  `json:"name,omitempty"`
	ID   TopicID `json:"id,omitzero"`
}

type cmdCreatePartitions struct {
	Topics []PartitionCount `json:"topics"`
}

// PartitionCount asks for a topic to have Count partitions in total.
type PartitionCount struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

type cmdAlterConfigs struct {
	Resources []AlterConfigsResource `json:"resources"`
}

// Resource types for configs.
const (
	ResourceTopic  = "topic"
	ResourceBroker = "broker"
)

// Incremental config operations (Kafka's IncrementalAlterConfigs ops).
const (
	OpSet      = "set"
	OpDelete   = "delete"
	OpAppend   = "append"
	OpSubtract = "subtract"
)

// AlterConfigsResource changes the configs of one topic, or of the cluster
// defaults (Type "broker", Name ""). Without Incremental, Configs replaces
// the whole set (Kafka's AlterConfigs); with it, Ops apply one by one
// (IncrementalAlterConfigs).
type AlterConfigsResource struct {
	Type        string            `json:"type"`
	Name        string            `json:"name"`
	Incremental bool              `json:"incremental,omitempty"`
	Configs     map[string]string `json:"configs,omitempty"`
	Ops         []ConfigOp        `json:"ops,omitempty"`
}

// ConfigOp is one incremental change.
type ConfigOp struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Value string `json:"value,omitempty"`
}

type cmdRegisterNode struct {
	ID        int32             `json:"id"`
	Kind      string            `json:"kind"`
	Addresses map[string]string `json:"addresses,omitempty"`
	Shards    int32             `json:"shards"`
	RingAddr  string            `json:"ring_addr,omitempty"`
	NowMs     int64             `json:"now_ms"`
	// MaxPartitions is RegisterNodeRequest.MaxPartitions.
	MaxPartitions int32 `json:"max_partitions,omitempty"`
}

type cmdSetLiveness struct {
	Down  []int32 `json:"down,omitempty"`
	Up    []int32 `json:"up,omitempty"`
	NowMs int64   `json:"now_ms"`
}

// cmdAlterPartition is an AlterPartitionRequest from a leader store.
type cmdAlterPartition struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LeaderID       int32   `json:"leader_id"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

// cmdReassign starts or cancels reassignments (nil Replicas cancels).
type cmdReassign struct {
	Reassignments []Reassignment `json:"reassignments"`
}

// cmdDrainStore marks a store draining and reassigns its replicas away.
type cmdDrainStore struct {
	ID int32 `json:"id"`
}

// cmdShutdownStore starts a store's controlled shutdown: it is marked
// shutting down and its leaderships move to other in-sync replicas.
type cmdShutdownStore struct {
	ID int32 `json:"id"`
	// ShrinkISR also takes the store out of every ISR it can leave. A
	// flag rather than a change of meaning, so that commands logged before
	// it replay as they were first applied.
	ShrinkISR bool `json:"shrink_isr,omitempty"`
}

// cmdElectPreferred moves the leadership of every partition whose
// preferred replica is live, in sync and not leading to that replica.
// Apply decides which partitions, so the command carries nothing.
type cmdElectPreferred struct{}

func (c *command) payload() any {
	switch c.op {
	case opSetClusterID:
		return c.setClusterID
	case opCreateTopics:
		return c.createTopics
	case opDeleteTopics:
		return c.deleteTopics
	case opCreatePartitions:
		return c.createPartitions
	case opAlterConfigs:
		return c.alterConfigs
	case opRegisterNode:
		return c.registerNode
	case opSetLiveness:
		return c.setLiveness
	case opAlterPartition:
		return c.alterPartition
	case opReassign:
		return c.reassign
	case opDrainStore:
		return c.drainStore
	case opElectPreferred:
		return c.electPreferred
	case opShutdownStore:
		return c.shutdownStore
	case opSchema:
		return c.schema
	case opSecurity:
		return c.security
	}
	return nil
}

// newCommand wraps a payload into a command.
func newCommand(p any) command {
	switch p := p.(type) {
	case *cmdSetClusterID:
		return command{op: opSetClusterID, setClusterID: p}
	case *cmdCreateTopics:
		return command{op: opCreateTopics, createTopics: p}
	case *cmdDeleteTopics:
		return command{op: opDeleteTopics, deleteTopics: p}
	case *cmdCreatePartitions:
		return command{op: opCreatePartitions, createPartitions: p}
	case *cmdAlterConfigs:
		return command{op: opAlterConfigs, alterConfigs: p}
	case *cmdRegisterNode:
		return command{op: opRegisterNode, registerNode: p}
	case *cmdSetLiveness:
		return command{op: opSetLiveness, setLiveness: p}
	case *cmdAlterPartition:
		return command{op: opAlterPartition, alterPartition: p}
	case *cmdReassign:
		return command{op: opReassign, reassign: p}
	case *cmdDrainStore:
		return command{op: opDrainStore, drainStore: p}
	case *cmdElectPreferred:
		return command{op: opElectPreferred, electPreferred: p}
	case *cmdShutdownStore:
		return command{op: opShutdownStore, shutdownStore: p}
	case *cmdSchema:
		return command{op: opSchema, schema: p}
	case *cmdSecurity:
		return command{op: opSecurity, security: p}
	}
	panic(fmt.Sprintf("controller: no command for %T", p))
}

// encodeCommand serializes c.
func encodeCommand(c command) ([]byte, error) {
	p := c.payload()
	if p == nil {
		return nil, fmt.Errorf("%w: empty %s", ErrMalformedCommand, c.op)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformedCommand, c.op, err)
	}
	return append([]byte{commandVersion, byte(c.op)}, body...), nil
}

// decodeCommand parses a log entry. Every failure wraps ErrMalformedCommand.
func decodeCommand(b []byte) (command, error) {
	if len(b) < 2 {
		return command{}, fmt.Errorf("%w: %d bytes, want at least 2", ErrMalformedCommand, len(b))
	}
	if b[0] != commandVersion {
		return command{}, fmt.Errorf("%w: format version %d, want %d", ErrMalformedCommand, b[0], commandVersion)
	}
	c := command{op: op(b[1])}
	switch c.op {
	case opSetClusterID:
		c.setClusterID = new(cmdSetClusterID)
	case opCreateTopics:
		c.createTopics = new(cmdCreateTopics)
	case opDeleteTopics:
		c.deleteTopics = new(cmdDeleteTopics)
	case opCreatePartitions:
		c.createPartitions = new(cmdCreatePartitions)
	case opAlterConfigs:
		c.alterConfigs = new(cmdAlterConfigs)
	case opRegisterNode:
		c.registerNode = new(cmdRegisterNode)
	case opSetLiveness:
		c.setLiveness = new(cmdSetLiveness)
	case opAlterPartition:
		c.alterPartition = new(cmdAlterPartition)
	case opReassign:
		c.reassign = new(cmdReassign)
	case opDrainStore:
		c.drainStore = new(cmdDrainStore)
	case opElectPreferred:
		c.electPreferred = new(cmdElectPreferred)
	case opShutdownStore:
		c.shutdownStore = new(cmdShutdownStore)
	case opSchema:
		c.schema = new(cmdSchema)
	case opSecurity:
		c.security = new(cmdSecurity)
	default:
		return command{}, fmt.Errorf("%w: unknown op %d", ErrMalformedCommand, b[1])
	}
	if err := strictJSON(b[2:], c.payload()); err != nil {
		return command{}, fmt.Errorf("%w: %s: %v", ErrMalformedCommand, c.op, err)
	}
	return c, nil
}

// strictJSON decodes exactly one JSON value into v, refusing unknown fields,
// a null top level and trailing bytes.
func strictJSON(b []byte, v any) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return fmt.Errorf("null payload")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
