package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-v6.
//
// Group keys (type 0) and transactional ids (type 1) are hashed over the
// live gateways, the same way on every gateway, and that gateway
// coordinates the group or the transactions (see doc.go); share group keys
// (type 2) are INVALID_REQUEST. v4+ resolves a batch of keys.
//
// Version notes: v1 key type and error message, v3 flexible, v4 batched
// keys, v5 and v6 only widen the errors.

func init() { regKey(10, 0, 6, (*Gateway).handleFindCoordinator) }

func (g *Gateway) handleFindCoordinator(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	brokers := g.brokers(ctx)

	find := func(key string) (Broker, error) {
		switch {
		case req.CoordinatorType == 1 && key == "":
			return Broker{}, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
		case req.CoordinatorType == 1:
			return coordinatorFor(key, brokers), nil
		case req.CoordinatorType != 0:
			return Broker{}, fmt.Errorf("%w: coordinator type %d is not served", kerr.InvalidRequest, req.CoordinatorType)
		case key == "":
			return Broker{}, fmt.Errorf("%w: empty group id", kerr.InvalidRequest)
		}
		return coordinatorFor(key, brokers), nil
	}

	if req.Version < 4 {
		b, err := find(req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if err != nil {
			resp.ErrorCode = errorCode(err)
			resp.ErrorMessage = errorMessage(err)
			return resp, nil
		}
		resp.NodeID, resp.Host, resp.Port = b.NodeID, b.Host, b.Port
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		b, err := find(key)
		if err != nil {
			c.NodeID, c.Port = -1, -1
			c.ErrorCode = errorCode(err)
			c.ErrorMessage = errorMessage(err)
		} else {
			c.NodeID, c.Host, c.Port = b.NodeID, b.Host, b.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
