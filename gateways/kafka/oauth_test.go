package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

type oauthEnv struct {
	*secEnv
	iss *authtest.Issuer
}

// newOAuthEnv is newSecEnv with OAUTHBEARER offered too, validating JWTs
// of a test issuer (its JWKS in a file) on the env's clock.
func newOAuthEnv(t *testing.T) *oauthEnv {
	t.Helper()
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	p := iss.JWKSFile(t)
	z := auth.NewAuthorizer(true, []string{"User:admin"})
	sec := newMemSecurity(z)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	v, err := auth.NewJWTValidator(context.Background(), auth.JWTOptions{JWKSFile: p, Issuer: iss.Name, Audience: iss.Audience,
		GroupsClaim: "groups", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(o *Options) {
		o.Auth = AuthOptions{SASL: true, Mechanisms: append(auth.Mechanisms, auth.OAuthBearer), Credentials: sec.lookup,
			Tokens: v.Validate, Authorizer: z, Security: sec, Now: clock.Now}
	})
	return &oauthEnv{secEnv: &secEnv{testEnv: e, sec: sec, clock: clock}, iss: iss}
}

func (e *oauthEnv) token(t *testing.T, alg, sub string, exp time.Duration, extra map[string]any) string {
	c := map[string]any{"sub": sub, "exp": e.clock.Now().Add(exp).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return e.iss.Sign(t, alg, c)
}

// TestOAuthBearerWithFranzGo: franz-go's OAUTHBEARER mechanism
// authenticates with RS256 and ES256 JWTs, as the token's subject (ACLs
// apply to it); expired, forged and wrong-audience tokens are
// SASL_AUTHENTICATION_FAILED.
func TestOAuthBearerWithFranzGo(t *testing.T) {
	e := newOAuthEnv(t)
	ctx := testCtx(t)
	for _, alg := range []string{"RS256", "ES256"} {
		cl := newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: e.token(t, alg, "admin", time.Hour, nil)}.AsMechanism()))
		if err := cl.Ping(ctx); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
	// alice, by her token, has no ACL: her produce is refused as hers.
	alice := newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: e.token(t, "RS256", "alice", time.Hour, nil)}.AsMechanism()),
		kgo.RecordRetries(1), kgo.AllowAutoTopicCreation())
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	forger, err := authtest.NewIssuer(e.iss.Name, e.iss.Audience)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"expired":        e.token(t, "RS256", "admin", -time.Hour, nil),
		"wrong audience": e.token(t, "ES256", "admin", time.Hour, map[string]any{"aud": "someone-else"}),
		"forged":         forger.Sign(t, "RS256", map[string]any{"sub": "admin", "exp": e.clock.Now().Add(time.Hour).Unix()}),
	} {
		cl := newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
		if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s token: err = %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
}

// TestOAuthGroupsPerConnection: two franz-go clients of one user whose
// tokens name different groups get each its own token's decisions,
// whichever authenticated last: a token's groups are its connection's,
// not the user's.
func TestOAuthGroupsPerConnection(t *testing.T) {
	e := newOAuthEnv(t)
	ctx := testCtx(t)
	admin := newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: e.token(t, "RS256", "admin", time.Hour, nil)}.AsMechanism()))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("Group:ops").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	alice := func(groups ...string) *kgo.Client {
		tok := e.token(t, "ES256", "alice", time.Hour, map[string]any{"groups": groups})
		return newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()), kgo.RecordRetries(1),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	produce := func(cl *kgo.Client) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr()
	}
	ops := alice("ops")
	if err := produce(ops); err != nil {
		t.Fatalf("alice with ops produces: %v", err)
	}
	dev := alice("dev") // authenticates after ops
	if err := produce(dev); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice with dev produces: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(ops); err != nil {
		t.Errorf("alice with ops, after a dev token authenticated: %v", err)
	}
	ops2 := alice("ops") // and ops last again
	if err := produce(ops2); err != nil {
		t.Errorf("alice's second ops client: %v", err)
	}
	if err := produce(dev); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice with dev, after an ops token authenticated: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestOAuthReauthReplacesGroups: a connection that re-authenticates
// (KIP-368) with a token naming other groups acts with those from then
// on: narrowed, it loses what the wider token's groups allowed, and gets
// it back with a token naming them again.
func TestOAuthReauthReplacesGroups(t *testing.T) {
	e := newOAuthEnv(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, e.addr, kgo.SASL(oauth.Auth{Token: e.token(t, "RS256", "admin", time.Hour, nil)}.AsMechanism())))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("Group:ops").Topics("orders").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	rc := dialSASL(t, e.addr)
	authenticate := func(groups ...string) {
		t.Helper()
		bearerLogin(t, rc, e.token(t, "ES256", "alice", time.Hour, map[string]any{"groups": groups}))
	}
	describe := func() int16 {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrMetadataResponse()
		if err := rc.do(req, resp); err != nil || len(resp.Topics) != 1 {
			t.Fatalf("metadata: %v %+v", err, resp.Topics)
		}
		return resp.Topics[0].ErrorCode
	}
	authenticate("ops", "dev")
	if code := describe(); code != 0 {
		t.Fatalf("with ops and dev: code %d, want 0", code)
	}
	authenticate("dev")
	if code := describe(); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("re-authenticated with dev only: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	authenticate("ops")
	if code := describe(); code != 0 {
		t.Errorf("re-authenticated with ops again: code %d, want 0", code)
	}
}

// TestOAuthBearerSessionLifetime: the session ends when the token does:
// SaslAuthenticate answers the time left until its exp.
func TestOAuthBearerSessionLifetime(t *testing.T) {
	e := newOAuthEnv(t)
	rc := dialSASL(t, e.addr)
	resp := bearerLogin(t, rc, e.token(t, "ES256", "admin", 10*time.Minute, nil))
	if resp.SessionLifetimeMillis != (10 * time.Minute).Milliseconds() {
		t.Errorf("session lifetime %d ms, want the token's 600000", resp.SessionLifetimeMillis)
	}
}

// bearerLogin runs an OAUTHBEARER SaslHandshake and SaslAuthenticate with
// token on rc, failing the test unless both succeed.
func bearerLogin(t *testing.T, rc *saslConn, token string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.OAuthBearer
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	if err := rc.do(hs, hsr); err != nil || hsr.ErrorCode != 0 {
		t.Fatalf("handshake: %v %d", err, hsr.ErrorCode)
	}
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.Version = 2
	ar.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if err := rc.do(ar, resp); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("authenticate: %v %d", err, resp.ErrorCode)
	}
	return resp
}
