package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// AlterUserScramCredentials: v0.
//
// Upserts and deletes SCRAM credentials (KIP-554). An upsertion carries
// the salt, the iterations and the salted password, from which the
// StoredKey and ServerKey are derived here: the password never travels,
// and only the derived keys are stored. A user named twice in one request
// is DUPLICATE_RESOURCE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
// iterations outside 4096-16384 UNACCEPTABLE_CREDENTIAL, deleting a
// credential that does not exist RESOURCE_NOT_FOUND. Needs ALTER on the
// cluster (authz.go).

func init() { regKey(51, 0, 0, (*Gateway).handleAlterUserScram) }

func (g *Gateway) handleAlterUserScram(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]int{}
	for _, d := range req.Deletions {
		seen[d.Name]++
	}
	for _, u := range req.Upsertions {
		seen[u.Name]++
	}
	type item struct {
		user string
		err  error
		// at is the item's index in the outcomes of the call to
		// Security (upserts first, then deletions); -1 for none.
		at int
	}
	var (
		items     []item
		upserts   []ScramUpsert
		deletions []ScramDeletion
	)
	check := func(user string, mech int8) error {
		switch {
		case user == "":
			return fmt.Errorf("%w: empty user name", kerr.UnacceptableCredential)
		case seen[user] > 1:
			return fmt.Errorf("%w: user %q is named more than once", kerr.DuplicateResource, user)
		case scramMechanismName(mech) == "":
			return fmt.Errorf("%w: mechanism %d", kerr.UnsupportedSaslMechanism, mech)
		}
		return nil
	}
	for _, u := range req.Upsertions {
		it := item{user: u.Name, at: -1}
		it.err = check(u.Name, u.Mechanism)
		if it.err == nil {
			cred, err := auth.ScramCredentialFromSalted(scramMechanismName(u.Mechanism), u.Salt, u.SaltedPassword, int(u.Iterations))
			if err != nil {
				it.err = fmt.Errorf("%w: %v", kerr.UnacceptableCredential, err)
			} else {
				it.at = len(upserts)
				upserts = append(upserts, ScramUpsert{User: u.Name, Mechanism: scramMechanismName(u.Mechanism), Credential: cred})
			}
		}
		items = append(items, it)
	}
	for _, d := range req.Deletions {
		it := item{user: d.Name, at: -1}
		if it.err = check(d.Name, d.Mechanism); it.err == nil {
			it.at = len(deletions)
			deletions = append(deletions, ScramDeletion{User: d.Name, Mechanism: scramMechanismName(d.Mechanism)})
		}
		items = append(items, it)
	}
	var errs []error
	var callErr error
	switch sec := g.opts.Auth.Security; {
	case sec == nil:
		callErr = fmt.Errorf("%w: no user store", kerr.UnsupportedVersion)
	case len(upserts)+len(deletions) > 0:
		errs, callErr = sec.AlterScramUsers(ctx, upserts, deletions)
	}
	for i := range items {
		it := &items[i]
		if it.at >= 0 {
			if callErr != nil {
				it.err = callErr
			} else if i >= len(req.Upsertions) {
				it.err = at(errs, len(upserts)+it.at)
			} else {
				it.err = at(errs, it.at)
			}
		}
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = it.user
		r.ErrorCode, r.ErrorMessage = errorCode(it.err), errorMessage(it.err)
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func at(errs []error, i int) error {
	if i < len(errs) {
		return errs[i]
	}
	return nil
}
