package ring

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Payload layouts. Integers are big-endian; a string is an int16 length and
// bytes; bytes are an int32 length and bytes; an array is an int32 count and
// its elements; a duration is int64 nanoseconds. Lengths and counts are
// never negative, and a message must be consumed exactly: trailing bytes are
// a protocol error, which keeps every accepted encoding canonical.
//
// Request payload:
//
//	corr     uint32  correlation id, echoed in the response
//	timeout  int64   ns the client will wait; 0 = no deadline
//	body     per opcode:
//	  Describe, ListPartitions, Cancel   (empty)
//	  Hello              shard int32, ring version int64
//	  Produce            topic, partition int32, acks int16, records bytes
//	  Fetch              min bytes int32, max bytes int32, max wait duration,
//	                     isolation level int8,
//	                     [topic, partition int32, offset int64, max bytes int32,
//	                      follower id int32, leader epoch int32]
//	  ListOffsets        topic, partition int32, timestamp int64
//	  CreatePartition    topic, partition int32, config
//	  DeletePartition    topic, partition int32
//	  DescribePartition  topic, partition int32
//	  DeleteRecords      topic, partition int32, before int64
//	  TxnMarker          topic, partition int32, producer id int64,
//	                     producer epoch int16, commit int8 (0 or 1),
//	                     coordinator epoch int32
//	  ProduceBatch       [topic, partition int32, acks int16, records bytes]
//
//	config = segment bytes int64, segment ms duration, retention ms duration,
//	         retention bytes int64, max message bytes int32
//
// Response payload (and the Error frame's):
//
//	corr     uint32
//	code     int16   0, or an error code from errors.go
//	message  string  only when code != 0, and then nothing follows
//	body     per opcode, only when code == 0:
//	  Describe           ring version int64, shards int32, max payload uint32
//	  Hello, CreatePartition, DeletePartition   (empty)
//	  Produce            base offset int64, log append time int64, log start int64
//	  Fetch              [topic, partition int32, code int16, message string
//	                      (only when code != 0), high watermark int64,
//	                      log start int64, last stable offset int64,
//	                      [aborted: producer id int64, first offset int64,
//	                       last offset int64], records bytes]
//	  ListOffsets        offset int64, timestamp int64
//	  DescribePartition  info
//	  ListPartitions     [info]
//	  DeleteRecords      log start offset int64
//	  OffsetForLeaderEpoch  epoch int32, end offset int64 (both -1: no
//	                     epoch at or below the one asked for)
//	  TxnMarker          marker offset int64 (-1: nothing to end)
//	  ProduceBatch       [code int16, message string (only when code != 0),
//	                      base offset int64, log append time int64,
//	                      log start int64], one per part in request order
//
//	info = topic, partition int32, log start int64, high watermark int64,
//	       log end int64, size int64, segments int32, config

// request is any decoded ring request. Which fields mean something depends on
// Op, as in the layout above.
type request struct {
	Op      Opcode
	Corr    uint32
	Timeout time.Duration

	Shard       int32 // Hello
	RingVersion int64 // Hello

	Topic     string // partition-scoped requests
	Partition int32
	Acks      Acks            // Produce
	Records   []byte          // Produce
	Fetch     FetchRequest    // Fetch
	Timestamp int64           // ListOffsets
	Before    int64           // DeleteRecords
	Config    PartitionConfig // CreatePartition
	Epoch     int32           // OffsetForLeaderEpoch
	Marker    TxnMarker       // TxnMarker (its Topic and Partition are the fields above)
	Parts     []ProducePart   // ProduceBatch
}

// response is any decoded ring response. Fields follow Op, as in the layout.
type response struct {
	Op   Opcode
	Corr uint32
	Code int16
	Msg  string

	RingVersion int64  // Describe
	Shards      int32  // Describe
	MaxPayload  uint32 // Describe

	Produce  ProduceResult   // Produce
	Fetch    FetchResult     // Fetch, records as Bytes
	Offset   OffsetResult    // ListOffsets
	Info     PartitionInfo   // DescribePartition
	Infos    []PartitionInfo // ListPartitions
	LogStart int64           // DeleteRecords
	EpochEnd EpochEnd        // OffsetForLeaderEpoch
	MarkerAt int64           // TxnMarker
	Parts    []ProducePart   // ProduceBatch: Result and Err of each part
}

// err is the response's top-level error, rebuilt from code and message.
func (r *response) err() error { return errorFor(r.Code, r.Msg) }

// maxString is the longest string the int16 length prefix can carry.
const maxString = 1<<15 - 1

