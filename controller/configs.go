package controller

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/aerostream/aerostream/topicconfig"
)

// The topic configs themselves (names, types, defaults, ranges) live in
// topicconfig; this file validates and describes with them, in the
// controller's terms (ErrInvalidConfig, ConfigEntry).

// ConfigType is a config's Kafka type, as DescribeConfigs reports it.
type ConfigType = topicconfig.Type

// The Kafka config types used here.
const (
	TypeString  = topicconfig.String
	TypeInt     = topicconfig.Int
	TypeLong    = topicconfig.Long
	TypeBoolean = topicconfig.Boolean
	TypeList    = topicconfig.List
	TypeDouble  = topicconfig.Double
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

// configErr puts the registry's errors under the controller's sentinel.
func configErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}

// lookupConfig finds a topic config by its topic name, or by its
// broker-level name when broker is set.
func lookupConfig(name string, broker bool) (*topicconfig.Def, error) {
	d, err := topicconfig.Find(name, broker)
	return d, configErr(err)
}

// checkConfig validates one topic config (broker=false) or broker-level
// dynamic config (broker=true) and returns its normal form.
func checkConfig(name, value string, broker bool) (string, error) {
	v, err := topicconfig.CheckOne(name, value, broker)
	return v, configErr(err)
}

// validateConfigs validates a whole set (topic or broker) and returns it
// normalized.
func validateConfigs(in map[string]string, broker bool) (map[string]string, error) {
	out, err := topicconfig.Validate(in, broker)
	return out, configErr(err)
}

// crossCheck enforces the rules between configs of one set.
func crossCheck(cfg map[string]string, broker bool) error {
	return configErr(topicconfig.CrossCheck(cfg, broker))
}

// checkChange refuses a change to a topic config that is not dynamic;
// broker-level sets only hold defaults for topics created later, so any
// of them may change.
func checkChange(cur, next map[string]string, broker bool) error {
	if broker {
		return nil
	}
	return configErr(topicconfig.CheckChange(cur, next))
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
// default of this controller's config file, else the registry's.
func describeTopicConfigs(topic, broker, static map[string]string) []ConfigEntry {
	defs := topicconfig.Defs()
	out := make([]ConfigEntry, 0, len(defs))
	for _, d := range defs {
		e := ConfigEntry{Name: d.Name, Type: d.Type, Doc: d.Doc}
		switch {
		case topic[d.Name] != "":
			e.Value, e.Source = topic[d.Name], SourceTopic
		case d.Broker != "" && broker[d.Broker] != "":
			e.Value, e.Source = broker[d.Broker], SourceDynamicBrokerDeflt
		case static[d.Name] != "" && static[d.Name] != d.Default:
			e.Value, e.Source = static[d.Name], SourceStaticBroker
		default:
			e.Value, e.Source, e.IsDefault = d.Default, SourceDefault, true
		}
		out = append(out, e)
	}
	return out
}

// describeBrokerConfigs lists the broker-level dynamic configs.
func describeBrokerConfigs(broker, static map[string]string) []ConfigEntry {
	names := topicconfig.BrokerNames()
	out := make([]ConfigEntry, 0, len(names))
	for _, name := range names {
		d := topicconfig.LookupBroker(name)
		e := ConfigEntry{Name: name, Type: d.Type, Doc: d.Doc}
		switch {
		case broker[name] != "":
			e.Value, e.Source = broker[name], SourceDynamicBrokerDeflt
		case static[d.Name] != "" && static[d.Name] != d.Default:
			e.Value, e.Source = static[d.Name], SourceStaticBroker
		default:
			e.Value, e.Source, e.IsDefault = d.Default, SourceDefault, true
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// EffectiveTopicConfig is what a store applies to a partition: the topic's
// own configs over the dynamic cluster defaults (topicconfig.Effective).
func EffectiveTopicConfig(topic, broker map[string]string) map[string]string {
	return topicconfig.Effective(topic, broker)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
