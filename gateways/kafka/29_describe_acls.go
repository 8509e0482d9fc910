package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// DescribeAcls: v0-v3.
//
// Lists the ACL bindings a filter selects, grouped by resource pattern as
// Kafka answers. A filter's null name, principal or host and its ANY
// enums match everything; pattern type MATCH selects every binding that
// applies to the named resource (literal, wildcard and prefixed); v0
// filters are LITERAL. The ALLOW entries role bindings expand to are
// listed too, with host role-binding:ROLE (auth.BindingHostPrefix), so
// that what a principal may do is seen in one place and no such entry
// passes for an ACL. Needs DESCRIBE on the cluster (authz.go).

func init() { regKey(29, 0, 3, (*Gateway).handleDescribeAcls) }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// aclFilterFromKafka converts a filter; an UNKNOWN enum is an error.
func aclFilterFromKafka(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (auth.ACLFilter, error) {
	if version == 0 {
		pt = kmsg.ACLResourcePatternTypeLiteral
	}
	f := auth.ACLFilter{
		ResourceType: rt.String(), ResourceName: str(name), PatternType: pt.String(),
		Principal: str(principal), Host: str(host), Operation: op.String(), Permission: perm.String(),
	}
	for _, v := range []string{f.ResourceType, f.PatternType, f.Operation, f.Permission} {
		if v == "UNKNOWN" {
			return f, fmt.Errorf("%w: the ACL filter has an unknown enum value", kerr.InvalidRequest)
		}
	}
	return f, nil
}

func (g *Gateway) handleDescribeAcls(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f, err := aclFilterFromKafka(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	var acls []auth.ACL
	if err == nil {
		if sec := g.opts.Auth.Security; sec == nil {
			err = fmt.Errorf("%w: no ACL store", kerr.SecurityDisabled)
		} else {
			acls, err = sec.DescribeACLs(ctx, f)
		}
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	type pattern struct{ rt, name, pt string }
	at := map[pattern]int{}
	for _, a := range acls {
		rt, pt, op, perm := kafkaEnums(a)
		k := pattern{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := at[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = rt, a.ResourceName, pt
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			at[k] = i
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, op, perm
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return resp, nil
}
