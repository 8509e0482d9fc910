package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aerostream/aerostream/auth"
)

// Authentication and authorization of HTTP requests. A Guard
// authenticates every request once, in front of the mux, and puts who it
// acts for in the request's context (PrincipalFrom); the APIs mounted
// behind it decide what that principal may do, either with the ACL
// authorizer themselves or through RequireCluster. Three ways prove an
// identity, as Kafka's listeners do: HTTP basic with a SCRAM user's
// password (PLAIN's check), a bearer token (a JWT, validated by the
// function the Guard is given), and a verified TLS client certificate,
// whose subject is the user as tls.principal_mapping_rules map it, the
// same name it has on the Kafka and native listeners. A request with none
// of them is
// User:ANONYMOUS, which a Guard that requires authentication refuses
// outside its open paths (/healthz and /metrics by default).

// Principal is who an HTTP request acts for.
type Principal struct {
	// Name is the principal as ACLs name it: User:NAME, or
	// User:ANONYMOUS for a request that proved nothing.
	Name string
	// Host is the client's IP address, as ACL hosts name it.
	Host string
	// Method is how the principal was proved: "basic", "bearer", "mtls",
	// or "" for anonymous.
	Method string
	// Groups are the Group:NAME principals the request's bearer token
	// named: this request's, beside the groups stored with the user.
	Groups []string
}

// Anonymous is the principal name of an unauthenticated request.
const Anonymous = "User:ANONYMOUS"

type principalKey struct{}

// PrincipalFrom returns who the request of ctx acts for: the principal a
// Guard authenticated, or User:ANONYMOUS (Host empty) when no Guard ran.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p
	}
	return Principal{Name: Anonymous}
}

// WithPrincipal returns ctx carrying p, for tests of the APIs behind a
// Guard.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// DefaultOpenPaths are served without authentication: probes and
// Prometheus scrapers carry no credentials.
var DefaultOpenPaths = []string{"/healthz", "/metrics"}

// AuthOptions configure a Guard.
type AuthOptions struct {
	// Required refuses an unauthenticated request (401) outside
	// OpenPaths. Without it such a request goes on as User:ANONYMOUS.
	// Credentials that are sent are checked either way.
	Required bool
	// OpenPaths are paths (and the paths below them) served without
	// authentication; nil is DefaultOpenPaths.
	OpenPaths []string
	// Credentials finds a user's SCRAM credential, for basic
	// authentication; nil refuses basic.
	Credentials auth.CredentialLookup
	// Bearer validates a bearer token and returns its user (no User:
	// prefix) and groups; nil refuses bearer tokens.
	Bearer auth.TokenValidator
	// ClientCerts authenticates a request by its verified TLS client
	// certificate (tls.client_auth): the subject, mapped by Principals,
	// is the user.
	ClientCerts bool
	// Principals maps a client certificate's subject (RFC 2253) to its
	// user, as on the Kafka and native listeners; nil is Kafka's DEFAULT,
	// the full distinguished name. A certificate no rule maps is refused.
	Principals *auth.PrincipalMapper
	// Authorizer decides RequireCluster's checks; nil allows all.
	Authorizer *auth.Authorizer
	Logger     *slog.Logger
	// Now is the clock of the audit and failure limits; nil is time.Now.
	Now func() time.Time
}

// Guard authenticates HTTP requests and audits refusals.
type Guard struct {
	o     AuthOptions
	audit auth.AuditLimiter
	fails auth.FailureDelay

	// verified remembers basic passwords checked lately, so that a client
	// sending the same header on every request does not cost a PBKDF2
	// derivation each time. An entry holds only a hash of user and
	// password, and the credential's StoredKey it was checked against: a
	// changed password or a deleted user no longer matches.
	mu struct {
		sync.Mutex
		verified map[[32]byte]verifiedEntry
	}
}

type verifiedEntry struct {
	storedKey []byte
	until     time.Time
}

const (
	verifiedTTL = 5 * time.Minute
	verifiedMax = 1024
)

// NewGuard returns a Guard with options o.
func NewGuard(o AuthOptions) *Guard {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OpenPaths == nil {
		o.OpenPaths = DefaultOpenPaths
	}
	g := &Guard{o: o}
	g.mu.verified = map[[32]byte]verifiedEntry{}
	return g
}

func (g *Guard) now() time.Time {
	if g.o.Now != nil {
		return g.o.Now()
	}
	return time.Now()
}

// errUnauthenticated: a required authentication that the request did
// not make.
var errUnauthenticated = errors.New("authentication required: send HTTP basic credentials of a SCRAM user, a bearer token, or a TLS client certificate")

