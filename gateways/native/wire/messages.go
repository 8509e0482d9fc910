package wire

import "fmt"

// Every request payload starts with its correlation id; every response
// payload with Head. The message types below are the rest of each payload,
// in PROTOCOL.md's order. Decoders never copy record bytes: Records fields
// alias the payload they were decoded from.

// Head opens every response: the request's correlation id, a Kafka error
// code (0: none), how long the client should hold back (throttle), the node
// the client should rather ask (leader hint, -1: none) and a message for
// humans, empty on success.
type Head struct {
	Corr       uint32
	Code       int16
	ThrottleMs int32
	LeaderHint int32
	Message    string
}

// AppendHead appends h.
func AppendHead(b []byte, h Head) []byte {
	b = AppendU32(b, h.Corr)
	b = AppendI16(b, h.Code)
	b = AppendI32(b, h.ThrottleMs)
	b = AppendI32(b, h.LeaderHint)
	return AppendStr(b, h.Message)
}

// ReadHead reads a response head.
func ReadHead(r *Reader) Head {
	return Head{Corr: r.U32("corr"), Code: r.I16("error code"), ThrottleMs: r.I32("throttle ms"),
		LeaderHint: r.I32("leader hint"), Message: r.Str("error message")}
}

// Handshake is the first request on a connection.
type Handshake struct {
	Version       uint16 // protocol revision the client speaks (1)
	Features      uint64 // Feature* bits the client wants
	MaxFrameBytes uint32 // largest frame the client accepts; 0: no wish
	ClientID      string
	// AuthMechanism names the SASL mechanism the client authenticates
	// with next (SaslAuthenticate frames); "" for none.
	AuthMechanism string
	// Auth is reserved and must be empty: SASL messages travel in
	// SaslAuthenticate frames, which can answer them.
	Auth []byte
}

func (m *Handshake) Append(b []byte) []byte {
	b = AppendU16(b, m.Version)
	b = AppendU64(b, m.Features)
	b = AppendU32(b, m.MaxFrameBytes)
	b = AppendStr(b, m.ClientID)
	b = AppendStr(b, m.AuthMechanism)
	return AppendBytes(b, m.Auth)
}

func (m *Handshake) Decode(r *Reader) error {
	m.Version = r.U16("version")
	m.Features = r.U64("features")
	m.MaxFrameBytes = r.U32("max frame bytes")
	m.ClientID = r.Str("client id")
	m.AuthMechanism = r.Str("auth mechanism")
	m.Auth = r.Bytes("auth bytes")
	return r.End("Handshake")
}

// HandshakeResponse is the server's half.
type HandshakeResponse struct {
	Version       uint16
	Features      uint64 // the bits both sides have
	MaxFrameBytes uint32 // largest request frame the server reads
	ClusterID     string
	NodeID        int32
}

func (m *HandshakeResponse) Append(b []byte) []byte {
	b = AppendU16(b, m.Version)
	b = AppendU64(b, m.Features)
	b = AppendU32(b, m.MaxFrameBytes)
	b = AppendStr(b, m.ClusterID)
	return AppendI32(b, m.NodeID)
}

func (m *HandshakeResponse) Decode(r *Reader) error {
	m.Version = r.U16("version")
	m.Features = r.U64("features")
	m.MaxFrameBytes = r.U32("max frame bytes")
	m.ClusterID = r.Str("cluster id")
	m.NodeID = r.I32("node id")
	return r.End("HandshakeResponse")
}

// SaslAuthenticate carries the client's next SASL message.
type SaslAuthenticate struct{ Auth []byte }

func (m *SaslAuthenticate) Append(b []byte) []byte { return AppendBytes(b, m.Auth) }

func (m *SaslAuthenticate) Decode(r *Reader) error {
	m.Auth = r.Bytes("auth bytes")
	return r.End("SaslAuthenticate")
}

// SaslAuthenticateResponse carries the server's answer to it.
type SaslAuthenticateResponse struct{ Auth []byte }

func (m *SaslAuthenticateResponse) Append(b []byte) []byte { return AppendBytes(b, m.Auth) }

func (m *SaslAuthenticateResponse) Decode(r *Reader) error {
	m.Auth = r.Bytes("auth bytes")
	return r.End("SaslAuthenticateResponse")
}

