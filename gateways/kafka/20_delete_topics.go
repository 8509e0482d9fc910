package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v1-v6.
//
// Deletes topics by name, or (v6+) by name or id, through the Cluster,
// which removes the partitions from the stores before answering. Internal
// topics cannot be deleted (INVALID_TOPIC_EXCEPTION). The group
// coordinator then forgets the committed offsets of the deleted topic, as
// Kafka does.
//
// Version notes: v2 and v3 only changed errors, v4 flexible, v5 error
// message, v6 topic ids.

func init() { regKey(20, 1, 6, (*Gateway).handleDeleteTopics) }

func (g *Gateway) handleDeleteTopics(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	reqTopics := req.Topics
	if req.Version < 6 {
		reqTopics = nil
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = &name
			reqTopics = append(reqTopics, rt)
		}
	}
	for _, rt := range reqTopics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			t   Topic
			err error
		)
		if rt.Topic != nil {
			t, err = g.cluster.Topic(ctx, *rt.Topic)
		} else {
			t, err = g.cluster.TopicByID(ctx, rt.TopicID)
		}
		if err == nil && t.Internal {
			err = errInternalTopic(t.Name)
		}
		if err == nil {
			err = g.cluster.DeleteTopic(ctx, t.Name)
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		} else {
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			g.groups.topicDeleted(t.Name)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
