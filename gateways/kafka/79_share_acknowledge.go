package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareAcknowledge: v1-v2 (KIP-932), as Kafka 4.4 serves it.
//
// Acknowledges records a share group member acquired: accept (done),
// release (available again, or archived at the delivery count limit),
// reject (archived, and written to the group's dead-letter topic when it
// has one), gap (no record at that offset) and, v2, renew (the lock is
// extended). All of a partition's acknowledgements apply or none do: a
// record the member does not hold (never acquired, held by another
// member, already acknowledged, lock expired) is INVALID_RECORD_STATE,
// malformed batches INVALID_REQUEST. The request must carry the share
// session's next epoch (INVALID_SHARE_SESSION_EPOCH, or
// SHARE_SESSION_NOT_FOUND); -1 closes the session after acknowledging,
// releasing whatever the member still holds.

func init() { regKey(79, 1, 2, (*Gateway).handleShareAcknowledge) }

func (g *Gateway) handleShareAcknowledge(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	group, member, md, err := g.shareRequestStart(ctx, req.GroupID, req.MemberID, &resp.AcquisitionLockTimeoutMillis)
	if err != nil {
		return fail(err)
	}
	var named []sharePartReq
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			r := sharePartReq{id: rt.TopicID, tp: tp{partition: rp.Partition}}
			for _, b := range rp.AcknowledgementBatches {
				r.acks = append(r.acks, ackBatch{first: b.FirstOffset, last: b.LastOffset, types: b.AcknowledgeTypes})
			}
			named = append(named, r)
		}
	}
	g.resolveShareParts(ctx, md, named)
	if _, err := g.shareSessionUpdate(rc.s, group, member, req.ShareSessionEpoch, nil, nil, false); err != nil {
		return fail(err)
	}
	byTopic := map[[16]byte]int{}
	endpoints := map[int32]bool{}
	for _, r := range named {
		err := r.err
		if err == nil {
			err = g.shareAcknowledge(ctx, group, member, r, req.Version >= 2 && req.IsRenewAck)
		}
		i, ok := byTopic[r.id]
		if !ok {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = r.id
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[r.id] = i
		}
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = r.tp.partition
		if err != nil {
			rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
		}
		if r.tp.topic != "" {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = g.shareLeader(ctx, r.tp.topic, r.tp.partition)
			if rp.ErrorCode == kerr.NotLeaderForPartition.Code && rp.CurrentLeader.LeaderID >= 0 {
				endpoints[rp.CurrentLeader.LeaderID] = true
			}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, b := range g.brokers(ctx) {
		if endpoints[b.NodeID] {
			ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port, ne.Rack = b.NodeID, b.Host, b.Port, b.Rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
	}
	if req.ShareSessionEpoch == -1 {
		g.closeShareSession(group, member)
	}
	return resp, nil
}
