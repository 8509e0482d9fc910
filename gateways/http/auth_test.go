package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

// userStore is an in-memory SCRAM credential store.
type userStore struct {
	mu    sync.Mutex
	creds map[string]auth.ScramCredential
}

func (u *userStore) set(t *testing.T, user, pass string) {
	t.Helper()
	c, err := auth.NewScramCredential(auth.ScramSHA256, pass, auth.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.creds[user] = c
}

func (u *userStore) lookup(_ context.Context, user, mech string) (auth.ScramCredential, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.creds[user]
	return c, ok && mech == auth.ScramSHA256, nil
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type authEnv struct {
	pki    *authtest.PKI
	users  *userStore
	z      *auth.Authorizer
	logs   *logBuf
	base   string
	client *http.Client
}

// newAuthEnv serves, over TLS with client certificates requested, a
// server whose Guard requires authentication: /v1/tier behind
// RequireCluster(DESCRIBE, ALTER), /metrics open, and /who answering the
// principal.
func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	return newAuthEnvRules(t, nil)
}

// newAuthEnvRules is newAuthEnv with client certificates mapped by rules
// (nil: DEFAULT).
func newAuthEnvRules(t *testing.T, rules *auth.PrincipalMapper) *authEnv {
	t.Helper()
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &authEnv{pki: pki, users: &userStore{creds: map[string]auth.ScramCredential{}}, logs: &logBuf{},
		z: auth.NewAuthorizer(true, []string{"User:root"})}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	g := NewGuard(AuthOptions{Required: true, Credentials: e.users.lookup, ClientCerts: true, Principals: rules, Authorizer: e.z, Logger: logger,
		Bearer: func(_ context.Context, token string) (auth.Token, error) {
			switch token {
			case "good-token":
				return auth.Token{User: "bot", Expires: time.Now().Add(time.Hour)}, nil
			case "ops-token": // the same user, holding a token that names ops
				return auth.Token{User: "bot", Expires: time.Now().Add(time.Hour), Groups: []string{"Group:ops"}}, nil
			}
			return auth.Token{}, errors.New("token refused")
		}})
	srv := NewServer(Options{Logger: logger, Guard: g})
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := PrincipalFrom(r.Context())
		_, _ = io.WriteString(w, p.Name+" "+p.Method)
	})
	for prefix, h := range map[string]http.Handler{
		"/v1/tier": g.RequireCluster(auth.OpDescribe, auth.OpAlter, who),
		"/metrics": who,
		"/who":     who,
	} {
		if err := srv.Mount(prefix, h); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, ClientAuth: "requested"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, tls.NewListener(ln, tc)) }()
	e.base = "https://" + ln.Addr().String()
	e.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool()}}}
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return e
}

