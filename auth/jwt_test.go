package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

func newIssuer(t *testing.T) *authtest.Issuer {
	t.Helper()
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func jwksFile(t *testing.T, iss *authtest.Issuer) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJWTValidator: RS256 and ES256 tokens signed by a JWKS key, with
// the issuer and audience configured and not expired, name their
// principal; every other token is refused with ErrAuthentication (or
// ErrMalformed for one that does not parse).
func TestJWTValidator(t *testing.T) {
	iss := newIssuer(t)
	ctx := context.Background()
	v, err := auth.NewJWTValidator(ctx, auth.JWTOptions{JWKSFile: jwksFile(t, iss), Issuer: "https://issuer.test", Audience: "aerostream", GroupsClaim: "groups"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, alg := range []string{"RS256", "ES256"} {
		tok := iss.Sign(t, alg, map[string]any{"sub": "alice", "exp": now.Add(time.Hour).Unix(), "groups": []any{"ops", "dev"}})
		got, err := v.Validate(ctx, tok)
		if err != nil || got.User != "alice" || got.Expires.Unix() != now.Add(time.Hour).Unix() || strings.Join(got.Groups, ",") != "Group:ops,Group:dev" {
			t.Errorf("%s: %+v %v", alg, got, err)
		}
	}
	other := newIssuer(t)
	for name, tc := range map[string]struct {
		tok  string
		want error
	}{
		"expired":        {iss.Sign(t, "RS256", map[string]any{"sub": "a", "exp": now.Add(-time.Hour).Unix()}), auth.ErrAuthentication},
		"no exp":         {iss.Sign(t, "RS256", map[string]any{"sub": "a"}), auth.ErrAuthentication},
		"wrong audience": {iss.Sign(t, "RS256", map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix(), "aud": "other"}), auth.ErrAuthentication},
		"wrong issuer":   {iss.Sign(t, "RS256", map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix(), "iss": "https://evil"}), auth.ErrAuthentication},
		"not yet valid":  {iss.Sign(t, "ES256", map[string]any{"sub": "a", "exp": now.Add(2 * time.Hour).Unix(), "nbf": now.Add(time.Hour).Unix()}), auth.ErrAuthentication},
		"no subject":     {iss.Sign(t, "ES256", map[string]any{"exp": now.Add(time.Hour).Unix()}), auth.ErrAuthentication},
		"forged":         {other.Sign(t, "RS256", map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix()}), auth.ErrAuthentication},
		"alg swapped":    {iss.SignWithKid(t, "ES256", "rsa-1", map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix()}), auth.ErrAuthentication},
		"unsigned":       {authtest.Unsigned(map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix()}), auth.ErrMalformed},
		"garbage":        {"a.b", auth.ErrMalformed},
	} {
		if _, err := v.Validate(ctx, tc.tok); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

// TestJWTValidatorURLRotation: keys come from a JWKS URL; a token with a
// key id not held makes the validator fetch the set again (a rotation),
// at most once per interval.
func TestJWTValidatorURLRotation(t *testing.T) {
	first, second := newIssuer(t), newIssuer(t)
	second.RenameKeys("rotated-")
	var serving atomic.Pointer[authtest.Issuer]
	serving.Store(first)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(serving.Load().JWKS())
	}))
	defer srv.Close()
	now := time.Now()
	clock := func() time.Time { return now }
	ctx := context.Background()
	v, err := auth.NewJWTValidator(ctx, auth.JWTOptions{JWKSURL: srv.URL, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"sub": "bob", "exp": now.Add(time.Hour).Unix()}
	if _, err := v.Validate(ctx, first.Sign(t, "RS256", claims)); err != nil {
		t.Fatal(err)
	}
	serving.Store(second)
	tok := second.Sign(t, "ES256", claims)
	if _, err := v.Validate(ctx, tok); err == nil {
		t.Fatal("a key was fetched again within the interval")
	}
	now = now.Add(time.Minute)
	if got, err := v.Validate(ctx, tok); err != nil || got.User != "bob" {
		t.Fatalf("after the rotation: %q %v", got.User, err)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2", n)
	}
}

