package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

// Issuer is a throwaway OAuth token issuer: an RSA key (kid rsa-1,
// RS256) and a P-256 key (kid ec-1, ES256) that sign JWTs, and their
// JWKS.
type Issuer struct {
	Name, Audience string
	rsaKey         *rsa.PrivateKey
	ecKey          *ecdsa.PrivateKey
	rsaKid, ecKid  string
}

// NewIssuer makes keys for an issuer whose tokens carry iss and aud.
func NewIssuer(iss, aud string) (*Issuer, error) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Issuer{Name: iss, Audience: aud, rsaKey: rk, ecKey: ek, rsaKid: "rsa-1", ecKid: "ec-1"}, nil
}

// RenameKeys prefixes the key ids, as a key rotation does.
func (i *Issuer) RenameKeys(prefix string) { i.rsaKid, i.ecKid = prefix+i.rsaKid, prefix+i.ecKid }

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWKS is the issuer's public keys as a JWK set.
func (i *Issuer) JWKS() []byte {
	pt, _ := i.ecKey.PublicKey.Bytes() // 0x04 || X || Y
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": i.rsaKid, "use": "sig", "alg": "RS256", "n": b64(i.rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(i.rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": i.ecKid, "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])},
	}}
	b, _ := json.Marshal(set)
	return b
}

// JWKSFile writes the JWK set to a file in t's temporary directory, as a
// validator's auth.oauth_jwks_file names it, and returns its path.
func (i *Issuer) JWKSFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, i.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Sign signs claims with the key of alg (RS256 or ES256), adding the
// issuer's iss and aud unless claims set them.
func (i *Issuer) Sign(t testing.TB, alg string, claims map[string]any) string {
	kid := i.rsaKid
	if alg == "ES256" {
		kid = i.ecKid
	}
	return i.SignWithKid(t, alg, kid, claims)
}

// SignWithKid is Sign with the header's kid given (which may name the
// other key, to forge an algorithm swap).
func (i *Issuer) SignWithKid(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": i.Name, "aud": i.Audience}
	for k, v := range claims {
		c[k] = v
	}
	hb, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT", "kid": kid})
	cb, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	signed := b64(hb) + "." + b64(cb)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, i.rsaKey, crypto.SHA256, d[:])
	case "ES256":
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, i.ecKey, d[:])
		if err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
		}
	default:
		t.Fatalf("alg %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

// Unsigned is an "alg": "none" token of claims.
func Unsigned(claims map[string]any) string {
	hb, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	cb, _ := json.Marshal(claims)
	return b64(hb) + "." + b64(cb) + "."
}
