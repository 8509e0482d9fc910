package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/topicconfig"
)

// Config is the whole of aerostream.toml. Field tags:
//   - toml: the key (or section) name;
//   - help: one line for --help, the README table and the example file.
//
// Only string, bool, signed integer and string-list leaves are supported
// (a list is comma-separated in an env var or a flag); sizes and
// durations are integers with their unit in the key name (_bytes, _ms), as
// Kafka's own configs are, so the same number works in a file, an env var and
// a flag.
type Config struct {
	DataDir   string `toml:"data_dir" help:"directory for the catalog and the partition logs"`
	LogLevel  string `toml:"log_level" help:"debug, info, warn or error"`
	LogFormat string `toml:"log_format" help:"text or json"`

	Listeners     Listeners     `toml:"listeners"`
	Admin         Admin         `toml:"admin"`
	Logstore      Logstore      `toml:"logstore"`
	TopicDefaults TopicDefaults `toml:"topic_defaults"`
	Controller    Controller    `toml:"controller"`
	TieredStorage TieredStorage `toml:"tiered_storage"`
	Kafka         Kafka         `toml:"kafka"`
	Gateway       Gateway       `toml:"gateway"`
	TLS           TLS           `toml:"tls"`
	Auth          Auth          `toml:"auth"`

	SchemaRegistry SchemaRegistry `toml:"schema_registry"`

	Iceberg Iceberg `toml:"iceberg"`
}

// Iceberg configures Iceberg topics (iceberg/): the catalog their tables
// live in, where the data files go, and how often a committer commits.
type Iceberg struct {
	Catalog          string `toml:"catalog" help:"sql (embedded SQLite at <data_dir>/iceberg/catalog.db) or rest (an external Iceberg REST catalog at rest_uri)"`
	RestURI          string `toml:"rest_uri" help:"catalog = rest: the REST catalog's URI (Polaris, Nessie, Glue's REST endpoint)"`
	RestCredential   string `toml:"rest_credential" help:"catalog = rest: OAuth2 client credential, client_id:client_secret (never logged)"`
	RestToken        string `toml:"rest_token" help:"catalog = rest: bearer token (never logged)"`
	Warehouse        string `toml:"warehouse" help:"where table files go: empty = <data_dir>/iceberg/warehouse; tiered = the tiered-storage S3 bucket under the prefix iceberg/; or a URI, s3://bucket/prefix (with tiered_storage.s3's endpoint and keys) or file:///dir"`
	Namespace        string `toml:"namespace" help:"namespace of the topics' tables"`
	CommitIntervalMs int64  `toml:"commit_interval_ms" help:"how often a topic's new records are committed to its table (sooner once commit_bytes are pending)"`
	CommitBytes      int64  `toml:"commit_bytes" help:"record bytes pending that make a committer commit before commit_interval_ms"`
}

// SchemaRegistry configures the schema registry (listeners.schema_registry,
// and /schema-registry on listeners.http).
type SchemaRegistry struct {
	MaxSchemaBytes int `toml:"max_schema_bytes" help:"largest schema text the registry accepts, in bytes (at most 8388608); a larger one is refused with 42201"`
}

// TieredStorage configures the cold tier: where sealed segments are
// uploaded (tierd) and how cold reads are cached (fetchcache).
type TieredStorage struct {
	Enabled            bool   `toml:"enabled" help:"upload sealed segments to the cold tier and serve old offsets from it"`
	Provider           string `toml:"provider" help:"s3, gcs, azure or local"`
	Uploaders          int    `toml:"uploaders" help:"segments uploaded at once"`
	CacheBytes         int64  `toml:"cache_bytes" help:"memory budget of the cold-read chunk cache"`
	CacheChunkBytes    int    `toml:"cache_chunk_bytes" help:"size of the aligned chunks cold reads fetch and cache"`
	CachePrealloc      bool   `toml:"cache_prealloc" help:"allocate and touch the cache's chunk memory at start, so a fresh node's first cold reads do not pay page faults"`
	ColdReadGets       int    `toml:"cold_read_gets" help:"cold I/O budget: range GETs in flight at once"`
	ColdReadBytesPerS  int64  `toml:"cold_read_bytes_per_sec" help:"rate limit of cold-read bytes; 0 = none"`
	RescanIntervalMs   int64  `toml:"rescan_interval_ms" help:"how often tierd rescans the catalog for uploads and deletions to retry"`
	ManifestIntervalMs int64  `toml:"manifest_interval_ms" help:"how long a partition's manifest.json in the bucket may lag its uploads; tier restore reads the segments uploaded since once"`
	CacheReadahead     int    `toml:"cache_readahead_chunks" help:"chunks fetched ahead of a sequential cold reader; 0 = none"`

	S3    TierS3    `toml:"s3"`
	GCS   TierGCS   `toml:"gcs"`
	Azure TierAzure `toml:"azure"`
	Local TierLocal `toml:"local"`
}