func TestParseOAuthBearer(t *testing.T) {
	authz, tok, err := auth.ParseOAuthBearer([]byte("n,a=alice,\x01host=h\x01auth=Bearer abc.def.ghi\x01\x01"))
	if err != nil || authz != "alice" || tok != "abc.def.ghi" {
		t.Errorf("got %q %q %v", authz, tok, err)
	}
	for _, bad := range []string{"", "n,,", "n,,\x01auth=Basic x\x01\x01", "n,,\x01host=h\x01\x01", "p=x,,\x01auth=Bearer t\x01\x01", "n,,\x01auth=Bearer t"} {
		if _, _, err := auth.ParseOAuthBearer([]byte(bad)); !errors.Is(err, auth.ErrMalformed) {
			t.Errorf("%q: err = %v, want ErrMalformed", bad, err)
		}
	}
}

// TestOAuthBearerExchange: the exchange authenticates a valid token's
// principal and reports its expiry; an authorization id other than the
// principal is refused.
func TestOAuthBearerExchange(t *testing.T) {
	iss := newIssuer(t)
	ctx := context.Background()
	v, err := auth.NewJWTValidator(ctx, auth.JWTOptions{JWKSFile: jwksFile(t, iss)})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	tok := iss.Sign(t, "RS256", map[string]any{"sub": "carol", "exp": exp})
	enabled := []string{auth.OAuthBearer}
	x, err := auth.NewExchangeFor(auth.OAuthBearer, enabled, auth.Verifiers{Tokens: v.Validate})
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := x.Step(ctx, []byte("n,,\x01auth=Bearer "+tok+"\x01\x01")); !done || err != nil || x.User() != "carol" {
		t.Fatalf("done=%v err=%v user=%q", done, err, x.User())
	}
	if e, ok := x.(auth.Expiring); !ok || e.Expiry().Unix() != exp {
		t.Errorf("expiry not reported")
	}
	x, _ = auth.NewExchangeFor(auth.OAuthBearer, enabled, auth.Verifiers{Tokens: v.Validate})
	if _, _, err := x.Step(ctx, []byte("n,a=mallory,\x01auth=Bearer "+tok+"\x01\x01")); !errors.Is(err, auth.ErrAuthentication) {
		t.Errorf("another authzid: %v", err)
	}
	if _, err := auth.NewExchangeFor(auth.OAuthBearer, enabled, auth.Verifiers{}); !errors.Is(err, auth.ErrUnsupportedMechanism) {
		t.Errorf("no validator: %v", err)
	}
	if !strings.Contains(string(iss.JWKS()), `"kty":"EC"`) {
		t.Error("the test issuer has no EC key")
	}
}

// FuzzOAuthBearer: arbitrary OAUTHBEARER messages and tokens never panic
// and never authenticate.
func FuzzOAuthBearer(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln\x01\x01"))
	f.Add([]byte("n,a=x,\x01auth=Bearer a.b.c\x01host=h\x01\x01"))
	f.Add([]byte("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0."))
	iss, err := authtest.NewIssuer("i", "a")
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	p := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(p, iss.JWKS(), 0o600); err != nil {
		f.Fatal(err)
	}
	v, err := auth.NewJWTValidator(context.Background(), auth.JWTOptions{JWKSFile: p})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, _, _, _, _ = auth.ParseJWT(string(msg))
		if _, err := v.Validate(context.Background(), string(msg)); err == nil {
			t.Fatalf("fuzz input validated: %q", msg)
		}
		x, _ := auth.NewExchangeFor(auth.OAuthBearer, []string{auth.OAuthBearer}, auth.Verifiers{Tokens: v.Validate})
		if _, done, err := x.Step(context.Background(), msg); done || err == nil {
			t.Fatalf("fuzz input authenticated: %q", msg)
		}
	})
}