// checkTopic refuses a topic name the wire cannot carry, before anything is
// sent, so the error is the caller's and not a broken connection.
func checkTopic(topic string) error {
	if len(topic) > maxString {
		return fmt.Errorf("%w: topic name of %d bytes", ErrInvalidRequest, len(topic))
	}
	return nil
}

// appendRequest appends r as a whole frame, header included.
func appendRequest(dst []byte, r *request) []byte {
	start := len(dst)
	dst = appendHeader(dst, r.Op, 0)
	dst = kbin.AppendUint32(dst, r.Corr)
	dst = kbin.AppendInt64(dst, int64(r.Timeout))
	switch r.Op {
	case OpHello:
		dst = kbin.AppendInt32(dst, r.Shard)
		dst = kbin.AppendInt64(dst, r.RingVersion)
	case OpProduce:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = kbin.AppendInt16(dst, int16(r.Acks))
		dst = kbin.AppendBytes(dst, r.Records)
	case OpProduceBatch:
		dst = kbin.AppendArrayLen(dst, len(r.Parts))
		for i := range r.Parts {
			p := &r.Parts[i]
			dst = appendPartition(dst, p.Topic, p.Partition)
			dst = kbin.AppendInt16(dst, int16(p.Acks))
			dst = kbin.AppendBytes(dst, p.Records)
		}
	case OpFetch:
		dst = kbin.AppendInt32(dst, r.Fetch.MinBytes)
		dst = kbin.AppendInt32(dst, r.Fetch.MaxBytes)
		dst = kbin.AppendInt64(dst, int64(r.Fetch.MaxWait))
		dst = kbin.AppendInt8(dst, r.Fetch.IsolationLevel)
		dst = kbin.AppendArrayLen(dst, len(r.Fetch.Partitions))
		for _, p := range r.Fetch.Partitions {
			dst = appendPartition(dst, p.Topic, p.Partition)
			dst = kbin.AppendInt64(dst, p.Offset)
			dst = kbin.AppendInt32(dst, p.MaxBytes)
			dst = kbin.AppendInt32(dst, p.FollowerID)
			dst = kbin.AppendInt32(dst, p.LeaderEpoch)
		}
	case OpListOffsets:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = kbin.AppendInt64(dst, r.Timestamp)
	case OpCreatePartition:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = appendConfig(dst, &r.Config)
	case OpDeletePartition, OpDescribePartition:
		dst = appendPartition(dst, r.Topic, r.Partition)
	case OpDeleteRecords:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = kbin.AppendInt64(dst, r.Before)
	case OpOffsetForLeaderEpoch:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = kbin.AppendInt32(dst, r.Epoch)
	case OpTxnMarker:
		dst = appendPartition(dst, r.Topic, r.Partition)
		dst = kbin.AppendInt64(dst, r.Marker.ProducerID)
		dst = kbin.AppendInt16(dst, r.Marker.ProducerEpoch)
		dst = kbin.AppendBool(dst, r.Marker.Commit)
		dst = kbin.AppendInt32(dst, r.Marker.CoordinatorEpoch)
	}
	putLength(dst[start:])
	return dst
}

