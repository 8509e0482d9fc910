package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs: v0-v2.
//
// Kafka's legacy, non-incremental config change: the resource's dynamic
// configs become exactly the ones in the request, so a config left out
// returns to its default. Topic and broker resources are served (the
// Cluster validates names and values: INVALID_CONFIG); ValidateOnly
// changes nothing. Prefer IncrementalAlterConfigs, which clients use by
// default.
//
// Version notes: v1 only changed throttling, v2 flexible.

func init() { regKey(33, 0, 2, (*Gateway).handleAlterConfigs) }

func (g *Gateway) handleAlterConfigs(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		res, err := configResource(rr.ResourceType, rr.ResourceName)
		if err == nil {
			set := make(map[string]*string, len(rr.Configs))
			for _, c := range rr.Configs {
				set[c.Name] = c.Value
			}
			err = g.cluster.AlterConfigs(ctx, res, set, req.ValidateOnly)
		}
		if err != nil {
			sr.ErrorCode = errorCode(err)
			sr.ErrorMessage = errorMessage(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
