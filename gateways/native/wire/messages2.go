package wire

import "fmt"

// Messages of the operations added after the first set: ProduceMany,
// InitProducerID, the group operations and the commit a Fetch may carry.

// ManyPart is one partition's batches in a ProduceMany.
type ManyPart struct {
	TopicID   [16]byte
	Partition int32
	Records   []byte
}

const manyPartMin = 16 + 4 + 4

// ProduceMany carries batches for many partitions in one request, as a
// Kafka produce does, so a producer pays one round trip for all the
// partitions it has records for.
type ProduceMany struct {
	Acks       int8
	TimeoutMs  int32
	Partitions []ManyPart
}

func (m *ProduceMany) Append(b []byte) []byte {
	b = append(b, byte(m.Acks))
	b = AppendI32(b, m.TimeoutMs)
	b = AppendU32(b, uint32(len(m.Partitions)))
	for i := range m.Partitions {
		p := &m.Partitions[i]
		b = append(b, p.TopicID[:]...)
		b = AppendI32(b, p.Partition)
		b = AppendBytes(b, p.Records)
	}
	return b
}

// Decode reuses m.Partitions' backing array; Records alias the payload.
func (m *ProduceMany) Decode(r *Reader) error {
	m.Acks = int8(r.U8("acks"))
	m.TimeoutMs = r.I32("timeout ms")
	n := r.U32("partition count")
	if r.Err() == nil && uint64(n)*manyPartMin > uint64(r.Len()) {
		return fmt.Errorf("%w: %d partitions cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, ManyPart{TopicID: r.ID("topic id"), Partition: r.I32("partition"), Records: r.Bytes("records")})
	}
	return r.End("ProduceMany")
}

// ManyResult is one partition's outcome in a ProduceManyResponse.
type ManyResult struct {
	TopicID        [16]byte
	Partition      int32
	Code           int16
	LeaderHint     int32
	BaseOffset     int64
	LogAppendTime  int64
	LogStartOffset int64
	Message        string
}

const manyResultMin = 16 + 4 + 2 + 4 + 8 + 8 + 8 + 2

// ProduceManyResponse answers ProduceMany, a result per partition in
// request order.
type ProduceManyResponse struct{ Partitions []ManyResult }

func (m *ProduceManyResponse) Append(b []byte) []byte {
	b = AppendU32(b, uint32(len(m.Partitions)))
	for i := range m.Partitions {
		p := &m.Partitions[i]
		b = append(b, p.TopicID[:]...)
		b = AppendI32(b, p.Partition)
		b = AppendI16(b, p.Code)
		b = AppendI32(b, p.LeaderHint)
		b = AppendI64(b, p.BaseOffset)
		b = AppendI64(b, p.LogAppendTime)
		b = AppendI64(b, p.LogStartOffset)
		b = AppendStr(b, p.Message)
	}
	return b
}

func (m *ProduceManyResponse) Decode(r *Reader) error {
	n := r.U32("partition count")
	if r.Err() == nil && uint64(n)*manyResultMin > uint64(r.Len()) {
		return fmt.Errorf("%w: %d results cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, ManyResult{TopicID: r.ID("topic id"), Partition: r.I32("partition"),
			Code: r.I16("error code"), LeaderHint: r.I32("leader hint"), BaseOffset: r.I64("base offset"),
			LogAppendTime: r.I64("log append time"), LogStartOffset: r.I64("log start offset"), Message: r.Str("message")})
	}
	return r.End("ProduceManyResponse")
}

// Empty is the body of a request with nothing after its correlation id
// (ListTopics, InitProducerID, ListGroups).
type Empty struct{}

func (*Empty) Append(b []byte) []byte { return b }

func (*Empty) Decode(r *Reader) error { return r.End("empty request") }

// ProducerID answers InitProducerID: an idempotent producer's id and
// epoch, from the cluster's producer id allocator.
type ProducerID struct {
	ID    int64
	Epoch int16
}

func (m *ProducerID) Append(b []byte) []byte {
	b = AppendI64(b, m.ID)
	return AppendI16(b, m.Epoch)
}

func (m *ProducerID) Decode(r *Reader) error {
	m.ID = r.I64("producer id")
	m.Epoch = r.I16("producer epoch")
	return r.End("ProducerID")
}

// GroupName names a group: the body of DescribeGroup.
type GroupName struct{ Group string }

func (m *GroupName) Append(b []byte) []byte { return AppendStr(b, m.Group) }

func (m *GroupName) Decode(r *Reader) error {
	m.Group = r.Str("group")
	return r.End("GroupName")
}

// GroupMemberInfo is one member of a native group.
type GroupMemberInfo struct {
	MemberID         string
	SessionTimeoutMs int32
	Partitions       []int32
}

// GroupDescription answers DescribeGroup.
type GroupDescription struct {
	Group string
	// State: "Stable" (native members), "Empty" (offsets only) or "Dead"
	// (nothing known of the group).
	State      string
	TopicID    [16]byte // the native group's topic; zero without members
	Generation int32
	Members    []GroupMemberInfo
}

func (m *GroupDescription) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	b = AppendStr(b, m.State)
	b = append(b, m.TopicID[:]...)
	b = AppendI32(b, m.Generation)
	b = AppendU16(b, uint16(len(m.Members)))
	for _, mb := range m.Members {
		b = AppendStr(b, mb.MemberID)
		b = AppendI32(b, mb.SessionTimeoutMs)
		b = AppendU32(b, uint32(len(mb.Partitions)))
		for _, p := range mb.Partitions {
			b = AppendI32(b, p)
		}
	}
	return b
}

