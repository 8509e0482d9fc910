package kmeta

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
)

// configResource maps a Kafka config resource onto the controller's.
func (c *Cluster) configResource(ctx context.Context, res kafka.ConfigResource) (controller.ConfigResource, error) {
	if res.Type == kafka.ConfigResourceTopic {
		return controller.ConfigResource{Type: controller.ResourceTopic, Name: res.Name}, nil
	}
	// Broker configs are cluster-wide: "" (the default) and any live
	// gateway's id name the same set.
	if res.Name != "" {
		id, err := strconv.ParseInt(res.Name, 10, 32)
		known := false
		if err == nil {
			if m, err := c.Metadata(ctx); err == nil {
				for _, b := range m.Brokers() {
					known = known || b.NodeID == int32(id)
				}
			}
			known = known || int32(id) == c.opts.NodeID
		}
		if !known {
			return controller.ConfigResource{}, fmt.Errorf("%w: broker %q", kafka.ErrUnknownResource, res.Name)
		}
	}
	return controller.ConfigResource{Type: controller.ResourceBroker, Name: ""}, nil
}

var configSources = map[controller.ConfigSource]kafka.ConfigSource{
	controller.SourceTopic:              kafka.ConfigSourceDynamicTopic,
	controller.SourceDynamicBrokerDeflt: kafka.ConfigSourceDynamicDefaultBroker,
	controller.SourceStaticBroker:       kafka.ConfigSourceStaticBroker,
	controller.SourceDefault:            kafka.ConfigSourceDefault,
}

var configTypes = map[controller.ConfigType]kafka.ConfigType{
	controller.TypeString:  kafka.ConfigTypeString,
	controller.TypeInt:     kafka.ConfigTypeInt,
	controller.TypeLong:    kafka.ConfigTypeLong,
	controller.TypeBoolean: kafka.ConfigTypeBoolean,
	controller.TypeList:    kafka.ConfigTypeList,
	controller.TypeDouble:  kafka.ConfigTypeDouble,
}

func (c *Cluster) DescribeConfigs(ctx context.Context, res kafka.ConfigResource) ([]kafka.ConfigEntry, error) {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return nil, err
	}
	resp, err := c.opts.API.DescribeConfigs(ctx, controller.DescribeConfigsRequest{Resources: []controller.ConfigResource{cr}})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Err()
	}
	if err != nil {
		return nil, clusterErr(err)
	}
	out := make([]kafka.ConfigEntry, 0, len(resp.Resources[0].Configs))
	for _, e := range resp.Resources[0].Configs {
		v := e.Value
		out = append(out, kafka.ConfigEntry{
			Name: e.Name, Value: &v, Source: configSources[e.Source], ReadOnly: e.ReadOnly,
			Sensitive: e.Sensitive, Type: configTypes[e.Type], Doc: e.Doc,
		})
	}
	return out, nil
}

func (c *Cluster) AlterConfigs(ctx context.Context, res kafka.ConfigResource, set map[string]*string, validateOnly bool) error {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return err
	}
	cfgs := map[string]string{}
	for k, v := range set {
		if v != nil {
			cfgs[k] = *v
		}
	}
	return c.alter(ctx, res, controller.AlterConfigsResource{Type: cr.Type, Name: cr.Name, Configs: cfgs}, validateOnly)
}

var configOps = map[kafka.ConfigOpType]string{
	kafka.ConfigOpSet:      controller.OpSet,
	kafka.ConfigOpDelete:   controller.OpDelete,
	kafka.ConfigOpAppend:   controller.OpAppend,
	kafka.ConfigOpSubtract: controller.OpSubtract,
}

func (c *Cluster) IncrementalAlterConfigs(ctx context.Context, res kafka.ConfigResource, ops []kafka.ConfigOp, validateOnly bool) error {
	cr, err := c.configResource(ctx, res)
	if err != nil {
		return err
	}
	r := controller.AlterConfigsResource{Type: cr.Type, Name: cr.Name, Incremental: true}
	for _, op := range ops {
		co := controller.ConfigOp{Name: op.Name, Op: configOps[op.Op]}
		if op.Value != nil {
			co.Value = *op.Value
		}
		r.Ops = append(r.Ops, co)
	}
	return c.alter(ctx, res, r, validateOnly)
}

func (c *Cluster) alter(ctx context.Context, res kafka.ConfigResource, r controller.AlterConfigsResource, validateOnly bool) error {
	resp, err := c.opts.API.AlterConfigs(ctx, controller.AlterConfigsRequest{Resources: []controller.AlterConfigsResource{r}, ValidateOnly: validateOnly})
	if err == nil && len(resp.Resources) == 1 {
		err = resp.Resources[0].Err()
	}
	if err != nil {
		return clusterErr(err)
	}
	if res.Type == kafka.ConfigResourceTopic && !validateOnly {
		_, _, err = c.refresh(ctx, res.Name)
	}
	return err
}
