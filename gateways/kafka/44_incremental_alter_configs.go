package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs: v0-v1.
//
// Applies set, delete (back to the default), append and subtract (for list
// configs) operations to topic and broker configs through the Cluster,
// which validates them (INVALID_CONFIG), and set and delete to group
// configs (resource type 32, group_configs.go), which the gateway keeps. A config named twice in one
// resource is INVALID_REQUEST, as in Kafka. ValidateOnly changes nothing.
//
// Version notes: v1 flexible.

func init() { regKey(44, 0, 1, (*Gateway).handleIncrementalAlterConfigs) }

func (g *Gateway) handleIncrementalAlterConfigs(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if ConfigResourceType(rr.ResourceType) == configResourceGroup {
			if err := g.alterGroupConfigs(ctx, rr.ResourceName, rr.Configs, req.ValidateOnly); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
			}
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		res, err := configResource(rr.ResourceType, rr.ResourceName)
		if err == nil {
			seen := map[string]bool{}
			ops := make([]ConfigOp, 0, len(rr.Configs))
			for _, c := range rr.Configs {
				if seen[c.Name] {
					err = fmt.Errorf("%w: config %q appears more than once", kerr.InvalidRequest, c.Name)
					break
				}
				seen[c.Name] = true
				if c.Op < 0 || c.Op > 3 {
					err = fmt.Errorf("%w: unknown operation %d for %q", kerr.InvalidRequest, c.Op, c.Name)
					break
				}
				ops = append(ops, ConfigOp{Name: c.Name, Op: ConfigOpType(c.Op), Value: c.Value})
			}
			if err == nil {
				err = g.cluster.IncrementalAlterConfigs(ctx, res, ops, req.ValidateOnly)
			}
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
