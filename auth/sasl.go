package auth

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"
)

// Exchange is one SASL authentication, server side. Step consumes the
// client's next message and returns the reply; done reports that the
// client is authenticated (as User). An error ends the exchange: the
// client is not authenticated.
type Exchange interface {
	Step(ctx context.Context, msg []byte) (reply []byte, done bool, err error)
	User() string
}

// Mechanisms lists the SASL mechanisms served, in preference order.
var Mechanisms = []string{ScramSHA256, ScramSHA512, Plain}

// NewExchange starts an exchange for mechanism, which must be one of
// enabled, checked against the users' SCRAM credentials.
func NewExchange(mechanism string, enabled []string, lookup CredentialLookup) (Exchange, error) {
	return NewExchangeFor(mechanism, enabled, Verifiers{Credentials: lookup})
}

// Verifiers are what exchanges check a client's proof against.
type Verifiers struct {
	// Credentials: SCRAM and PLAIN.
	Credentials CredentialLookup
	// Tokens: OAUTHBEARER; nil refuses it.
	Tokens TokenValidator
}

// Expiring is an Exchange whose proof ends by itself (an OAUTHBEARER
// token's exp): a session must end by then.
type Expiring interface{ Expiry() time.Time }

// Grouped is an Exchange whose proof names groups (an OAUTHBEARER token's
// groups claim): the session it authenticates acts as their member, as
// Request.Groups.
type Grouped interface{ Groups() []string }

// NewExchangeFor starts an exchange for mechanism, which must be one of
// enabled.
func NewExchangeFor(mechanism string, enabled []string, v Verifiers) (Exchange, error) {
	if !slices.Contains(enabled, mechanism) {
		return nil, fmt.Errorf("%w: %q (enabled: %v)", ErrUnsupportedMechanism, mechanism, enabled)
	}
	switch mechanism {
	case Plain:
		return &plainServer{lookup: v.Credentials}, nil
	case OAuthBearer:
		if v.Tokens == nil {
			return nil, fmt.Errorf("%w: OAUTHBEARER has no token validator (auth.oauth_jwks_file or oauth_jwks_url)", ErrUnsupportedMechanism)
		}
		return &oauthServer{validate: v.Tokens}, nil
	}
	return NewScramServer(mechanism, v.Credentials)
}

// plainServer is RFC 4616's PLAIN: one message,
// [authzid] NUL authcid NUL passwd. The password is checked against the
// user's SCRAM credential (SHA-256 first, else SHA-512), so PLAIN needs no
// store of its own and no password is kept.
type plainServer struct {
	lookup CredentialLookup
	user   string
	done   bool
}

func (p *plainServer) User() string { return p.user }

func (p *plainServer) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if p.done {
		return nil, false, fmt.Errorf("%w: the PLAIN exchange is over", ErrMalformed)
	}
	p.done = true
	authz, user, pass, err := ParsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	if authz != "" && authz != user {
		return nil, false, fmt.Errorf("%w: authorization id %q differs from the user %q", ErrAuthentication, authz, user)
	}
	if _, err := VerifyPassword(ctx, p.lookup, user, pass); err != nil {
		return nil, false, err
	}
	p.user = user
	return nil, true, nil
}

// VerifyPassword checks a user's password against the user's SCRAM
// credential (SHA-256 first, else SHA-512), so that PLAIN and HTTP basic
// authentication need no store of their own and no password is kept. It
// returns the credential it checked, whose StoredKey changes when the
// password does.
func VerifyPassword(ctx context.Context, lookup CredentialLookup, user, pass string) (ScramCredential, error) {
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		cred, ok, err := lookup(ctx, user, m)
		if err != nil {
			return ScramCredential{}, err
		}
		if ok {
			if !cred.VerifyPassword(m, pass) {
				break
			}
			return cred, nil
		}
	}
	return ScramCredential{}, fmt.Errorf("%w: invalid credentials for user %q", ErrAuthentication, user)
}

// ParsePlain splits a PLAIN message into its three fields.
func ParsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%w: PLAIN: want authzid NUL user NUL password, got %d fields", ErrMalformed, len(parts))
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", fmt.Errorf("%w: PLAIN: empty user or password", ErrMalformed)
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}