// TierS3 configures the s3 provider (AWS S3, MinIO, any S3-compatible
// store). Without inline keys the standard AWS credential chain is used.
type TierS3 struct {
	Bucket          string `toml:"bucket" help:"bucket name"`
	Prefix          string `toml:"prefix" help:"key prefix inside the bucket"`
	Region          string `toml:"region" help:"bucket region; empty = discover"`
	EndpointURL     string `toml:"endpoint_url" help:"service URL, e.g. http://127.0.0.1:9000 for MinIO; empty = AWS"`
	AccessKeyID     string `toml:"access_key_id" help:"inline access key; empty = AWS_* env, container or web-identity credentials"`
	SecretAccessKey string `toml:"secret_access_key" help:"inline secret key (never logged)"`
	ForcePathStyle  bool   `toml:"force_path_style" help:"path-style addressing (MinIO needs it)"`
	SignPayload     bool   `toml:"sign_payload" help:"over http, sign each upload's body (SHA-256 on both sides); default: unsigned with a CRC32C trailer the server verifies, as over https"`
}

// TierGCS configures the gcs provider.
type TierGCS struct {
	Bucket             string `toml:"bucket" help:"bucket name"`
	Prefix             string `toml:"prefix" help:"key prefix inside the bucket"`
	ServiceAccountPath string `toml:"service_account_path" help:"service account JSON; empty = application default credentials"`
	Endpoint           string `toml:"endpoint" help:"API endpoint; empty = Google Cloud (STORAGE_EMULATOR_HOST also works)"`
}

// TierAzure configures the azure provider (Azure Blob Storage).
type TierAzure struct {
	ContainerName string `toml:"container_name" help:"blob container"`
	AccountName   string `toml:"account_name" help:"storage account"`
	Prefix        string `toml:"prefix" help:"blob name prefix"`
	AccessKey     string `toml:"access_key" help:"shared key (never logged)"`
	Endpoint      string `toml:"endpoint" help:"service URL; empty = https://<account>.blob.core.windows.net"`
}

// TierLocal configures the local provider: a local or NFS directory.
type TierLocal struct {
	RootPath string `toml:"root_path" help:"directory of the cold tier; empty = <data_dir>/cold"`
}

// Listeners are host:port addresses. An empty address leaves that listener
// off.
type Listeners struct {
	Kafka string `toml:"kafka" help:"Kafka wire-protocol gateway ([PROTOCOL://]host:port; PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, default PLAINTEXT)"`
	// AdvertisedKafka is what Kafka clients are told in Metadata.
	AdvertisedKafka string `toml:"advertised_kafka" help:"host:port Kafka clients are told to connect to; empty = listeners.kafka, with 127.0.0.1 for an unspecified host"`
	Native          string `toml:"native" help:"native binary-protocol gateway ([PROTOCOL://]host:port; PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"`
	HTTP            string `toml:"http" help:"HTTP admin API and /metrics ([PROTOCOL://]host:port; PLAINTEXT or SSL); unauthenticated, so loopback by default"`
	Controller      string `toml:"controller" help:"Raft controller and its client API ([PROTOCOL://]host:port; PLAINTEXT or SSL); SSL = mutual TLS with the [tls] certificate, client certificates required against tls.ca_file, and this process dials controller.join with it too; PLAINTEXT is unauthenticated, so loopback by default"`
	Ring            string `toml:"ring" help:"shard ring served by the store ([PROTOCOL://]host:port or unix:/path; PLAINTEXT or SSL); SSL = mutual TLS with the [tls] certificate, client certificates required against tls.ca_file, and this process dials other stores' rings with it too (set it alike on every node, gateways included)"`
	SchemaRegistry  string `toml:"schema_registry" help:"Confluent-compatible schema registry REST API (host:port); unauthenticated, so loopback by default"`
}

