package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials: v0.
//
// Lists users' SCRAM credentials as mechanism and iteration count, never
// the salt or keys (KIP-554). A null user list describes every user; an
// unknown user answers RESOURCE_NOT_FOUND, a name twice
// DUPLICATE_RESOURCE. Needs DESCRIBE on the cluster (authz.go).

func init() { regKey(50, 0, 0, (*Gateway).handleDescribeUserScram) }

func (g *Gateway) handleDescribeUserScram(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	sec := g.opts.Auth.Security
	if sec == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	var names []string
	count := map[string]int{}
	for _, u := range req.Users {
		names = append(names, u.Name)
		count[u.Name]++
	}
	var users []ScramUser
	var err error
	switch {
	case req.Users != nil && len(req.Users) == 0:
	default:
		users, err = sec.DescribeScramUsers(ctx, dedupe(names))
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	byName := map[string]ScramUser{}
	for _, u := range users {
		byName[u.User] = u
	}
	if req.Users == nil {
		for _, u := range users {
			names = append(names, u.User)
		}
	}
	done := map[string]bool{}
	for _, n := range names {
		if done[n] {
			continue
		}
		done[n] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = n
		u, ok := byName[n]
		switch {
		case count[n] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = errorMessage(fmt.Errorf("user %q is named more than once", n))
		case !ok:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = errorMessage(fmt.Errorf("attempt to describe a user credential that does not exist: %s", n))
		case u.Err != nil:
			r.ErrorCode, r.ErrorMessage = errorCode(u.Err), errorMessage(u.Err)
		default:
			for i, m := range u.Mechanisms {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramMechanismCode(m), int32(u.Iterations[i])
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
