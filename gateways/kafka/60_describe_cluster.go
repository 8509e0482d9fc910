package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-v2.
//
// The cluster id, the controller id and the live Kafka gateways, as
// Metadata shows them. Only broker endpoints are described (endpoint type
// 1); asking for controller endpoints (type 2, KIP-919) is
// UNSUPPORTED_ENDPOINT_TYPE, since the Raft controllers do not speak the
// Kafka protocol. No broker is ever fenced.
//
// Version notes: v1 endpoint type, v2 fenced brokers.

func init() { regKey(60, 0, 2, (*Gateway).handleDescribeCluster) }

func (g *Gateway) handleDescribeCluster(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		err := fmt.Errorf("%w: endpoint type %d; only brokers (1) are described", kerr.UnsupportedEndpointType, req.EndpointType)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	resp.ClusterID = g.cluster.ClusterID()
	resp.ControllerID = g.cluster.ControllerID()
	resp.ClusterAuthorizedOperations = opsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOps
	}
	for _, b := range g.brokers(ctx) {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
