package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0-v3.
//
// Grows topics to the requested partition count through the Cluster, which
// creates the new partitions on the stores before answering. A count that
// does not grow the topic is INVALID_PARTITIONS; a manual assignment is
// INVALID_REPLICA_ASSIGNMENT (the controller places partitions); a topic
// twice in one request is INVALID_REQUEST. ValidateOnly changes nothing.
//
// Version notes: v1 and v3 only changed errors, v2 flexible.

func init() { regKey(37, 0, 3, (*Gateway).handleCreatePartitions) }

func (g *Gateway) handleCreatePartitions(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)

	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		switch {
		case seen[rt.Topic] > 1:
			err = fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, rt.Topic)
		case rt.Assignment != nil:
			err = fmt.Errorf("%w: manual replica assignment is not supported; the controller places partitions", ErrInvalidReplicaAssignment)
		default:
			var t Topic
			if t, err = g.cluster.Topic(ctx, rt.Topic); err == nil && t.Internal {
				err = errInternalTopic(t.Name)
			}
			if err == nil {
				err = g.cluster.CreatePartitions(ctx, rt.Topic, rt.Count, req.ValidateOnly)
			}
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