func (g *Guard) open(path string) bool {
	for _, p := range g.o.OpenPaths {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// Authenticate wraps h: each request is authenticated and goes on with
// its principal in its context, or is answered 401.
func (g *Guard) Authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := g.authenticate(r)
		if err == nil && p.Method == "" && g.o.Required && !g.open(r.URL.Path) {
			err = errUnauthenticated
		}
		if err != nil {
			if !errors.Is(err, errUnauthenticated) {
				g.auditLine(p, r, "", "", "", err)
				if d := g.fails.Fail(g.now(), p.Host); d > 0 {
					// Guessing passwords costs time; only this request waits.
					t := time.NewTimer(d)
					select {
					case <-t.C:
					case <-r.Context().Done():
						t.Stop()
					}
				}
			}
			w.Header().Add("WWW-Authenticate", `Basic realm="aerostream", charset="UTF-8"`)
			w.Header().Add("WWW-Authenticate", `Bearer realm="aerostream"`)
			writeAPIError(w, http.StatusUnauthorized, "unauthorized", err)
			return
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// authenticate finds who r proves to be. An Authorization header wins
// over a client certificate; a header that does not verify is an error,
// never a fall back to anonymous.
func (g *Guard) authenticate(r *http.Request) (Principal, error) {
	p := Principal{Name: Anonymous, Host: remoteHost(r.RemoteAddr)}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, cred, _ := strings.Cut(h, " ")
		cred = strings.TrimSpace(cred)
		switch {
		case strings.EqualFold(scheme, "Basic"):
			user, pass, ok := r.BasicAuth()
			if !ok || user == "" {
				return p, fmt.Errorf("%w: malformed basic credentials", auth.ErrMalformed)
			}
			p.Name = "User:" + user // the audit line names who tried
			if g.o.Credentials == nil {
				return p, fmt.Errorf("%w: basic authentication is not enabled", auth.ErrUnsupportedMechanism)
			}
			if err := g.checkPassword(r.Context(), user, pass); err != nil {
				return p, err
			}
			p.Method = "basic"
			return p, nil
		case strings.EqualFold(scheme, "Bearer"):
			if g.o.Bearer == nil {
				return p, fmt.Errorf("%w: bearer tokens are not enabled", auth.ErrUnsupportedMechanism)
			}
			tok, err := g.o.Bearer(r.Context(), cred)
			if err != nil {
				return p, err
			}
			p.Name, p.Method, p.Groups = "User:"+tok.User, "bearer", tok.Groups
			return p, nil
		default:
			return p, fmt.Errorf("%w: authorization scheme %q (want Basic or Bearer)", auth.ErrUnsupportedMechanism, scheme)
		}
	}
	if g.o.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		name, err := g.o.Principals.CertName(r.TLS.VerifiedChains[0][0])
		if err != nil {
			return p, fmt.Errorf("%w: client certificate: %w", auth.ErrAuthentication, err)
		}
		p.Name, p.Method = "User:"+name, "mtls"
	}
	return p, nil
}

// checkPassword verifies a basic password, from the cache when this very
// password was checked lately against the credential still stored.
func (g *Guard) checkPassword(ctx context.Context, user, pass string) error {
	key := sha256.Sum256([]byte(user + "\x00" + pass))
	now := g.now()
	g.mu.Lock()
	e, hit := g.mu.verified[key]
	g.mu.Unlock()
	if hit && now.Before(e.until) {
		for _, m := range []string{auth.ScramSHA256, auth.ScramSHA512} {
			cred, ok, err := g.o.Credentials(ctx, user, m)
			if err != nil {
				return err
			}
			if ok {
				if subtle.ConstantTimeCompare(cred.StoredKey, e.storedKey) == 1 {
					return nil
				}
				break
			}
		}
	}
	cred, err := auth.VerifyPassword(ctx, g.o.Credentials, user, pass)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mu.verified) >= verifiedMax {
		clear(g.mu.verified)
	}
	g.mu.verified[key] = verifiedEntry{storedKey: cred.StoredKey, until: now.Add(verifiedTTL)}
	return nil
}

// Authorize reports whether r's principal may do op on the resource,
// auditing a refusal: for APIs that decide per resource (the /api/
// routes). With no authorizer every principal may.
func (g *Guard) Authorize(r *http.Request, op, resourceType, name string) bool {
	p := PrincipalFrom(r.Context())
	if g.o.Authorizer.Authorize(p.request(op, resourceType, name)) {
		return true
	}
	g.auditLine(p, r, op, resourceType, name, nil)
	return false
}

// Allowed is Authorize without the audit line: for listings, which hide
// what the principal may not see rather than refuse it.
func (g *Guard) Allowed(r *http.Request, op, resourceType, name string) bool {
	return g.o.Authorizer.Authorize(PrincipalFrom(r.Context()).request(op, resourceType, name))
}

// request is the authorizer's question for op on a resource, asked as p
// with its token's groups.
func (p Principal) request(op, resourceType, name string) auth.Request {
	return auth.Request{Principal: p.Name, Groups: p.Groups, Host: p.Host, Operation: op, ResourceType: resourceType, ResourceName: name}
}

// Required reports whether the Guard refuses anonymous requests.
func (g *Guard) Required() bool { return g.o.Required }

// RequireCluster wraps h so that a request needs an operation on the
// CLUSTER resource: readOp for GET and HEAD, writeOp for other methods.
// An empty operation lets every principal the Guard let in through. A
// refusal is answered 403 and audited.
func (g *Guard) RequireCluster(readOp, writeOp string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := writeOp
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			op = readOp
		}
		if op != "" && !g.Authorize(r, op, auth.ResourceCluster, auth.ClusterName) {
			writeAPIError(w, http.StatusForbidden, "forbidden",
				fmt.Errorf("%s may not %s the cluster (%s %s)", PrincipalFrom(r.Context()).Name, op, r.Method, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// auditLine logs a failed authentication (err set) or a denied
// operation, rate-limited per principal and client.
func (g *Guard) auditLine(p Principal, r *http.Request, op, resourceType, resource string, err error) {
	ok, dropped := g.audit.Allow(g.now(), p.Name+"|"+p.Host)
	if !ok {
		return
	}
	args := []any{"audit", true, "principal", p.Name, "client", p.Host, "method", r.Method, "path", r.URL.Path}
	if op != "" {
		args = append(args, "operation", op, "resource_type", resourceType, "resource", resource)
	}
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	if err != nil {
		g.o.Logger.Warn("authentication failed", append(args, "err", err)...)
		return
	}
	g.o.Logger.Warn("operation denied", args...)
}

// writeAPIError answers {"error": code, "message": err}, the /api/ error
// shape.
func writeAPIError(w http.ResponseWriter, status int, code string, err error) {
	writeJSON(w, status, map[string]string{"error": code, "message": err.Error()})
}

func remoteHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
