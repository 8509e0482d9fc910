package native

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// SASL on the native protocol, as on Kafka's: the Handshake names the
// mechanism (Kafka's SaslHandshake) and SaslAuthenticate frames (0x18)
// carry the exchange, one message each way, with the same server side
// (auth.NewExchange) and so the same users. On a SASL listener nothing but
// SaslAuthenticate is served until the exchange succeeds; a failure is
// answered SASL_AUTHENTICATION_FAILED, after a delay that grows with the
// address's recent failures, and closes the connection.

// AuthOptions make a native listener a SASL one (SASL_PLAINTEXT or
// SASL_SSL). The zero value is a listener without authentication, where
// every connection is the anonymous principal.
type AuthOptions struct {
	SASL bool
	// Mechanisms are the SASL mechanisms offered (auth.ScramSHA256, ...).
	Mechanisms []string
	// Credentials finds a user's SCRAM credential.
	Credentials auth.CredentialLookup
	// Tokens validates OAUTHBEARER tokens; nil refuses the mechanism.
	Tokens auth.TokenValidator
	// Authorizer decides every request by the ACLs (authz.go); nil, or
	// one that is off, allows all.
	Authorizer *auth.Authorizer
	// Now is the clock of the failure limits; nil is time.Now.
	Now func() time.Time
	// Principals names the principal of a TLS client's verified
	// certificate (gateways.Server.Principals); nil is Kafka's DEFAULT.
	// SASL on a SASL_SSL listener replaces it.
	Principals *auth.PrincipalMapper
}

// connSASL is a connection's authentication state, owned by its read
// goroutine.
type connSASL struct {
	mechanism     string
	exchange      auth.Exchange
	authenticated bool
	// expires is an OAUTHBEARER token's exp: the native protocol has no
	// re-authentication, so the connection ends with its token. groups
	// are the Group:NAME principals that token named: this connection's,
	// not the user's.
	expires time.Time
	groups  []string
}

func (g *Gateway) now() time.Time {
	if g.opts.Auth.Now != nil {
		return g.opts.Auth.Now()
	}
	return time.Now()
}

// checkSASL lets a request other than the handshake and SaslAuthenticate
// through a SASL listener only once the connection is authenticated.
func (s *session) checkSASL(corr uint32) (*gateways.Response, error) {
	a := &s.sasl
	if !s.g.opts.Auth.SASL || s.op == wire.OpHandshake || s.op == wire.OpSaslAuthenticate {
		return nil, nil
	}
	err := fmt.Errorf("%w: %v before SASL authentication", ErrSASLState, s.op)
	if a.authenticated {
		if a.expires.IsZero() || s.g.now().Before(a.expires) {
			return nil, nil
		}
		err = fmt.Errorf("%w: the OAUTHBEARER token expired at %s: reconnect with a fresh one", ErrSASLFailed, a.expires.UTC().Format(time.RFC3339))
	}
	resp := s.fail(s.op, corr, err, -1)
	resp.CloseAfter()
	return resp, fmt.Errorf("%w: %v", gateways.ErrMalformedFrame, err)
}

// handshakeMechanism checks the mechanism a Handshake names: on a SASL
// listener it must be one offered, elsewhere there must be none.
func (s *session) handshakeMechanism(m *wire.Handshake) error {
	o := s.g.opts.Auth
	switch {
	case len(m.Auth) > 0:
		return fmt.Errorf("%w: the handshake's auth bytes are reserved: SASL messages go in SaslAuthenticate", ErrBadRequest)
	case !o.SASL && m.AuthMechanism != "":
		return fmt.Errorf("%w: %q: this listener does not authenticate", ErrAuthUnsupported, m.AuthMechanism)
	case o.SASL && m.AuthMechanism == "":
		return fmt.Errorf("%w: this listener requires SASL authentication: name a mechanism (%v)", ErrSASLState, o.Mechanisms)
	case o.SASL && !slices.Contains(o.Mechanisms, m.AuthMechanism):
		return fmt.Errorf("%w: %q (offered: %v)", ErrAuthUnsupported, m.AuthMechanism, o.Mechanisms)
	}
	s.sasl.mechanism = m.AuthMechanism
	return nil
}

func (s *session) saslAuthenticate(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.SaslAuthenticate
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	o := s.g.opts.Auth
	a := &s.sasl
	if !o.SASL || a.mechanism == "" || a.authenticated {
		err := fmt.Errorf("%w: SaslAuthenticate without a pending SASL exchange", ErrSASLState)
		resp := s.fail(wire.OpSaslAuthenticate, corr, err, -1)
		resp.CloseAfter()
		return resp, nil
	}
	if a.exchange == nil {
		x, err := auth.NewExchangeFor(a.mechanism, o.Mechanisms, auth.Verifiers{Credentials: o.Credentials, Tokens: o.Tokens})
		if err != nil {
			return s.saslFailed(ctx, corr, err), nil
		}
		a.exchange = x
	}
	reply, done, err := a.exchange.Step(ctx, m.Auth)
	if err != nil {
		return s.saslFailed(ctx, corr, err), nil
	}
	if done {
		user := a.exchange.User()
		if e, ok := a.exchange.(auth.Expiring); ok {
			a.expires = e.Expiry()
		}
		if gr, ok := a.exchange.(auth.Grouped); ok {
			a.groups = gr.Groups()
		}
		a.authenticated, a.exchange = true, nil
		s.conn.SetPrincipal(gateways.Principal{Mechanism: a.mechanism, Name: user})
		s.authz.authenticated()
	}
	resp := wire.SaslAuthenticateResponse{Auth: reply}
	return s.respond(wire.OpSaslAuthenticate, ok(corr), resp.Append), nil
}

// saslFailed answers a failed exchange and closes the connection, after
// the delay the address has earned, and audits it.
func (s *session) saslFailed(ctx context.Context, corr uint32, err error) *gateways.Response {
	host := s.clientHost()
	s.g.auditFailure(s.sasl.mechanism, host, err)
	if d := s.g.authFails.Fail(s.g.now(), host); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	code := ErrSASLFailed
	if errors.Is(err, auth.ErrUnsupportedMechanism) {
		code = ErrAuthUnsupported
	}
	resp := s.fail(wire.OpSaslAuthenticate, corr, fmt.Errorf("%w: %v", code, err), -1)
	resp.CloseAfter()
	return resp
}

// auditFailure logs a failed authentication, rate-limited per client.
func (g *Gateway) auditFailure(mechanism, host string, err error) {
	ok, dropped := g.auditLimit.Allow(g.now(), "|"+host)
	if !ok {
		return
	}
	args := []any{"audit", true, "protocol", "native", "client", host, "mechanism", mechanism, "err", err}
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	g.log.Warn("authentication failed", args...)
}

// clientHost is the client's IP address.
func (s *session) clientHost() string {
	if s.conn == nil || s.conn.Remote == nil {
		return ""
	}
	if ta, ok := s.conn.Remote.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(s.conn.Remote.String())
	if err != nil {
		return s.conn.Remote.String()
	}
	return host
}
