package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/topicconfig"
)

// DescribeConfigs: v1-v4.
//
// Describes topic configs (resource type 2) and broker configs (type 4,
// named by node id or "" for the cluster default) as the Cluster holds
// them: value, source (dynamic topic config, or default), read-only and
// sensitive flags; a sensitive value is never sent. A null config name list
// asks for all. Synonyms (v1+, when asked) list the value's own source
// followed by the default it overrides (the topicconfig registry's when
// the Cluster gives none), under the broker-level name where the value
// does not come from the topic itself, as Kafka names them; documentation
// and types come with v3+. Group configs (type 32) come from the gateway
// (group_configs.go). Other resource types (broker loggers, client
// metrics) are INVALID_REQUEST.
//
// Version notes: v1 synonyms and source, v3 type and documentation, v4
// flexible.

func init() { regKey(32, 1, 4, (*Gateway).handleDescribeConfigs) }

func (g *Gateway) handleDescribeConfigs(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := g.describeConfigs(ctx, rr.ResourceType, rr.ResourceName)
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		want := map[string]bool{}
		for _, n := range rr.ConfigNames {
			want[n] = true
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !want[e.Name] {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Sensitive
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsDefault = e.Source == ConfigSourceDefault
			c.ConfigType = kmsg.ConfigType(e.Type)
			if e.Sensitive {
				c.Value = nil
			}
			if req.IncludeDocumentation && e.Doc != "" {
				doc := e.Doc
				c.Documentation = &doc
			}
			if req.IncludeSynonyms {
				c.ConfigSynonyms = synonyms(ConfigResourceType(rr.ResourceType), e, c.Value)
			}
			sr.Configs = append(sr.Configs, c)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// synonyms lists where a described value comes from, most specific first,
// as Kafka does: the value's own source, then the default it overrides. A
// topic config's value that comes from a broker level is named by its
// broker-level name (log.retention.ms for retention.ms), and so is the
// default. Defaults the Cluster does not give come from the topicconfig
// registry.
func synonyms(typ ConfigResourceType, e ConfigEntry, value *string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	brokerName := e.Name
	def := e.Default
	if d := topicconfig.Lookup(e.Name); typ == ConfigResourceTopic && d != nil {
		if d.Broker != "" {
			brokerName = d.Broker
		}
		if def == nil {
			def = &d.Default
		}
	} else if d := topicconfig.LookupBroker(e.Name); typ == ConfigResourceBroker && d != nil && def == nil {
		def = &d.Default
	}
	own := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	own.Name, own.Value, own.Source = e.Name, value, kmsg.ConfigSource(e.Source)
	if e.Source != ConfigSourceDynamicTopic {
		own.Name = brokerName
	}
	out := []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{own}
	if e.Source != ConfigSourceDefault && def != nil {
		d := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		d.Name, d.Value, d.Source = brokerName, def, kmsg.ConfigSourceDefaultConfig
		if e.Sensitive {
			d.Value = nil
		}
		out = append(out, d)
	}
	return out
}

// configResource checks a resource type the config keys serve.
func configResource(typ kmsg.ConfigResourceType, name string) (ConfigResource, error) {
	switch ConfigResourceType(typ) {
	case ConfigResourceTopic, ConfigResourceBroker:
		return ConfigResource{Type: ConfigResourceType(typ), Name: name}, nil
	}
	return ConfigResource{}, fmt.Errorf("%w: config resource type %d is not supported", kerr.InvalidRequest, typ)
}

func (g *Gateway) describeConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string) ([]ConfigEntry, error) {
	if ConfigResourceType(typ) == configResourceGroup {
		return g.groupConfigEntries(name)
	}
	res, err := configResource(typ, name)
	if err != nil {
		return nil, err
	}
	if res.Type == ConfigResourceTopic {
		if err := ValidTopicName(name); err != nil {
			return nil, err
		}
	}
	return g.cluster.DescribeConfigs(ctx, res)
}