func (e *authEnv) do(t *testing.T, c *http.Client, method, path string, set func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// TestGuardAuthenticates: with authentication required, a request proves
// who it is by basic, bearer or client certificate, or gets 401 (open
// paths excepted); a wrong credential is audited.
func TestGuardAuthenticates(t *testing.T) {
	e := newAuthEnv(t)
	e.users.set(t, "alice", "alice-secret")

	if code, body := e.do(t, e.client, "GET", "/metrics", nil); code != 200 || body != Anonymous+" " {
		t.Errorf("open /metrics: %d %q", code, body)
	}
	code, body := e.do(t, e.client, "GET", "/who", nil)
	if code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d %q, want 401", code, body)
	}
	var apiErr struct{ Error, Message string }
	if err := json.Unmarshal([]byte(body), &apiErr); err != nil || apiErr.Error != "unauthorized" {
		t.Errorf("401 body %q (%v), want error unauthorized", body, err)
	}
	if code, body := e.do(t, e.client, "GET", "/who", basic("alice", "alice-secret")); code != 200 || body != "User:alice basic" {
		t.Errorf("basic: %d %q", code, body)
	}
	// Again, from the verified cache; then the password changes and the
	// old one stops working at once.
	if code, _ := e.do(t, e.client, "GET", "/who", basic("alice", "alice-secret")); code != 200 {
		t.Errorf("basic again: %d", code)
	}
	e.users.set(t, "alice", "new-secret")
	if code, _ := e.do(t, e.client, "GET", "/who", basic("alice", "alice-secret")); code != http.StatusUnauthorized {
		t.Errorf("the old password after a change: %d, want 401", code)
	}
	if code, _ := e.do(t, e.client, "GET", "/who", basic("alice", "new-secret")); code != 200 {
		t.Errorf("the new password: %d", code)
	}
	if code, _ := e.do(t, e.client, "GET", "/metrics", basic("alice", "wrong")); code != http.StatusUnauthorized {
		t.Errorf("a wrong password on an open path: %d, want 401", code)
	}
	if !strings.Contains(e.logs.String(), "authentication failed") || !strings.Contains(e.logs.String(), "principal=User:alice") {
		t.Errorf("no audit line for the wrong password:\n%s", e.logs.String())
	}
	if code, body := e.do(t, e.client, "GET", "/who", bearer("good-token")); code != 200 || body != "User:bot bearer" {
		t.Errorf("bearer: %d %q", code, body)
	}
	if code, _ := e.do(t, e.client, "GET", "/who", bearer("forged")); code != http.StatusUnauthorized {
		t.Errorf("a refused token: %d, want 401", code)
	}
	if code, _ := e.do(t, e.client, "GET", "/who", func(r *http.Request) { r.Header.Set("Authorization", "Digest x") }); code != http.StatusUnauthorized {
		t.Errorf("an unknown scheme: %d, want 401", code)
	}

	cert, key, err := e.pki.IssueClient("ops", 10)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	mtls := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.Pool(), Certificates: []tls.Certificate{pair}}}}
	defer mtls.CloseIdleConnections()
	if code, body := e.do(t, mtls, "GET", "/who", nil); code != 200 || body != "User:CN=ops mtls" {
		t.Errorf("client certificate: %d %q, want its full DN (DEFAULT)", code, body)
	}
	if code, body := e.do(t, mtls, "GET", "/who", basic("alice", "new-secret")); code != 200 || body != "User:alice basic" {
		t.Errorf("basic over a client certificate: %d %q, want the basic user", code, body)
	}
}

