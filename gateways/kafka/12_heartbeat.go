package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0-v4.
//
// Keeps a member's session alive (the session timeout is enforced by the
// group's goroutine) and tells it when to rejoin: REBALANCE_IN_PROGRESS
// during a join phase. UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and
// FENCED_INSTANCE_ID as Kafka answers them.
//
// Version notes: v3 instance id, v4 flexible.

func init() { regKey(12, 0, 4, (*Gateway).handleHeartbeat) }

func (g *Gateway) handleHeartbeat(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	res, err := awaitGroup(ctx, g, req.Group, false, func(gr *group, reply chan<- error) {
		reply <- gr.heartbeat(req.MemberID, req.InstanceID, req.Generation)
	})
	if groupGone(err) {
		err = kerr.UnknownMemberID
	}
	if err == nil {
		err = res
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
