package config

import (
	"fmt"
	"math"
	"net"
	"reflect"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/topicconfig"
)

// fieldError is one invalid value.
type fieldError struct {
	key   string
	value string // as written in a flag
	msg   string
}

// Validate checks every value and returns all problems on one line.
func (c *Config) Validate() error {
	errs := c.validate()
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = fmt.Sprintf("%s = %s: %s", e.key, e.value, e.msg)
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(msgs, "; "))
}

func (c *Config) validate() []fieldError {
	var errs []fieldError
	bad := func(key, msg string) {
		k, _ := Lookup(key)
		v := k.Get(c)
		if k.Kind == reflect.String {
			v = strconv.Quote(v)
		}
		errs = append(errs, fieldError{key: key, value: v, msg: msg})
	}
	oneOf := func(key, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(key, "must be one of "+strings.Join(allowed, ", "))
	}
	positive := func(key string, v int64) {
		if v <= 0 {
			bad(key, "must be positive")
		}
	}

	if strings.TrimSpace(c.DataDir) == "" {
		bad("data_dir", "must not be empty")
	}
	oneOf("log_level", c.LogLevel, "debug", "info", "warn", "error")
	oneOf("log_format", c.LogFormat, "text", "json")

	for _, l := range []struct {
		key, addr string
		unix      bool
		prefix    bool // may carry a security protocol prefix
	}{
		{"listeners.kafka", c.Listeners.Kafka, false, true},
		{"listeners.native", c.Listeners.Native, false, true},
		{"listeners.http", c.Listeners.HTTP, false, true},
		{"listeners.controller", c.Listeners.Controller, false, true},
		{"listeners.schema_registry", c.Listeners.SchemaRegistry, false, false},
		{"listeners.ring", c.Listeners.Ring, true, true},
		{"listeners.advertised_kafka", c.Listeners.AdvertisedKafka, false, false},
		{"gateway.ring_addr", c.Gateway.RingAddr, true, false},
	} {
		addr := l.addr
		if l.prefix {
			_, a, err := SplitListener(addr)
			if err != nil {
				bad(l.key, err.Error())
				continue
			}
			addr = a
		}
		if err := checkAddr(addr, l.unix); err != nil {
			bad(l.key, err.Error())
		}
	}
	c.validateSecurity(bad)
	if n := c.SchemaRegistry.MaxSchemaBytes; n < 1 || n > 8<<20 {
		bad("schema_registry.max_schema_bytes", fmt.Sprintf("%d; want 1 to 8388608", n))
	}
	c.validateIceberg(bad, oneOf, positive)

	if a := c.Listeners.AdvertisedKafka; a != "" {
		if host, _, err := net.SplitHostPort(a); err == nil && (host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()) {
			bad("listeners.advertised_kafka", "needs a host clients can reach, not an unspecified one")
		}
	}
	positive("kafka.socket_request_max_bytes", int64(c.Kafka.SocketRequestMaxBytes))
	if c.Kafka.SocketRequestMaxBytes > math.MaxInt32 {
		bad("kafka.socket_request_max_bytes", "must fit a Kafka request size (at most 2147483647)")
	}
	if q := c.Kafka.QueuedMaxRequestBytes; q == 0 || q < -1 {
		bad("kafka.queued_max_request_bytes", "must be positive, or -1 for no bound")
	}
	positive("kafka.num_partitions", int64(c.Kafka.NumPartitions))
	positive("kafka.offsets_topic_num_partitions", int64(c.Kafka.OffsetsTopicNumPartitions))
	if c.Kafka.GroupInitialRebalanceDelayMs < 0 {
		bad("kafka.group_initial_rebalance_delay_ms", "must be 0 or positive")
	}
	positive("kafka.group_min_session_timeout_ms", c.Kafka.GroupMinSessionTimeoutMs)
	positive("kafka.group_max_session_timeout_ms", c.Kafka.GroupMaxSessionTimeoutMs)
	positive("kafka.transactional_id_expiration_ms", c.Kafka.TransactionalIDExpirationMs)
	oneOf("kafka.group_consumer_migration_policy", c.Kafka.GroupConsumerMigrationPolicy, "bidirectional", "upgrade", "downgrade", "disabled")
	if c.Kafka.GroupMaxSessionTimeoutMs < c.Kafka.GroupMinSessionTimeoutMs {
		bad("kafka.group_max_session_timeout_ms", "must not be below kafka.group_min_session_timeout_ms")
	}
	positive("kafka.fetch_session_cache_slots", int64(c.Kafka.FetchSessionCacheSlots))
	if c.Gateway.NodeID < 0 {
		bad("gateway.node_id", "must be 0 or positive")
	}

	if c.Logstore.Shards < 0 {
		bad("logstore.shards", "must be 0 (one per CPU) or positive")
	}
	oneOf("logstore.flush", c.Logstore.Flush, "none", "interval", "always")
	positive("logstore.flush_interval_ms", c.Logstore.FlushIntervalMs)
	positive("logstore.index_interval_bytes", int64(c.Logstore.IndexIntervalBytes))
	positive("logstore.writeback_bytes", c.Logstore.WritebackBytes)
	positive("logstore.max_index_bytes", int64(c.Logstore.MaxIndexBytes))
	positive("logstore.retention_check_interval_ms", c.Logstore.RetentionCheckIntervalMs)
	positive("logstore.producer_id_expiration_ms", c.Logstore.ProducerIDExpirationMs)
	positive("logstore.cleaner_interval_ms", c.Logstore.CleanerIntervalMs)
	if n := c.Logstore.CleanerBytesPerSec; n <= 0 && n != -1 {
		bad("logstore.cleaner_bytes_per_sec", "must be positive, or -1 for no bound")
	}

	// The ranges are the topic configs' own, from the registry.
	for _, k := range c.TopicDefaults.keys() {
		if _, err := topicconfig.Lookup(k.config).Check(strconv.FormatInt(k.value, 10)); err != nil {
			bad("topic_defaults."+k.key, err.Error())
		}
	}
	ctl := c.Controller
	if ctl.NodeID < 0 {
		bad("controller.node_id", "must not be negative")
	}
	if ctl.Bootstrap && ctl.Join != "" {
		bad("controller.bootstrap", "bootstrap and join are exclusive: a controller either forms a new cluster or joins one")
	}
	for _, a := range strings.Split(ctl.Join, ",") {
		if a = strings.TrimSpace(a); a == "" && ctl.Join == "" {
			break
		}
		if err := checkAddr(a, false); err != nil || a == "" {
			bad("controller.join", fmt.Sprintf("%q is not a host:port address", a))
			break
		}
	}
	if ctl.Advertise != "" {
		if host, _, err := net.SplitHostPort(ctl.Advertise); err != nil || host == "" || checkAddr(ctl.Advertise, false) != nil {
			bad("controller.advertise", "want host:port with a host")
		}
	}
	positive("controller.session_timeout_ms", ctl.SessionTimeoutMs)
	positive("controller.heartbeat_interval_ms", ctl.HeartbeatIntervalMs)
	if ctl.HeartbeatIntervalMs >= ctl.SessionTimeoutMs && ctl.SessionTimeoutMs > 0 {
		bad("controller.heartbeat_interval_ms", "must be below controller.session_timeout_ms")
	}
	if ctl.LeaderRebalanceIntervalMs < 0 {
		bad("controller.leader_rebalance_interval_ms", "must be 0 (off) or positive")
	}
	if ctl.RaftTimeoutMs < 10 {
		bad("controller.raft_timeout_ms", "must be at least 10")
	}
	// Milliseconds become a time.Duration (nanoseconds) downstream.
	for key, ms := range map[string]int64{
		"logstore.flush_interval_ms":             c.Logstore.FlushIntervalMs,
		"logstore.retention_check_interval_ms":   c.Logstore.RetentionCheckIntervalMs,
		"logstore.producer_id_expiration_ms":     c.Logstore.ProducerIDExpirationMs,
		"logstore.cleaner_interval_ms":           c.Logstore.CleanerIntervalMs,
		"topic_defaults.segment_ms":              c.TopicDefaults.SegmentMs,
		"topic_defaults.retention_ms":            c.TopicDefaults.RetentionMs,
		"kafka.group_initial_rebalance_delay_ms": c.Kafka.GroupInitialRebalanceDelayMs,
		"kafka.group_min_session_timeout_ms":     c.Kafka.GroupMinSessionTimeoutMs,
		"kafka.group_max_session_timeout_ms":     c.Kafka.GroupMaxSessionTimeoutMs,
		"kafka.transactional_id_expiration_ms":   c.Kafka.TransactionalIDExpirationMs,
		"controller.session_timeout_ms":          ctl.SessionTimeoutMs,
		"controller.heartbeat_interval_ms":       ctl.HeartbeatIntervalMs,
		"controller.raft_timeout_ms":             ctl.RaftTimeoutMs,
	} {
		if ms > math.MaxInt64/int64(1e6) {
			bad(key, "is too large (more than 292 years)")
		}
	}
	ts := c.TieredStorage
	oneOf("tiered_storage.provider", ts.Provider, "s3", "gcs", "azure", "local")
	positive("tiered_storage.uploaders", int64(ts.Uploaders))
	positive("tiered_storage.cache_bytes", ts.CacheBytes)
	positive("tiered_storage.cache_chunk_bytes", int64(ts.CacheChunkBytes))
	positive("tiered_storage.cold_read_gets", int64(ts.ColdReadGets))
	positive("tiered_storage.rescan_interval_ms", ts.RescanIntervalMs)
	positive("tiered_storage.manifest_interval_ms", ts.ManifestIntervalMs)
	if ts.ColdReadBytesPerS < 0 {
		bad("tiered_storage.cold_read_bytes_per_sec", "must be 0 (no limit) or positive")
	}
	if ts.Enabled {
		switch ts.Provider {
		case "s3":
			if ts.S3.Bucket == "" {
				bad("tiered_storage.s3.bucket", "is required with provider = s3")
			}
			if (ts.S3.AccessKeyID == "") != (ts.S3.SecretAccessKey == "") {
				bad("tiered_storage.s3.access_key_id", "set both access_key_id and secret_access_key, or neither")
			}
		case "gcs":
			if ts.GCS.Bucket == "" {
				bad("tiered_storage.gcs.bucket", "is required with provider = gcs")
			}
		case "azure":
			if ts.Azure.ContainerName == "" {
				bad("tiered_storage.azure.container_name", "is required with provider = azure")
			}
			if ts.Azure.AccountName == "" {
				bad("tiered_storage.azure.account_name", "is required with provider = azure")
			}
		}
	}
	return errs
}

