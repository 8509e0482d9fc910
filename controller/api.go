package controller

import "context"

// The client API. Every request and response below travels as JSON over
// HTTP/1.1 on the controller's port (see doc.go for the paths); Client
// speaks it, and *Controller implements the same methods in-process.

// API is the controller's client API, implemented by *Controller (in
// process, on the node itself) and by *Client (over the network, finding
// the leader).
type API interface {
	CreateTopics(ctx context.Context, req CreateTopicsRequest) (CreateTopicsResponse, error)
	DeleteTopics(ctx context.Context, req DeleteTopicsRequest) (TopicsResponse, error)
	CreatePartitions(ctx context.Context, req CreatePartitionsRequest) (TopicsResponse, error)
	AlterConfigs(ctx context.Context, req AlterConfigsRequest) (AlterConfigsResponse, error)
	DescribeConfigs(ctx context.Context, req DescribeConfigsRequest) (DescribeConfigsResponse, error)
	Metadata(ctx context.Context, req MetadataRequest) (MetadataResponse, error)
	Members
	ListNodes(ctx context.Context) (NodesResponse, error)
	ClusterInfo(ctx context.Context) (ClusterInfo, error)
	AddVoter(ctx context.Context, req AddVoterRequest) error
	RemoveVoter(ctx context.Context, req RemoveVoterRequest) error
	Replication
}

// Replication is the part of the API that moves leadership, ISRs and
// replicas.
type Replication interface {
	// AlterPartition is sent by a partition's leader store to change its
	// ISR (Kafka's AlterPartition, KIP-497).
	AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error)
	// AlterPartitionReassignments starts or cancels reassignments.
	AlterPartitionReassignments(ctx context.Context, req ReassignRequest) (ReassignResponse, error)
	// ListPartitionReassignments lists the reassignments in progress
	// (all of them when req.Topics is empty).
	ListPartitionReassignments(ctx context.Context, req ListReassignmentsRequest) (ListReassignmentsResponse, error)
	// DrainStore marks a store draining and reassigns every replica it
	// holds to other live stores; it answers at once with the progress.
	// Calling it again only reports progress.
	DrainStore(ctx context.Context, req DrainRequest) (DrainStatus, error)
}