// Lookup asks for topics by name.
type Lookup struct{ Names []string }

func (m *Lookup) Append(b []byte) []byte {
	b = AppendU16(b, uint16(len(m.Names)))
	for _, n := range m.Names {
		b = AppendStr(b, n)
	}
	return b
}

func (m *Lookup) Decode(r *Reader) error {
	n := r.Count("topic count", 2)
	m.Names = m.Names[:0]
	for range n {
		m.Names = append(m.Names, r.Str("topic name"))
	}
	return r.End("Lookup")
}

// TopicInfo is a topic as Lookup, ListTopics and CreateTopic answer it.
type TopicInfo struct {
	Code              int16 // per topic: UNKNOWN_TOPIC_OR_PARTITION for a missing one
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
}

const topicInfoMin = 2 + 2 + 16 + 4 + 2

func appendTopicInfo(b []byte, t *TopicInfo) []byte {
	b = AppendI16(b, t.Code)
	b = AppendStr(b, t.Name)
	b = append(b, t.ID[:]...)
	b = AppendI32(b, t.Partitions)
	return AppendI16(b, t.ReplicationFactor)
}

func readTopicInfo(r *Reader) TopicInfo {
	return TopicInfo{Code: r.I16("topic error code"), Name: r.Str("topic name"), ID: r.ID("topic id"),
		Partitions: r.I32("partition count"), ReplicationFactor: r.I16("replication factor")}
}

// Topics answers Lookup and ListTopics.
type Topics struct{ Topics []TopicInfo }

func (m *Topics) Append(b []byte) []byte {
	b = AppendU32(b, uint32(len(m.Topics)))
	for i := range m.Topics {
		b = appendTopicInfo(b, &m.Topics[i])
	}
	return b
}

func (m *Topics) Decode(r *Reader) error {
	n := r.U32("topic count")
	if r.Err() == nil && uint64(n)*topicInfoMin > uint64(r.Len()) {
		return fmt.Errorf("%w: %d topics cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Topics = m.Topics[:0]
	for range n {
		m.Topics = append(m.Topics, readTopicInfo(r))
	}
	return r.End("Topics")
}

// Produce appends RecordBatch v2 bytes, exactly as stored, to one
// partition.
type Produce struct {
	TopicID   [16]byte
	Partition int32
	Acks      int8 // 0, 1 or -1 (all)
	TimeoutMs int32
	Records   []byte
}

func (m *Produce) Append(b []byte) []byte {
	b = append(b, m.TopicID[:]...)
	b = AppendI32(b, m.Partition)
	b = append(b, byte(m.Acks))
	b = AppendI32(b, m.TimeoutMs)
	return AppendBytes(b, m.Records)
}

func (m *Produce) Decode(r *Reader) error {
	m.TopicID = r.ID("topic id")
	m.Partition = r.I32("partition")
	m.Acks = int8(r.U8("acks"))
	m.TimeoutMs = r.I32("timeout ms")
	m.Records = r.Bytes("records")
	return r.End("Produce")
}

// ProduceResponse: where the batches landed.
type ProduceResponse struct {
	BaseOffset     int64
	LogAppendTime  int64 // -1 for CreateTime topics
	LogStartOffset int64
}

func (m *ProduceResponse) Append(b []byte) []byte {
	b = AppendI64(b, m.BaseOffset)
	b = AppendI64(b, m.LogAppendTime)
	return AppendI64(b, m.LogStartOffset)
}

func (m *ProduceResponse) Decode(r *Reader) error {
	m.BaseOffset = r.I64("base offset")
	m.LogAppendTime = r.I64("log append time")
	m.LogStartOffset = r.I64("log start offset")
	return r.End("ProduceResponse")
}

// FetchPartition is one partition of a Fetch.
type FetchPartition struct {
	TopicID   [16]byte
	Partition int32
	Offset    int64
	MaxBytes  int32
}

const fetchPartitionSize = 16 + 4 + 8 + 4

// Fetch reads partitions from offsets, long-polling up to MaxWaitMs for
// MinBytes.
type Fetch struct {
	MaxWaitMs  int32
	MinBytes   int32
	MaxBytes   int32
	Partitions []FetchPartition
	// Commit, when not nil, is committed before the fetch is served
	// (FeatureFetchCommit); it travels as a trailer after the partitions.
	// Decode sets HasCommit when the trailer was there (and keeps Commit
	// allocated for reuse either way).
	Commit    *FetchCommit
	HasCommit bool
}

func (m *Fetch) Append(b []byte) []byte {
	b = AppendI32(b, m.MaxWaitMs)
	b = AppendI32(b, m.MinBytes)
	b = AppendI32(b, m.MaxBytes)
	b = AppendU16(b, uint16(len(m.Partitions)))
	for i := range m.Partitions {
		p := &m.Partitions[i]
		b = append(b, p.TopicID[:]...)
		b = AppendI32(b, p.Partition)
		b = AppendI64(b, p.Offset)
		b = AppendI32(b, p.MaxBytes)
	}
	if m.Commit != nil {
		b = m.Commit.Append(b)
	}
	return b
}

// Decode reuses m.Partitions' backing array, and m.Commit's when bytes
// follow the partitions (the commit trailer).
func (m *Fetch) Decode(r *Reader) error {
	m.MaxWaitMs = r.I32("max wait ms")
	m.MinBytes = r.I32("min bytes")
	m.MaxBytes = r.I32("max bytes")
	n := r.Count("partition count", fetchPartitionSize)
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, FetchPartition{TopicID: r.ID("topic id"), Partition: r.I32("partition"),
			Offset: r.I64("offset"), MaxBytes: r.I32("partition max bytes")})
	}
	if r.Err() == nil && r.Len() > 0 {
		if m.Commit == nil {
			m.Commit = &FetchCommit{}
		}
		m.Commit.decode(r)
		m.HasCommit = true
	} else {
		m.HasCommit = false
	}
	return r.End("Fetch")
}

