package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupDescribe: v1 (KIP-932), as Kafka 4.4 serves it.
//
// Describes share groups: state (Empty or Stable), epochs, the "simple"
// assignor and each member's subscription and assignment. A group that
// does not exist, or is not a share group, is GROUP_ID_NOT_FOUND.

func init() { regKey(77, 1, 1, (*Gateway).handleShareGroupDescribe) }

func (g *Gateway) handleShareGroupDescribe(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	md, mdErr := g.cluster.Metadata(ctx)
	for _, id := range req.GroupIDs {
		err := mdErr
		var dg kmsg.ShareGroupDescribeResponseGroup
		if err == nil {
			dg, err = awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- kmsg.ShareGroupDescribeResponseGroup) {
				if gr.sg == nil {
					d := kmsg.NewShareGroupDescribeResponseGroup()
					d.ErrorCode = kerr.GroupIDNotFound.Code
					d.ErrorMessage = ptr(fmt.Sprintf("group %s is not a share group", gr.id))
					reply <- d
					return
				}
				reply <- gr.describeShare(md)
			})
		}
		if groupGone(err) {
			err = fmt.Errorf("%w: group %s does not exist", kerr.GroupIDNotFound, id)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			dg = kmsg.NewShareGroupDescribeResponseGroup()
			dg.ErrorCode, dg.ErrorMessage = errorCode(err), errorMessage(err)
		}
		dg.GroupID = id
		dg.AuthorizedOperations = opsOmitted
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOps
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
