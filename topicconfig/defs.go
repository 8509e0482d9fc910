package topicconfig

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxMs keeps milliseconds convertible to a time.Duration downstream.
const maxMs = math.MaxInt64 / int64(1e6)

// defs is the registry. Names, types and defaults are Kafka's, except where
// AeroStream's broker defaults differ (segment.bytes is 128 MiB, DESIGN §3).
// Values a Kafka broker accepts but AeroStream cannot honour yet
// (LogAppendTime, broker-side recompression) are refused with a
// reason, rather than stored and ignored.
var defs = []Def{
	{
		Name: CleanupPolicy, Broker: "log.cleanup.policy", Type: List, Default: "delete",
		Doc:     "what happens to old segments: delete (retention), compact (keep the latest record of each key), or both",
		Dynamic: true, Layer: Logstore,
		Values: []string{"delete", "compact"}, Available: []string{"delete", "compact"},
	},
	{
		Name: DeleteRetentionMs, Broker: "log.cleaner.delete.retention.ms", Type: Long, Default: "86400000",
		Doc:     "time a tombstone of a compacted topic is kept, counted from its batch's timestamp",
		Dynamic: true, Layer: Logstore,
		Min: 0, Max: maxMs,
	},
	{
		Name: MinCleanableDirtyRatio, Broker: "log.cleaner.min.cleanable.ratio", Type: Double, Default: "0.5",
		Doc:     "share of a compacted log not yet cleaned above which the cleaner cleans it",
		Dynamic: true, Layer: Logstore,
		Min: 0, Max: 1,
	},
	{
		Name: MinCompactionLagMs, Broker: "log.cleaner.min.compaction.lag.ms", Type: Long, Default: "0",
		Doc:     "time a record stays uncompacted after it is written",
		Dynamic: true, Layer: Logstore,
		Min: 0, Max: maxMs, NotAbove: MaxCompactionLagMs,
	},
	{
		Name: MaxCompactionLagMs, Broker: "log.cleaner.max.compaction.lag.ms", Type: Long, Default: "9223372036854775807",
		Doc:     "time after which a record is eligible for compaction whatever the dirty ratio",
		Dynamic: true, Layer: Logstore,
		Min: 1, Max: maxMs, Special: []int64{math.MaxInt64},
	},
	{
		Name: CompressionType, Broker: "compression.type", Type: String, Default: "producer",
		Doc:     "keep batches as the producer compressed them (only producer is available)",
		Dynamic: true, Layer: Fixed,
		Values:      []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
		Available:   []string{"producer"},
		Unavailable: "broker-side recompression is not available yet",
	},
	{
		Name: LocalRetentionBytes, Broker: "log.local.retention.bytes", Type: Long, Default: "-2",
		Doc:     "bytes of a partition kept on local disk once tiered; 0 = none (evict once uploaded), -2 = as retention.bytes",
		Dynamic: true, Layer: Logstore,
		Min: -2, Max: math.MaxInt64, NotAbove: RetentionBytes,
	},
	{
		Name: LocalRetentionMs, Broker: "log.local.retention.ms", Type: Long, Default: "-2",
		Doc:     "time a segment is kept on local disk once tiered; 0 = evict once uploaded, -2 = as retention.ms",
		Dynamic: true, Layer: Logstore,
		Min: -2, Max: maxMs, NotAbove: RetentionMs,
	},
	{
		Name: MaxMessageBytes, Broker: "message.max.bytes", Type: Int, Default: "1048588",
		Doc:     "largest record batch accepted",
		Dynamic: true, Layer: Logstore,
		Min: 1, Max: math.MaxInt32,
	},
	{
		Name: MessageTimestampType, Broker: "log.message.timestamp.type", Type: String, Default: "CreateTime",
		Doc:     "which timestamp records keep (only CreateTime is available)",
		Dynamic: true, Layer: Fixed,
		Values: []string{"CreateTime", "LogAppendTime"}, Available: []string{"CreateTime"},
		Unavailable: "LogAppendTime is not available yet",
	},
	{
		Name: MinInsyncReplicas, Broker: "min.insync.replicas", Type: Int, Default: "1",
		Doc:     "replicas that must acknowledge an acks=all produce (not enforced: replication is not available yet)",
		Dynamic: true, Layer: Unapplied,
		Min: 1, Max: math.MaxInt32,
	},
	{
		Name: RemoteStorageEnable, Type: Boolean, Default: "false",
		Doc:     "tier sealed segments to object storage (not read: a node with tiering on tiers every topic)",
		Dynamic: true, Layer: Unapplied,
	},
	{
		Name: UncleanLeaderElectionEnable, Broker: "unclean.leader.election.enable", Type: Boolean, Default: "false",
		Doc:     "when no in-sync replica of a partition is live, make another live replica leader (acknowledged records may be lost)",
		Dynamic: true, Layer: Controller,
	},
	{
		Name: IcebergEnabled, Type: Boolean, Default: "false",
		Doc:     "materialize the topic into the Iceberg table <namespace>.<topic>, exactly once",
		Dynamic: true, Layer: Iceberg,
	},
	{
		Name: IcebergMode, Type: String, Default: "key_value",
		Doc:     "table layout: key_value (value as bytes), or a schema mode whose typed columns come from the schema registry",
		Dynamic: true, Layer: Iceberg,
		Values:    []string{"key_value", "value_schema_id_prefix", "value_schema_latest"},
		Available: []string{"key_value", "value_schema_id_prefix", "value_schema_latest"},
	},
	{
		Name: IcebergPartitionSpec, Type: String, Default: "hour(aerostream.timestamp)",
		Doc:     "partitioning of the table (an alter evolves it; files keep the spec they were written with): comma-separated column or transform(column), transform one of identity, year, month, day, hour, bucket[N], truncate[N]; none = unpartitioned",
		Dynamic: true, Layer: Iceberg,
		Parse: parsePartitionSpec,
	},
	{
		Name: IcebergInvalidAction, Type: String, Default: "dlq_table",
		Doc:     "a record the schema mode cannot decode goes to the table <topic>~dlq (dlq_table) or is dropped (drop)",
		Dynamic: true, Layer: Iceberg,
		Values: []string{"dlq_table", "drop"}, Available: []string{"dlq_table", "drop"},
	},
	{
		Name: KeySchemaValidation, Type: Boolean, Default: "false",
		Doc:     "produce refuses (INVALID_RECORD) a record whose key does not start with a schema id registered under the subject <topic>-key",
		Dynamic: true, Layer: Gateway,
	},
	{
		Name: ValueSchemaValidation, Type: Boolean, Default: "false",
		Doc:     "produce refuses (INVALID_RECORD) a record whose value does not start with a schema id registered under the subject <topic>-value",
		Dynamic: true, Layer: Gateway,
	},
	{
		Name: RetentionBytes, Broker: "log.retention.bytes", Type: Long, Default: "-1",
		Doc:     "bytes kept per partition; any negative value = unlimited, 0 = delete each segment once sealed",
		Dynamic: true, Layer: Logstore,
		// Kafka defines it with no validator: every long is accepted, and
		// a negative one means unlimited.
		Min: math.MinInt64, Max: math.MaxInt64,
	},
	{
		Name: RetentionMs, Broker: "log.retention.ms", Type: Long, Default: "604800000",
		Doc:     "time sealed segments are kept; -1 = forever, 0 = delete each once sealed",
		Dynamic: true, Layer: Logstore,
		// Kafka's range, atLeast(-1): 0 deletes a segment as soon as it is
		// sealed and its newest record is in the past.
		Min: Unlimited, Max: maxMs,
	},
	{
		Name: SegmentBytes, Broker: "log.segment.bytes", Type: Int, Default: "134217728",
		Doc:     "roll the active segment at this size",
		Dynamic: true, Layer: Logstore,
		Min: 14, Max: math.MaxInt32,
	},
	{
		Name: SegmentMs, Broker: "log.roll.ms", Type: Long, Default: "604800000",
		Doc:     "roll the active segment at this age",
		Dynamic: true, Layer: Logstore,
		Min: 1, Max: maxMs,
	},
}

