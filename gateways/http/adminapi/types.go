package adminapi

// The JSON shapes of ops-api.md. Sources fill the ones they own directly,
// so tools/cli converts once and the API re-shapes nothing.

// Cluster is the answer of GET /api/cluster.
type Cluster struct {
	ClusterID  string       `json:"cluster_id"`
	Controller Controller   `json:"controller"`
	Stores     []Store      `json:"stores"`
	Gateways   []Gateway    `json:"gateways"`
	Leadership []Leadership `json:"leadership"`
}

// Controller is the Raft quorum.
type Controller struct {
	Leader    int32   `json:"leader"`
	Voters    []Voter `json:"voters"`
	NonVoters []Voter `json:"non_voters"`
}

// Voter is a controller node.
type Voter struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
}

// Store is a storage node. DiskBytes and ColdBytes are what the store last
// reported to the controller with its heartbeats (its own catalog knows
// them), 0 before its first report.
type Store struct {
	ID         int32  `json:"id"`
	Addr       string `json:"addr"`
	Live       bool   `json:"live"`
	Draining   bool   `json:"draining"`
	Partitions int    `json:"partitions"`
	Leaders    int    `json:"leaders"`
	DiskBytes  int64  `json:"disk_bytes"`
	ColdBytes  int64  `json:"cold_bytes"`
}

// Gateway is a registered gateway.
type Gateway struct {
	ID   int32  `json:"id"`
	Kind string `json:"kind"`
	Addr string `json:"addr"`
}

// Leadership is a partition's leader and replicas.
type Leadership struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

// TopicMeta is what the controller knows of a topic.
type TopicMeta struct {
	Name              string
	ID                string
	ReplicationFactor int
	Internal          bool
	Iceberg           bool
	Partitions        []PartitionMeta
}

// PartitionMeta is a partition's placement.
type PartitionMeta struct {
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
}

// PartitionStats is what the log says of a partition.
type PartitionStats struct {
	LogStart         int64
	HighWatermark    int64
	LastStable       int64
	LocalBytes       int64
	ColdBytes        int64
	TierBacklogBytes int64
}

// Fetched is one fetch's answer.
type Fetched struct {
	Batches       []byte
	HighWatermark int64
	LogStart      int64
}

// Config is one topic config.
type Config struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	IsDefault bool   `json:"is_default"`
	Dynamic   bool   `json:"dynamic"`
	Doc       string `json:"doc"`
}

// Schema is a registered schema: its type (AVRO, PROTOBUF or JSON), its
// text, and the schemas its references import, transitively, each before
// the schemas that use it (an Avro named type must be parsed before a
// schema naming it).
type Schema struct {
	Type string
	Text string
	Refs []SchemaRef
}

// SchemaRef is a schema another imports: Name is the reference's name (a
// Protobuf import path, a JSON $ref URL; Avro goes by the types' names).
type SchemaRef struct {
	Name string
	Text string
}

// GroupSummary is a group as the coordinator lists it.
type GroupSummary struct {
	Group    string
	Type     string // classic, consumer or share
	State    string
	Protocol string
}

// Group is a described group; for a share group Offsets are the share
// partitions' start offsets.
type Group struct {
	Group    string
	Type     string
	State    string
	Protocol string
	Members  []Member
	Offsets  []CommittedOffset
}

// Member is a group member.
type Member struct {
	MemberID    string       `json:"member_id"`
	ClientID    string       `json:"client_id"`
	Host        string       `json:"host"`
	Assignments []Assignment `json:"assignments"`
}

// Assignment is a member's partitions of one topic.
type Assignment struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// CommittedOffset is a group's committed offset of a partition.
type CommittedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// IcebergTable is the status of one Iceberg topic.
type IcebergTable struct {
	Topic        string `json:"topic"`
	Table        string `json:"table"`
	LastCommitMs int64  `json:"last_commit_ms"`
	LagRecords   int64  `json:"lag_records"`
	LagMs        int64  `json:"lag_ms"`
	Files        int64  `json:"files"`
	Bytes        int64  `json:"bytes"`
	SnapshotID   int64  `json:"snapshot_id"`
}
