package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: v0-v6.
//
// A group's state, protocol type, chosen protocol and members (member and
// instance id, client id and host); members' metadata and assignments are
// included once the group is stable, as Kafka does. A group with committed
// offsets but no live state is Empty. A group that does not exist is Dead,
// and from v6 also GROUP_ID_NOT_FOUND (KIP-1043). Authorized operations
// (v3+) are all group operations, as no ACLs exist.
//
// Version notes: v1 throttle, v3 authorized operations, v4 instance id, v5
// flexible, v6 error message.

func init() { regKey(15, 0, 6, (*Gateway).handleDescribeGroups) }

func (g *Gateway) handleDescribeGroups(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- kmsg.DescribeGroupsResponseGroup) {
			reply <- gr.describe()
		})
		if groupGone(err) {
			dg = kmsg.NewDescribeGroupsResponseGroup()
			dg.State = groupDead.String()
			if req.Version >= 6 {
				err = kerr.GroupIDNotFound
			} else {
				err = nil
			}
		}
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		dg.Group = id
		if err != nil {
			dg.ErrorCode = errorCode(err)
			if req.Version >= 6 {
				dg.ErrorMessage = errorMessage(err)
			}
		}
		dg.AuthorizedOperations = opsOmitted
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOps
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// describe summarizes the group for DescribeGroups.
func (gr *group) describe() kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.State, dg.ProtocolType, dg.Protocol = gr.state.String(), gr.protocolType, gr.protocol
	for _, m := range gr.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if gr.state == groupStable {
			dm.ProtocolMetadata = m.metadataFor(gr.protocol)
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}
