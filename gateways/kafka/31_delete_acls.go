package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// DeleteAcls: v0-v3.
//
// Removes every ACL binding each filter selects (filters as in
// DescribeAcls) and answers, per filter, the bindings it removed. The
// entries of role bindings that DescribeAcls lists are not ACLs and stay:
// a filter that selects only such entries is answered INVALID_REQUEST
// with the role bindings to unbind. Needs ALTER on the cluster (authz.go).

func init() { regKey(31, 0, 3, (*Gateway).handleDeleteAcls) }

func (g *Gateway) handleDeleteAcls(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	errs := make([]error, len(req.Filters))
	var filters []auth.ACLFilter
	var idx []int
	for i, f := range req.Filters {
		af, err := aclFilterFromKafka(req.Version, f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if err != nil {
			errs[i] = err
			continue
		}
		filters = append(filters, af)
		idx = append(idx, i)
	}
	deleted := make([][]auth.ACL, len(req.Filters))
	if len(filters) > 0 {
		var out [][]auth.ACL
		var ferrs []error
		var err error
		if sec := g.opts.Auth.Security; sec == nil {
			err = fmt.Errorf("%w: no ACL store", kerr.SecurityDisabled)
		} else {
			out, ferrs, err = sec.DeleteACLs(ctx, filters)
		}
		for j, i := range idx {
			switch {
			case err != nil:
				errs[i] = err
			case at(ferrs, j) != nil:
				errs[i] = at(ferrs, j)
			case j < len(out):
				deleted[i] = out[j]
			}
		}
	}
	for i, err := range errs {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		for _, a := range deleted[i] {
			rt, pt, op, perm := kafkaEnums(a)
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = rt, a.ResourceName, pt
			m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, op, perm
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