// Admin configures what the HTTP admin listener (listeners.http) serves
// besides the admin API and /metrics.
type Admin struct {
	// Pprof is off by default: nothing authenticates the caller, profiles
	// show the program's internals, and a CPU profile or trace costs the
	// node while it runs.
	Pprof bool `toml:"pprof" help:"serve /debug/pprof (Go profiles) on listeners.http"`
}

// Logstore configures the storage engine.
type Logstore struct {
	Shards                   int    `toml:"shards" help:"shard goroutines; 0 = one per CPU"`
	PinCPUs                  bool   `toml:"pin_cpus" help:"pin shard i to CPU i mod NumCPU"`
	Flush                    string `toml:"flush" help:"none (page cache), interval (group fsync every flush_interval_ms) or always (fsync before ack)"`
	FlushIntervalMs          int64  `toml:"flush_interval_ms" help:"fsync period for flush = interval"`
	IndexIntervalBytes       int    `toml:"index_interval_bytes" help:"log bytes between two sparse index entries"`
	WritebackBytes           int64  `toml:"writeback_bytes" help:"paced writeback window (sync_file_range behind the writer)"`
	MaxIndexBytes            int    `toml:"max_index_bytes" help:"preallocated size of each mmapped index file"`
	RetentionCheckIntervalMs int64  `toml:"retention_check_interval_ms" help:"how often retention runs"`
	ProducerIDExpirationMs   int64  `toml:"producer_id_expiration_ms" help:"a partition forgets an idempotent producer this long after its last append (Kafka's producer.id.expiration.ms)"`
	CleanerIntervalMs        int64  `toml:"cleaner_interval_ms" help:"how often the log cleaner looks for compacted partitions to clean"`
	CleanerBytesPerSec       int64  `toml:"cleaner_bytes_per_sec" help:"what the log cleaner may read and write per second, together; -1 = no bound"`
}

// TopicDefaults are the per-partition configs a topic gets unless it sets its
// own; they mirror Kafka's broker defaults.
type TopicDefaults struct {
	SegmentBytes    int64 `toml:"segment_bytes" help:"roll the active segment at this size"`
	SegmentMs       int64 `toml:"segment_ms" help:"roll the active segment at this age"`
	RetentionMs     int64 `toml:"retention_ms" help:"delete sealed segments older than this; -1 = forever, 0 = once sealed"`
	RetentionBytes  int64 `toml:"retention_bytes" help:"keep at most this many bytes per partition; negative = unlimited, 0 = delete each segment once sealed"`
	MaxMessageBytes int32 `toml:"max_message_bytes" help:"largest record batch accepted"`
}

// topicDefaultKey pairs a [topic_defaults] key with the topic config it
// sets the default of.
type topicDefaultKey struct {
	key, config string
	value       int64
}

func (td TopicDefaults) keys() []topicDefaultKey {
	return []topicDefaultKey{
		{"segment_bytes", topicconfig.SegmentBytes, td.SegmentBytes},
		{"segment_ms", topicconfig.SegmentMs, td.SegmentMs},
		{"retention_ms", topicconfig.RetentionMs, td.RetentionMs},
		{"retention_bytes", topicconfig.RetentionBytes, td.RetentionBytes},
		{"max_message_bytes", topicconfig.MaxMessageBytes, int64(td.MaxMessageBytes)},
	}
}

// KafkaConfigs gives the defaults under their topic config names, as the
// controller describes them and a store reads them.
func (td TopicDefaults) KafkaConfigs() map[string]string {
	out := map[string]string{}
	for _, k := range td.keys() {
		out[k.config] = strconv.FormatInt(k.value, 10)
	}
	return out
}

