package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/aerostream/aerostream/auth"
)

// TLS is the server certificate every TLS listener presents (a listener
// whose address starts with SSL:// or SASL_SSL://), and the CA that client
// certificates are checked against.
type TLS struct {
	CertFile string `toml:"cert_file" help:"PEM server certificate (chain) for TLS listeners, and the node certificate SSL:// ring and controller links present as client; re-read when the file changes, so a renewed certificate needs no restart"`
	KeyFile  string `toml:"key_file" help:"PEM private key of cert_file"`
	CAFile   string `toml:"ca_file" help:"PEM CA bundle client certificates are verified against, and the root this process trusts on SSL:// links to other nodes; required by client_auth requested or required, and by SSL:// ring and controller listeners; empty = the system roots"`
	// ClientAuth takes Kafka's ssl.client.auth values.
	ClientAuth string `toml:"client_auth" help:"client certificates on Kafka, native and HTTP TLS listeners: none, requested (verified when sent) or required (ssl.client.auth); SSL:// ring and controller listeners always require them"`
	// CipherSuites and EnabledProtocols are Kafka's ssl.cipher.suites and
	// ssl.enabled.protocols; Kafka's ssl.protocol names a JSSE SSLContext,
	// which Go has no equivalent of.
	CipherSuites     []string `toml:"cipher_suites" help:"cipher suites Kafka, native and HTTP TLS listeners accept, by IANA name as Kafka writes them (ssl.cipher.suites): the TLS 1.3 suites TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and TLS_CHACHA20_POLY1305_SHA256 all together or none (TLS 1.3 off), and any ECDHE AEAD suites of TLS 1.2 (none: TLS 1.2 off); empty = all of them"`
	EnabledProtocols []string `toml:"enabled_protocols" help:"TLS versions Kafka, native and HTTP TLS listeners accept: TLSv1.2, TLSv1.3 (ssl.enabled.protocols); empty = both"`
	// PrincipalMappingRules is Kafka's ssl.principal.mapping.rules, parsed
	// by auth.ParsePrincipalMappingRules.
	PrincipalMappingRules string `toml:"principal_mapping_rules" help:"how a verified client certificate on a Kafka, native or HTTP TLS listener names its principal, in Kafka's ssl.principal.mapping.rules syntax: rules tried in order, each RULE:pattern/replacement/ (optional L or U after the last slash: lower or upper case) or DEFAULT (the subject's full distinguished name in RFC 2253 form, as User:CN=alice,OU=eng,O=corp); patterns are Go (RE2) regular expressions; SASL on a SASL_SSL listener replaces the certificate's principal"`
}

