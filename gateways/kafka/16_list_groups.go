package kafka

import (
	"context"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-v5.
//
// Every group this gateway coordinates, live or only holding committed
// offsets (shown Empty), with its protocol type and (v4+) state, filtered
// by state (v4+, case-insensitive as in Kafka) and type (v5+: "classic",
// "consumer" for KIP-848 groups).
//
// Version notes: v3 flexible, v4 states filter, v5 types filter.

func init() { regKey(16, 0, 5, (*Gateway).handleListGroups) }

func (g *Gateway) handleListGroups(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, err := g.groups.list(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	keep := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].id < groups[j].id })
	for _, gs := range groups {
		if !keep(req.StatesFilter, gs.state) || !keep(req.TypesFilter, gs.typ) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = gs.id, gs.protocolType, gs.state, gs.typ
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}