// TestGuardCertificatePrincipalRules: a client certificate is the user
// tls.principal_mapping_rules make of its subject, as on Kafka: a rule
// gives CN=ops,OU=eng,O=corp the short name ops, a subject the rule does
// not match falls to DEFAULT, and a certificate no rule maps is refused
// with 401 saying why.
func TestGuardCertificatePrincipalRules(t *testing.T) {
	rules, err := auth.ParsePrincipalMappingRules(`RULE:^CN=(.*?),.*$/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	e := newAuthEnvRules(t, rules)
	certClient := func(subject pkix.Name, serial int64) *http.Client {
		t.Helper()
		cert, key, err := e.pki.IssueClientName(subject, serial)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.pki.Pool(), Certificates: []tls.Certificate{pair}}}}
		t.Cleanup(c.CloseIdleConnections)
		return c
	}
	ops := certClient(pkix.Name{CommonName: "ops", OrganizationalUnit: []string{"eng"}, Organization: []string{"corp"}}, 20)
	if code, body := e.do(t, ops, "GET", "/who", nil); code != 200 || body != "User:ops mtls" {
		t.Errorf("CN=ops,OU=eng,O=corp by the rule: %d %q, want User:ops", code, body)
	}
	solo := certClient(pkix.Name{CommonName: "solo"}, 21)
	if code, body := e.do(t, solo, "GET", "/who", nil); code != 200 || body != "User:CN=solo mtls" {
		t.Errorf("CN=solo by DEFAULT: %d %q, want User:CN=solo", code, body)
	}

	strict, err := auth.ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=eng,.*$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	e = newAuthEnvRules(t, strict)
	other := certClient(pkix.Name{CommonName: "eve", OrganizationalUnit: []string{"sales"}}, 22)
	code, body := e.do(t, other, "GET", "/who", nil)
	if code != http.StatusUnauthorized || !strings.Contains(body, "no principal mapping rule applies") || !strings.Contains(body, "CN=eve,OU=sales") {
		t.Errorf("a certificate no rule maps: %d %q, want 401 naming the reason and its DN", code, body)
	}
	if !strings.Contains(e.logs.String(), "authentication failed") {
		t.Errorf("no audit line for the unmapped certificate:\n%s", e.logs.String())
	}
}

// TestGuardRequireCluster: the tier API's reads need DESCRIBE and its
// writes ALTER on the cluster; a refusal is 403 and audited.
func TestGuardRequireCluster(t *testing.T) {
	e := newAuthEnv(t)
	e.users.set(t, "alice", "pw")
	e.users.set(t, "root", "pw")
	if code, _ := e.do(t, e.client, "GET", "/v1/tier/segments", basic("alice", "pw")); code != http.StatusForbidden {
		t.Errorf("alice reads without an ACL: %d, want 403", code)
	}
	if !strings.Contains(e.logs.String(), "operation denied") || !strings.Contains(e.logs.String(), "operation=DESCRIBE") {
		t.Errorf("no audit line for the denial:\n%s", e.logs.String())
	}
	e.z.Set(1, []auth.ACL{{ResourceType: auth.ResourceCluster, ResourceName: auth.ClusterName, PatternType: auth.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: auth.OpDescribe, Permission: auth.Allow}})
	if code, _ := e.do(t, e.client, "GET", "/v1/tier/segments", basic("alice", "pw")); code != 200 {
		t.Errorf("alice reads with DESCRIBE: %d", code)
	}
	if code, _ := e.do(t, e.client, "POST", "/v1/tier/gc", basic("alice", "pw")); code != http.StatusForbidden {
		t.Errorf("alice runs gc with DESCRIBE only: %d, want 403", code)
	}
	if code, _ := e.do(t, e.client, "POST", "/v1/tier/gc", basic("root", "pw")); code != 200 {
		t.Errorf("a super user runs gc: %d", code)
	}
}

// TestGuardTokenGroupsPerRequest: two requests of one user with bearer
// tokens naming different groups get each its own token's decision; the
// groups of one never reach the other.
func TestGuardTokenGroupsPerRequest(t *testing.T) {
	e := newAuthEnv(t)
	e.z.Set(1, []auth.ACL{{ResourceType: auth.ResourceCluster, ResourceName: auth.ClusterName, PatternType: auth.PatternLiteral,
		Principal: "Group:ops", Host: "*", Operation: auth.OpDescribe, Permission: auth.Allow}})
	for _, tc := range []struct {
		token string
		want  int
	}{{"ops-token", 200}, {"good-token", http.StatusForbidden}, {"ops-token", 200}, {"good-token", http.StatusForbidden}} {
		if code, _ := e.do(t, e.client, "GET", "/v1/tier/segments", bearer(tc.token)); code != tc.want {
			t.Errorf("bot with %s: %d, want %d", tc.token, code, tc.want)
		}
	}
}

// TestGuardWithCurl: curl, as an operator would call the API, with basic
// credentials and with a client certificate.
func TestGuardWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed: the Go client tests cover the same paths")
	}
	e := newAuthEnv(t)
	e.users.set(t, "alice", "alice-secret")
	cert, key, err := e.pki.IssueClient("ops", 11)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, curl, append([]string{"-sS", "--cacert", e.pki.CAFile, "-w", " %{http_code}"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if got := run("-u", "alice:alice-secret", e.base+"/who"); got != "User:alice basic 200" {
		t.Errorf("curl -u: %q", got)
	}
	if got := run("--cert", cert, "--key", key, e.base+"/who"); got != "User:CN=ops mtls 200" {
		t.Errorf("curl --cert: %q", got)
	}
	if got := run(e.base + "/who"); !strings.HasSuffix(got, " 401") {
		t.Errorf("curl without credentials: %q, want 401", got)
	}
}