// checkAddr accepts "" (listener off), host:port with a numeric port, and,
// where unixOK, unix:/path.
func checkAddr(addr string, unixOK bool) error {
	if addr == "" {
		return nil
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if !unixOK {
			return fmt.Errorf("unix sockets are not supported here; want host:port")
		}
		if path == "" {
			return fmt.Errorf("unix socket path is empty")
		}
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		want := "host:port"
		if unixOK {
			want += " or unix:/path"
		}
		return fmt.Errorf("not a listen address (want %s)", want)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// Network splits a listener address into the network and address that
// net.Listen takes; a security protocol prefix (SASL_SSL://) is dropped.
func Network(addr string) (network, address string) {
	if _, a, err := SplitListener(addr); err == nil {
		addr = a
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix", path
	}
	return "tcp", addr
}

// validateIceberg checks the [iceberg] keys.
func (c *Config) validateIceberg(bad func(key, msg string), oneOf func(key, v string, allowed ...string), positive func(key string, v int64)) {
	ic := c.Iceberg
	oneOf("iceberg.catalog", ic.Catalog, "sql", "rest")
	if ic.Catalog == "rest" && strings.TrimSpace(ic.RestURI) == "" {
		bad("iceberg.rest_uri", "must be set with catalog = rest")
	}
	if ic.Catalog == "rest" && ic.RestURI != "" && !strings.HasPrefix(ic.RestURI, "http://") && !strings.HasPrefix(ic.RestURI, "https://") {
		bad("iceberg.rest_uri", "must be an http:// or https:// URI")
	}
	switch w := ic.Warehouse; {
	case w == "", w == "tiered":
		if w == "tiered" && (!c.TieredStorage.Enabled || c.TieredStorage.Provider != "s3") {
			bad("iceberg.warehouse", "tiered needs tiered_storage.enabled with provider = s3")
		}
	case strings.HasPrefix(w, "s3://"), strings.HasPrefix(w, "file:///"):
	default:
		bad("iceberg.warehouse", "must be empty, tiered, s3://bucket/prefix or file:///dir")
	}
	if strings.TrimSpace(ic.Namespace) == "" || strings.ContainsAny(ic.Namespace, "./ ") {
		bad("iceberg.namespace", "must be a non-empty name without dots, slashes or spaces")
	}
	positive("iceberg.commit_interval_ms", ic.CommitIntervalMs)
	positive("iceberg.commit_bytes", ic.CommitBytes)
}