// parsePartitionSpec checks the form of an iceberg.partition_spec; the
// columns are checked against the table's schema when it is created.
func parsePartitionSpec(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.EqualFold(v, "none") {
		return "none", nil
	}
	terms := strings.Split(v, ",")
	for i, term := range terms {
		term = strings.TrimSpace(term)
		col, tr := term, "identity"
		if open := strings.IndexByte(term, '('); open >= 0 {
			if !strings.HasSuffix(term, ")") {
				return "", fmt.Errorf("%q: %q is not transform(column)", v, term)
			}
			tr, col = strings.ToLower(strings.TrimSpace(term[:open])), strings.TrimSpace(term[open+1:len(term)-1])
		}
		if !validTransform(tr) {
			return "", fmt.Errorf("%q: transform %q is not identity, year, month, day, hour, bucket[N], truncate[N] or void", v, tr)
		}
		if col == "" || strings.ContainsAny(col, " ()[],") {
			return "", fmt.Errorf("%q: %q is not a column name", v, col)
		}
		if tr == "identity" {
			terms[i] = col
		} else {
			terms[i] = tr + "(" + col + ")"
		}
	}
	return strings.Join(terms, ","), nil
}

func validTransform(tr string) bool {
	switch tr {
	case "identity", "year", "month", "day", "hour", "void":
		return true
	}
	for _, p := range []string{"bucket[", "truncate["} {
		if n, ok := strings.CutPrefix(tr, p); ok && strings.HasSuffix(n, "]") {
			k, err := strconv.Atoi(strings.TrimSuffix(n, "]"))
			return err == nil && k > 0
		}
	}
	return false
}
