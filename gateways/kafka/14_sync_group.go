package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: v0-v5.
//
// The classic protocol's sync phase: the leader sends every member's
// assignment, and each member's SyncGroup (leader's included) waits for it.
// Members that do not sync within the rebalance timeout are removed and
// the group rebalances (the waiting ones get REBALANCE_IN_PROGRESS). In a
// stable group SyncGroup answers the member's current assignment. A wrong
// generation is ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, a
// replaced static member FENCED_INSTANCE_ID, and (v5+) a protocol type or
// name other than the group's INCONSISTENT_GROUP_PROTOCOL.
//
// Version notes: v3 instance id, v4 flexible, v5 protocol type and name.

func init() { regKey(14, 0, 5, (*Gateway).handleSyncGroup) }

func (g *Gateway) handleSyncGroup(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	sr := syncRequest{
		memberID: req.MemberID, instanceID: req.InstanceID, generation: req.Generation,
		protocolType: req.ProtocolType, protocol: req.Protocol,
		assignments: make(map[string][]byte, len(req.GroupAssignment)),
	}
	for _, a := range req.GroupAssignment {
		sr.assignments[a.MemberID] = a.MemberAssignment
	}
	res, err := awaitGroup(ctx, g, req.Group, false, func(gr *group, reply chan<- syncResult) { gr.sync(sr, reply) })
	if groupGone(err) {
		err = kerr.UnknownMemberID
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ErrorCode = errorCode(res.err)
	if res.err == nil {
		pt, p := res.protocolType, res.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
		resp.MemberAssignment = res.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
	}
	return resp, nil
}
