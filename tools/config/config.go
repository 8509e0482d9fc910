package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Config is the whole of aerostream.toml. Field tags:
//   - toml: the key (or section) name;
//   - help: one line for --help, the README table and the example file.
//
// Only string, bool and signed integer leaves are supported; sizes and
// durations are integers with their unit in the key name (_bytes, _ms), as
// Kafka's own configs are, so the same number works in a file, an env var and
// a flag.
type Config struct {
	DataDir   string `toml:"data_dir" help:"directory for the catalog and the partition logs"`
	LogLevel  string `toml:"log_level" help:"debug, info, warn or error"`
	LogFormat string `toml:"log_format" help:"text or json"`

	Listeners     Listeners     `toml:"listeners"`
	Logstore      Logstore      `toml:"logstore"`
	TopicDefaults TopicDefaults `toml:"topic_defaults"`
	Controller    Controller    `toml:"controller"`
}

// Listeners are host:port addresses. An empty address leaves that listener
// off.
type Listeners struct {
	Kafka      string `toml:"kafka" help:"Kafka wire-protocol gateway (host:port)"`
	Native     string `toml:"native" help:"native binary-protocol gateway (host:port)"`
	HTTP       string `toml:"http" help:"HTTP admin API, /metrics, console (host:port)"`
	Controller string `toml:"controller" help:"Raft controller (host:port)"`
	Ring       string `toml:"ring" help:"shard ring served by the store (host:port or unix:/path)"`
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
}

// TopicDefaults are the per-partition configs a topic gets unless it sets its
// own; they mirror Kafka's broker defaults.
type TopicDefaults struct {
	SegmentBytes    int64 `toml:"segment_bytes" help:"roll the active segment at this size"`
	SegmentMs       int64 `toml:"segment_ms" help:"roll the active segment at this age"`
	RetentionMs     int64 `toml:"retention_ms" help:"delete sealed segments older than this; -1 = forever"`
	RetentionBytes  int64 `toml:"retention_bytes" help:"keep at most this many bytes per partition; -1 = unlimited"`
	MaxMessageBytes int32 `toml:"max_message_bytes" help:"largest record batch accepted"`
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
			HTTP:       ":9001",
			Controller: ":8001",
			Ring:       ":7001",
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
		},
		TopicDefaults: TopicDefaults{
			SegmentBytes:    128 << 20,
			SegmentMs:       7 * 24 * 3600 * 1000,
			RetentionMs:     7 * 24 * 3600 * 1000,
			RetentionBytes:  -1,
			MaxMessageBytes: 1048588,
		},
		Controller: Controller{
			NodeID:              1,
			SessionTimeoutMs:    10000,
			HeartbeatIntervalMs: 2000,
			RaftTimeoutMs:       1000,
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
	if k.Kind == reflect.String {
		return strconv.Quote(k.Default())
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