// Auth configures authentication (SASL on SASL_PLAINTEXT:// and
// SASL_SSL:// listeners) and authorization (ACLs).
type Auth struct {
	SASLMechanisms []string `toml:"sasl_mechanisms" help:"SASL mechanisms SASL listeners offer: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN, OAUTHBEARER (sasl.enabled.mechanisms)"`
	Authorizer     bool     `toml:"authorizer" help:"enforce ACLs on every request; with it on, what no ACL allows is denied"`
	SuperUsers     []string `toml:"super_users" help:"principals (User:NAME) every ACL check allows (super.users); in the env var and flag, separate them with semicolons when one holds commas (a certificate DN: User:CN=alice,O=corp;User:admin)"`
	BootstrapUser  string   `toml:"bootstrap_user" help:"SCRAM user created on first start with the password in AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD (both SCRAM mechanisms)"`
	// ReauthMs is Kafka's connections.max.reauth.ms (KIP-368).
	ReauthMs int64 `toml:"connections_max_reauth_ms" help:"session lifetime of a SASL connection: the client must re-authenticate within it or be disconnected; 0 = no limit (connections.max.reauth.ms)"`
	// HTTPAuthentication decides whether listeners.http (and the schema
	// registry's listener) refuse anonymous requests.
	HTTPAuthentication string   `toml:"http_authentication" help:"HTTP listeners: required (anonymous requests get 401), optional (credentials checked when sent) or auto (required once auth.authorizer is on or listeners.kafka uses SASL); credentials are basic with a SCRAM user, a bearer token, or a TLS client certificate"`
	HTTPOpenPaths      []string `toml:"http_open_paths" help:"HTTP paths (and the paths below them) served without authentication"`
	// OAuth validates the JWTs of OAUTHBEARER and of HTTP bearer tokens.
	OAuthJWKSFile       string `toml:"oauth_jwks_file" help:"JWKS file with the keys OAUTHBEARER and HTTP bearer JWTs are signed with (RS256, ES256); re-read when a token names a key it lacks"`
	OAuthJWKSURL        string `toml:"oauth_jwks_url" help:"JWKS URL instead of oauth_jwks_file (the identity provider's jwks_uri)"`
	OAuthIssuer         string `toml:"oauth_issuer" help:"the iss every JWT must carry; empty = not checked"`
	OAuthAudience       string `toml:"oauth_audience" help:"an aud every JWT must carry; empty = not checked"`
	OAuthPrincipalClaim string `toml:"oauth_principal_claim" help:"JWT claim that names the user (the principal is User:<claim>)"`
	OAuthGroupsClaim    string `toml:"oauth_groups_claim" help:"JWT claim that lists groups (an array, or names separated by spaces) the session the token authenticates is a member of, for Group:NAME ACLs and role bindings; empty = groups come only from aerostream user set-groups"`
	// ControllerSecretFile holds the cluster credential the controller's
	// client API and Raft streams require (controller/clusterauth.go).
	ControllerSecretFile string `toml:"controller_secret_file" help:"file holding the cluster secret (at least 32 bytes; openssl rand -hex 32): when set, controllers refuse every client API call and Raft stream that does not prove it (an HMAC, the secret never crosses the wire), and stores, gateways and the CLI present it and refuse a controller whose answers do not prove it back; every node of the cluster sets the same; further lines hold old secrets still accepted, for a rolling rotation; required once security is on, except by serve, which then makes one in <data_dir>/controller.secret"`
}

// HTTP authentication modes (auth.http_authentication).
const (
	HTTPAuthAuto     = "auto"
	HTTPAuthRequired = "required"
	HTTPAuthOptional = "optional"
)

// HTTPAuthRequired reports whether HTTP listeners refuse anonymous
// requests.
func (c *Config) HTTPAuthRequired() bool {
	switch c.Auth.HTTPAuthentication {
	case HTTPAuthRequired:
		return true
	case HTTPAuthOptional:
		return false
	}
	return c.Auth.Authorizer || IsSASL(ListenerProtocol(c.Listeners.Kafka))
}

// EnvBootstrapPassword holds bootstrap_user's password. It is not a key: a
// password never goes in a file, a flag or the key table.
const EnvBootstrapPassword = EnvPrefix + "AUTH_BOOTSTRAP_PASSWORD"

// Listener security protocols, as Kafka names them
// (listener.security.protocol.map).
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms.
var saslMechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"}

// SplitListener splits a listener address into its security protocol and
// the address to bind: "SASL_SSL://127.0.0.1:9093" is SASL_SSL and
// 127.0.0.1:9093; an address without a prefix is PLAINTEXT.
func SplitListener(addr string) (protocol, address string, err error) {
	p, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return Plaintext, addr, nil
	}
	switch up := strings.ToUpper(p); up {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return up, rest, nil
	}
	return "", "", fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", p)
}

// ListenerProtocol is the security protocol of a listener address,
// PLAINTEXT when it has no prefix or is unparseable (Validate refuses the
// latter before anyone asks).
func ListenerProtocol(addr string) string {
	p, _, err := SplitListener(addr)
	if err != nil {
		return Plaintext
	}
	return p
}

// RingTLS reports whether this process's shard ring links run mutual TLS:
// listeners.ring says SSL://. A process dials the rings of other stores
// (a gateway routing, a follower replicating) as its own listeners.ring
// says, so every node of a cluster sets the same prefix.
func (c *Config) RingTLS() bool { return IsTLS(ListenerProtocol(c.Listeners.Ring)) }

