package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteShareGroupOffsets: v0 (KIP-932), as Kafka 4.4 serves it.
//
// Deletes a share group's state for whole topics: the persisted
// share-partition start offsets (tombstones in __consumer_offsets) and
// any share partition open on this gateway, so the next fetch starts
// again by share.auto.offset.reset. The group must have no members
// (NON_EMPTY_GROUP); a group id of another kind of group, or none, is
// GROUP_ID_NOT_FOUND.

func init() { regKey(92, 0, 0, (*Gateway).handleDeleteShareGroupOffsets) }

func (g *Gateway) handleDeleteShareGroupOffsets(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	err := g.shareGroupKnown(ctx, req.GroupID)
	if err == nil {
		err = g.emptyShareGroup(ctx, req.GroupID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	lk := g.lookup(ctx)
	state := g.shares.topicsOf(req.GroupID)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, err := lk.topic(rt.Topic)
		if err == nil {
			st.TopicID = t.ID
			for _, p := range state[rt.Topic] {
				if err = g.shares.reset(ctx, shareKey{req.GroupID, rt.Topic, p}, -1); err != nil {
					break
				}
			}
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