// decodeRequest decodes a request payload. An unknown opcode gives an error
// wrapping ErrUnsupported together with the correlation id, so the server
// can answer it and keep the connection; anything else that fails wraps
// ErrProtocol.
func decodeRequest(op Opcode, payload []byte) (*request, error) {
	rd := reader{Reader: kbin.Reader{Src: payload}}
	r := &request{Op: op}
	r.Corr = rd.Uint32()
	r.Timeout = time.Duration(rd.Int64())
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: %v request of %d bytes has no header", ErrProtocol, op, len(payload))
	}
	if r.Timeout < 0 {
		return r, fmt.Errorf("%w: negative timeout %d", ErrProtocol, r.Timeout)
	}
	switch op {
	case OpDescribe, OpListPartitions, OpCancel:
	case OpHello:
		r.Shard = rd.Int32()
		r.RingVersion = rd.Int64()
	case OpProduce:
		r.Topic, r.Partition = rd.partition()
		r.Acks = Acks(rd.Int16())
		r.Records = rd.bytes()
	case OpProduceBatch:
		n := rd.count(2 + 4 + 2 + 4)
		if n > 0 {
			r.Parts = make([]ProducePart, n)
		}
		for i := range r.Parts {
			p := &r.Parts[i]
			p.Topic, p.Partition = rd.partition()
			p.Acks = Acks(rd.Int16())
			p.Records = rd.bytes()
		}
	case OpFetch:
		r.Fetch.MinBytes = rd.Int32()
		r.Fetch.MaxBytes = rd.Int32()
		r.Fetch.MaxWait = time.Duration(rd.Int64())
		r.Fetch.IsolationLevel = rd.Int8()
		if r.Fetch.IsolationLevel != 0 && r.Fetch.IsolationLevel != 1 {
			rd.invalid = true
		}
		n := rd.count(2 + 4 + 8 + 4 + 4 + 4)
		if n > 0 {
			r.Fetch.Partitions = make([]FetchPartition, n)
		}
		for i := range r.Fetch.Partitions {
			p := &r.Fetch.Partitions[i]
			p.Topic, p.Partition = rd.partition()
			p.Offset = rd.Int64()
			p.MaxBytes = rd.Int32()
			p.FollowerID = rd.Int32()
			p.LeaderEpoch = rd.Int32()
		}
	case OpListOffsets:
		r.Topic, r.Partition = rd.partition()
		r.Timestamp = rd.Int64()
	case OpCreatePartition:
		r.Topic, r.Partition = rd.partition()
		r.Config = rd.config()
	case OpDeletePartition, OpDescribePartition:
		r.Topic, r.Partition = rd.partition()
	case OpDeleteRecords:
		r.Topic, r.Partition = rd.partition()
		r.Before = rd.Int64()
	case OpOffsetForLeaderEpoch:
		r.Topic, r.Partition = rd.partition()
		r.Epoch = rd.Int32()
	case OpTxnMarker:
		r.Topic, r.Partition = rd.partition()
		r.Marker.ProducerID = rd.Int64()
		r.Marker.ProducerEpoch = rd.Int16()
		r.Marker.Commit = rd.boolean()
		r.Marker.CoordinatorEpoch = rd.Int32()
		r.Marker.Topic, r.Marker.Partition = r.Topic, r.Partition
	default:
		return r, fmt.Errorf("%w: %v", ErrUnsupported, op)
	}
	if err := rd.done(); err != nil {
		return r, fmt.Errorf("%w: %v request: %w", ErrProtocol, op, err)
	}
	return r, nil
}

// appendResponse appends r as a whole frame. Fetch records must be in
// memory (Records.Bytes and More); the server sends file ranges through
// fetchResponseParts instead, which lays out the same bytes.
func appendResponse(dst []byte, r *response) []byte {
	start := len(dst)
	dst = appendHeader(dst, r.Op, 0)
	dst = kbin.AppendUint32(dst, r.Corr)
	dst = kbin.AppendInt16(dst, r.Code)
	if r.Code != codeNone {
		dst = appendMessage(dst, r.Msg)
		putLength(dst[start:])
		return dst
	}
	switch r.Op {
	case OpDescribe:
		dst = kbin.AppendInt64(dst, r.RingVersion)
		dst = kbin.AppendInt32(dst, r.Shards)
		dst = kbin.AppendUint32(dst, r.MaxPayload)
	case OpProduce:
		dst = kbin.AppendInt64(dst, r.Produce.BaseOffset)
		dst = kbin.AppendInt64(dst, r.Produce.LogAppendTime)
		dst = kbin.AppendInt64(dst, r.Produce.LogStartOffset)
	case OpFetch:
		dst = kbin.AppendArrayLen(dst, len(r.Fetch.Partitions))
		for i := range r.Fetch.Partitions {
			p := &r.Fetch.Partitions[i]
			dst = appendFetchPartitionMeta(dst, p, p.Records.Size())
			dst, _ = p.Records.ReadAll(dst) // in memory: cannot fail
		}
	case OpListOffsets:
		dst = kbin.AppendInt64(dst, r.Offset.Offset)
		dst = kbin.AppendInt64(dst, r.Offset.Timestamp)
	case OpDescribePartition:
		dst = appendInfo(dst, &r.Info)
	case OpListPartitions:
		dst = kbin.AppendArrayLen(dst, len(r.Infos))
		for i := range r.Infos {
			dst = appendInfo(dst, &r.Infos[i])
		}
	case OpDeleteRecords:
		dst = kbin.AppendInt64(dst, r.LogStart)
	case OpOffsetForLeaderEpoch:
		dst = kbin.AppendInt32(dst, r.EpochEnd.LeaderEpoch)
		dst = kbin.AppendInt64(dst, r.EpochEnd.EndOffset)
	case OpTxnMarker:
		dst = kbin.AppendInt64(dst, r.MarkerAt)
	case OpProduceBatch:
		dst = kbin.AppendArrayLen(dst, len(r.Parts))
		for i := range r.Parts {
			p := &r.Parts[i]
			code, msg := wireError(p.Err)
			dst = kbin.AppendInt16(dst, code)
			if code != codeNone {
				dst = appendMessage(dst, msg)
			}
			dst = kbin.AppendInt64(dst, p.Result.BaseOffset)
			dst = kbin.AppendInt64(dst, p.Result.LogAppendTime)
			dst = kbin.AppendInt64(dst, p.Result.LogStartOffset)
		}
	}
	putLength(dst[start:])
	return dst
}

