package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat: v1 (KIP-932), as Kafka 4.4 serves it (v0 was the
// early-access version, removed in Kafka 4.1).
//
// Joins (epoch 0, with a client-made member id and the subscription),
// heartbeats and leaves (epoch -1) a share group; answers the member's
// assignment when it changed (groups_share.go). A group id that names a
// classic or consumer group is GROUP_ID_NOT_FOUND; UNKNOWN_MEMBER_ID and
// FENCED_MEMBER_EPOCH as Kafka answers them. The heartbeat interval and
// session timeout are the group configs share.heartbeat.interval.ms and
// share.session.timeout.ms.

func init() { regKey(76, 1, 1, (*Gateway).handleShareGroupHeartbeat) }

func (a sgAnswer) answerErr() error { return a.err }

func (g *Gateway) handleShareGroupHeartbeat(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	md, err := g.cluster.Metadata(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	host, now := clientHost(rc), time.Now()
	ans, err := groupHeartbeat(ctx, g, req.GroupID, req.MemberEpoch == 0, func(gr *group) sgAnswer {
		return gr.shareHeartbeat(req, rc.clientID, host, md, now)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	resp.MemberID = &ans.memberID
	resp.MemberEpoch = ans.epoch
	resp.HeartbeatIntervalMillis = int32(g.groupCfg.getInt(req.GroupID, "share.heartbeat.interval.ms"))
	if ans.assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range toAssignment(ans.assignment, md) {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID, at.Partitions = t.TopicID, t.Partitions
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		if a.TopicPartitions == nil {
			a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		}
		resp.Assignment = &a
	}
	return resp, nil
}
