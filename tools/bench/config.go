package bench

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ConsumeMode says how a subscription's consumers share its partitions.
type ConsumeMode string

const (
	// ConsumeGroup makes each subscription a consumer group, as OMB's
	// Kafka driver does: the broker assigns the partitions and the run
	// measures a broker's group coordination too.
	ConsumeGroup ConsumeMode = "group"
	// ConsumeAssign splits each topic's partitions among a subscription's
	// consumers round-robin (partition p goes to consumer p mod n), with
	// no group and no commits.
	ConsumeAssign ConsumeMode = "assign"
)

// Config is one workload. Zero values are not defaults: start from
// DefaultConfig.
type Config struct {
	Brokers []string `json:"brokers"`
	// Protocol is ProtocolKafka (the default, "") or ProtocolNative, which
	// drives the native gateway at Brokers[0] through the Go SDK.
	Protocol string `json:"protocol,omitempty"`

	// Topics is how many topics the run uses. TopicNames, when set, names
	// them (and Topics must then be 0 or len(TopicNames)); otherwise they are
	// named TopicPrefix-<run id>-<i>, fresh for each run as OMB does.
	Topics            int      `json:"topics"`
	TopicNames        []string `json:"topic_names,omitempty"`
	TopicPrefix       string   `json:"topic_prefix"`
	Partitions        int      `json:"partitions_per_topic"`
	ReplicationFactor int      `json:"replication_factor"`
	// CreateTopics creates the topics that do not exist; DeleteTopics
	// deletes, at the end, those this run created (never others).
	CreateTopics bool `json:"create_topics"`
	// TopicConfigs are set on the topics the run creates (retention.bytes
	// and segment.bytes keep a long run within a small disk).
	TopicConfigs map[string]string `json:"topic_configs,omitempty"`
	DeleteTopics bool              `json:"delete_topics"`

	Producers     int         `json:"producers_per_topic"`
	Subscriptions int         `json:"subscriptions_per_topic"`
	Consumers     int         `json:"consumers_per_subscription"`
	ConsumeMode   ConsumeMode `json:"consume_mode"`

	MessageSize int `json:"message_size"`
	// Rate is the target publish rate in messages per second summed over
	// all producers; 0 publishes as fast as the broker acknowledges.
	Rate float64 `json:"target_rate"`
	// Sustainable, with Rate 0, makes the run find and hold the highest
	// rate its consumers keep up with (see sustain.go) instead of
	// publishing without a limit.
	Sustainable bool `json:"sustainable,omitempty"`
	// BacklogBytes, when not 0, is OMB's consumer backlog: the producers
	// publish this many payload bytes before the consumers start, then the
	// measured phase runs from when the consumers are ready until they have
	// drained the backlog or Duration ends. The producers go on at Rate
	// meanwhile; with Rate 0 they stop once the backlog is written, so the
	// measured phase is the consumers' maximum rate alone.
	BacklogBytes int64         `json:"backlog_bytes,omitempty"`
	Duration     time.Duration `json:"-"`
	Warmup       time.Duration `json:"-"`
	// Drain bounds how long consumers may take, after the producers stop,
	// to receive what was published.
	Drain time.Duration `json:"-"`

	Acks        string        `json:"acks"` // "0", "1" or "all"
	Idempotent  bool          `json:"idempotent"`
	Linger      time.Duration `json:"-"`
	BatchBytes  int           `json:"batch_bytes"`
	MaxInflight int           `json:"max_inflight"`
	// BufferBytes bounds what each producer holds unacknowledged (the Java
	// client's buffer.memory); a full buffer blocks the producer.
	BufferBytes int    `json:"buffer_bytes"`
	Compression string `json:"compression"`

	// BrokerPID, when not 0, is a local broker process whose CPU and RSS
	// the run samples from /proc during the measured phase.
	BrokerPID int `json:"broker_pid,omitempty"`

	// Progress is the interval of the live progress line.
	Progress time.Duration `json:"-"`
}

// DefaultConfig is OMB's simple workload shape, with the Kafka driver's
// producer settings (linger 1 ms, 1 MiB batches, acks=all).
func DefaultConfig() Config {
	return Config{
		Brokers:           []string{"127.0.0.1:9092"},
		Topics:            1,
		TopicPrefix:       "aerostream-bench",
		Partitions:        16,
		ReplicationFactor: 1,
		CreateTopics:      true,
		DeleteTopics:      true,
		Producers:         1,
		Subscriptions:     1,
		Consumers:         1,
		ConsumeMode:       ConsumeGroup,
		MessageSize:       1024,
		Rate:              0,
		Duration:          time.Minute,
		Warmup:            10 * time.Second,
		Drain:             10 * time.Second,
		Acks:              "all",
		Idempotent:        true,
		Linger:            time.Millisecond,
		BatchBytes:        1 << 20,
		MaxInflight:       5,
		BufferBytes:       32 << 20,
		Compression:       "none",
		Progress:          time.Second,
	}
}

// minMessageSize leaves room for the send timestamp.
const minMessageSize = 8

// Errors returned by Validate and Run, and the package's internal ones.
var (
	// ErrConfig is wrapped by every Validate error.
	ErrConfig = errors.New("bench config")
	// ErrNotReady: the topics or the consumers did not become ready in
	// time, so nothing was measured.
	ErrNotReady = errors.New("bench not ready")
	// errStopped: the run's stop signal ended a wait; not a failure.
	errStopped = errors.New("stopped")
)

