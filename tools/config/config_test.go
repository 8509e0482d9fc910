package config

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// writeFile writes a config file into a fresh directory and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aerostream.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseFlags registers the config flags on a fresh FlagSet and parses args.
func parseFlags(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestKeyNames(t *testing.T) {
	want := map[string]string{
		"data_dir":                                "AEROSTREAM_DATA_DIR",
		"log_level":                               "AEROSTREAM_LOG_LEVEL",
		"log_format":                              "AEROSTREAM_LOG_FORMAT",
		"listeners.kafka":                         "AEROSTREAM_LISTENERS_KAFKA",
		"listeners.native":                        "AEROSTREAM_LISTENERS_NATIVE",
		"listeners.http":                          "AEROSTREAM_LISTENERS_HTTP",
		"listeners.controller":                    "AEROSTREAM_LISTENERS_CONTROLLER",
		"listeners.ring":                          "AEROSTREAM_LISTENERS_RING",
		"listeners.schema_registry":               "AEROSTREAM_LISTENERS_SCHEMA_REGISTRY",
		"schema_registry.max_schema_bytes":        "AEROSTREAM_SCHEMA_REGISTRY_MAX_SCHEMA_BYTES",
		"iceberg.catalog":                         "AEROSTREAM_ICEBERG_CATALOG",
		"iceberg.rest_uri":                        "AEROSTREAM_ICEBERG_REST_URI",
		"iceberg.rest_credential":                 "AEROSTREAM_ICEBERG_REST_CREDENTIAL",
		"iceberg.rest_token":                      "AEROSTREAM_ICEBERG_REST_TOKEN",
		"iceberg.warehouse":                       "AEROSTREAM_ICEBERG_WAREHOUSE",
		"iceberg.namespace":                       "AEROSTREAM_ICEBERG_NAMESPACE",
		"iceberg.commit_interval_ms":              "AEROSTREAM_ICEBERG_COMMIT_INTERVAL_MS",
		"iceberg.commit_bytes":                    "AEROSTREAM_ICEBERG_COMMIT_BYTES",
		"admin.pprof":                             "AEROSTREAM_ADMIN_PPROF",
		"listeners.advertised_kafka":              "AEROSTREAM_LISTENERS_ADVERTISED_KAFKA",
		"kafka.socket_request_max_bytes":          "AEROSTREAM_KAFKA_SOCKET_REQUEST_MAX_BYTES",
		"kafka.queued_max_request_bytes":          "AEROSTREAM_KAFKA_QUEUED_MAX_REQUEST_BYTES",
		"kafka.auto_create_topics_enable":         "AEROSTREAM_KAFKA_AUTO_CREATE_TOPICS_ENABLE",
		"kafka.num_partitions":                    "AEROSTREAM_KAFKA_NUM_PARTITIONS",
		"kafka.offsets_topic_num_partitions":      "AEROSTREAM_KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS",
		"kafka.group_initial_rebalance_delay_ms":  "AEROSTREAM_KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS",
		"kafka.group_min_session_timeout_ms":      "AEROSTREAM_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS",
		"kafka.group_max_session_timeout_ms":      "AEROSTREAM_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS",
		"kafka.fetch_session_cache_slots":         "AEROSTREAM_KAFKA_FETCH_SESSION_CACHE_SLOTS",
		"kafka.transactional_id_expiration_ms":    "AEROSTREAM_KAFKA_TRANSACTIONAL_ID_EXPIRATION_MS",
		"kafka.group_consumer_migration_policy":   "AEROSTREAM_KAFKA_GROUP_CONSUMER_MIGRATION_POLICY",
		"gateway.node_id":                         "AEROSTREAM_GATEWAY_NODE_ID",
		"gateway.ring_addr":                       "AEROSTREAM_GATEWAY_RING_ADDR",
		"logstore.shards":                         "AEROSTREAM_LOGSTORE_SHARDS",
		"logstore.pin_cpus":                       "AEROSTREAM_LOGSTORE_PIN_CPUS",
		"logstore.flush":                          "AEROSTREAM_LOGSTORE_FLUSH",
		"logstore.flush_interval_ms":              "AEROSTREAM_LOGSTORE_FLUSH_INTERVAL_MS",
		"logstore.index_interval_bytes":           "AEROSTREAM_LOGSTORE_INDEX_INTERVAL_BYTES",
		"logstore.writeback_bytes":                "AEROSTREAM_LOGSTORE_WRITEBACK_BYTES",
		"logstore.max_index_bytes":                "AEROSTREAM_LOGSTORE_MAX_INDEX_BYTES",
		"logstore.retention_check_interval_ms":    "AEROSTREAM_LOGSTORE_RETENTION_CHECK_INTERVAL_MS",
		"logstore.producer_id_expiration_ms":      "AEROSTREAM_LOGSTORE_PRODUCER_ID_EXPIRATION_MS",
		"logstore.cleaner_interval_ms":            "AEROSTREAM_LOGSTORE_CLEANER_INTERVAL_MS",
		"logstore.cleaner_bytes_per_sec":          "AEROSTREAM_LOGSTORE_CLEANER_BYTES_PER_SEC",
		"topic_defaults.segment_bytes":            "AEROSTREAM_TOPIC_DEFAULTS_SEGMENT_BYTES",
		"topic_defaults.segment_ms":               "AEROSTREAM_TOPIC_DEFAULTS_SEGMENT_MS",
		"topic_defaults.retention_ms":             "AEROSTREAM_TOPIC_DEFAULTS_RETENTION_MS",
		"topic_defaults.retention_bytes":          "AEROSTREAM_TOPIC_DEFAULTS_RETENTION_BYTES",
		"topic_defaults.max_message_bytes":        "AEROSTREAM_TOPIC_DEFAULTS_MAX_MESSAGE_BYTES",
		"controller.node_id":                      "AEROSTREAM_CONTROLLER_NODE_ID",
		"controller.bootstrap":                    "AEROSTREAM_CONTROLLER_BOOTSTRAP",
		"controller.join":                         "AEROSTREAM_CONTROLLER_JOIN",
		"controller.advertise":                    "AEROSTREAM_CONTROLLER_ADVERTISE",
		"controller.session_timeout_ms":           "AEROSTREAM_CONTROLLER_SESSION_TIMEOUT_MS",
		"controller.heartbeat_interval_ms":        "AEROSTREAM_CONTROLLER_HEARTBEAT_INTERVAL_MS",
		"controller.raft_timeout_ms":              "AEROSTREAM_CONTROLLER_RAFT_TIMEOUT_MS",
		"controller.leader_rebalance_interval_ms": "AEROSTREAM_CONTROLLER_LEADER_REBALANCE_INTERVAL_MS",
		"tiered_storage.enabled":                  "AEROSTREAM_TIERED_STORAGE_ENABLED",
		"tiered_storage.provider":                 "AEROSTREAM_TIERED_STORAGE_PROVIDER",
		"tiered_storage.uploaders":                "AEROSTREAM_TIERED_STORAGE_UPLOADERS",
		"tiered_storage.cache_bytes":              "AEROSTREAM_TIERED_STORAGE_CACHE_BYTES",
		"tiered_storage.cache_chunk_bytes":        "AEROSTREAM_TIERED_STORAGE_CACHE_CHUNK_BYTES",
		"tiered_storage.cache_prealloc":           "AEROSTREAM_TIERED_STORAGE_CACHE_PREALLOC",
		"tiered_storage.cold_read_gets":           "AEROSTREAM_TIERED_STORAGE_COLD_READ_GETS",
		"tiered_storage.cold_read_bytes_per_sec":  "AEROSTREAM_TIERED_STORAGE_COLD_READ_BYTES_PER_SEC",
		"tiered_storage.rescan_interval_ms":       "AEROSTREAM_TIERED_STORAGE_RESCAN_INTERVAL_MS",
		"tiered_storage.manifest_interval_ms":     "AEROSTREAM_TIERED_STORAGE_MANIFEST_INTERVAL_MS",
		"tiered_storage.cache_readahead_chunks":   "AEROSTREAM_TIERED_STORAGE_CACHE_READAHEAD_CHUNKS",
		"tiered_storage.s3.bucket":                "AEROSTREAM_TIERED_STORAGE_S3_BUCKET",
		"tiered_storage.s3.prefix":                "AEROSTREAM_TIERED_STORAGE_S3_PREFIX",
		"tiered_storage.s3.region":                "AEROSTREAM_TIERED_STORAGE_S3_REGION",
		"tiered_storage.s3.endpoint_url":          "AEROSTREAM_TIERED_STORAGE_S3_ENDPOINT_URL",
		"tiered_storage.s3.access_key_id":         "AEROSTREAM_TIERED_STORAGE_S3_ACCESS_KEY_ID",
		"tiered_storage.s3.secret_access_key":     "AEROSTREAM_TIERED_STORAGE_S3_SECRET_ACCESS_KEY",
		"tiered_storage.s3.force_path_style":      "AEROSTREAM_TIERED_STORAGE_S3_FORCE_PATH_STYLE",
		"tiered_storage.s3.sign_payload":          "AEROSTREAM_TIERED_STORAGE_S3_SIGN_PAYLOAD",
		"tiered_storage.gcs.bucket":               "AEROSTREAM_TIERED_STORAGE_GCS_BUCKET",
		"tiered_storage.gcs.prefix":               "AEROSTREAM_TIERED_STORAGE_GCS_PREFIX",
		"tiered_storage.gcs.service_account_path": "AEROSTREAM_TIERED_STORAGE_GCS_SERVICE_ACCOUNT_PATH",
		"tiered_storage.gcs.endpoint":             "AEROSTREAM_TIERED_STORAGE_GCS_ENDPOINT",
		"tiered_storage.azure.container_name":     "AEROSTREAM_TIERED_STORAGE_AZURE_CONTAINER_NAME",
		"tiered_storage.azure.account_name":       "AEROSTREAM_TIERED_STORAGE_AZURE_ACCOUNT_NAME",
		"tiered_storage.azure.prefix":             "AEROSTREAM_TIERED_STORAGE_AZURE_PREFIX",
		"tiered_storage.azure.access_key":         "AEROSTREAM_TIERED_STORAGE_AZURE_ACCESS_KEY",
		"tiered_storage.azure.endpoint":           "AEROSTREAM_TIERED_STORAGE_AZURE_ENDPOINT",
		"tiered_storage.local.root_path":          "AEROSTREAM_TIERED_STORAGE_LOCAL_ROOT_PATH",
		"tls.cert_file":                           "AEROSTREAM_TLS_CERT_FILE",
		"tls.key_file":                            "AEROSTREAM_TLS_KEY_FILE",
		"tls.ca_file":                             "AEROSTREAM_TLS_CA_FILE",
		"tls.client_auth":                         "AEROSTREAM_TLS_CLIENT_AUTH",
		"tls.cipher_suites":                       "AEROSTREAM_TLS_CIPHER_SUITES",
		"tls.enabled_protocols":                   "AEROSTREAM_TLS_ENABLED_PROTOCOLS",
		"tls.principal_mapping_rules":             "AEROSTREAM_TLS_PRINCIPAL_MAPPING_RULES",
		"auth.sasl_mechanisms":                    "AEROSTREAM_AUTH_SASL_MECHANISMS",
		"auth.authorizer":                         "AEROSTREAM_AUTH_AUTHORIZER",
		"auth.super_users":                        "AEROSTREAM_AUTH_SUPER_USERS",
		"auth.bootstrap_user":                     "AEROSTREAM_AUTH_BOOTSTRAP_USER",
		"auth.connections_max_reauth_ms":          "AEROSTREAM_AUTH_CONNECTIONS_MAX_REAUTH_MS",
		"auth.http_authentication":                "AEROSTREAM_AUTH_HTTP_AUTHENTICATION",
		"auth.http_open_paths":                    "AEROSTREAM_AUTH_HTTP_OPEN_PATHS",
		"auth.oauth_jwks_file":                    "AEROSTREAM_AUTH_OAUTH_JWKS_FILE",
		"auth.oauth_jwks_url":                     "AEROSTREAM_AUTH_OAUTH_JWKS_URL",
		"auth.oauth_issuer":                       "AEROSTREAM_AUTH_OAUTH_ISSUER",
		"auth.oauth_audience":                     "AEROSTREAM_AUTH_OAUTH_AUDIENCE",
		"auth.oauth_principal_claim":              "AEROSTREAM_AUTH_OAUTH_PRINCIPAL_CLAIM",
		"auth.oauth_groups_claim":                 "AEROSTREAM_AUTH_OAUTH_GROUPS_CLAIM",
		"auth.controller_secret_file":             "AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE",
	}
	got := map[string]string{}
	for _, k := range Keys() {
		got[k.Name] = k.Env
		if k.Flag != k.Name {
			t.Errorf("%s: flag %q, want the key name", k.Name, k.Flag)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys:\n got %v\nwant %v", got, want)
	}
	if s := Sections(); !reflect.DeepEqual(s, []string{"listeners", "admin", "logstore", "topic_defaults", "controller",
		"tiered_storage", "tiered_storage.s3", "tiered_storage.gcs", "tiered_storage.azure", "tiered_storage.local", "kafka", "gateway", "tls", "auth", "schema_registry", "iceberg"}) {
		t.Errorf("sections = %v", s)
	}
}

func TestNoFileGivesDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.File != "" {
		t.Errorf("File = %q, want none", l.File)
	}
	if !reflect.DeepEqual(l.Config, Default()) {
		t.Errorf("config = %+v, want defaults", l.Config)
	}
	for k, s := range l.Sources {
		if s != "default" {
			t.Errorf("%s from %q", k, s)
		}
	}
}

func TestUnknownKey(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct{ body, key string }{
		{"bogus = 1\n", `"bogus"`},
		{"[logstore]\nshard = 4\n", `"logstore.shard"`},
		{"[listeners]\nkafka = \":1\"\n[nosuch]\nx = 1\n", `"nosuch`},
		{"[nosuch]\n", `"nosuch"`},
		{"DATA_DIR = \"x\"\n", `"DATA_DIR"`},
		{"[Logstore]\nshards = 2\n", `"Logstore`},
		{"[topic_defaults.extra]\na = 1\n", `"topic_defaults.extra`},
	} {
		_, err := Load(Options{File: writeFile(t, tc.body)})
		if err == nil {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		if !strings.Contains(err.Error(), "unknown key "+tc.key) {
			t.Errorf("%q: error %q does not name key %s", tc.body, err, tc.key)
		}
		if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q is not a one-line ErrConfig", tc.body, err)
		}
	}
}

func TestPrecedence(t *testing.T) {
	t.Chdir(t.TempDir())
	file := writeFile(t, `
data_dir = "/from/file"
log_level = "warn"
[listeners]
ring = "127.0.0.1:1001"
kafka = "127.0.0.1:2001"
[logstore]
shards = 3
pin_cpus = true
flush = "interval"
`)
	env := []string{
		"AEROSTREAM_LOG_LEVEL=error",
		"AEROSTREAM_LISTENERS_RING=127.0.0.1:1002",
		"AEROSTREAM_LISTENERS_KAFKA=127.0.0.1:2002",
		"AEROSTREAM_LOGSTORE_SHARDS=5",
		"AEROSTREAM_LOGSTORE_FLUSH=always",
		"AEROSTREAM_TOPIC_DEFAULTS_RETENTION_MS=-1",
		"UNRELATED=1",
	}
	flags := parseFlags(t,
		"--ring-listen=127.0.0.1:1003",
		"--logstore.shards", "7",
		"--logstore.pin_cpus=false",
		"--listeners.http=127.0.0.1:3003",
	)
	l, err := Load(Options{File: file, Env: env, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.DataDir = "/from/file"             // file
	want.LogLevel = "error"                 // env over file
	want.Listeners.Ring = "127.0.0.1:1003"  // alias flag over env over file
	want.Listeners.Kafka = "127.0.0.1:2002" // env over file
	want.Listeners.HTTP = "127.0.0.1:3003"  // flag over default
	want.Logstore.Shards = 7                // flag over env over file
	want.Logstore.PinCPUs = false           // flag over file
	want.Logstore.Flush = "always"          // env over file
	want.TopicDefaults.RetentionMs = -1     // env over default
	if !reflect.DeepEqual(l.Config, want) {
		t.Errorf("config:\n got %+v\nwant %+v", l.Config, want)
	}
	wantSrc := map[string]string{
		"data_dir":                    "file " + file,
		"log_level":                   "env AEROSTREAM_LOG_LEVEL",
		"log_format":                  "default",
		"listeners.ring":              "flag --ring-listen",
		"listeners.kafka":             "env AEROSTREAM_LISTENERS_KAFKA",
		"listeners.http":              "flag --listeners.http",
		"logstore.shards":             "flag --logstore.shards",
		"logstore.pin_cpus":           "flag --logstore.pin_cpus",
		"logstore.flush":              "env AEROSTREAM_LOGSTORE_FLUSH",
		"topic_defaults.retention_ms": "env AEROSTREAM_TOPIC_DEFAULTS_RETENTION_MS",
	}
	for k, s := range wantSrc {
		if l.Sources[k] != s {
			t.Errorf("source of %s = %q, want %q", k, l.Sources[k], s)
		}
	}
	if len(l.UnknownEnv) != 0 {
		t.Errorf("unknown env: %v", l.UnknownEnv)
	}
}

func TestBoolFlagWithoutValue(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Flags: parseFlags(t, "--logstore.pin_cpus")})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Config.Logstore.PinCPUs {
		t.Error("--logstore.pin_cpus did not set pin_cpus")
	}
}

func TestAliasesAndLongFlagsShareAValue(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, a := range Aliases {
		k, ok := Lookup(a.Key)
		if !ok {
			t.Fatalf("alias %s names unknown key %s", a.Flag, a.Key)
		}
		// The one given last wins, as for a flag given twice.
		first, last := "127.0.0.1:1", "127.0.0.1:2"
		if k.Kind == reflect.String && !strings.HasPrefix(k.Name, "listeners.") {
			first, last = "/a", "/b"
		}
		l, err := Load(Options{Flags: parseFlags(t, "--"+k.Flag+"="+first, "--"+a.Flag+"="+last)})
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Get(&l.Config); got != last {
			t.Errorf("--%s after --%s: %s = %q, want %q", a.Flag, k.Flag, a.Key, got, last)
		}
	}
}

func TestConfigFileFromEnvAndDefaultFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	envFile := writeFile(t, "log_level = \"debug\"\n")
	l, err := Load(Options{Env: []string{EnvConfigFile + "=" + envFile}})
	if err != nil {
		t.Fatal(err)
	}
	if l.File != envFile || l.Config.LogLevel != "debug" {
		t.Errorf("AEROSTREAM_CONFIG: file %q level %q", l.File, l.Config.LogLevel)
	}

	if err := os.WriteFile(filepath.Join(dir, DefaultFile), []byte("log_level = \"warn\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.File != DefaultFile || l.Config.LogLevel != "warn" {
		t.Errorf("./aerostream.toml: file %q level %q", l.File, l.Config.LogLevel)
	}
	// --config beats both.
	l, err = Load(Options{File: envFile, Env: []string{EnvConfigFile + "=/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.File != envFile {
		t.Errorf("--config: file %q", l.File)
	}
}

func TestMissingFile(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := Load(Options{File: "/nonexistent/aerostream.toml"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/aerostream.toml") {
		t.Fatalf("err = %v, want one naming the file", err)
	}
}

func TestUnknownEnvIsReported(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Env: []string{"AEROSTREAM_LOGSTORE_SHARD=4"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.UnknownEnv, []string{"AEROSTREAM_LOGSTORE_SHARD"}) {
		t.Errorf("unknown env = %q", l.UnknownEnv)
	}
}

func TestBadValues(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name string
		file string
		env  []string
		want string // substring of the error
	}{
		{"flush", "[logstore]\nflush = \"sometimes\"\n", nil, `logstore.flush = "sometimes"`},
		{"flush env", "", []string{"AEROSTREAM_LOGSTORE_FLUSH=fsync"}, `logstore.flush = "fsync" (env AEROSTREAM_LOGSTORE_FLUSH): must be one of none, interval, always`},
		{"shards", "[logstore]\nshards = -1\n", nil, "logstore.shards = -1"},
		{"interval", "[logstore]\nflush_interval_ms = 0\n", nil, "logstore.flush_interval_ms = 0"},
		{"index interval", "[logstore]\nindex_interval_bytes = -4\n", nil, "logstore.index_interval_bytes = -4"},
		{"writeback", "", []string{"AEROSTREAM_LOGSTORE_WRITEBACK_BYTES=0"}, "logstore.writeback_bytes = 0"},
		{"max index", "[logstore]\nmax_index_bytes = 0\n", nil, "logstore.max_index_bytes"},
		{"retention check", "[logstore]\nretention_check_interval_ms = 0\n", nil, "logstore.retention_check_interval_ms"},
		{"producer id expiration", "[logstore]\nproducer_id_expiration_ms = -1\n", nil, "logstore.producer_id_expiration_ms"},
		{"segment bytes", "[topic_defaults]\nsegment_bytes = 0\n", nil, "topic_defaults.segment_bytes = 0"},
		{"segment bytes below Kafka's", "[topic_defaults]\nsegment_bytes = 13\n", nil, "13 must be from 14 to 2147483647"},
		{"segment ms", "[topic_defaults]\nsegment_ms = -1\n", nil, "topic_defaults.segment_ms = -1"},
		{"retention ms", "[topic_defaults]\nretention_ms = -2\n", nil, "topic_defaults.retention_ms = -2"},
		{"huge ms", "[topic_defaults]\nretention_ms = 9223372036854775807\n", nil, "too large"},
		{"max message", "[topic_defaults]\nmax_message_bytes = 0\n", nil, "topic_defaults.max_message_bytes = 0"},
		{"max message overflow", "[topic_defaults]\nmax_message_bytes = 4294967296\n", nil, "max_message_bytes"},
		{"max message overflow env", "", []string{"AEROSTREAM_TOPIC_DEFAULTS_MAX_MESSAGE_BYTES=4294967296"}, "out of range"},
		{"int as string", "[logstore]\nshards = \"4\"\n", nil, "logstore.shards"},
		{"env not int", "", []string{"AEROSTREAM_LOGSTORE_SHARDS=four"}, `logstore.shards (env AEROSTREAM_LOGSTORE_SHARDS): "four" is not an integer`},
		{"env not bool", "", []string{"AEROSTREAM_LOGSTORE_PIN_CPUS=yes"}, "not a boolean"},
		{"log level", "log_level = \"verbose\"\n", nil, "log_level"},
		{"log format", "", []string{"AEROSTREAM_LOG_FORMAT=logfmt"}, "log_format"},
		{"data dir", "data_dir = \"\"\n", nil, "data_dir"},
		{"port missing", "[listeners]\nkafka = \"9092\"\n", nil, `listeners.kafka = "9092"`},
		{"port name", "[listeners]\nnative = \"localhost:native\"\n", nil, `port "native"`},
		{"port range", "[listeners]\nhttp = \":70000\"\n", nil, "listeners.http"},
		{"unix not for kafka", "[listeners]\nkafka = \"unix:/tmp/k.sock\"\n", nil, "unix sockets are not supported"},
		{"unix empty", "[listeners]\nring = \"unix:\"\n", nil, "unix socket path is empty"},
		{"syntax", "[logstore\n", nil, "toml: line 2"},
		{"node id", "[controller]\nnode_id = -1\n", nil, "controller.node_id = -1"},
		{"bootstrap and join", "[controller]\nbootstrap = true\njoin = \"h:1\"\n", nil, "bootstrap and join are exclusive"},
		{"join address", "", []string{"AEROSTREAM_CONTROLLER_JOIN=h:1,nope"}, `"nope" is not a host:port address`},
		{"join empty entry", "[controller]\njoin = \"h:1,\"\n", nil, `"" is not a host:port address`},
		{"advertise", "[controller]\nadvertise = \":8001\"\n", nil, "controller.advertise"},
		{"heartbeat over session", "[controller]\nheartbeat_interval_ms = 10000\n", nil, "must be below controller.session_timeout_ms"},
		{"raft timeout", "[controller]\nraft_timeout_ms = 5\n", nil, "controller.raft_timeout_ms = 5"},
		{"leader rebalance", "[controller]\nleader_rebalance_interval_ms = -1\n", nil, "controller.leader_rebalance_interval_ms = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Env: tc.env}
			if tc.file != "" {
				opts.File = writeFile(t, tc.file)
			}
			_, err := Load(opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not a one-line ErrConfig", err)
			}
		})
	}
}

func TestGoodListeners(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Env: []string{
		"AEROSTREAM_LISTENERS_RING=unix:/tmp/aerostream.sock",
		"AEROSTREAM_LISTENERS_KAFKA=",
		"AEROSTREAM_LISTENERS_NATIVE=[::1]:0",
		"AEROSTREAM_LISTENERS_HTTP=localhost:9001",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n, a := Network(l.Config.Listeners.Ring); n != "unix" || a != "/tmp/aerostream.sock" {
		t.Errorf("Network(ring) = %s %s", n, a)
	}
	if n, a := Network(l.Config.Listeners.HTTP); n != "tcp" || a != "localhost:9001" {
		t.Errorf("Network(http) = %s %s", n, a)
	}
}

func TestBadFlagValueFailsParse(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	AddFlags(fs)
	err := fs.Parse([]string{"--logstore.shards=many"})
	if err == nil || !strings.Contains(err.Error(), "logstore.shards") || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("err = %v", err)
	}
}

func TestFlagHelpShowsDefaultsAndEnv(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs)
	usage := fs.FlagUsages()
	for _, k := range Keys() {
		if !strings.Contains(usage, "--"+k.Flag) || !strings.Contains(usage, k.Env) {
			t.Errorf("usage lacks --%s or %s", k.Flag, k.Env)
		}
	}
	if !strings.Contains(usage, `(default ":9092")`) {
		t.Errorf("usage does not show defaults:\n%s", usage)
	}
}

// TestShippedExample keeps aerostream.toml at the repository root complete
// and truthful: it sets every key, to its default, and names each key's env
// var and flag.
func TestShippedExample(t *testing.T) {
	path := filepath.Join("..", "..", DefaultFile)
	var c Config
	md, err := toml.DecodeFile(path, &c)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("unknown keys %v", u)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("%s does not hold the defaults:\n got %+v\nwant %+v", path, c, Default())
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		if !md.IsDefined(strings.Split(k.Name, ".")...) {
			t.Errorf("%s does not set %s", path, k.Name)
		}
		if !strings.Contains(string(text), k.Env) || !strings.Contains(string(text), "--"+k.Flag) {
			t.Errorf("%s does not mention %s and --%s", path, k.Env, k.Flag)
		}
	}
	// And through Load, the file is a no-op.
	l, err := Load(Options{File: path})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Config, Default()) {
		t.Errorf("Load(%s) is not the defaults", path)
	}
}

// TestReadmeDocumentsEveryKey keeps the configuration table in README.md in
// step with Config.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		row := "| `" + k.Name + "` | `" + k.TOMLDefault() + "` | `" + k.Env + "` | `--" + k.Flag
		if !strings.Contains(string(text), row) {
			t.Errorf("README.md has no row starting %q", row)
		}
	}
}

// TestAdminSurfacesDefaultToLoopback: the HTTP admin API (tier gc deletes
// objects) and the controller's client API (deletes topics, changes
// voters) have no authentication, so by default they answer only on this
// machine, and Go's profiles are off (issue 23, item 15).
func TestAdminSurfacesDefaultToLoopback(t *testing.T) {
	d := Default()
	for key, addr := range map[string]string{"listeners.http": d.Listeners.HTTP, "listeners.controller": d.Listeners.Controller,
		"listeners.schema_registry": d.Listeners.SchemaRegistry} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%s = %q: %v", key, addr, err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("%s defaults to %q, not a loopback address", key, addr)
		}
	}
	if d.Admin.Pprof {
		t.Error("admin.pprof defaults to true")
	}
}
