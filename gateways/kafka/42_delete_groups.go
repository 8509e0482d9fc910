package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-v2.
//
// Deletes groups that have no members: their committed offsets and group
// metadata are tombstoned in __consumer_offsets, so the deletion survives
// a restart. A group with members is NON_EMPTY_GROUP; one that does not
// exist, GROUP_ID_NOT_FOUND.
//
// Version notes: v2 flexible.

func init() { regKey(42, 0, 2, (*Gateway).handleDeleteGroups) }

func (g *Gateway) handleDeleteGroups(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		res, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- error) {
			if (gr.cg != nil && len(gr.cg.Members) > 0) || (gr.sg != nil && len(gr.sg.members) > 0) {
				reply <- kerr.NonEmptyGroup
				return
			}
			switch gr.state {
			case groupDead:
				reply <- kerr.GroupIDNotFound
			case groupEmpty:
				if err := gr.deleteOffsets(func(tp) bool { return true }); err != nil {
					reply <- err
					return
				}
				if gr.protocolType != "" {
					if err := gr.c.tombstoneGroup(gr.c.ctx, gr.id); err != nil {
						reply <- err
						return
					}
				}
				if gr.cg != nil {
					gr.cg = nil
					gr.storeConsumer() // its tombstone
				}
				if gr.isShare() {
					if err := gr.c.g.shares.deleteGroup(gr.c.ctx, gr.id); err != nil {
						reply <- err
						return
					}
					gr.sg = nil
				}
				gr.state = groupDead
				reply <- nil
			default:
				reply <- kerr.NonEmptyGroup
			}
		})
		if groupGone(err) {
			err = kerr.GroupIDNotFound
		}
		if err == nil {
			err = res
		}
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rg.ErrorCode = errorCode(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
