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
			reply <- gr.deleteIfEmpty()
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

// deleteIfEmpty deletes a group that has no members, on its goroutine:
// DeleteGroups and the admin API both delete through it.
func (gr *group) deleteIfEmpty() error {
	if (gr.cg != nil && len(gr.cg.Members) > 0) || (gr.sg != nil && len(gr.sg.members) > 0) {
		return kerr.NonEmptyGroup
	}
	switch gr.state {
	case groupDead:
		return kerr.GroupIDNotFound
	case groupEmpty:
	default:
		return kerr.NonEmptyGroup
	}
	if err := gr.deleteOffsets(func(tp) bool { return true }); err != nil {
		return err
	}
	if gr.protocolType != "" {
		if err := gr.c.tombstoneGroup(gr.c.ctx, gr.id); err != nil {
			return err
		}
	}
	if gr.cg != nil {
		gr.cg = nil
		gr.storeConsumer() // its tombstone
	}
	if gr.isShare() {
		if err := gr.c.g.shares.deleteGroup(gr.c.ctx, gr.id); err != nil {
			return err
		}
		gr.sg = nil
	}
	gr.state = groupDead
	return nil
}
