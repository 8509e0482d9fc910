package controller

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ConfigType is a config's Kafka type, as DescribeConfigs reports it.
type ConfigType string

// The Kafka config types used here.
const (
	TypeString  ConfigType = "STRING"
	TypeInt     ConfigType = "INT"
	TypeLong    ConfigType = "LONG"
	TypeBoolean ConfigType = "BOOLEAN"
	TypeList    ConfigType = "LIST"
)

// ConfigSource says where a described value comes from; the names are
// Kafka's DescribeConfigs sources.
type ConfigSource string

// Sources, most specific first.
const (
	SourceTopic              ConfigSource = "TOPIC_CONFIG"
	SourceDynamicBrokerDeflt ConfigSource = "DYNAMIC_DEFAULT_BROKER_CONFIG"
	SourceStaticBroker       ConfigSource = "STATIC_BROKER_CONFIG"
	SourceDefault            ConfigSource = "DEFAULT_CONFIG"
)

// configDef is one topic config. Names, types and defaults are Kafka's,
// except where AeroStream's broker defaults differ (segment.bytes is 128 MiB,
// DESIGN §3). Values a Kafka broker accepts but AeroStream cannot honour yet
// (compaction, LogAppendTime, broker-side recompression) are refused with
// INVALID_CONFIG and say so, rather than stored and ignored.
type configDef struct {
	name   string // topic-level name
	broker string // the broker-level name that sets its cluster default
	typ    ConfigType
	def    string
	doc    string
	// check validates v and returns its normal form.
	check func(v string) (string, error)
}

// maxMs keeps milliseconds convertible to a time.Duration downstream.
const maxMs = math.MaxInt64 / int64(1e6)

var topicConfigs = []configDef{
	{"cleanup.policy", "log.cleanup.policy", TypeList, "delete",
		"what happens to old segments: delete (compact is not available yet)",
		cleanupPolicy},
	{"compression.type", "compression.type", TypeString, "producer",
		"keep batches as the producer compressed them (only producer is available)",
		enum([]string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}, []string{"producer"}, "broker-side recompression is not available yet")},
	{"local.retention.bytes", "log.local.retention.bytes", TypeLong, "-2",
		"bytes kept on local disk once tiered; -2 = retention.bytes",
		long(-2, math.MaxInt64, "")},
	{"local.retention.ms", "log.local.retention.ms", TypeLong, "-2",
		"time kept on local disk once tiered; -2 = retention.ms",
		long(-2, maxMs, "")},
	{"max.message.bytes", "message.max.bytes", TypeInt, "1048588",
		"largest record batch accepted",
		long(1, math.MaxInt32, "")},
	{"message.timestamp.type", "log.message.timestamp.type", TypeString, "CreateTime",
		"which timestamp records keep (only CreateTime is available)",
		enum([]string{"CreateTime", "LogAppendTime"}, []string{"CreateTime"}, "LogAppendTime is not available yet")},
	{"min.insync.replicas", "min.insync.replicas", TypeInt, "1",
		"replicas that must acknowledge an acks=all produce",
		long(1, math.MaxInt32, "")},
	{"remote.storage.enable", "", TypeBoolean, "false",
		"tier sealed segments to object storage",
		boolean},
	{"retention.bytes", "log.retention.bytes", TypeLong, "-1",
		"bytes kept per partition; -1 = unlimited",
		long(1, math.MaxInt64, "-1")},
	{"retention.ms", "log.retention.ms", TypeLong, "604800000",
		"time sealed segments are kept; -1 = forever",
		long(1, maxMs, "-1")},
	{"segment.bytes", "log.segment.bytes", TypeInt, "134217728",
		"roll the active segment at this size",
		long(14, math.MaxInt32, "")},
	{"segment.ms", "log.roll.ms", TypeLong, "604800000",
		"roll the active segment at this age",
		long(1, maxMs, "")},
}

var (
	topicConfigByName  = map[string]*configDef{}
	brokerConfigByName = map[string]*configDef{}
)

func init() {
	for i := range topicConfigs {
		d := &topicConfigs[i]
		topicConfigByName[d.name] = d
		if d.broker != "" {
			brokerConfigByName[d.broker] = d
		}
	}
}

// TopicConfigNames lists the topic configs the controller knows, sorted.
func TopicConfigNames() []string {
	out := make([]string, 0, len(topicConfigs))
	for _, d := range topicConfigs {
		out = append(out, d.name)
	}
	sort.Strings(out)
	return out
}

// BrokerConfigNames lists the broker-level dynamic configs, sorted.
func BrokerConfigNames() []string {
	out := make([]string, 0, len(brokerConfigByName))
	for n := range brokerConfigByName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TopicConfigForBroker maps a broker-level name (log.retention.ms) to the
// topic config it defaults (retention.ms); "" if it is not one.
func TopicConfigForBroker(broker string) string {
	if d := brokerConfigByName[broker]; d != nil {
		return d.name
	}
	return ""
}

func long(min, max int64, alt string) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not an integer", v)
		}
		s := strconv.FormatInt(n, 10)
		if alt != "" && s == alt {
			return s, nil
		}
		if n < min || n > max {
			rng := fmt.Sprintf("must be from %d to %d", min, max)
			if alt != "" {
				rng += ", or " + alt
			}
			return "", fmt.Errorf("%s %s", s, rng)
		}
		return s, nil
	}
}