// Kafka configures the Kafka wire-protocol gateway (serve's, and
// `aerostream gateway kafka`). The keys mirror the Kafka broker configs of
// the same names.
type Kafka struct {
	SocketRequestMaxBytes        int    `toml:"socket_request_max_bytes" help:"largest request accepted (socket.request.max.bytes); a larger one closes the connection"`
	QueuedMaxRequestBytes        int64  `toml:"queued_max_request_bytes" help:"request bytes read and in service at once over all connections (queued.max.request.bytes); -1 for no bound"`
	AutoCreateTopicsEnable       bool   `toml:"auto_create_topics_enable" help:"Metadata for an unknown topic creates it (auto.create.topics.enable)"`
	NumPartitions                int32  `toml:"num_partitions" help:"partitions of an auto-created topic, and of CreateTopics with -1 (num.partitions)"`
	OffsetsTopicNumPartitions    int32  `toml:"offsets_topic_num_partitions" help:"partitions of __consumer_offsets when the gateway creates it (offsets.topic.num.partitions)"`
	GroupInitialRebalanceDelayMs int64  `toml:"group_initial_rebalance_delay_ms" help:"how long the first rebalance of an empty group waits for more members (group.initial.rebalance.delay.ms)"`
	GroupMinSessionTimeoutMs     int64  `toml:"group_min_session_timeout_ms" help:"smallest session timeout a group member may ask for (group.min.session.timeout.ms)"`
	GroupMaxSessionTimeoutMs     int64  `toml:"group_max_session_timeout_ms" help:"largest session timeout a group member may ask for (group.max.session.timeout.ms)"`
	FetchSessionCacheSlots       int    `toml:"fetch_session_cache_slots" help:"incremental fetch sessions kept (max.incremental.fetch.session.cache.slots)"`
	TransactionalIDExpirationMs  int64  `toml:"transactional_id_expiration_ms" help:"a transactional id whose last transaction ended this long ago is forgotten by its coordinator (transactional.id.expiration.ms)"`
	GroupConsumerMigrationPolicy string `toml:"group_consumer_migration_policy" help:"bidirectional or upgrade let a consumer-protocol (KIP-848) member join a classic group that has members, upgrading it online; bidirectional or downgrade turn a consumer group whose last consumer-protocol member left back into a classic group with its classic members (group.consumer.migration.policy)"`
}

// Gateway configures a gateway process: `aerostream gateway kafka`, and
// the gateways inside serve.
type Gateway struct {
	NodeID   int32  `toml:"node_id" help:"this gateway's node id: its broker id in Kafka Metadata and the id it registers under with the controller"`
	RingAddr string `toml:"ring_addr" help:"aerostream gateway: override for a one-store setup, the store's shard ring (host:port or unix:/path); empty routes each partition to the store that leads it, as the controller lists them"`
}

// Controller configures the Raft controller: `aerostream controller`, the
// single voter inside `serve`, and how a store reaches the controllers.
type Controller struct {
	NodeID              int32  `toml:"node_id" help:"this node's id: its controller voter id, and the id a store registers under"`
	Bootstrap           bool   `toml:"bootstrap" help:"aerostream controller: form a new cluster on first start (serve always does)"`
	Join                string `toml:"join" help:"comma-separated controller addresses: a new controller asks them to add it as a voter; a store registers with them"`
	Advertise           string `toml:"advertise" help:"host:port other nodes reach this controller at; empty = listeners.controller, an unspecified host replaced by the hostname"`
	SessionTimeoutMs    int64  `toml:"session_timeout_ms" help:"a store or gateway silent this long is marked down"`
	HeartbeatIntervalMs int64  `toml:"heartbeat_interval_ms" help:"how often stores and gateways heartbeat"`
	RaftTimeoutMs       int64  `toml:"raft_timeout_ms" help:"Raft heartbeat and election timeout: a lost leader is replaced within about 2 to 3 times this"`
	// LeaderRebalanceIntervalMs is Kafka's auto.leader.rebalance.enable and
	// leader.imbalance.check.interval.seconds in one key.
	LeaderRebalanceIntervalMs int64 `toml:"leader_rebalance_interval_ms" help:"how often the controller hands leadership back to each partition's preferred replica once it is in sync again; 0 turns preferred-leader rebalancing off"`
}

