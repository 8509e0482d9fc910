package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete: v0.
//
// Deletes a group's committed offsets for some partitions (tombstones in
// __consumer_offsets). A partition of a topic the group's live consumers
// subscribe to is GROUP_SUBSCRIBED_TO_TOPIC and keeps its offset; a group
// that does not exist is GROUP_ID_NOT_FOUND.

func init() { regKey(47, 0, 0, (*Gateway).handleOffsetDelete) }

func (g *Gateway) handleOffsetDelete(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	type result struct {
		err       error
		subscribe map[string]bool
	}
	res, err := awaitGroup(ctx, g, req.Group, false, func(gr *group, reply chan<- result) {
		if gr.state == groupDead {
			reply <- result{err: kerr.GroupIDNotFound}
			return
		}
		subs := gr.subscribedTopics()
		del := map[tp]bool{}
		for _, rt := range req.Topics {
			if subs[rt.Topic] {
				continue
			}
			for _, p := range rt.Partitions {
				del[tp{rt.Topic, p.Partition}] = true
			}
		}
		err := gr.deleteOffsets(func(k tp) bool { return del[k] })
		reply <- result{err: err, subscribe: subs}
	})
	if groupGone(err) {
		err = kerr.GroupIDNotFound
	}
	if err == nil {
		err = res.err
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = p.Partition
			if res.subscribe[rt.Topic] {
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
