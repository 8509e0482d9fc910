package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// JWT validation for OAUTHBEARER and HTTP bearer tokens: a token is
// accepted when it is signed (RS256 or ES256, never "none") by a key of
// the configured JWKS, has not expired, and names the configured issuer
// and audience. Its principal is the "sub" claim, or another configured
// claim. Keys come from a JWKS file or URL; a token whose key id is not
// held makes the validator re-read the JWKS (at most once per
// jwksMinRefresh), so a rotated key needs no restart while a stream of
// forged key ids cannot make it fetch in a loop.

// JWTOptions configure a JWTValidator.
type JWTOptions struct {
	// JWKSFile or JWKSURL holds the signing keys (RFC 7517); one is
	// required.
	JWKSFile, JWKSURL string
	// Issuer, when set, must equal the token's "iss".
	Issuer string
	// Audience, when set, must be (one of) the token's "aud".
	Audience string
	// PrincipalClaim names the claim holding the user; "" is "sub".
	PrincipalClaim string
	// GroupsClaim names the claim listing the user's groups (Token.Groups);
	// "" reads none.
	GroupsClaim string
	// ClockSkew is allowed on exp and nbf; 0 is 30 seconds.
	ClockSkew time.Duration
	// HTTPClient fetches JWKSURL; nil is a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Token is what a validated bearer token proves, for the session it
// authenticates and for that session only: two connections of one user
// may hold tokens naming other groups.
type Token struct {
	// User is the principal's name, without the User: prefix.
	User string
	// Expires is when the token, and the session it authenticated, end.
	Expires time.Time
	// Groups are the Group:NAME principals its groups claim names
	// (JWTOptions.GroupsClaim), at most MaxTokenGroups; read-only.
	Groups []string
}

// TokenValidator checks a bearer token and returns what it proves.
type TokenValidator func(ctx context.Context, token string) (Token, error)

// JWTValidator validates JWTs against a JWKS. It is safe for concurrent
// use.
type JWTValidator struct {
	o  JWTOptions
	mu struct {
		sync.Mutex
		keys      map[string]crypto.PublicKey
		fetchedAt time.Time
	}
}

const (
	jwksMinRefresh = 30 * time.Second
	maxJWKSBytes   = 1 << 20
	maxTokenBytes  = 16 << 10
)

// NewJWTValidator loads the JWKS: a JWKS that does not load is an error
// now, not at the first client.
func NewJWTValidator(ctx context.Context, o JWTOptions) (*JWTValidator, error) {
	if (o.JWKSFile == "") == (o.JWKSURL == "") {
		return nil, fmt.Errorf("%w: JWT validation needs one of a JWKS file or URL", ErrInvalid)
	}
	if o.PrincipalClaim == "" {
		o.PrincipalClaim = "sub"
	}
	if o.ClockSkew == 0 {
		o.ClockSkew = 30 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	v := &JWTValidator{o: o}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.mu.keys, v.mu.fetchedAt = keys, o.Now()
	return v, nil
}

func (v *JWTValidator) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	var b []byte
	var err error
	if v.o.JWKSFile != "" {
		b, err = os.ReadFile(v.o.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
	} else {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, v.o.JWKSURL, nil)
		if rerr != nil {
			return nil, fmt.Errorf("%w: jwks url: %v", ErrInvalid, rerr)
		}
		resp, rerr := v.o.HTTPClient.Do(req)
		if rerr != nil {
			return nil, fmt.Errorf("jwks: %w", rerr)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("jwks: GET %s: %s", v.o.JWKSURL, resp.Status)
		}
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
	}
	return ParseJWKS(b)
}

// ParseJWKS reads the RSA and P-256 signing keys of a JWKS; keys of other
// types or uses are skipped, and a set with none is an error.
func ParseJWKS(b []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Alg, Crv string
			N, E, X, Y              string
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%w: jwks: %v", ErrInvalid, err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64Int(k.N)
			e, err2 := b64Int(k.E)
			if err1 != nil || err2 != nil || !e.IsInt64() || e.Int64() < 3 || n.BitLen() < 2048 {
				return nil, fmt.Errorf("%w: jwks: RSA key %q: bad n or e (2048 bits at least)", ErrInvalid, k.Kid)
			}
			keys[k.Kid] = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			if k.Crv != "P-256" {
				continue
			}
			x, err1 := base64.RawURLEncoding.DecodeString(k.X)
			y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
			if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
				return nil, fmt.Errorf("%w: jwks: EC key %q: bad x or y", ErrInvalid, k.Kid)
			}
			// ParseUncompressedPublicKey checks the point is on P-256.
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				return nil, fmt.Errorf("%w: jwks: EC key %q: %v", ErrInvalid, k.Kid, err)
			}
			keys[k.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: jwks holds no RSA or P-256 signing key", ErrInvalid)
	}
	return keys, nil
}

func b64Int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("bad base64url integer")
	}
	return new(big.Int).SetBytes(b), nil
}

// key finds the key of kid, re-reading the JWKS once when it is not held
// (a key rotation) and the last read is old enough.
func (v *JWTValidator) key(ctx context.Context, kid string) (crypto.PublicKey, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	pick := func() (crypto.PublicKey, bool) {
		if k, ok := v.mu.keys[kid]; ok {
			return k, true
		}
		if kid == "" && len(v.mu.keys) == 1 {
			for _, k := range v.mu.keys {
				return k, true
			}
		}
		return nil, false
	}
	if k, ok := pick(); ok {
		return k, true
	}
	if v.o.Now().Sub(v.mu.fetchedAt) < jwksMinRefresh {
		return nil, false
	}
	v.mu.fetchedAt = v.o.Now()
	if keys, err := v.fetch(ctx); err == nil {
		v.mu.keys = keys
	}
	return pick()
}