// FetchedPartition is one partition of a FetchResponse.
type FetchedPartition struct {
	TopicID        [16]byte
	Partition      int32
	Code           int16
	HighWatermark  int64
	LogStartOffset int64
	Records        []byte
}

// FetchedPartitionHeadSize is the bytes before a partition's records,
// including their u32 length: the server writes that head and then the
// records from the segment file.
const FetchedPartitionHeadSize = 16 + 4 + 2 + 8 + 8 + 4

// AppendFetchedHead appends a partition's head, with a records length of n;
// the n record bytes follow it on the wire.
func AppendFetchedHead(b []byte, p *FetchedPartition, n int) []byte {
	b = append(b, p.TopicID[:]...)
	b = AppendI32(b, p.Partition)
	b = AppendI16(b, p.Code)
	b = AppendI64(b, p.HighWatermark)
	b = AppendI64(b, p.LogStartOffset)
	return AppendU32(b, uint32(n))
}

// FetchResponse is the partitions fetched, in request order. When the
// Fetch carried a commit, the commit's outcome follows the partitions
// (HasCommit, CommitCode, CommitMessage).
type FetchResponse struct {
	Partitions    []FetchedPartition
	HasCommit     bool
	CommitCode    int16
	CommitMessage string
}

func (m *FetchResponse) Append(b []byte) []byte {
	b = AppendU16(b, uint16(len(m.Partitions)))
	for i := range m.Partitions {
		p := &m.Partitions[i]
		b = AppendFetchedHead(b, p, len(p.Records))
		b = append(b, p.Records...)
	}
	if m.HasCommit {
		b = AppendCommitResult(b, m.CommitCode, m.CommitMessage)
	}
	return b
}

// AppendCommitResult appends a Fetch response's commit trailer.
func AppendCommitResult(b []byte, code int16, msg string) []byte {
	b = AppendI16(b, code)
	return AppendStr(b, msg)
}

func (m *FetchResponse) Decode(r *Reader) error {
	n := r.Count("partition count", FetchedPartitionHeadSize)
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, FetchedPartition{TopicID: r.ID("topic id"), Partition: r.I32("partition"),
			Code: r.I16("error code"), HighWatermark: r.I64("high watermark"), LogStartOffset: r.I64("log start offset"),
			Records: r.Bytes("records")})
	}
	m.HasCommit, m.CommitCode, m.CommitMessage = false, 0, ""
	if r.Err() == nil && r.Len() > 0 {
		m.HasCommit = true
		m.CommitCode = r.I16("commit error code")
		m.CommitMessage = r.Str("commit message")
	}
	return r.End("FetchResponse")
}