// Default returns the configuration used when nothing overrides it. The
// shipped aerostream.toml repeats these values, and a test keeps the two
// equal.
func Default() Config {
	return Config{
		DataDir:   "./data",
		LogLevel:  "info",
		LogFormat: "text",
		Listeners: Listeners{
			Kafka:      ":9092",
			Native:     ":9091",
			HTTP:       "127.0.0.1:9001",
			Controller: "127.0.0.1:8001",
			Ring:       ":7001",
			// Like the admin API, the registry has no authentication.
			SchemaRegistry: "127.0.0.1:8081",
		},
		SchemaRegistry: SchemaRegistry{MaxSchemaBytes: 1 << 20},
		Iceberg: Iceberg{
			Catalog:          "sql",
			Namespace:        "aerostream",
			CommitIntervalMs: 60000,
			CommitBytes:      64 << 20,
		},
		Kafka: Kafka{
			SocketRequestMaxBytes:        100 << 20,
			QueuedMaxRequestBytes:        512 << 20,
			AutoCreateTopicsEnable:       true,
			NumPartitions:                1,
			OffsetsTopicNumPartitions:    8,
			GroupInitialRebalanceDelayMs: 0,
			GroupMinSessionTimeoutMs:     6000,
			GroupMaxSessionTimeoutMs:     1800000,
			FetchSessionCacheSlots:       1000,
			TransactionalIDExpirationMs:  604800000,
			GroupConsumerMigrationPolicy: "bidirectional",
		},
		Gateway: Gateway{
			NodeID: 1001,
		},
		Logstore: Logstore{
			Shards:                   0,
			PinCPUs:                  false,
			Flush:                    "none",
			FlushIntervalMs:          100,
			IndexIntervalBytes:       4096,
			WritebackBytes:           8 << 20,
			MaxIndexBytes:            10 << 20,
			RetentionCheckIntervalMs: 30000,
			ProducerIDExpirationMs:   86400000,
			CleanerIntervalMs:        15000,
			CleanerBytesPerSec:       32 << 20,
		},
		TieredStorage: TieredStorage{
			Enabled:            true,
			Provider:           "local",
			Uploaders:          2,
			CacheBytes:         256 << 20,
			CacheChunkBytes:    4 << 20,
			CachePrealloc:      true,
			ColdReadGets:       8,
			RescanIntervalMs:   60000,
			ManifestIntervalMs: 10000,
			CacheReadahead:     4,
		},
		TopicDefaults: TopicDefaults{
			SegmentBytes:    topicconfig.DefaultInt(topicconfig.SegmentBytes),
			SegmentMs:       topicconfig.DefaultInt(topicconfig.SegmentMs),
			RetentionMs:     topicconfig.DefaultInt(topicconfig.RetentionMs),
			RetentionBytes:  topicconfig.DefaultInt(topicconfig.RetentionBytes),
			MaxMessageBytes: int32(topicconfig.DefaultInt(topicconfig.MaxMessageBytes)),
		},
		Auth: Auth{
			SASLMechanisms:      []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"},
			SuperUsers:          []string{},
			HTTPAuthentication:  HTTPAuthAuto,
			HTTPOpenPaths:       []string{"/healthz", "/metrics"},
			OAuthPrincipalClaim: "sub",
			OAuthGroupsClaim:    "groups",
		},
		TLS: TLS{ClientAuth: "none", CipherSuites: []string{}, EnabledProtocols: []string{}, PrincipalMappingRules: auth.DefaultPrincipalMappingRules},
		Controller: Controller{
			NodeID:                    1,
			SessionTimeoutMs:          2000,
			HeartbeatIntervalMs:       500,
			RaftTimeoutMs:             1000,
			LeaderRebalanceIntervalMs: 5000,
		},
	}
}

// EnvPrefix starts every environment variable that sets a key.
const EnvPrefix = "AEROSTREAM_"

