package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConfigSynonyms: DescribeConfigs names synonyms as Kafka does, and
// takes the defaults the Cluster leaves out from the topicconfig registry.
func TestConfigSynonyms(t *testing.T) {
	v := "1000"
	str := func(ss []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) string {
		out := ""
		for _, s := range ss {
			val := "<nil>"
			if s.Value != nil {
				val = *s.Value
			}
			out += fmt.Sprintf("[%s=%s %s]", s.Name, val, s.Source)
		}
		return out
	}
	for _, tc := range []struct {
		typ  ConfigResourceType
		e    ConfigEntry
		want string
	}{
		{ConfigResourceTopic, ConfigEntry{Name: "retention.ms", Source: ConfigSourceDynamicTopic},
			"[retention.ms=1000 DYNAMIC_TOPIC_CONFIG][log.retention.ms=604800000 DEFAULT_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "retention.ms", Source: ConfigSourceDynamicDefaultBroker},
			"[log.retention.ms=1000 DYNAMIC_DEFAULT_BROKER_CONFIG][log.retention.ms=604800000 DEFAULT_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "segment.ms", Source: ConfigSourceDefault},
			"[log.roll.ms=1000 DEFAULT_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "local.retention.ms", Source: ConfigSourceStaticBroker},
			"[log.local.retention.ms=1000 STATIC_BROKER_CONFIG][log.local.retention.ms=-2 DEFAULT_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "remote.storage.enable", Source: ConfigSourceDynamicTopic},
			"[remote.storage.enable=1000 DYNAMIC_TOPIC_CONFIG][remote.storage.enable=false DEFAULT_CONFIG]"},
		{ConfigResourceBroker, ConfigEntry{Name: "message.max.bytes", Source: ConfigSourceDynamicDefaultBroker},
			"[message.max.bytes=1000 DYNAMIC_DEFAULT_BROKER_CONFIG][message.max.bytes=1048588 DEFAULT_CONFIG]"},
		// The Cluster's own default wins; a name the registry lacks keeps its own.
		{ConfigResourceTopic, ConfigEntry{Name: "x.y", Source: ConfigSourceDynamicTopic, Default: &v},
			"[x.y=1000 DYNAMIC_TOPIC_CONFIG][x.y=1000 DEFAULT_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "x.y", Source: ConfigSourceDynamicTopic},
			"[x.y=1000 DYNAMIC_TOPIC_CONFIG]"},
		{ConfigResourceTopic, ConfigEntry{Name: "retention.ms", Source: ConfigSourceDynamicTopic, Sensitive: true},
			"[retention.ms=1000 DYNAMIC_TOPIC_CONFIG][log.retention.ms=<nil> DEFAULT_CONFIG]"},
	} {
		if got := str(synonyms(tc.typ, tc.e, &v)); got != tc.want {
			t.Errorf("%s source %d:\n got %s\nwant %s", tc.e.Name, tc.e.Source, got, tc.want)
		}
	}
}
