package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
)

// AuthOptions configure authentication and authorization on the Kafka
// listener. The zero value is Kafka's PLAINTEXT listener without an
// authorizer: every connection is User:ANONYMOUS and every request is
// allowed.
type AuthOptions struct {
	// SASL makes the listener a SASL one (SASL_PLAINTEXT or SASL_SSL):
	// until a client authenticates, only ApiVersions, SaslHandshake and
	// SaslAuthenticate are served and any other request closes the
	// connection, as Kafka does.
	SASL bool
	// Mechanisms are the SASL mechanisms offered (auth.ScramSHA256, ...).
	Mechanisms []string
	// Credentials finds a user's SCRAM credential.
	Credentials auth.CredentialLookup
	// Tokens validates OAUTHBEARER tokens; nil refuses the mechanism.
	Tokens auth.TokenValidator
	// ReauthAfter is connections.max.reauth.ms (KIP-368): a session
	// expires this long after authenticating, and a client must
	// re-authenticate before then or be disconnected. 0: never.
	ReauthAfter time.Duration
	// Authorizer decides every request; nil allows all.
	Authorizer *auth.Authorizer
	// Security manages users and ACLs (DescribeUserScramCredentials,
	// AlterUserScramCredentials, CreateAcls, DescribeAcls, DeleteAcls);
	// nil answers those with an error.
	Security Security
	// Now is the clock for session expiry; nil is time.Now.
	Now func() time.Time
	// Principals names the principal of a TLS client's verified
	// certificate (gateways.Server.Principals); nil is Kafka's DEFAULT.
	Principals *auth.PrincipalMapper
}

// Errors of the SASL exchange. Each closes the connection.
var (
	errSASLRequired  = errors.New("request before SASL authentication on a SASL listener")
	errSASLExpired   = errors.New("SASL session expired (connections.max.reauth.ms) without re-authentication")
	errSASLSequence  = errors.New("SaslAuthenticate without a SaslHandshake")
	errSASLIdentity  = errors.New("re-authentication as another principal")
	errSASLMechanism = errors.New("re-authentication with another mechanism")
)

// connAuth is a connection's authentication state; the connection's read
// goroutine owns it.
type connAuth struct {
	// mechanism is the one chosen by the last SaslHandshake; exchange is
	// the SASL exchange in progress (nil between exchanges).
	mechanism string
	exchange  auth.Exchange
	// authenticated is set once the first exchange succeeded; principal
	// and authMechanism are what it proved; expires ends the session
	// (zero: never). groups are the Group:NAME principals the session's
	// OAUTHBEARER token named: this connection's, not the user's, and
	// replaced by each re-authentication's token.
	authenticated bool
	principal     string
	authMechanism string
	expires       time.Time
	groups        []string
}

func (g *Gateway) now() time.Time {
	if g.opts.Auth.Now != nil {
		return g.opts.Auth.Now()
	}
	return time.Now()
}

// saslKey reports whether key is part of the authentication exchange and
// so served before a client has authenticated.
func saslKey(key int16) bool { return key == 17 || key == 18 || key == 36 }

// checkAuthenticated lets a request through a SASL listener only once the
// connection is authenticated and its session has not expired.
func (s *session) checkAuthenticated(key int16) error {
	if !s.g.opts.Auth.SASL || saslKey(key) {
		return nil
	}
	a := &s.auth
	if !a.authenticated {
		return fmt.Errorf("%w: %w", gateways.ErrMalformedFrame, errSASLRequired)
	}
	if !a.expires.IsZero() && !s.g.now().Before(a.expires) {
		return errSASLExpired
	}
	return nil
}

// principal is who the connection acts for, as ACLs name it: SASL's
// principal wins over a TLS client certificate's, as in Kafka.
func (s *session) principal() string {
	if s.auth.authenticated {
		return s.auth.principal
	}
	if s.connPrincipal != "" {
		return s.connPrincipal
	}
	return "User:" + gateways.Anonymous.Name
}

// request is the authorizer's question for op on a resource, asked as
// this connection's session: its principal and its token's groups.
func (s *session) request(op, rt, name string) auth.Request {
	r := auth.Request{Principal: s.principal(), Host: s.clientHost(), Operation: op, ResourceType: rt, ResourceName: name}
	if s.auth.authenticated {
		r.Groups = s.auth.groups
	}
	return r
}

// clientHost is the client's IP address, as ACL hosts name it.
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

// serve runs a request's handler, behind the authorizer when one is on
// (authz.go).
func (g *Gateway) serve(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	if g.opts.Auth.Authorizer.Enabled() {
		return g.authorized(ctx, rc)
	}
	return apiKeys[rc.key].fn(g, ctx, rc)
}