// AlterPartitionRequest asks to set a partition's ISR. The controller
// refuses it (ErrStaleRequest) unless LeaderID and LeaderEpoch name the
// current leader and PartitionEpoch the current partition epoch; a new ISR
// member must be a live replica.
type AlterPartitionRequest struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LeaderID       int32   `json:"leader_id"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

// Reassignment is one partition's target replica list; nil Replicas
// cancels a reassignment in progress.
type Reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// ReassignRequest starts or cancels reassignments.
type ReassignRequest struct {
	Reassignments []Reassignment `json:"reassignments"`
}

// ReassignResponse has one error (nil on success) per reassignment, in
// order.
type ReassignResponse struct {
	Errors []*Error `json:"errors"`
}

// ListReassignmentsRequest names partitions; empty lists every
// reassignment in progress.
type ListReassignmentsRequest struct {
	Topics []TopicPartitions `json:"topics,omitempty"`
}

// TopicPartitions names some partitions of a topic.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// OngoingReassignment is a partition being moved, as Kafka's
// ListPartitionReassignments reports it.
type OngoingReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
}

// ListReassignmentsResponse lists reassignments in progress.
type ListReassignmentsResponse struct {
	Reassignments []OngoingReassignment `json:"reassignments"`
}

// DrainRequest names the store to drain.
type DrainRequest struct {
	ID int32 `json:"id"`
	// LeadershipOnly asks for a controlled shutdown instead of a
	// decommission: the store's leaderships move to other in-sync replicas
	// and it is not elected while it stops, but it keeps its replicas, and
	// the state clears when it registers again.
	LeadershipOnly bool `json:"leadership_only,omitempty"`
}

// DrainStatus is how far a drain has gone: the store can be removed once
// both counts are 0.
type DrainStatus struct {
	ID       int32 `json:"id"`
	Draining bool  `json:"draining"`
	// ShuttingDown is set by a LeadershipOnly request until the store
	// registers again.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// Replicas and Leaders count the partitions the store still holds a
	// copy of, and still leads.
	Replicas int `json:"replicas"`
	Leaders  int `json:"leaders"`
}

// Members is the part of the API a store or gateway needs to stay a
// member: register once, then heartbeat.
type Members interface {
	RegisterNode(ctx context.Context, req RegisterNodeRequest) (HeartbeatResponse, error)
	Heartbeat(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error)
}

// Error is an error as the client API carries it: Code is the wire name of
// one of this package's sentinels (errors.Is works on it), Message the full
// text.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel named by Code.
func (e *Error) Unwrap() error { return sentinelFor(e.Code) }

// toError converts err for the wire; nil stays nil. An *Error passes
// through, so a forwarded error keeps its code.
func toError(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Code: wireCode(err), Message: err.Error()}
}

// asError returns e as an error, nil for a nil *Error (which would
// otherwise be a non-nil interface).
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// NewTopic is one topic to create. Partitions and ReplicationFactor may be
// -1 for the defaults (1 and 1).
type NewTopic struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// CreateTopicsRequest creates topics. With ValidateOnly every check runs
// and nothing is created.
type CreateTopicsRequest struct {
	Topics       []NewTopic `json:"topics"`
	ValidateOnly bool       `json:"validate_only,omitempty"`
	// WaitMs, when positive, holds the answer until every live store that
	// leads one of the new partitions has created it (it has applied the
	// metadata version of the create), for at most WaitMs. A topic whose
	// stores did not make it in time is answered with ErrTimeout
	// (REQUEST_TIMED_OUT, as Kafka does); it exists all the same.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// RequestID, when set, makes the create idempotent: the controller
	// records it with each topic it creates, and a topic that exists
	// already under the same RequestID is answered as created (with its id
	// and partitions), not TOPIC_ALREADY_EXISTS. A client that retries a
	// create whose answer it lost, say because the leader died after
	// committing it, sends the same RequestID and recognises its own
	// topics. Client sets one when the caller has not. At most
	// MaxRequestIDLen bytes.
	RequestID string `json:"request_id,omitempty"`
}

// MaxRequestIDLen bounds CreateTopicsRequest.RequestID.
const MaxRequestIDLen = 128

// CreateTopicsResponse has one result per requested topic, in order.
type CreateTopicsResponse struct {
	Topics []CreateTopicResult `json:"topics"`
}

// CreateTopicResult is the outcome for one topic.
type CreateTopicResult struct {
	Name              string          `json:"name"`
	ID                TopicID         `json:"id,omitzero"`
	Partitions        []PartitionInfo `json:"partitions,omitempty"`
	ReplicationFactor int16           `json:"replication_factor,omitempty"`
	Error             *Error          `json:"error,omitempty"`
}

// Err is the result's error as an error (nil on success).
func (r CreateTopicResult) Err() error { return asError(r.Error) }

// DeleteTopicsRequest deletes topics by name or id.
type DeleteTopicsRequest struct {
	Topics []TopicRef `json:"topics"`
	// WaitMs: as in CreateTopicsRequest, until the stores that held the
	// partitions have deleted them.
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// CreatePartitionsRequest grows topics to new partition counts.
type CreatePartitionsRequest struct {
	Topics       []PartitionCount `json:"topics"`
	ValidateOnly bool             `json:"validate_only,omitempty"`
	// WaitMs: as in CreateTopicsRequest, for the new partitions.
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// TopicsResponse has one result per requested topic, in order.
type TopicsResponse struct {
	Topics []TopicResult `json:"topics"`
}

// TopicResult is the outcome for one topic.
type TopicResult struct {
	Name  string  `json:"name,omitempty"`
	ID    TopicID `json:"id,omitzero"`
	Error *Error  `json:"error,omitempty"`
}

// Err is the result's error as an error (nil on success).
func (r TopicResult) Err() error { return asError(r.Error) }

// AlterConfigsRequest changes the configs of topics or of the cluster
// defaults; see AlterConfigsResource for replace versus incremental.
type AlterConfigsRequest struct {
	Resources    []AlterConfigsResource `json:"resources"`
	ValidateOnly bool                   `json:"validate_only,omitempty"`
}

// AlterConfigsResponse has one result per resource, in order.
type AlterConfigsResponse struct {
	Resources []ResourceResult `json:"resources"`
}

// ResourceResult is the outcome for one resource.
type ResourceResult struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Error *Error `json:"error,omitempty"`
}

// Err is the result's error as an error (nil on success).
func (r ResourceResult) Err() error { return asError(r.Error) }

// ConfigResource names a topic (Type "topic") or the cluster defaults
// (Type "broker", Name "").
type ConfigResource struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// DescribeConfigsRequest describes resources.
type DescribeConfigsRequest struct {
	Resources []ConfigResource `json:"resources"`
}

// DescribeConfigsResponse has one result per resource, in order.
type DescribeConfigsResponse struct {
	Resources []DescribedConfigs `json:"resources"`
}

// DescribedConfigs lists every config of a resource with its effective
// value and source.
type DescribedConfigs struct {
	Type    string        `json:"type"`
	Name    string        `json:"name"`
	Configs []ConfigEntry `json:"configs,omitempty"`
	Error   *Error        `json:"error,omitempty"`
}

// Err is the result's error as an error (nil on success).
func (r DescribedConfigs) Err() error { return asError(r.Error) }

// MetadataRequest asks for some topics, or all of them when Topics is
// empty (DescribeTopics / ListTopics, and a gateway's Metadata).
type MetadataRequest struct {
	Topics []string `json:"topics,omitempty"`
}

// MetadataResponse is the cluster metadata a gateway answers Metadata with.
type MetadataResponse struct {
	ClusterID string `json:"cluster_id"`
	// LeaderID is the controller leader (-1 if unknown).
	LeaderID int32       `json:"leader_id"`
	Version  uint64      `json:"version"`
	Topics   []TopicInfo `json:"topics"`
	// Missing lists requested names that are not topics.
	Missing []string   `json:"missing,omitempty"`
	Nodes   []NodeInfo `json:"nodes"`
}

// RegisterNodeRequest registers (or re-registers, after a restart) a store
// or gateway. A store names its shard ring; a gateway has none.
type RegisterNodeRequest struct {
	ID        int32             `json:"id"`
	Kind      string            `json:"kind"`
	Addresses map[string]string `json:"addresses,omitempty"`
	Shards    int32             `json:"shards,omitempty"`
	RingAddr  string            `json:"ring_addr,omitempty"`
	// MaxPartitions is a store's partition budget: how many partition
	// replicas it can hold in all (0: no budget). Placement puts no more
	// on it, and a create that cannot be placed within the budgets is
	// refused whole.
	MaxPartitions int32 `json:"max_partitions,omitempty"`
	// KnownVersion is the metadata version the node already has (0: none);
	// the reply carries what changed since.
	KnownVersion uint64 `json:"known_version"`
	// AppliedVersion is the metadata version the node has acted on (a
	// store: created and deleted its partitions accordingly).
	AppliedVersion uint64 `json:"applied_version,omitempty"`
}

// HeartbeatRequest keeps a registered node's session alive.
type HeartbeatRequest struct {
	ID           int32  `json:"id"`
	KnownVersion uint64 `json:"known_version"`
	// AppliedVersion is the version the node has acted on; writes with
	// WaitMs wait for it.
	AppliedVersion uint64 `json:"applied_version,omitempty"`
	// WaitMs makes the heartbeat a long poll: when nothing changed since
	// KnownVersion, the leader holds the reply until something does or
	// WaitMs (at most the heartbeat interval) passes, so that changes reach
	// members at once instead of at their next heartbeat.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Stats is a store's report of its own storage, sent with every
	// heartbeat; nil from gateways and stores with nothing to say.
	Stats *StoreStats `json:"stats,omitempty"`
}

// StoreStats is what a store says of the data it holds. Only the store
// can count it (the cold bytes are in its own tier catalog), so it reports
// them, and ListNodes shows them for every store.
type StoreStats struct {
	// DiskBytes is the size of its local partitions' logs; ColdBytes that
	// of their segments in the cold tier.
	DiskBytes int64 `json:"disk_bytes"`
	ColdBytes int64 `json:"cold_bytes"`
	// Partitions is how many partitions it holds locally.
	Partitions int `json:"partitions"`
}

// HeartbeatResponse carries the metadata changes since the node's known
// version, and the timing the node should keep.
type HeartbeatResponse struct {
	Delta               Delta `json:"delta"`
	HeartbeatIntervalMs int64 `json:"heartbeat_interval_ms"`
	SessionTimeoutMs    int64 `json:"session_timeout_ms"`
	// HeldMs is how long a long poll held the reply after the leader first
	// renewed the session, which it renewed again at the end: the session
	// runs from at least the request's sending plus HeldMs, and a store's
	// lease may count from there.
	HeldMs int64 `json:"held_ms,omitempty"`
}

// NodesResponse lists registered nodes.
type NodesResponse struct {
	Nodes []NodeInfo `json:"nodes"`
}

// Voter is one member of the Raft configuration.
type Voter struct {
	ID      int32  `json:"id"`
	Address string `json:"address"`
	// Suffrage is Raft's: Voter, Nonvoter or Staging.
	Suffrage string `json:"suffrage"`
}

// ClusterInfo describes the controller cluster as the answering node sees
// it.
type ClusterInfo struct {
	ClusterID  string  `json:"cluster_id"`
	NodeID     int32   `json:"node_id"` // the node that answered
	State      string  `json:"state"`   // its Raft state: Leader, Follower, Candidate, Shutdown
	LeaderID   int32   `json:"leader_id"`
	LeaderAddr string  `json:"leader_addr"`
	Voters     []Voter `json:"voters"`
	// Joining lists the controllers added as non-voters that have not
	// caught up yet; each becomes a voter once it has.
	Joining []Voter `json:"joining,omitempty"`
	// Version is the answering node's metadata version, and AppliedIndex
	// its last applied Raft index: a follower that caught up has the
	// leader's.
	Version      uint64 `json:"version"`
	AppliedIndex uint64 `json:"applied_index"`
}

// AddVoterRequest adds a controller to the Raft configuration.
type AddVoterRequest struct {
	ID      int32  `json:"id"`
	Address string `json:"address"`
}

// RemoveVoterRequest removes a controller from the Raft configuration.
type RemoveVoterRequest struct {
	ID int32 `json:"id"`
}

// notLeaderBody is the body of a 421 answer: the error and where the
// leader is.
type notLeaderBody struct {
	Error      *Error `json:"error"`
	LeaderID   int32  `json:"leader_id"`
	LeaderAddr string `json:"leader_addr"`
}