func enum(allowed, available []string, why string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				for _, ok := range available {
					if a == ok {
						return a, nil
					}
				}
				return "", fmt.Errorf("%q: %s", a, why)
			}
		}
		return "", fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

func boolean(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return "true", nil
	case "false":
		return "false", nil
	}
	return "", fmt.Errorf("%q is not true or false", v)
}

func cleanupPolicy(v string) (string, error) {
	var seen []string
	for _, p := range strings.Split(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		switch p {
		case "delete":
		case "compact":
			return "", fmt.Errorf("%q: log compaction is not available yet", v)
		default:
			return "", fmt.Errorf("%q: %q is not delete or compact", v, p)
		}
		seen = append(seen, p)
	}
	return strings.Join(seen[:1], ","), nil
}

// checkConfig validates one topic config (broker=false) or broker-level
// dynamic config (broker=true) and returns its normal form.
func checkConfig(name, value string, broker bool) (string, error) {
	var d *configDef
	if broker {
		d = brokerConfigByName[name]
	} else {
		d = topicConfigByName[name]
	}
	if d == nil {
		kind := "topic"
		if broker {
			kind = "broker"
		}
		return "", fmt.Errorf("%w: unknown %s config %q", ErrInvalidConfig, kind, name)
	}
	norm, err := d.check(value)
	if err != nil {
		return "", fmt.Errorf("%w: %s = %v", ErrInvalidConfig, name, err)
	}
	return norm, nil
}

// validateConfigs validates a whole set (topic or broker) and returns it
// normalized. Errors name the first bad key in sorted order, so every
// replica reports the same one.
func validateConfigs(in map[string]string, broker bool) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(in))
	for _, k := range names {
		v, err := checkConfig(k, in[k], broker)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	if err := crossCheck(out, broker); err != nil {
		return nil, err
	}
	return out, nil
}

// crossCheck enforces Kafka's rule that the local (hot-tier) retention may
// not exceed the total retention, when both are set in the same set.
func crossCheck(cfg map[string]string, broker bool) error {
	pairs := [][2]string{{"local.retention.ms", "retention.ms"}, {"local.retention.bytes", "retention.bytes"}}
	if broker {
		pairs = [][2]string{{"log.local.retention.ms", "log.retention.ms"}, {"log.local.retention.bytes", "log.retention.bytes"}}
	}
	for _, p := range pairs {
		ls, ok1 := cfg[p[0]]
		ts, ok2 := cfg[p[1]]
		if !ok1 || !ok2 {
			continue
		}
		l, _ := strconv.ParseInt(ls, 10, 64)
		t, _ := strconv.ParseInt(ts, 10, 64)
		if t >= 0 && (l == -1 || l > t) {
			return fmt.Errorf("%w: %s = %s must not exceed %s = %s", ErrInvalidConfig, p[0], ls, p[1], ts)
		}
	}
	return nil
}

// ConfigEntry is one described config.
type ConfigEntry struct {
	Name      string       `json:"name"`
	Value     string       `json:"value"`
	Source    ConfigSource `json:"source"`
	Type      ConfigType   `json:"type"`
	IsDefault bool         `json:"is_default"`
	ReadOnly  bool         `json:"read_only"`
	Sensitive bool         `json:"sensitive"`
	Doc       string       `json:"doc"`
}

// describeTopicConfigs lists every topic config with its effective value:
// the topic's own, else the dynamic cluster default, else the static
// default of this controller's config file, else Kafka's.
func describeTopicConfigs(topic, broker, static map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigs))
	for _, d := range topicConfigs {
		e := ConfigEntry{Name: d.name, Type: d.typ, Doc: d.doc}
		switch {
		case topic[d.name] != "":
			e.Value, e.Source = topic[d.name], SourceTopic
		case d.broker != "" && broker[d.broker] != "":
			e.Value, e.Source = broker[d.broker], SourceDynamicBrokerDeflt
		case static[d.name] != "" && static[d.name] != d.def:
			e.Value, e.Source = static[d.name], SourceStaticBroker
		default:
			e.Value, e.Source, e.IsDefault = d.def, SourceDefault, true
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describeBrokerConfigs lists the broker-level dynamic configs.
func describeBrokerConfigs(broker, static map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(brokerConfigByName))
	for _, name := range BrokerConfigNames() {
		d := brokerConfigByName[name]
		e := ConfigEntry{Name: name, Type: d.typ, Doc: d.doc}
		switch {
		case broker[name] != "":
			e.Value, e.Source = broker[name], SourceDynamicBrokerDeflt
		case static[d.name] != "" && static[d.name] != d.def:
			e.Value, e.Source = static[d.name], SourceStaticBroker
		default:
			e.Value, e.Source, e.IsDefault = d.def, SourceDefault, true
		}
		out = append(out, e)
	}
	return out
}

// EffectiveTopicConfig is what a store applies to a new partition: the
// topic's own configs over the dynamic cluster defaults. Configs set in
// neither are absent, so the store's own static defaults apply.
func EffectiveTopicConfig(topic, broker map[string]string) map[string]string {
	out := make(map[string]string, len(topic)+len(broker))
	for b, v := range broker {
		if t := TopicConfigForBroker(b); t != "" {
			out[t] = v
		}
	}
	for k, v := range topic {
		out[k] = v
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
