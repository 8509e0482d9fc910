package native_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// scramUsers is an in-memory SCRAM credential store.
type scramUsers struct {
	mu sync.Mutex
	m  map[[2]string]auth.ScramCredential
}

func newScramUsers(t *testing.T, users map[string]string) *scramUsers {
	t.Helper()
	u := &scramUsers{m: map[[2]string]auth.ScramCredential{}}
	for name, pass := range users {
		for _, mech := range []string{auth.ScramSHA256, auth.ScramSHA512} {
			c, err := auth.NewScramCredential(mech, pass, auth.MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			u.m[[2]string{name, mech}] = c
		}
	}
	return u
}

func (u *scramUsers) lookup(_ context.Context, user, mech string) (auth.ScramCredential, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.m[[2]string{user, mech}]
	return c, ok, nil
}

func saslOpts(u *scramUsers) func(*native.Options) {
	return func(o *native.Options) {
		o.Auth = native.AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: u.lookup}
	}
}

func saslCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSASLWithSDK: the Go SDK authenticates with SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN (franz-go's mechanisms) and then produces and
// reads; a wrong password is SASL_AUTHENTICATION_FAILED, and a client
// that names no mechanism, or one not offered, is refused.
func TestSASLWithSDK(t *testing.T) {
	e := newEnv(t, saslOpts(newScramUsers(t, map[string]string{"alice": "alice-secret"})))
	ctx := saslCtx(t)
	for _, m := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
	} {
		t.Run(m.Name(), func(t *testing.T) {
			cl, err := client.Dial(ctx, e.addr, client.Options{SASL: m})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			topic := "t-" + m.Name()
			if _, err := cl.CreateTopic(ctx, topic, 1, 1, nil); err != nil {
				t.Fatal(err)
			}
			p := client.NewProducer(cl, client.ProducerOptions{})
			defer p.Close(ctx)
			if err := p.ProduceSync(ctx, &client.Record{Topic: topic, Value: []byte("v")}); err != nil {
				t.Fatalf("produce after %s: %v", m.Name(), err)
			}
		})
	}

	_, err := client.Dial(ctx, e.addr, client.Options{SASL: scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()})
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	_, err = client.Dial(ctx, e.addr, client.Options{SASL: plain.Auth{User: "mallory", Pass: "x"}.AsMechanism()})
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("unknown user: err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	_, err = client.Dial(ctx, e.addr, client.Options{})
	if !errors.Is(err, kerr.IllegalSaslState) {
		t.Errorf("no mechanism on a SASL listener: err = %v, want ILLEGAL_SASL_STATE", err)
	}
	// The listener carries on for good clients.
	cl, err := client.Dial(ctx, e.addr, client.Options{SASL: scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()})
	if err != nil {
		t.Fatalf("after the failures: %v", err)
	}
	cl.Close()
}

// TestSASLRequestBeforeAuthentication: on a SASL listener, a request
// between the handshake and a finished exchange is ILLEGAL_SASL_STATE and
// closes the connection; a mechanism not offered is refused at the
// handshake.
func TestSASLRequestBeforeAuthentication(t *testing.T) {
	e := newEnv(t, saslOpts(newScramUsers(t, map[string]string{"alice": "pw"})))
	frame := func(op wire.Opcode, corr uint32, fill func([]byte) []byte) []byte {
		b := wire.AppendHeader(nil, op, 0)
		b = wire.AppendU32(b, corr)
		b = fill(b)
		wire.PutLength(b)
		return b
	}
	hs := func(mech string) []byte {
		return frame(wire.OpHandshake, 1, (&wire.Handshake{Version: 1, AuthMechanism: mech}).Append)
	}
	for _, tc := range []struct {
		name   string
		frames []byte
		op     wire.Opcode
		code   int16
	}{
		{"lookup before auth", append(hs(auth.ScramSHA256), frame(wire.OpLookup, 2, (&wire.Lookup{Names: []string{"x"}}).Append)...), wire.OpLookup, kerr.IllegalSaslState.Code},
		{"mechanism not offered", hs("GSSAPI"), wire.OpHandshake, kerr.UnsupportedSaslMechanism.Code},
		{"malformed SCRAM", append(hs(auth.ScramSHA256), frame(wire.OpSaslAuthenticate, 2, (&wire.SaslAuthenticate{Auth: []byte("not scram")}).Append)...), wire.OpSaslAuthenticate, kerr.SaslAuthenticationFailed.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(tc.frames); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
			all, err := io.ReadAll(nc) // until the gateway closes
			if err != nil {
				t.Fatal(err)
			}
			var last wire.Head
			var lastOp wire.Opcode
			for len(all) > 0 {
				op, payload, rest, err := wire.SplitFrame(all, 4<<20)
				if err != nil {
					t.Fatal(err)
				}
				r := wire.NewReader(payload)
				last, lastOp, all = wire.ReadHead(&r), op, rest
			}
			if lastOp != tc.op || last.Code != tc.code {
				t.Errorf("last answer %v code %d (%s), want %v code %d", lastOp, last.Code, last.Message, tc.op, tc.code)
			}
		})
	}
}

