package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat: v0-v1 (KIP-848), as Kafka 4.4 serves it.
//
// The one request of the consumer protocol: joins (member epoch 0),
// heartbeats, reports owned partitions, changes the subscription (topic
// names, or a regex the coordinator resolves against the topics), and
// leaves (epoch -1; -2 for a static member leaving for a while). The
// coordinator computes the assignment with the server assignor the
// members ask for ("uniform", the default, or "range";
// UNSUPPORTED_ASSIGNOR otherwise) and hands each member its part as it
// revokes what it must give up (groups_consumer.go). An empty classic
// group becomes a consumer group on its first heartbeat; a stable one with
// classic members is upgraded online, its members kept as classic members
// of the consumer group (groups_classic_members.go), unless
// group.consumer.migration.policy forbids it (GROUP_ID_NOT_FOUND, as in
// Kafka; COORDINATOR_LOAD_IN_PROGRESS, retried, while it rebalances).
// Errors: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
// UNRELEASED_INSTANCE_ID, INVALID_REGULAR_EXPRESSION, INVALID_REQUEST
// for a first request without its required fields. The session timeout
// and heartbeat interval are the group configs consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms (Kafka's defaults, 45s and 5s).
//
// Version notes: v1 regex subscriptions and client-made member ids.

func init() { regKey(68, 0, 1, (*Gateway).handleConsumerGroupHeartbeat) }

// groupHeartbeat runs a consumer or share group heartbeat on the group's
// loop. Both protocols answer a group that vanished meanwhile with
// UNKNOWN_MEMBER_ID and carry the member's own error in the answer, which
// becomes the returned error.
func groupHeartbeat[A interface{ answerErr() error }](ctx context.Context, g *Gateway, id string, join bool, beat func(*group) A) (A, error) {
	ans, err := awaitGroup(ctx, g, id, join, func(gr *group, reply chan<- A) {
		reply <- beat(gr)
	})
	if groupGone(err) {
		err = kerr.UnknownMemberID
	}
	if err == nil {
		err = ans.answerErr()
	}
	return ans, err
}

func (a cgAnswer) answerErr() error { return a.err }

func (g *Gateway) handleConsumerGroupHeartbeat(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	md, err := g.cluster.Metadata(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	h := cgHeartbeat{req: req, clientID: rc.clientID, clientHost: clientHost(rc), md: md, now: time.Now()}
	ans, err := groupHeartbeat(ctx, g, req.Group, req.MemberEpoch == 0, func(gr *group) cgAnswer {
		return gr.consumerHeartbeat(h)
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
	resp.HeartbeatIntervalMillis = int32(g.groupCfg.getInt(req.Group, "consumer.heartbeat.interval.ms"))
	if ans.assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = toAssignment(ans.assignment, md)
		resp.Assignment = &a
	}
	return resp, nil
}