func (m *GroupDescription) Decode(r *Reader) error {
	m.Group = r.Str("group")
	m.State = r.Str("state")
	m.TopicID = r.ID("topic id")
	m.Generation = r.I32("generation")
	n := r.Count("member count", 2+4+4)
	m.Members = m.Members[:0]
	for range n {
		mb := GroupMemberInfo{MemberID: r.Str("member id"), SessionTimeoutMs: r.I32("session timeout ms")}
		np := r.U32("partition count")
		if r.Err() == nil && uint64(np)*4 > uint64(r.Len()) {
			return fmt.Errorf("%w: %d partitions cannot fit in %d bytes", ErrMalformed, np, r.Len())
		}
		for range np {
			mb.Partitions = append(mb.Partitions, r.I32("partition"))
		}
		m.Members = append(m.Members, mb)
	}
	return r.End("GroupDescription")
}

// GroupListing is one group of a ListGroups answer.
type GroupListing struct {
	Group string
	// Members is the native members on this gateway; 0 for a group known
	// only by its committed offsets (or by Kafka clients).
	Members int32
}

// Groups answers ListGroups, by name.
type Groups struct{ Groups []GroupListing }

func (m *Groups) Append(b []byte) []byte {
	b = AppendU32(b, uint32(len(m.Groups)))
	for _, g := range m.Groups {
		b = AppendStr(b, g.Group)
		b = AppendI32(b, g.Members)
	}
	return b
}

func (m *Groups) Decode(r *Reader) error {
	n := r.U32("group count")
	if r.Err() == nil && uint64(n)*6 > uint64(r.Len()) {
		return fmt.Errorf("%w: %d groups cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Groups = m.Groups[:0]
	for range n {
		m.Groups = append(m.Groups, GroupListing{Group: r.Str("group"), Members: r.I32("members")})
	}
	return r.End("Groups")
}

// GroupLag asks for a group's lag on a topic: the body is OffsetFetch's.
type GroupLag = OffsetFetch

// PartitionLag is one partition of a LagResponse.
type PartitionLag struct {
	Partition      int32
	Code           int16
	Committed      int64 // -1: no commit
	LogStartOffset int64
	HighWatermark  int64
	// Lag is HighWatermark minus Committed, or minus LogStartOffset
	// without a commit (a new member would start there at the earliest).
	Lag int64
}

const partitionLagSize = 4 + 2 + 8 + 8 + 8 + 8

// LagResponse answers GroupLag, every partition of the topic in order.
type LagResponse struct{ Partitions []PartitionLag }

func (m *LagResponse) Append(b []byte) []byte {
	b = AppendU32(b, uint32(len(m.Partitions)))
	for _, p := range m.Partitions {
		b = AppendI32(b, p.Partition)
		b = AppendI16(b, p.Code)
		b = AppendI64(b, p.Committed)
		b = AppendI64(b, p.LogStartOffset)
		b = AppendI64(b, p.HighWatermark)
		b = AppendI64(b, p.Lag)
	}
	return b
}

func (m *LagResponse) Decode(r *Reader) error {
	n := r.U32("partition count")
	if r.Err() == nil && uint64(n)*partitionLagSize > uint64(r.Len()) {
		return fmt.Errorf("%w: %d partitions cannot fit in %d bytes", ErrMalformed, n, r.Len())
	}
	m.Partitions = m.Partitions[:0]
	for range n {
		m.Partitions = append(m.Partitions, PartitionLag{Partition: r.I32("partition"), Code: r.I16("error code"),
			Committed: r.I64("committed"), LogStartOffset: r.I64("log start offset"), HighWatermark: r.I64("high watermark"),
			Lag: r.I64("lag")})
	}
	return r.End("LagResponse")
}

// FetchCommit is the optional trailer of a Fetch (FeatureFetchCommit): a
// group's offsets to commit before the fetch is served, so a consumer that
// follows pays no round trip of its own for its commits.
type FetchCommit struct {
	Group      string
	MemberID   string
	Generation int32
	Offsets    []TopicOffset
}

// TopicOffset is a partition of a topic and an offset.
type TopicOffset struct {
	TopicID   [16]byte
	Partition int32
	Offset    int64
}

func (m *FetchCommit) Append(b []byte) []byte {
	b = AppendStr(b, m.Group)
	b = AppendStr(b, m.MemberID)
	b = AppendI32(b, m.Generation)
	b = AppendU16(b, uint16(len(m.Offsets)))
	for _, o := range m.Offsets {
		b = append(b, o.TopicID[:]...)
		b = AppendI32(b, o.Partition)
		b = AppendI64(b, o.Offset)
	}
	return b
}

// decode reads the trailer (its caller checks the end).
func (m *FetchCommit) decode(r *Reader) {
	m.Group = r.Str("commit group")
	m.MemberID = r.Str("commit member id")
	m.Generation = r.I32("commit generation")
	n := r.Count("commit offset count", 28)
	m.Offsets = m.Offsets[:0]
	for range n {
		m.Offsets = append(m.Offsets, TopicOffset{TopicID: r.ID("topic id"), Partition: r.I32("partition"), Offset: r.I64("offset")})
	}
}
