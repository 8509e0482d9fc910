package catalog

import (
	"encoding/binary"
	"fmt"
)

// Key prefixes; the layout is documented in doc.go.
const (
	partitionPrefix = "p/"
	segmentPrefix   = "s/"
	raftLogPrefix   = "l/"
	raftKVPrefix    = "k/"
)

// maxTopicLen is Kafka's limit (249), which keeps keys short and bounded.
const maxTopicLen = 249

// validTopic reports whether topic is a legal Kafka topic name. The check is
// what makes the key layout sound: without '/' in names, "a" and "ab" or
// "a/1" can never share a scan prefix.
func validTopic(topic string) bool {
	if len(topic) == 0 || len(topic) > maxTopicLen || topic == "." || topic == ".." {
		return false
	}
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkPartitionID(topic string, partition int32) error {
	if !validTopic(topic) {
		return fmt.Errorf("%w: topic name %q", ErrInvalidArgument, topic)
	}
	if partition < 0 {
		return fmt.Errorf("%w: partition %d", ErrInvalidArgument, partition)
	}
	return nil
}

func checkSegmentID(topic string, partition int32, base int64) error {
	if err := checkPartitionID(topic, partition); err != nil {
		return err
	}
	if base < 0 {
		return fmt.Errorf("%w: base offset %d", ErrInvalidArgument, base)
	}
	return nil
}

// partitionKey returns p/<topic>/<partition BE32>.
func partitionKey(topic string, partition int32) []byte {
	k := make([]byte, 0, len(partitionPrefix)+len(topic)+1+4)
	k = append(k, partitionPrefix...)
	k = append(k, topic...)
	k = append(k, '/')
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// parsePartitionKey inverts partitionKey. It parses from the end because the
// partition bytes may themselves contain '/'.
func parsePartitionKey(k []byte) (topic string, partition int32, err error) {
	n := len(k)
	if n < len(partitionPrefix)+1+1+4 || string(k[:len(partitionPrefix)]) != partitionPrefix || k[n-5] != '/' {
		return "", 0, fmt.Errorf("%w: partition key %q", ErrCorruptRecord, k)
	}
	topic = string(k[len(partitionPrefix) : n-5])
	partition = int32(binary.BigEndian.Uint32(k[n-4:]))
	if !validTopic(topic) || partition < 0 {
		return "", 0, fmt.Errorf("%w: partition key %q", ErrCorruptRecord, k)
	}
	return topic, partition, nil
}

// segmentPartitionPrefix returns s/<topic>/<partition BE32>/, the prefix of
// every segment key of one partition.
func segmentPartitionPrefix(topic string, partition int32) []byte {
	k := make([]byte, 0, len(segmentPrefix)+len(topic)+1+4+1+8)
	k = append(k, segmentPrefix...)
	k = append(k, topic...)
	k = append(k, '/')
	k = binary.BigEndian.AppendUint32(k, uint32(partition))
	return append(k, '/')
}

// segmentKey returns s/<topic>/<partition BE32>/<base offset BE64>.
func segmentKey(topic string, partition int32, base int64) []byte {
	return binary.BigEndian.AppendUint64(segmentPartitionPrefix(topic, partition), uint64(base))
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, for use as an exclusive upper bound. All our prefixes end in '/',
// so this never runs off the 0xff edge in practice, but it is handled.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // no upper bound
}

// raftLogKey returns l/<index BE64>.
func raftLogKey(index uint64) []byte {
	k := make([]byte, 0, len(raftLogPrefix)+8)
	k = append(k, raftLogPrefix...)
	return binary.BigEndian.AppendUint64(k, index)
}

func parseRaftLogKey(k []byte) (uint64, error) {
	if len(k) != len(raftLogPrefix)+8 || string(k[:len(raftLogPrefix)]) != raftLogPrefix {
		return 0, fmt.Errorf("%w: raft log key %q", ErrCorruptRecord, k)
	}
	return binary.BigEndian.Uint64(k[len(raftLogPrefix):]), nil
}

// raftKVKey returns k/<key>.
func raftKVKey(key []byte) []byte {
	k := make([]byte, 0, len(raftKVPrefix)+len(key))
	k = append(k, raftKVPrefix...)
	return append(k, key...)
}