// Validate checks a JWT and returns its principal's user name, expiry
// and groups.
func (v *JWTValidator) Validate(ctx context.Context, token string) (Token, error) {
	bad := func(format string, args ...any) (Token, error) {
		return Token{}, fmt.Errorf("%w: token: "+format, append([]any{ErrAuthentication}, args...)...)
	}
	h, claims, signed, sig, err := ParseJWT(token)
	if err != nil {
		return Token{}, err
	}
	key, ok := v.key(ctx, h.Kid)
	if !ok {
		return bad("no key %q in the JWKS", h.Kid)
	}
	digest := sha256.Sum256([]byte(signed))
	switch k := key.(type) {
	case *rsa.PublicKey:
		if h.Alg != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) != nil {
			return bad("signature does not verify (alg %s)", h.Alg)
		}
	case *ecdsa.PublicKey:
		if h.Alg != "ES256" || len(sig) != 64 ||
			!ecdsa.Verify(k, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return bad("signature does not verify (alg %s)", h.Alg)
		}
	default:
		return bad("unsupported key")
	}
	now := v.o.Now()
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return bad("no exp claim")
	}
	if !now.Before(exp.Add(v.o.ClockSkew)) {
		return bad("expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Add(v.o.ClockSkew).Before(nbf) {
		return bad("not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	if v.o.Issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.o.Issuer {
			return bad("issuer %q, want %q", iss, v.o.Issuer)
		}
	}
	if v.o.Audience != "" && !hasAudience(claims["aud"], v.o.Audience) {
		return bad("audience %v does not include %q", claims["aud"], v.o.Audience)
	}
	user, _ := claims[v.o.PrincipalClaim].(string)
	if user == "" {
		return bad("no %q claim to name the principal", v.o.PrincipalClaim)
	}
	return Token{User: user, Expires: exp, Groups: claimGroups(claims, v.o.GroupsClaim)}, nil
}

// JWTHeader is the part of a JWT header validation reads.
type JWTHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// ParseJWT splits a compact JWS into its header, claims, the signed input
// and the signature, without verifying anything.
func ParseJWT(token string) (h JWTHeader, claims map[string]any, signed string, sig []byte, err error) {
	fail := func(what string) (JWTHeader, map[string]any, string, []byte, error) {
		return JWTHeader{}, nil, "", nil, fmt.Errorf("%w: token: %s", ErrMalformed, what)
	}
	if len(token) > maxTokenBytes {
		return fail("longer than 16 KiB")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("not a compact JWS (want header.payload.signature)")
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return fail("bad base64url")
	}
	if json.Unmarshal(hb, &h) != nil {
		return fail("header is not JSON")
	}
	if json.Unmarshal(pb, &claims) != nil || claims == nil {
		return fail("claims are not a JSON object")
	}
	if h.Alg == "" || strings.EqualFold(h.Alg, "none") {
		return fail(`unsigned ("alg": "none")`)
	}
	return h, claims, parts[0] + "." + parts[1], sig, nil
}

func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

func hasAudience(v any, want string) bool {
	switch a := v.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

// OAuthBearer is the SASL mechanism's name.
const OAuthBearer = "OAUTHBEARER"

// oauthServer is RFC 7628's OAUTHBEARER, server side, as Kafka frames it:
// one client message, gs2 header then key=value pairs separated by 0x01,
// one of them auth=Bearer <token>.
type oauthServer struct {
	validate TokenValidator
	token    Token
	done     bool
}

func (o *oauthServer) User() string { return o.token.User }

// Expiry is when the token ends the session.
func (o *oauthServer) Expiry() time.Time { return o.token.Expires }

// Groups are the token's Group:NAME principals.
func (o *oauthServer) Groups() []string { return o.token.Groups }

func (o *oauthServer) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if o.done {
		return nil, false, fmt.Errorf("%w: the OAUTHBEARER exchange is over", ErrMalformed)
	}
	o.done = true
	authz, token, err := ParseOAuthBearer(msg)
	if err != nil {
		return nil, false, err
	}
	tok, err := o.validate(ctx, token)
	if err != nil {
		return nil, false, err
	}
	if authz != "" && authz != tok.User {
		return nil, false, fmt.Errorf("%w: authorization id %q differs from the token's principal %q", ErrAuthentication, authz, tok.User)
	}
	o.token = tok
	return nil, true, nil
}

// ParseOAuthBearer reads an OAUTHBEARER client message: its
// authorization id (may be empty) and bearer token.
func ParseOAuthBearer(msg []byte) (authzid, token string, err error) {
	bad := func(what string) (string, string, error) {
		return "", "", fmt.Errorf("%w: OAUTHBEARER: %s", ErrMalformed, what)
	}
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasSuffix(rest, "\x01") {
		return bad("want gs2-header 0x01 key=value pairs 0x01 0x01")
	}
	f := strings.Split(gs2, ",")
	if len(f) != 3 || (f[0] != "n" && f[0] != "y") || f[2] != "" {
		return bad("gs2 header is not n,[a=authzid],")
	}
	if f[1] != "" {
		a, ok := strings.CutPrefix(f[1], "a=")
		if !ok {
			return bad("gs2 header's second field is not a=authzid")
		}
		if authzid, err = unescapeSaslName(a); err != nil {
			return "", "", err
		}
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "\x01"), "\x01") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return bad("a pair without =")
		}
		if k == "auth" {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				return bad(`auth is not "Bearer <token>"`)
			}
			token = tok
		}
	}
	if token == "" {
		return bad("no auth=Bearer pair")
	}
	return authzid, token, nil
}