// ListOffsets finds an offset by time: Unix milliseconds, or -1 (latest),
// -2 (earliest).
type ListOffsets struct {
	TopicID   [16]byte
	Partition int32
	Timestamp int64
}

func (m *ListOffsets) Append(b []byte) []byte {
	b = append(b, m.TopicID[:]...)
	b = AppendI32(b, m.Partition)
	return AppendI64(b, m.Timestamp)
}

func (m *ListOffsets) Decode(r *Reader) error {
	m.TopicID = r.ID("topic id")
	m.Partition = r.I32("partition")
	m.Timestamp = r.I64("timestamp")
	return r.End("ListOffsets")
}

// OffsetAt answers ListOffsets: the first offset whose timestamp is at or
// after the one asked (-1 when none is), and that record's timestamp.
type OffsetAt struct {
	Offset    int64
	Timestamp int64
}

func (m *OffsetAt) Append(b []byte) []byte {
	b = AppendI64(b, m.Offset)
	return AppendI64(b, m.Timestamp)
}

func (m *OffsetAt) Decode(r *Reader) error {
	m.Offset = r.I64("offset")
	m.Timestamp = r.I64("timestamp")
	return r.End("OffsetAt")
}

// Config is a topic config's key and value.
type Config struct{ Key, Value string }

// CreateTopic creates a topic.
type CreateTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           []Config
}

func (m *CreateTopic) Append(b []byte) []byte {
	b = AppendStr(b, m.Name)
	b = AppendI32(b, m.Partitions)
	b = AppendI16(b, m.ReplicationFactor)
	b = AppendU16(b, uint16(len(m.Configs)))
	for _, c := range m.Configs {
		b = AppendStr(b, c.Key)
		b = AppendStr(b, c.Value)
	}
	return b
}

func (m *CreateTopic) Decode(r *Reader) error {
	m.Name = r.Str("topic name")
	m.Partitions = r.I32("partitions")
	m.ReplicationFactor = r.I16("replication factor")
	n := r.Count("config count", 4)
	m.Configs = m.Configs[:0]
	for range n {
		m.Configs = append(m.Configs, Config{Key: r.Str("config key"), Value: r.Str("config value")})
	}
	return r.End("CreateTopic")
}

// TopicName is the body of DeleteTopic and Describe.
type TopicName struct{ Name string }

func (m *TopicName) Append(b []byte) []byte { return AppendStr(b, m.Name) }

func (m *TopicName) Decode(r *Reader) error {
	m.Name = r.Str("topic name")
	return r.End("topic name")
}

// PartitionState is one partition of a Describe answer.
type PartitionState struct {
	Partition      int32
	Code           int16
	Leader         int32
	LeaderEpoch    int32
	LogStartOffset int64
	HighWatermark  int64
}

const partitionStateSize = 4 + 2 + 4 + 4 + 8 + 8

// Description answers Describe: the topic and its partitions' logs.
type Description struct {
	Topic      TopicInfo
	Configs    []Config
	Partitions []PartitionState
}

