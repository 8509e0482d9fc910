package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// CreateAcls: v0-v3.
//
// Adds ACL bindings to the controller's replicated state; every gateway's
// authorizer picks them up from there. Each creation answers on its own:
// INVALID_REQUEST for a binding Kafka would refuse (an ANY or MATCH in
// it, a cluster resource not named kafka-cluster, a principal that is not
// User:NAME, User:* or Group:NAME, a role-binding: host), and no error for
// one that already exists. v0 bindings are LITERAL. Group:NAME is not
// Kafka's (it knows User: only) but Confluent's and Redpanda's: the entry
// applies to the group's members. Needs ALTER on the cluster (authz.go).

func init() { regKey(30, 0, 3, (*Gateway).handleCreateAcls) }

// aclFromKafka converts a binding's enums to auth's names.
func aclFromKafka(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) auth.ACL {
	return auth.ACL{
		ResourceType: rt.String(), ResourceName: name, PatternType: pt.String(),
		Principal: principal, Host: host, Operation: op.String(), Permission: perm.String(),
	}
}

// kafkaEnums converts auth's names back.
func kafkaEnums(a auth.ACL) (kmsg.ACLResourceType, kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType) {
	rt, _ := kmsg.ParseACLResourceType(a.ResourceType)
	pt, _ := kmsg.ParseACLResourcePatternType(a.PatternType)
	op, _ := kmsg.ParseACLOperation(a.Operation)
	perm, _ := kmsg.ParseACLPermissionType(a.Permission)
	return rt, pt, op, perm
}

func (g *Gateway) handleCreateAcls(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(req.Creations))
	var acls []auth.ACL
	var idx []int
	for i, c := range req.Creations {
		pt := c.ResourcePatternType
		if req.Version == 0 {
			pt = kmsg.ACLResourcePatternTypeLiteral
		}
		a := aclFromKafka(c.ResourceType, c.ResourceName, pt, c.Principal, c.Host, c.Operation, c.PermissionType)
		if err := a.Check(); err != nil {
			errs[i] = fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
			continue
		}
		acls = append(acls, a)
		idx = append(idx, i)
	}
	if len(acls) > 0 {
		sec := g.opts.Auth.Security
		var out []error
		var err error
		if sec == nil {
			err = fmt.Errorf("%w: no ACL store", kerr.SecurityDisabled)
		} else {
			out, err = sec.CreateACLs(ctx, acls)
		}
		for j, i := range idx {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = at(out, j)
			}
		}
	}
	for _, err := range errs {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