// ControllerTLS reports whether this process's controller links run
// mutual TLS: listeners.controller says SSL://. As with RingTLS, a store
// or gateway dials controller.join as its own listeners.controller says.
func (c *Config) ControllerTLS() bool { return IsTLS(ListenerProtocol(c.Listeners.Controller)) }

// SecurityOn reports whether this configuration authenticates or
// authorizes anyone: the authorizer, a SASL listener, or HTTP
// authentication required outright.
func (c *Config) SecurityOn() bool {
	return c.Auth.Authorizer || IsSASL(ListenerProtocol(c.Listeners.Kafka)) ||
		IsSASL(ListenerProtocol(c.Listeners.Native)) || c.Auth.HTTPAuthentication == HTTPAuthRequired
}

// CheckControllerSecret refuses, for a process that serves or reaches the
// controller's client API, security on without the cluster secret. That
// API creates and deletes topics, users, ACLs and roles, so it must not
// take calls from whoever reaches its port: not beyond loopback, nor on
// it, where another user of the host or a container sharing its network
// reaches it too.
func (c *Config) CheckControllerSecret() error {
	if !c.SecurityOn() || c.Auth.ControllerSecretFile != "" {
		return nil
	}
	return errors.New("auth.controller_secret_file is not set: with authentication or the authorizer on, the controller's client API (topics, users, ACLs, roles, configs) and Raft require the cluster secret, on loopback too; write one (openssl rand -hex 32 > cluster-secret; chmod 600 cluster-secret) and give every controller, store and gateway of the cluster the same auth.controller_secret_file (or AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE)")
}

// IsTLS reports whether protocol runs over TLS.
func IsTLS(protocol string) bool { return protocol == SSL || protocol == SASLSSL }

// IsSASL reports whether protocol authenticates with SASL.
func IsSASL(protocol string) bool { return protocol == SASLPlaintext || protocol == SASLSSL }

