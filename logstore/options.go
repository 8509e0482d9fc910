package logstore

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/aerostream/aerostream/catalog"
)

// FlushPolicy says when appended bytes are made durable, and so when the
// high watermark may move past them.
type FlushPolicy string

const (
	// FlushNone leaves durability to the page cache, as Kafka does by
	// default. The high watermark moves as soon as bytes are written.
	FlushNone FlushPolicy = "none"
	// FlushInterval fsyncs every FlushInterval; the high watermark moves
	// after each group fsync.
	FlushInterval FlushPolicy = "interval"
	// FlushAlways fsyncs before acknowledging. Appends that arrive while an
	// fsync runs share the next one (group commit).
	FlushAlways FlushPolicy = "always"
)

// Options configure a Store. Zero values take the documented defaults.
type Options struct {
	Dir     string // data directory; segments live under Dir/logs
	Shards  int    // number of shard goroutines; default runtime.NumCPU()
	PinCPUs bool   // pin shard i to CPU i mod NumCPU (LockOSThread + sched_setaffinity)

	Flush         FlushPolicy   // default FlushNone
	FlushInterval time.Duration // for FlushInterval; default 100ms

	IndexIntervalBytes int   // one sparse index entry per this many log bytes; default 4096
	WritebackBytes     int64 // paced writeback window; default 8 MiB
	MaxIndexBytes      int   // preallocated mmap size per index; default 10 MiB

	// CacheTailBytes is how much of what was written last, across the
	// shards, writeback leaves in the page cache (cacheTail); default a
	// quarter of the machine's memory, negative for none.
	CacheTailBytes int64

	RetentionCheckInterval time.Duration // default 30s

	// RetentionFloor, when set, guards records that a reader outside the
	// log still needs (an Iceberg table that does not hold them yet):
	// while it reports guarded, retention, local eviction and compaction
	// leave every segment that ends above floor. DeleteRecords is not
	// held back. It is called from the shard goroutines and must not
	// block.
	RetentionFloor func(topic string, partition int32) (floor int64, guarded bool)

	// ProducerIDExpiration is how long a partition keeps an idempotent
	// producer's state after its last append (Kafka's
	// producer.id.expiration.ms); checked with retention. Default 24h.
	ProducerIDExpiration time.Duration

	Defaults PartitionConfig // topic defaults for CreatePartition

	Cleaner CleanerOptions // the log cleaner of compacted topics (cleaner.go)

	// MaxOpenLogs bounds the segment log files held open across the
	// shards; others are opened when used (files.go). Default: half of
	// what RLIMIT_NOFILE leaves after 1,024 for everything else.
	MaxOpenLogs int
	// MaxPartitions refuses creates past this many partitions with
	// ErrTooManyPartitions; 0 leaves only the limit vm.max_map_count sets
	// (limits.go).
	MaxPartitions int

	// RequireRole makes a partition no one has given a role
	// (SetReplicaState) refuse produce and consumer fetches with
	// ErrNotLeader, instead of serving them as a single copy. A store in
	// a cluster sets it: after a restart its partitions must not take
	// writes before the replica manager knows whether they lead, or a
	// write acknowledged by a copy that then truncates would be lost.
	RequireRole bool

	Catalog *catalog.Catalog // required: the segment catalog
	Cold    ColdTier         // optional cold tier reads; nil = local only
	Tier    Tier             // optional tiering daemon; nil = nothing is uploaded
	Logger  *slog.Logger
}

// DefaultPartitionConfig holds the defaults of the topicconfig registry.
var DefaultPartitionConfig = registryDefaults()

func (o *Options) setDefaults() error {
	if o.Dir == "" {
		return fmt.Errorf("%w: data dir is empty", ErrInvalidRequest)
	}
	if o.Catalog == nil {
		return fmt.Errorf("%w: no catalog", ErrInvalidRequest)
	}
	if o.Shards <= 0 {
		o.Shards = runtime.NumCPU()
	}
	switch o.Flush {
	case "":
		o.Flush = FlushNone
	case FlushNone, FlushInterval, FlushAlways:
	default:
		return fmt.Errorf("%w: flush policy %q (want none, interval or always)", ErrInvalidRequest, o.Flush)
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = 4096
	}
	if o.WritebackBytes <= 0 {
		o.WritebackBytes = 8 << 20
	}
	if o.CacheTailBytes == 0 {
		o.CacheTailBytes = defaultCacheTailBytes()
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 10 << 20
	}
	if o.RetentionCheckInterval <= 0 {
		o.RetentionCheckInterval = 30 * time.Second
	}
	if o.MaxOpenLogs <= 0 {
		o.MaxOpenLogs = defaultMaxOpenLogs()
	}
	if o.MaxPartitions < 0 {
		return fmt.Errorf("%w: MaxPartitions %d", ErrInvalidRequest, o.MaxPartitions)
	}
	if o.ProducerIDExpiration <= 0 {
		o.ProducerIDExpiration = 24 * time.Hour
	}
	o.Defaults = o.Defaults.withDefaults(DefaultPartitionConfig)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

func (c PartitionConfig) withDefaults(d PartitionConfig) PartitionConfig {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = d.RetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = d.RetentionBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.LocalRetentionBytes == nil && d.LocalRetentionBytes != nil {
		c.LocalRetentionBytes = new(*d.LocalRetentionBytes)
	}
	if c.LocalRetentionMs == nil && d.LocalRetentionMs != nil {
		c.LocalRetentionMs = new(*d.LocalRetentionMs)
	}
	return c.withCompactionDefaults(d)
}
