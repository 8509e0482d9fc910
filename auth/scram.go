package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM mechanism names, as SASL and Kafka spell them.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	Plain       = "PLAIN"
)

// Iteration bounds for SCRAM credentials: Kafka's (4096 is RFC 7677's
// minimum, 16384 the most Kafka accepts).
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 8192
)

// ScramCredential is what is stored for one user and one SCRAM mechanism
// (RFC 5802 section 3): never the password, only the salt, the iteration
// count and two keys derived from the salted password, from which the
// password cannot be recovered. StoredKey verifies a client's proof;
// ServerKey signs the server's final message.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// scramHash returns the hash of a SCRAM mechanism.
func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w: %q is not a SCRAM mechanism", ErrUnsupportedMechanism, mechanism)
}

// IsScram reports whether mechanism is a SCRAM mechanism served here.
func IsScram(mechanism string) bool {
	_, err := scramHash(mechanism)
	return err == nil
}

// NewScramCredential derives a credential for password with a fresh
// random salt.
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, err
	}
	return DeriveScramCredential(mechanism, password, salt, iterations)
}

// DeriveScramCredential derives the credential for password and salt.
func DeriveScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return ScramCredential{}, fmt.Errorf("%w: %d iterations, want %d to %d", ErrInvalid, iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 {
		return ScramCredential{}, fmt.Errorf("%w: empty salt", ErrInvalid)
	}
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	clientKey := hmacSum(h, salted, "Client Key")
	return ScramCredential{
		Salt:       bytes.Clone(salt),
		Iterations: iterations,
		StoredKey:  hashSum(h, clientKey),
		ServerKey:  hmacSum(h, salted, "Server Key"),
	}, nil
}

// Check validates a stored credential's shape for mechanism.
func (c ScramCredential) Check(mechanism string) error {
	h, err := scramHash(mechanism)
	if err != nil {
		return err
	}
	n := h().Size()
	switch {
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Errorf("%w: %d iterations, want %d to %d", ErrInvalid, c.Iterations, MinIterations, MaxIterations)
	case len(c.Salt) == 0:
		return fmt.Errorf("%w: empty salt", ErrInvalid)
	case len(c.StoredKey) != n || len(c.ServerKey) != n:
		return fmt.Errorf("%w: keys of %d and %d bytes, %s needs %d", ErrInvalid, len(c.StoredKey), len(c.ServerKey), mechanism, n)
	}
	return nil
}

// VerifyPassword reports whether password is the one c was derived from.
func (c ScramCredential) VerifyPassword(mechanism, password string) bool {
	d, err := DeriveScramCredential(mechanism, password, c.Salt, c.Iterations)
	return err == nil && subtle.ConstantTimeCompare(d.StoredKey, c.StoredKey) == 1
}

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func hashSum(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// CredentialLookup finds a user's credential for a SCRAM mechanism; ok is
// false for an unknown user or a user without one for that mechanism.
type CredentialLookup func(ctx context.Context, user, mechanism string) (cred ScramCredential, ok bool, err error)

// scramServer is one SCRAM exchange, server side: client-first, then
// client-final.
type scramServer struct {
	mechanism string
	h         func() hash.Hash
	lookup    CredentialLookup
	nonce     func() string

	step        int
	user        string
	cred        ScramCredential
	known       bool
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	fullNonce   string
}

// NewScramServer starts a server exchange for mechanism.
func NewScramServer(mechanism string, lookup CredentialLookup) (Exchange, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return &scramServer{mechanism: mechanism, h: h, lookup: lookup, nonce: randomNonce}, nil
}

func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// User implements Exchange.
func (s *scramServer) User() string { return s.user }

// Step implements Exchange.
func (s *scramServer) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		s.step++
		return s.first(ctx, msg)
	case 1:
		s.step++
		return s.final(msg)
	}
	return nil, false, fmt.Errorf("%w: the SCRAM exchange is over", ErrMalformed)
}

func (s *scramServer) first(ctx context.Context, msg []byte) ([]byte, bool, error) {
	cf, err := ParseScramClientFirst(string(msg))
	if err != nil {
		return nil, false, err
	}
	if cf.Extensions["tokenauth"] == "true" {
		return nil, false, fmt.Errorf("%w: delegation tokens are not supported", ErrAuthentication)
	}
	s.user, s.gs2Header, s.clientFirst = cf.User, cf.GS2Header, cf.Bare
	cred, ok, err := s.lookup(ctx, cf.User, s.mechanism)
	if err != nil {
		return nil, false, err
	}
	if ok && cred.Check(s.mechanism) == nil {
		s.cred, s.known = cred, true
	} else {
		// Answer an unknown user as a known one, with a salt that stays
		// the same for that name, so the first message does not tell
		// which users exist; the proof then fails.
		s.cred = ScramCredential{Salt: hmacSum(s.h, []byte("aerostream-unknown-user"), cf.User)[:16], Iterations: DefaultIterations}
	}
	s.fullNonce = cf.Nonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) final(msg []byte) ([]byte, bool, error) {
	cf, err := ParseScramClientFinal(string(msg))
	if err != nil {
		return nil, false, err
	}
	if cf.ChannelBinding != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, false, fmt.Errorf("%w: channel binding does not match the gs2 header", ErrAuthentication)
	}
	// librdkafka echoes its own nonce in front of the server's (the whole
	// nonce): Kafka accepts any final nonce that ends with the server's,
	// and so must we. The proof covers what was sent either way.
	if !strings.HasSuffix(cf.Nonce, s.fullNonce) {
		return nil, false, fmt.Errorf("%w: the final nonce does not end with the server's", ErrAuthentication)
	}
	if !s.known {
		return nil, false, fmt.Errorf("%w: invalid credentials for user %q", ErrAuthentication, s.user)
	}
	authMessage := s.clientFirst + "," + s.serverFirst + "," + cf.WithoutProof
	sig := hmacSum(s.h, s.cred.StoredKey, authMessage)
	if len(cf.Proof) != len(sig) {
		return nil, false, fmt.Errorf("%w: invalid credentials for user %q", ErrAuthentication, s.user)
	}
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = cf.Proof[i] ^ sig[i]
	}
	if subtle.ConstantTimeCompare(hashSum(s.h, clientKey), s.cred.StoredKey) != 1 {
		return nil, false, fmt.Errorf("%w: invalid credentials for user %q", ErrAuthentication, s.user)
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(s.h, s.cred.ServerKey, authMessage))), true, nil
}