// validateSecurity checks the [tls] and [auth] keys and the listeners'
// protocols against them.
func (c *Config) validateSecurity(bad func(key, msg string)) {
	anyTLS := false
	for _, l := range []struct {
		key, addr string
		allowed   []string
	}{
		{"listeners.kafka", c.Listeners.Kafka, []string{Plaintext, SSL, SASLPlaintext, SASLSSL}},
		// The HTTP API authenticates with basic, bearer and client
		// certificates, not SASL.
		{"listeners.native", c.Listeners.Native, []string{Plaintext, SSL, SASLPlaintext, SASLSSL}},
		{"listeners.http", c.Listeners.HTTP, []string{Plaintext, SSL}},
		// Internal links authenticate with the node certificate alone.
		{"listeners.ring", c.Listeners.Ring, []string{Plaintext, SSL}},
		{"listeners.controller", c.Listeners.Controller, []string{Plaintext, SSL}},
	} {
		p, _, err := SplitListener(l.addr)
		if err != nil {
			continue // checkAddr reports it
		}
		ok := false
		for _, a := range l.allowed {
			ok = ok || p == a
		}
		if !ok {
			bad(l.key, fmt.Sprintf("%s is not served on this listener (want %s)", p, strings.Join(l.allowed, ", ")))
		}
		anyTLS = anyTLS || IsTLS(p)
	}
	if anyTLS {
		if c.TLS.CertFile == "" {
			bad("tls.cert_file", "is required by a TLS listener (SSL:// or SASL_SSL://)")
		}
		if c.TLS.KeyFile == "" {
			bad("tls.key_file", "is required by a TLS listener (SSL:// or SASL_SSL://)")
		}
	}
	for _, l := range []struct{ key, addr string }{
		{"listeners.ring", c.Listeners.Ring},
		{"listeners.controller", c.Listeners.Controller},
	} {
		if IsTLS(ListenerProtocol(l.addr)) && c.TLS.CAFile == "" {
			bad("tls.ca_file", fmt.Sprintf("is required by %s = SSL://: mutual TLS verifies the other node's certificate against it", l.key))
		}
	}
	switch c.TLS.ClientAuth {
	case "requested", "required":
		// A certificate names a principal, so only the operator's CA
		// may vouch for one, never every public CA in the system roots.
		if anyTLS && c.TLS.CAFile == "" {
			bad("tls.ca_file", fmt.Sprintf("is required by tls.client_auth = %q: client certificates name principals, and are verified against it", c.TLS.ClientAuth))
		}
	case "none":
	default:
		bad("tls.client_auth", "must be one of none, requested, required")
	}
	if _, err := auth.ParsePrincipalMappingRules(c.TLS.PrincipalMappingRules); err != nil {
		bad("tls.principal_mapping_rules", err.Error())
	}
	if lo, hi, err := auth.ParseTLSProtocols(c.TLS.EnabledProtocols); err != nil {
		bad("tls.enabled_protocols", err.Error())
	} else if _, _, _, err := auth.ParseCipherSuites(c.TLS.CipherSuites, lo, hi); err != nil {
		bad("tls.cipher_suites", err.Error())
	}
	for _, m := range c.Auth.SASLMechanisms {
		known := false
		for _, k := range saslMechanisms {
			known = known || m == k
		}
		if !known {
			bad("auth.sasl_mechanisms", fmt.Sprintf("unknown mechanism %q (want %s)", m, strings.Join(saslMechanisms, ", ")))
			break
		}
	}
	if (IsSASL(ListenerProtocol(c.Listeners.Kafka)) || IsSASL(ListenerProtocol(c.Listeners.Native))) && len(c.Auth.SASLMechanisms) == 0 {
		bad("auth.sasl_mechanisms", "a SASL listener needs at least one mechanism")
	}
	for _, u := range c.Auth.SuperUsers {
		if name, ok := strings.CutPrefix(u, "User:"); !ok || name == "" {
			bad("auth.super_users", fmt.Sprintf("%q is not a principal (want User:NAME)", u))
			break
		}
	}
	switch c.Auth.HTTPAuthentication {
	case HTTPAuthAuto, HTTPAuthRequired, HTTPAuthOptional:
	default:
		bad("auth.http_authentication", "must be one of auto, required, optional")
	}
	for _, p := range c.Auth.HTTPOpenPaths {
		if !strings.HasPrefix(p, "/") {
			bad("auth.http_open_paths", fmt.Sprintf("%q is not an absolute path", p))
			break
		}
	}
	if c.Auth.OAuthJWKSFile != "" && c.Auth.OAuthJWKSURL != "" {
		bad("auth.oauth_jwks_url", "set oauth_jwks_file or oauth_jwks_url, not both")
	}
	for _, m := range c.Auth.SASLMechanisms {
		if m == "OAUTHBEARER" && c.Auth.OAuthJWKSFile == "" && c.Auth.OAuthJWKSURL == "" {
			bad("auth.sasl_mechanisms", "OAUTHBEARER needs auth.oauth_jwks_file or auth.oauth_jwks_url to validate tokens")
		}
	}
	if c.Auth.OAuthPrincipalClaim == "" {
		bad("auth.oauth_principal_claim", "must name a claim (sub by default)")
	}
	if c.Auth.ReauthMs < 0 {
		bad("auth.connections_max_reauth_ms", "must be 0 (no limit) or positive")
	}
}

// splitList parses a list as env vars and flags write one: separated by
// commas, or by semicolons when it holds any, as Kafka's super.users is,
// so that an item may be a certificate DN (User:CN=alice,O=corp;User:admin).
func splitList(s string) []string {
	sep := ","
	if strings.Contains(s, ";") {
		sep = ";"
	}
	out := []string{}
	for _, f := range strings.Split(s, sep) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// tomlList writes a string list as a TOML array.
func tomlList(v reflect.Value) string {
	l := v.Interface().([]string)
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
