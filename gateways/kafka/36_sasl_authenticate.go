package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
)

// SaslAuthenticate: v0-v2.
//
// Carries the tokens of the exchange a SaslHandshake started: SCRAM's two
// rounds, PLAIN's or OAUTHBEARER's one. When the exchange succeeds the
// connection acts as User:NAME; v1+ answers the session lifetime
// (KIP-368), the time left until connections.max.reauth.ms or the
// OAUTHBEARER token's expiry ends the session, and the client
// re-authenticates (SaslHandshake again) before then. Re-authentication
// must prove the same principal with the same mechanism; anything else,
// like any failed exchange (a wrong password, an unknown user, a
// malformed message), answers SASL_AUTHENTICATION_FAILED and closes the
// connection, as Kafka does; repeated failures from one address wait
// longer and longer before that answer (audit.go). A re-authenticated
// session keeps the connection's state (consumer groups, fetch sessions).
// An OAUTHBEARER token's groups claim belongs to the session: this
// connection, not every connection of the user, is a member of those
// groups, until a re-authentication's token names others.

func init() { regKey(36, 0, 2, (*Gateway).handleSaslAuthenticate) }

func newExchange(g *Gateway, mechanism string) (auth.Exchange, error) {
	return auth.NewExchangeFor(mechanism, g.opts.Auth.Mechanisms, auth.Verifiers{Credentials: g.opts.Auth.Credentials, Tokens: g.opts.Auth.Tokens})
}

func (g *Gateway) handleSaslAuthenticate(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := &rc.s.auth
	log := rc.s.conn.Log
	fail := func(err error) (kmsg.Response, error) {
		a.exchange = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: invalid credentials or malformed SASL message"
		if errors.Is(err, auth.ErrMalformed) {
			msg = "Authentication failed: " + err.Error()
		}
		resp.ErrorMessage = &msg
		rc.closeAfter = true
		log.Warn("sasl: authentication failed", "mechanism", a.mechanism, "client", rc.s.clientHost(), "err", err)
		g.audit(rc, "authenticate", "", "", err)
		if d := g.authFails.Fail(g.now(), rc.s.clientHost()); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		return resp, nil
	}
	if !g.opts.Auth.SASL {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		rc.closeAfter = true
		return resp, nil
	}
	if a.exchange == nil {
		return fail(errSASLSequence)
	}
	reply, done, err := a.exchange.Step(ctx, req.SASLAuthBytes)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return fail(err)
	}
	resp.SASLAuthBytes = reply
	if !done {
		return resp, nil
	}
	principal := "User:" + a.exchange.User()
	var tokenExpiry time.Time // an OAUTHBEARER token's exp ends the session too
	if e, ok := a.exchange.(auth.Expiring); ok {
		tokenExpiry = e.Expiry()
	}
	var groups []string // and its groups are the session's
	if gr, ok := a.exchange.(auth.Grouped); ok {
		groups = gr.Groups()
	}
	a.exchange = nil
	if a.authenticated && principal != a.principal {
		return fail(fmt.Errorf("%w: %s, then %s", errSASLIdentity, a.principal, principal))
	}
	first := !a.authenticated
	a.authenticated, a.principal, a.authMechanism, a.groups = true, principal, a.mechanism, groups
	a.expires = time.Time{}
	now := g.now()
	if d := g.opts.Auth.ReauthAfter; d > 0 {
		a.expires = now.Add(d)
	}
	if !tokenExpiry.IsZero() && (a.expires.IsZero() || tokenExpiry.Before(a.expires)) {
		a.expires = tokenExpiry
	}
	if !a.expires.IsZero() {
		resp.SessionLifetimeMillis = max(a.expires.Sub(now).Milliseconds(), 1)
	}
	if first {
		name, _ := strings.CutPrefix(principal, "User:")
		rc.s.conn.SetPrincipal(gateways.Principal{Mechanism: a.mechanism, Name: name})
		log.Debug("sasl: authenticated", "principal", principal, "mechanism", a.mechanism)
	}
	return resp, nil
}
