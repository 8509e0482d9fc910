package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe: v0-v1 (KIP-848), as Kafka 4.4 serves it.
//
// Describes consumer-protocol groups: state (Empty, Assigning,
// Reconciling, Stable), group and assignment epochs, the assignor, and
// each member's subscription, current and target assignment. A group that
// does not exist, or is not a consumer group, is GROUP_ID_NOT_FOUND.
//
// Version notes: v1 member type.

func init() { regKey(69, 0, 1, (*Gateway).handleConsumerGroupDescribe) }

func (g *Gateway) handleConsumerGroupDescribe(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	md, mdErr := g.cluster.Metadata(ctx)
	for _, id := range req.Groups {
		err := mdErr
		var dg kmsg.ConsumerGroupDescribeResponseGroup
		if err == nil {
			dg, err = awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- kmsg.ConsumerGroupDescribeResponseGroup) {
				if gr.cg == nil {
					d := kmsg.NewConsumerGroupDescribeResponseGroup()
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = ptr(fmt.Sprintf("group %s is not a consumer group", gr.id))
					reply <- d
					return
				}
				reply <- gr.describeConsumer(md)
			})
		}
		if groupGone(err) {
			err = fmt.Errorf("%w: group %s does not exist", kerr.GroupIDNotFound, id)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			dg = kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.ErrorCode, dg.ErrorMessage = errorCode(err), errorMessage(err)
		}
		dg.Group = id
		dg.AuthorizedOperations = opsOmitted
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOps
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