// ScramClientFirst is a parsed client-first-message.
type ScramClientFirst struct {
	GS2Header  string // "n,," or "n,a=authzid," or "y,,"
	AuthzID    string
	Bare       string // client-first-message-bare, as sent
	User       string // unescaped
	Nonce      string
	Extensions map[string]string
}

// ParseScramClientFirst parses a client-first-message (RFC 5802 section
// 7). Channel binding ("p=") is refused: Kafka's SCRAM has none.
func ParseScramClientFirst(msg string) (ScramClientFirst, error) {
	var cf ScramClientFirst
	bad := func(format string, args ...any) (ScramClientFirst, error) {
		return ScramClientFirst{}, fmt.Errorf("%w: client-first: "+format, append([]any{ErrMalformed}, args...)...)
	}
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return bad("no gs2 header")
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return bad("channel binding is not supported")
	default:
		return bad("gs2 flag %q", flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return bad("gs2 header has no authzid field")
	}
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return bad("authzid %q does not start with a=", authz)
		}
		u, err := unescapeSaslName(v)
		if err != nil {
			return bad("authzid: %v", err)
		}
		cf.AuthzID = u
	}
	cf.GS2Header = flag + "," + authz + ","
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return bad("want n= and r=")
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return bad("mandatory extensions are not supported")
	}
	name, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return bad("first attribute %q is not n=", attrs[0])
	}
	u, err := unescapeSaslName(name)
	if err != nil {
		return bad("username: %v", err)
	}
	if u == "" {
		return bad("empty username")
	}
	cf.User = u
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || nonce == "" {
		return bad("second attribute %q is not a nonce", attrs[1])
	}
	if !printableNoComma(nonce) {
		return bad("nonce has characters outside printable ASCII")
	}
	cf.Nonce = nonce
	if cf.AuthzID != "" && cf.AuthzID != cf.User {
		return ScramClientFirst{}, fmt.Errorf("%w: authorization id %q differs from the user %q", ErrAuthentication, cf.AuthzID, cf.User)
	}
	for _, e := range attrs[2:] {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return bad("extension %q is not key=value", e)
		}
		if cf.Extensions == nil {
			cf.Extensions = map[string]string{}
		}
		cf.Extensions[k] = v
	}
	return cf, nil
}

// ScramClientFinal is a parsed client-final-message.
type ScramClientFinal struct {
	ChannelBinding string // base64, as sent
	Nonce          string
	Proof          []byte
	WithoutProof   string // client-final-message-without-proof
}

// ParseScramClientFinal parses a client-final-message.
func ParseScramClientFinal(msg string) (ScramClientFinal, error) {
	var cf ScramClientFinal
	bad := func(format string, args ...any) (ScramClientFinal, error) {
		return ScramClientFinal{}, fmt.Errorf("%w: client-final: "+format, append([]any{ErrMalformed}, args...)...)
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return bad("no proof")
	}
	cf.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil || len(proof) == 0 {
		return bad("proof is not base64")
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 {
		return bad("want c= and r=")
	}
	cb, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return bad("first attribute %q is not c=", attrs[0])
	}
	if _, err := base64.StdEncoding.DecodeString(cb); err != nil {
		return bad("channel binding is not base64")
	}
	cf.ChannelBinding = cb
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || nonce == "" {
		return bad("second attribute %q is not a nonce", attrs[1])
	}
	cf.Nonce = nonce
	for _, e := range attrs[2:] {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return bad("extension %q is not key=value", e)
		}
	}
	return cf, nil
}

// unescapeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func unescapeSaslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("bad escape in %q", s)
		}
		i += 2
	}
	return b.String(), nil
}

func printableNoComma(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// ScramCredentialFromSalted builds a credential from a salted password
// (Hi(password, salt, iterations)), as Kafka's AlterUserScramCredentials
// sends it: the client salts and hashes, the password never travels.
func ScramCredentialFromSalted(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if len(saltedPassword) != h().Size() {
		return ScramCredential{}, fmt.Errorf("%w: a salted password of %d bytes, %s makes %d", ErrInvalid, len(saltedPassword), mechanism, h().Size())
	}
	c := ScramCredential{
		Salt:       bytes.Clone(salt),
		Iterations: iterations,
		StoredKey:  hashSum(h, hmacSum(h, saltedPassword, "Client Key")),
		ServerKey:  hmacSum(h, saltedPassword, "Server Key"),
	}
	return c, c.Check(mechanism)
}
