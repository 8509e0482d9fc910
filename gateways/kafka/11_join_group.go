package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: v0-v9.
//
// The classic protocol's join phase, served by the group's goroutine (see
// groups_state.go): the request waits until every member has (re)joined
// or the rebalance timeout passes, then every member learns the new
// generation and the chosen protocol, the leader also the members and
// their metadata. Eager and cooperative rebalancing are both the clients'
// business; the coordinator runs as many join rounds as they ask for.
// A new dynamic member first gets MEMBER_ID_REQUIRED with its id (v4+,
// KIP-394). Static members (group.instance.id, v5+, KIP-345) keep their
// place across restarts: a known instance rejoining without a member id
// replaces (fences) the old member and, in a stable group whose protocol
// would not change, gets the current generation back without a rebalance.
// Session timeouts outside [group.min.session.timeout.ms,
// group.max.session.timeout.ms] are INVALID_SESSION_TIMEOUT; a protocol
// type or protocols the group cannot share, INCONSISTENT_GROUP_PROTOCOL.
//
// Version notes: v1 rebalance timeout, v4 member id required, v5 instance
// id, v6 flexible, v7 protocol type in the response, v8 reason, v9 skip
// assignment (never set: the leader always assigns).

func init() { regKey(11, 0, 9, (*Gateway).handleJoinGroup) }

func (g *Gateway) handleJoinGroup(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID, resp.Generation = req.MemberID, -1

	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	jr := joinRequest{
		memberID: req.MemberID, instanceID: req.InstanceID, clientID: rc.clientID, clientHost: clientHost(rc),
		protocolType: req.ProtocolType, sessionTimeout: session, rebalanceTimeout: rebalance,
		requireKnownID: req.Version >= 4,
	}
	for _, p := range req.Protocols {
		jr.protocols = append(jr.protocols, groupProtocol{name: p.Name, metadata: p.Metadata})
	}

	var err error
	switch {
	case req.Group == "":
		err = kerr.InvalidGroupID
	case session < g.opts.GroupMinSessionTimeout || session > g.opts.GroupMaxSessionTimeout:
		err = fmt.Errorf("%w: %v not in [%v, %v]", kerr.InvalidSessionTimeout, session, g.opts.GroupMinSessionTimeout, g.opts.GroupMaxSessionTimeout)
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		err = kerr.InconsistentGroupProtocol
	case req.InstanceID != nil && *req.InstanceID == "":
		err = fmt.Errorf("%w: empty group instance id", kerr.InvalidRequest)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	res, err := awaitGroup(ctx, g, req.Group, true, func(gr *group, reply chan<- joinResult) { gr.join(jr, reply) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ErrorCode = errorCode(res.err)
	resp.MemberID, resp.Generation, resp.LeaderID, resp.Members = res.memberID, res.generation, res.leader, res.members
	if res.err == nil {
		pt, p := res.protocolType, res.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp, nil
}