func (m *Description) Append(b []byte) []byte {
	b = appendTopicInfo(b, &m.Topic)
	b = AppendU16(b, uint16(len(m.Configs)))
	for _, c := range m.Configs {
		b = AppendStr(b, c.Key)
		b = AppendStr(b, c.Value)
	}
	b = AppendU32(b, uint32(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = AppendI32(b, p.Partition)
		b = AppendI16(b, p.Code)
		b = AppendI32(b, p.Leader)
		b = AppendI32(b, p.LeaderEpoch)
		b = AppendI64(b, p.LogStartOffset)
		b = AppendI64(b, p.HighWatermark)
	}
	return b
}

func (m *Description) Decode(r *Reader) error {
	m.Topic = readTopicInfo(r)
	n := r.Count("config count", 4)
	m.Configs = m.Configs[:0]
	for range n {
		m.Configs = append(m.Configs, Config{Key: r.Str("config key"), Value: r.Str("config value")})
	}
	np := r.U32("partition count")
	if r.Err() == nil && uint64(np)*partitionStateSize > uint64(r.Len()) {
		return fmt.Errorf("%w: %d partitions cannot fit in %d bytes", ErrMalformed, np, r.Len())
	}
	m.Partitions = m.Partitions[:0]
	for range np {
		m.Partitions = append(m.Partitions, PartitionState{Partition: r.I32("partition"), Code: r.I16("error code"),
			Leader: r.I32("leader"), LeaderEpoch: r.I32("leader epoch"), LogStartOffset: r.I64("log start offset"),
			HighWatermark: r.I64("high watermark")})
	}
	return r.End("Description")
}

// PartitionOffset is a partition and an offset.
type PartitionOffset struct {
	Partition int32
	Offset    int64
}

func appendOffsets(b []byte, os []PartitionOffset) []byte {
	b = AppendU32(b, uint32(len(os)))
	for _, o := range os {
		b = AppendI32(b, o.Partition)
		b = AppendI64(b, o.Offset)
	}
	return b
}

func readOffsets(r *Reader, dst []PartitionOffset) ([]PartitionOffset, error) {
	n := r.U32("offset count")
	if r.Err() == nil && uint64(n)*12 > uint64(r.Len()) {
		return dst, fmt.Errorf("%w: %d offsets cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	dst = dst[:0]
	for range n {
		dst = append(dst, PartitionOffset{Partition: r.I32("partition"), Offset: r.I64("offset")})
	}
	return dst, r.Err()
}

// OffsetCommit stores a group's offsets for a topic in __consumer_offsets,
// where Kafka clients of the same group find them. MemberID and Generation
// are the native group membership's ("" and -1 outside one).
type OffsetCommit struct {
	Group      string
	TopicID    [16]byte
	MemberID   string
	Generation int32
	Offsets    []PartitionOffset
}

func (m *OffsetCommit) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	b = append(b, m.TopicID[:]...)
	b = AppendStr(b, m.MemberID)
	b = AppendI32(b, m.Generation)
	return appendOffsets(b, m.Offsets)
}

func (m *OffsetCommit) Decode(r *Reader) error {
	m.Group = r.Str("group")
	m.TopicID = r.ID("topic id")
	m.MemberID = r.Str("member id")
	m.Generation = r.I32("generation")
	var err error
	if m.Offsets, err = readOffsets(r, m.Offsets); err != nil {
		return err
	}
	return r.End("OffsetCommit")
}

// OffsetFetch asks for a group's committed offsets of a topic.
type OffsetFetch struct {
	Group   string
	TopicID [16]byte
}

func (m *OffsetFetch) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	return append(b, m.TopicID[:]...)
}

func (m *OffsetFetch) Decode(r *Reader) error {
	m.Group = r.Str("group")
	m.TopicID = r.ID("topic id")
	return r.End("OffsetFetch")
}

// Offsets answers OffsetFetch: the partitions that have a commit.
type Offsets struct{ Offsets []PartitionOffset }

func (m *Offsets) Append(b []byte) []byte { return appendOffsets(b, m.Offsets) }

func (m *Offsets) Decode(r *Reader) error {
	var err error
	if m.Offsets, err = readOffsets(r, m.Offsets); err != nil {
		return err
	}
	return r.End("Offsets")
}

// JoinGroup joins (or, with a member id, rejoins) a native consumer group
// reading one topic; the gateway assigns the partitions.
type JoinGroup struct {
	Group            string
	TopicID          [16]byte
	MemberID         string // "" for a new member
	SessionTimeoutMs int32
}

func (m *JoinGroup) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	b = append(b, m.TopicID[:]...)
	b = AppendStr(b, m.MemberID)
	return AppendI32(b, m.SessionTimeoutMs)
}

func (m *JoinGroup) Decode(r *Reader) error {
	m.Group = r.Str("group")
	m.TopicID = r.ID("topic id")
	m.MemberID = r.Str("member id")
	m.SessionTimeoutMs = r.I32("session timeout ms")
	return r.End("JoinGroup")
}

// Assignment answers JoinGroup.
type Assignment struct {
	MemberID   string
	Generation int32
	Partitions []int32
}

