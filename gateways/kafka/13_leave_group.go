package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: v0-v5.
//
// Removes members at once (instead of waiting out their sessions) and
// rebalances the rest. v3+ removes several members, each by member id or
// by group.instance.id (KIP-345: an operator removing a static member);
// each gets its own error (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
//
// Version notes: v3 batch of members, v4 flexible, v5 reason.

func init() { regKey(13, 0, 5, (*Gateway).handleLeaveGroup) }

func (g *Gateway) handleLeaveGroup(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	errs, err := awaitGroup(ctx, g, req.Group, false, func(gr *group, reply chan<- []error) {
		out := make([]error, len(members))
		for i, m := range members {
			out[i] = gr.leave(m.MemberID, m.InstanceID)
		}
		reply <- out
	})
	if groupGone(err) {
		err = kerr.UnknownMemberID
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if req.Version < 3 {
		if err == nil {
			err = errs[0]
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if err != nil && !groupGone(err) && ErrorFor(err) != kerr.UnknownMemberID {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if err != nil {
			rm.ErrorCode = errorCode(err)
		} else {
			rm.ErrorCode = errorCode(errs[i])
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