// Validate checks the workload and fills derived fields (Topics from
// TopicNames).
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if len(c.Brokers) == 0 {
		return bad("no bootstrap servers")
	}
	if len(c.TopicNames) > 0 {
		if c.Topics != 0 && c.Topics != len(c.TopicNames) {
			return bad("--topics %d disagrees with %d topic names", c.Topics, len(c.TopicNames))
		}
		c.Topics = len(c.TopicNames)
		seen := map[string]bool{}
		for _, t := range c.TopicNames {
			if t == "" || seen[t] {
				return bad("topic names must be non-empty and distinct")
			}
			seen[t] = true
		}
	}
	switch {
	case c.Topics < 1:
		return bad("topics must be at least 1")
	case c.Partitions < 1:
		return bad("partitions must be at least 1")
	case c.ReplicationFactor < 1 || c.ReplicationFactor > 32767:
		return bad("replication factor must be in 1..32767")
	case c.Producers < 0 || c.Subscriptions < 0 || c.Consumers < 0:
		return bad("producers, subscriptions and consumers cannot be negative")
	case c.Producers == 0 && (c.Subscriptions == 0 || c.Consumers == 0):
		return bad("nothing to do: no producers and no consumers")
	case c.MessageSize < minMessageSize:
		return bad("message size must be at least %d bytes (the send timestamp)", minMessageSize)
	case c.Rate < 0:
		return bad("rate cannot be negative")
	case c.Sustainable && c.Rate != 0:
		return bad("a sustainable rate is searched for, so it takes no target rate")
	case c.Sustainable && (c.Producers == 0 || c.Subscriptions == 0 || c.Consumers == 0):
		return bad("a sustainable rate needs producers and consumers")
	case c.BacklogBytes < 0:
		return bad("backlog cannot be negative")
	case c.BacklogBytes > 0 && (c.Producers == 0 || c.Subscriptions == 0 || c.Consumers == 0):
		return bad("a backlog needs producers to write it and consumers to drain it")
	case c.BacklogBytes > 0 && c.Sustainable:
		return bad("a backlog run drains what was written; it does not search for a sustainable rate")
	case c.Duration <= 0:
		return bad("duration must be positive")
	case c.Warmup < 0 || c.Drain < 0:
		return bad("warmup and drain cannot be negative")
	case c.BatchBytes < 1024:
		return bad("batch size must be at least 1024 bytes")
	case c.MaxInflight < 1:
		return bad("max in-flight must be at least 1")
	case c.BufferBytes < c.BatchBytes:
		return bad("buffer memory (%d B) must hold at least one batch (%d B)", c.BufferBytes, c.BatchBytes)
	case c.Progress <= 0:
		return bad("progress interval must be positive")
	}
	switch c.Protocol {
	case "", ProtocolKafka:
		c.Protocol = ProtocolKafka
	case ProtocolNative:
		// Native consumers split the partitions as assign mode does.
		c.ConsumeMode = ConsumeAssign
	default:
		return bad("protocol %q: want kafka or native", c.Protocol)
	}
	switch c.ConsumeMode {
	case ConsumeGroup, ConsumeAssign:
	default:
		return bad("consume mode %q: want group or assign", c.ConsumeMode)
	}
	switch c.Acks {
	case "0", "1", "all", "-1":
	default:
		return bad("acks %q: want 0, 1 or all", c.Acks)
	}
	if c.Acks == "-1" {
		c.Acks = "all"
	}
	if c.Idempotent && c.Acks != "all" {
		// Kafka's rule: idempotence needs acks=all. Asking for acks=1 means
		// asking for a non-idempotent producer, as the Java client does when
		// enable.idempotence is left at its default.
		c.Idempotent = false
	}
	if _, err := compressionCodec(c.Compression); err != nil {
		return bad("%v", err)
	}
	return nil
}

// topicNames returns the run's topics, generating fresh names when none
// were given.
func (c *Config) topicNames() []string {
	if len(c.TopicNames) > 0 {
		return append([]string(nil), c.TopicNames...)
	}
	id := runID()
	names := make([]string, c.Topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%04d", c.TopicPrefix, id, i)
	}
	return names
}

func runID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// String is the one-line workload summary printed at the start.
func (c *Config) String() string {
	rate := "max"
	if c.Rate > 0 {
		rate = fmt.Sprintf("%.0f msg/s", c.Rate)
	} else if c.Sustainable {
		rate = "sustainable"
	}
	if c.BacklogBytes > 0 {
		rate += fmt.Sprintf(", backlog %d B before consuming", c.BacklogBytes)
	}
	proto := ""
	if c.Protocol == ProtocolNative {
		proto = "native protocol, "
	}
	return proto + fmt.Sprintf("%d topic(s) x %d partitions, %d producer(s)/topic, %d subscription(s) x %d consumer(s) (%s), %d B messages, rate %s, acks=%s, linger %s, batch %d B, buffer %d B, compression %s, warmup %s, duration %s, brokers %s",
		c.Topics, c.Partitions, c.Producers, c.Subscriptions, c.Consumers, c.ConsumeMode,
		c.MessageSize, rate, c.Acks, c.Linger, c.BatchBytes, c.BufferBytes, c.Compression, c.Warmup, c.Duration,
		strings.Join(c.Brokers, ","))
}