// TestSASLOverTLS: SASL_SSL: the SDK authenticates with SCRAM over a TLS
// connection verified against the test CA.
func TestSASLOverTLS(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, func(ln net.Listener) net.Listener { return tls.NewListener(ln, tc) },
		saslOpts(newScramUsers(t, map[string]string{"alice": "pw"})))
	ctx := saslCtx(t)
	cl, err := client.Dial(ctx, e.addr, client.Options{TLS: &tls.Config{RootCAs: pki.Pool()},
		SASL: scram.Auth{User: "alice", Pass: "pw"}.AsSha512Mechanism()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.ListTopics(ctx); err != nil {
		t.Errorf("list topics over SASL_SSL: %v", err)
	}
	// Plaintext on the TLS port does not get in.
	if _, err := client.Dial(ctx, e.addr, client.Options{SASL: scram.Auth{User: "alice", Pass: "pw"}.AsSha512Mechanism()}); err == nil {
		t.Error("a plaintext client got through a TLS listener")
	}
}

// TestOAuthBearerWithSDK: the SDK authenticates with franz-go's
// OAUTHBEARER mechanism and a JWT; once the token has expired the
// connection's next request is refused (the native protocol has no
// re-authentication), and an expired token does not get in at all.
func TestOAuthBearerWithSDK(t *testing.T) {
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	p := iss.JWKSFile(t)
	var now atomic.Int64
	now.Store(time.Now().Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	v, err := auth.NewJWTValidator(context.Background(), auth.JWTOptions{JWKSFile: p, Issuer: iss.Name, Audience: iss.Audience, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *native.Options) {
		o.Auth = native.AuthOptions{SASL: true, Mechanisms: []string{auth.OAuthBearer}, Tokens: v.Validate, Now: clock}
	})
	ctx := saslCtx(t)
	tok := iss.Sign(t, "ES256", map[string]any{"sub": "dave", "exp": clock().Add(10 * time.Minute).Unix()})
	cl, err := client.Dial(ctx, e.addr, client.Options{SASL: oauth.Auth{Token: tok}.AsMechanism()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.ListTopics(ctx); err != nil {
		t.Fatalf("with a valid token: %v", err)
	}
	now.Add(int64((11 * time.Minute).Seconds()))
	if _, err := cl.ListTopics(ctx); err == nil {
		t.Error("a request after the token expired was served")
	}
	if _, err := client.Dial(ctx, e.addr, client.Options{SASL: oauth.Auth{Token: tok}.AsMechanism()}); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("an expired token: err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestOAuthGroupsPerConnection: two connections of one user whose
// OAUTHBEARER tokens name different groups get each its own token's
// decisions, whichever authenticated last: the groups are the
// connection's, not the user's.
func TestOAuthGroupsPerConnection(t *testing.T) {
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	p := iss.JWKSFile(t)
	v, err := auth.NewJWTValidator(context.Background(), auth.JWTOptions{JWKSFile: p, Issuer: iss.Name, Audience: iss.Audience, GroupsClaim: "groups"})
	if err != nil {
		t.Fatal(err)
	}
	z := auth.NewAuthorizer(true, []string{"User:admin"})
	z.Set(1, allow("Group:ops", auth.ResourceTopic, auth.PatternLiteral, "orders", auth.OpWrite))
	e := newEnv(t, func(o *native.Options) {
		o.Auth = native.AuthOptions{SASL: true, Mechanisms: []string{auth.OAuthBearer}, Tokens: v.Validate}
	}, authzOpts(z, &logBuf{}))
	ctx := saslCtx(t)
	dial := func(sub string, groups ...string) *client.Client {
		tok := iss.Sign(t, "RS256", map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix(), "groups": groups})
		cl, err := client.Dial(ctx, e.addr, client.Options{SASL: oauth.Auth{Token: tok}.AsMechanism()})
		if err != nil {
			t.Fatalf("%s %v dials: %v", sub, groups, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	if _, err := dial("admin").CreateTopic(ctx, "orders", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	produce := func(cl *client.Client) error {
		pr := client.NewProducer(cl, client.ProducerOptions{NotIdempotent: true})
		defer pr.Close(ctx)
		return pr.ProduceSync(ctx, &client.Record{Topic: "orders", Value: []byte("v")})
	}
	ops := dial("alice", "ops")
	if err := produce(ops); err != nil {
		t.Fatalf("alice with ops produces: %v", err)
	}
	dev := dial("alice", "dev") // authenticates after ops
	if err := produce(dev); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice with dev produces: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(ops); err != nil {
		t.Errorf("alice with ops, after a dev token authenticated: %v", err)
	}
	ops2 := dial("alice", "ops") // and ops last again
	if err := produce(dev); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice with dev, after an ops token authenticated: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(ops2); err != nil {
		t.Errorf("alice's second ops connection: %v", err)
	}
}