func (m *Assignment) Append(b []byte) []byte {
	b = AppendStr(b, m.MemberID)
	b = AppendI32(b, m.Generation)
	b = AppendU32(b, uint32(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = AppendI32(b, p)
	}
	return b
}

func (m *Assignment) Decode(r *Reader) error {
	m.MemberID = r.Str("member id")
	m.Generation = r.I32("generation")
	n := r.U32("partition count")
	if r.Err() == nil && uint64(n)*4 > uint64(r.Len()) {
		return fmt.Errorf("%w: %d partitions cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, r.I32("partition"))
	}
	return r.End("Assignment")
}

// GroupMember names a member of a group: the body of Heartbeat and
// LeaveGroup.
type GroupMember struct {
	Group      string
	MemberID   string
	Generation int32
}

func (m *GroupMember) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	b = AppendStr(b, m.MemberID)
	return AppendI32(b, m.Generation)
}

func (m *GroupMember) Decode(r *Reader) error {
	m.Group = r.Str("group")
	m.MemberID = r.Str("member id")
	m.Generation = r.I32("generation")
	return r.End("GroupMember")
}

// SubscribePartition is a partition of a Subscribe and where to start.
type SubscribePartition struct {
	TopicID   [16]byte
	Partition int32
	Offset    int64
}

// Subscribe starts a server-push stream of the partitions' records. The
// gateway answers with the head alone, then pushes FetchResponse bodies
// under the same opcode and correlation id while the subscription has
// credit: each push spends its records' bytes, and Credit gives them back.
type Subscribe struct {
	MaxBytes    int32 // bound of one push
	CreditBytes int64 // the initial window
	Partitions  []SubscribePartition
}

func (m *Subscribe) Append(b []byte) []byte {
	b = AppendI32(b, m.MaxBytes)
	b = AppendI64(b, m.CreditBytes)
	b = AppendU16(b, uint16(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = append(b, p.TopicID[:]...)
		b = AppendI32(b, p.Partition)
		b = AppendI64(b, p.Offset)
	}
	return b
}

func (m *Subscribe) Decode(r *Reader) error {
	m.MaxBytes = r.I32("max bytes")
	m.CreditBytes = r.I64("credit bytes")
	n := r.Count("partition count", 28)
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, SubscribePartition{TopicID: r.ID("topic id"), Partition: r.I32("partition"), Offset: r.I64("offset")})
	}
	return r.End("Subscribe")
}

// Credit gives a subscription (named by its Subscribe's correlation id)
// bytes back; it gets no answer. Unsubscribe's body is Credit's with no
// bytes.
type Credit struct {
	Subscription uint32
	Bytes        int64
}

func (m *Credit) Append(b []byte) []byte {
	b = AppendU32(b, m.Subscription)
	return AppendI64(b, m.Bytes)
}

func (m *Credit) Decode(r *Reader) error {
	m.Subscription = r.U32("subscription")
	m.Bytes = r.I64("credit bytes")
	return r.End("Credit")
}

// AlterConfigs sets topic configs and, with Delete, returns them to their
// defaults.
type AlterConfigs struct {
	Name    string
	Set     []Config
	Deleted []string
}

func (m *AlterConfigs) Append(b []byte) []byte {
	b = AppendStr(b, m.Name)
	b = AppendU16(b, uint16(len(m.Set)))
	for _, c := range m.Set {
		b = AppendStr(b, c.Key)
		b = AppendStr(b, c.Value)
	}
	b = AppendU16(b, uint16(len(m.Deleted)))
	for _, k := range m.Deleted {
		b = AppendStr(b, k)
	}
	return b
}

func (m *AlterConfigs) Decode(r *Reader) error {
	m.Name = r.Str("topic name")
	n := r.Count("config count", 4)
	m.Set = m.Set[:0]
	for range n {
		m.Set = append(m.Set, Config{Key: r.Str("config key"), Value: r.Str("config value")})
	}
	n = r.Count("deleted count", 2)
	m.Deleted = m.Deleted[:0]
	for range n {
		m.Deleted = append(m.Deleted, r.Str("config key"))
	}
	return r.End("AlterConfigs")
}