// appendFetchPartitionMeta appends everything of one fetched partition up to
// and including the records' length prefix; the n record bytes follow.
func appendFetchPartitionMeta(dst []byte, p *FetchPartitionResult, n int) []byte {
	dst = appendPartition(dst, p.Topic, p.Partition)
	code, msg := wireError(p.Err)
	dst = kbin.AppendInt16(dst, code)
	if code != codeNone {
		dst = appendMessage(dst, msg)
	}
	dst = kbin.AppendInt64(dst, p.HighWatermark)
	dst = kbin.AppendInt64(dst, p.LogStartOffset)
	dst = kbin.AppendInt64(dst, p.LastStableOffset)
	dst = kbin.AppendArrayLen(dst, len(p.AbortedTransactions))
	for _, a := range p.AbortedTransactions {
		dst = kbin.AppendInt64(dst, a.ProducerID)
		dst = kbin.AppendInt64(dst, a.FirstOffset)
		dst = kbin.AppendInt64(dst, a.LastOffset)
	}
	return kbin.AppendInt32(dst, int32(n))
}

// decodeResponse decodes a response payload for opcode op. Fetch records
// alias payload, which the caller must not reuse.
func decodeResponse(op Opcode, payload []byte) (*response, error) {
	rd := reader{Reader: kbin.Reader{Src: payload}}
	r := &response{Op: op}
	r.Corr = rd.Uint32()
	r.Code = rd.Int16()
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: %v response of %d bytes has no header", ErrProtocol, op, len(payload))
	}
	if r.Code != codeNone {
		r.Msg = rd.str()
		if err := rd.done(); err != nil {
			return r, fmt.Errorf("%w: %v response: %w", ErrProtocol, op, err)
		}
		return r, nil
	}
	switch op {
	case OpHello, OpCreatePartition, OpDeletePartition, OpError:
		// An Error frame always has a code; code 0 leaves it empty and
		// meaningless, which the client treats as a protocol error.
	case OpDescribe:
		r.RingVersion = rd.Int64()
		r.Shards = rd.Int32()
		r.MaxPayload = rd.Uint32()
	case OpProduce:
		r.Produce.BaseOffset = rd.Int64()
		r.Produce.LogAppendTime = rd.Int64()
		r.Produce.LogStartOffset = rd.Int64()
	case OpFetch:
		n := rd.count(2 + 4 + 2 + 8 + 8 + 8 + 4 + 4)
		if n > 0 {
			r.Fetch.Partitions = make([]FetchPartitionResult, n)
		}
		for i := range r.Fetch.Partitions {
			p := &r.Fetch.Partitions[i]
			p.Topic, p.Partition = rd.partition()
			if code := rd.Int16(); code != codeNone {
				p.Err = errorFor(code, rd.str())
			}
			p.HighWatermark = rd.Int64()
			p.LogStartOffset = rd.Int64()
			p.LastStableOffset = rd.Int64()
			if na := rd.count(24); na > 0 {
				p.AbortedTransactions = make([]AbortedTxn, na)
				for j := range p.AbortedTransactions {
					p.AbortedTransactions[j] = AbortedTxn{ProducerID: rd.Int64(), FirstOffset: rd.Int64(), LastOffset: rd.Int64()}
				}
			}
			p.Records.Bytes = rd.bytes()
		}
	case OpListOffsets:
		r.Offset.Offset = rd.Int64()
		r.Offset.Timestamp = rd.Int64()
	case OpDescribePartition:
		r.Info = rd.info()
	case OpListPartitions:
		n := rd.count(2 + 4 + 8*4 + 4 + 8*4 + 4)
		if n > 0 {
			r.Infos = make([]PartitionInfo, n)
		}
		for i := range r.Infos {
			r.Infos[i] = rd.info()
		}
	case OpDeleteRecords:
		r.LogStart = rd.Int64()
	case OpOffsetForLeaderEpoch:
		r.EpochEnd.LeaderEpoch = rd.Int32()
		r.EpochEnd.EndOffset = rd.Int64()
	case OpTxnMarker:
		r.MarkerAt = rd.Int64()
	case OpProduceBatch:
		n := rd.count(2 + 8 + 8 + 8)
		if n > 0 {
			r.Parts = make([]ProducePart, n)
		}
		for i := range r.Parts {
			p := &r.Parts[i]
			if code := rd.Int16(); code != codeNone {
				p.Err = errorFor(code, rd.str())
			}
			p.Result.BaseOffset = rd.Int64()
			p.Result.LogAppendTime = rd.Int64()
			p.Result.LogStartOffset = rd.Int64()
		}
	default:
		return r, fmt.Errorf("%w: %v", ErrUnsupported, op)
	}
	if err := rd.done(); err != nil {
		return r, fmt.Errorf("%w: %v response: %w", ErrProtocol, op, err)
	}
	return r, nil
}