// EnvConfigFile names the config file when --config is not given.
const EnvConfigFile = EnvPrefix + "CONFIG"

// Key describes one leaf of Config.
type Key struct {
	Name    string // dotted key, e.g. "logstore.flush"
	Section string // "" for top-level keys
	Env     string // e.g. AEROSTREAM_LOGSTORE_FLUSH
	Flag    string // flag name without dashes, e.g. "logstore.flush"
	Help    string
	Kind    reflect.Kind // String, Bool or Int*
	index   []int
}

// Default is the key's default, formatted as it is written in a flag or an
// env var.
func (k Key) Default() string {
	d := Default()
	return format(k.field(&d))
}

// TOMLDefault is the key's default as written in aerostream.toml.
func (k Key) TOMLDefault() string {
	switch k.Kind {
	case reflect.String:
		return strconv.Quote(k.Default())
	case reflect.Slice:
		d := Default()
		return tomlList(k.field(&d))
	}
	return k.Default()
}

// TypeName is how the value is written: "string", "bool" or "int".
func (k Key) TypeName() string {
	switch k.Kind {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Slice:
		return "list"
	default:
		return "int"
	}
}

func (k Key) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index)
}

// Get returns the key's value in c, formatted as for a flag.
func (k Key) Get(c *Config) string { return format(k.field(c)) }

// set parses s into the key's field of c.
func (k Key) set(c *Config, s string) error {
	v := k.field(c)
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (want true or false)", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return fmt.Errorf("%s is out of range for a %d-bit integer", s, v.Type().Bits())
			}
			return fmt.Errorf("%q is not an integer", s)
		}
		v.SetInt(n)
	case reflect.Slice:
		v.Set(reflect.ValueOf(splitList(s)))
	default:
		return fmt.Errorf("unsupported kind %s", v.Kind())
	}
	return nil
}

func format(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Slice:
		l := v.Interface().([]string)
		for _, x := range l {
			if strings.Contains(x, ",") {
				return strings.Join(l, ";")
			}
		}
		return strings.Join(l, ",")
	default:
		return strconv.FormatInt(v.Int(), 10)
	}
}

var keys = buildKeys()

// Keys lists every key of Config in declaration order.
func Keys() []Key { return append([]Key(nil), keys...) }

// Sections lists the table names of Config.
func Sections() []string {
	var s []string
	seen := map[string]bool{}
	for _, k := range keys {
		if k.Section != "" && !seen[k.Section] {
			seen[k.Section] = true
			s = append(s, k.Section)
		}
	}
	return s
}

// Lookup finds a key by its dotted name.
func Lookup(name string) (Key, bool) {
	for _, k := range keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func buildKeys() []Key {
	var out []Key
	var walk func(t reflect.Type, prefix []string, index []int)
	walk = func(t reflect.Type, prefix []string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			if name == "" || name == "-" {
				panic(fmt.Sprintf("config: field %s.%s has no toml tag", t.Name(), f.Name))
			}
			idx := append(append([]int(nil), index...), i)
			path := append(append([]string(nil), prefix...), name)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, path, idx)
				continue
			}
			switch f.Type.Kind() {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			case reflect.Slice:
				if f.Type.Elem().Kind() != reflect.String {
					panic(fmt.Sprintf("config: field %s.%s has unsupported type %s", t.Name(), f.Name, f.Type))
				}
			default:
				panic(fmt.Sprintf("config: field %s.%s has unsupported type %s", t.Name(), f.Name, f.Type))
			}
			help := f.Tag.Get("help")
			if help == "" {
				panic(fmt.Sprintf("config: field %s.%s has no help tag", t.Name(), f.Name))
			}
			dotted := strings.Join(path, ".")
			out = append(out, Key{
				Name:    dotted,
				Section: strings.Join(prefix, "."),
				Env:     EnvPrefix + strings.ToUpper(strings.ReplaceAll(dotted, ".", "_")),
				Flag:    dotted,
				Help:    help,
				Kind:    f.Type.Kind(),
				index:   idx,
			})
		}
	}
	walk(reflect.TypeOf(Config{}), nil, nil)
	return out
}