// wireError gives the code and message that carry err. An error that already
// crossed the wire keeps its code and text exactly, so a response decoded
// and encoded again is unchanged.
func wireError(err error) (int16, string) {
	if err == nil {
		return codeNone, ""
	}
	if re, ok := err.(*remoteError); ok {
		return re.code, re.msg
	}
	msg := err.Error()
	if len(msg) > maxErrorMessage {
		msg = msg[:maxErrorMessage]
	}
	return codeOf(err), msg
}

func appendMessage(dst []byte, msg string) []byte {
	if len(msg) > maxString {
		msg = msg[:maxString]
	}
	return kbin.AppendString(dst, msg)
}

func appendPartition(dst []byte, topic string, partition int32) []byte {
	dst = kbin.AppendString(dst, topic)
	return kbin.AppendInt32(dst, partition)
}

func appendConfig(dst []byte, c *PartitionConfig) []byte {
	dst = kbin.AppendInt64(dst, c.SegmentBytes)
	dst = kbin.AppendInt64(dst, int64(c.SegmentMs))
	dst = kbin.AppendInt64(dst, int64(c.RetentionMs))
	dst = kbin.AppendInt64(dst, c.RetentionBytes)
	return kbin.AppendInt32(dst, c.MaxMessageBytes)
}

func appendInfo(dst []byte, in *PartitionInfo) []byte {
	dst = appendPartition(dst, in.Topic, in.Partition)
	dst = kbin.AppendInt64(dst, in.LogStartOffset)
	dst = kbin.AppendInt64(dst, in.HighWatermark)
	dst = kbin.AppendInt64(dst, in.LogEndOffset)
	dst = kbin.AppendInt64(dst, in.Size)
	dst = kbin.AppendInt32(dst, int32(in.Segments))
	return appendConfig(dst, &in.Config)
}

// reader adds the checks kbin.Reader leaves out (negative lengths and
// counts, trailing bytes).
type reader struct {
	kbin.Reader
	invalid bool
}

func (r *reader) str() string {
	l := r.Int16()
	if l < 0 {
		r.invalid = true
		return ""
	}
	return string(r.Span(int(l)))
}

// bytes returns a slice of the payload, not a copy.
func (r *reader) bytes() []byte {
	l := r.Int32()
	if l < 0 {
		r.invalid = true
		return nil
	}
	return r.Span(int(l))
}

// count reads an array count and checks that the payload can hold that many
// elements of at least minSize bytes, so a forged count cannot make the
// decoder allocate more than the frame's own size.
func (r *reader) count(minSize int) int {
	n := r.Int32()
	if n < 0 || int64(n)*int64(minSize) > int64(len(r.Src)) {
		r.invalid = true
		return 0
	}
	return int(n)
}

// boolean reads an int8 that must be 0 or 1, so every accepted encoding
// stays canonical.
func (r *reader) boolean() bool {
	v := r.Int8()
	if v != 0 && v != 1 {
		r.invalid = true
	}
	return v == 1
}

func (r *reader) partition() (string, int32) {
	return r.str(), r.Int32()
}

func (r *reader) config() PartitionConfig {
	return PartitionConfig{
		SegmentBytes:    r.Int64(),
		SegmentMs:       time.Duration(r.Int64()),
		RetentionMs:     time.Duration(r.Int64()),
		RetentionBytes:  r.Int64(),
		MaxMessageBytes: r.Int32(),
	}
}

func (r *reader) info() PartitionInfo {
	var in PartitionInfo
	in.Topic, in.Partition = r.partition()
	in.LogStartOffset = r.Int64()
	in.HighWatermark = r.Int64()
	in.LogEndOffset = r.Int64()
	in.Size = r.Int64()
	in.Segments = int(r.Int32())
	in.Config = r.config()
	return in
}

// done reports whether the message was well formed and fully consumed.
func (r *reader) done() error {
	switch {
	case r.invalid:
		return errors.New("negative length or count")
	case !r.Ok():
		return errors.New("message truncated")
	case len(r.Src) > 0:
		return fmt.Errorf("%d trailing bytes", len(r.Src))
	}
	return nil
}
