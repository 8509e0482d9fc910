package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/aerostream/aerostream/auth/authtest"
)

// TestSecureServeHTTPAndNative: serve with SASL_SSL on the Kafka and
// native listeners, SSL on HTTP, OAUTHBEARER against a JWKS file and the
// authorizer on. HTTP needs credentials (basic with a SCRAM user, or a
// bearer JWT) outside /metrics, and the tier API needs DESCRIBE on the
// cluster; Kafka takes an OAUTHBEARER JWT; the native CLI authenticates
// with SCRAM over TLS and a wrong password is refused.
func TestSecureServeHTTPAndNative(t *testing.T) {
	dir := t.TempDir()
	pki, err := authtest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	kafkaAddr, nativeAddr, httpAddr, ctlAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "secure.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
kafka = "SASL_SSL://`+kafkaAddr+`"
native = "SASL_SSL://`+nativeAddr+`"
[tls]
cert_file = "`+pki.CertFile+`"
key_file = "`+pki.KeyFile+`"
ca_file = "`+pki.CAFile+`"
[auth]
sasl_mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"]
oauth_jwks_file = "`+jwks+`"
oauth_issuer = "https://issuer.test"
oauth_audience = "aerostream"
authorizer = true
super_users = ["User:admin"]
bootstrap_user = "admin"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, []string{"AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret"}, "serve", "--config", conf,
		"--data-dir", filepath.Join(dir, "data"), "--ring-listen", "127.0.0.1:0", "--controller-listen", ctlAddr,
		"--http-listen", "SSL://"+httpAddr)
	p.waitFor(t, `msg=running`)

	// HTTP.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool()}}}
	defer hc.CloseIdleConnections()
	get := func(path, user, pass string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+httpAddr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user == "bearer" {
			req.Header.Set("Authorization", "Bearer "+pass)
		} else if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/metrics", "", ""); code != http.StatusOK {
		t.Errorf("GET /metrics without credentials: %d, want 200 (open path)", code)
	}
	if code := get("/v1/tier/segments", "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/tier/segments without credentials: %d, want 401", code)
	}
	if code := get("/v1/tier/segments", "admin", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	if code := get("/v1/tier/segments", "admin", "admin-secret"); code == http.StatusUnauthorized || code == http.StatusForbidden {
		t.Errorf("the super user: %d", code)
	}
	adminToken := iss.Sign(t, "RS256", map[string]any{"sub": "admin", "exp": time.Now().Add(time.Hour).Unix()})
	if code := get("/v1/tier/segments", "bearer", adminToken); code == http.StatusUnauthorized || code == http.StatusForbidden {
		t.Errorf("the super user's bearer JWT: %d", code)
	}
	if code := get("/v1/tier/segments", "bearer", authtest.Unsigned(map[string]any{"sub": "admin"})); code != http.StatusUnauthorized {
		t.Errorf("an unsigned bearer JWT: %d, want 401", code)
	}
	// Kafka over SASL_SSL with OAUTHBEARER (franz-go's mechanism).
	kc, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool()}),
		kgo.SASL(oauth.Auth{Token: adminToken}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := kc.Ping(pctx); err != nil {
		t.Errorf("Kafka OAUTHBEARER over SASL_SSL: %v", err)
	}
	pcancel()
	kc.Close()
	wantOK(t, runStdin(t, "alice-secret\n", nil, "user", "create", "alice", "--password-stdin", "--controller", ctlAddr,
		"--data-dir", filepath.Join(dir, "data"))) // serve's own cluster secret is there
	if code := get("/v1/tier/segments", "alice", "alice-secret"); code != http.StatusForbidden {
		t.Errorf("alice without an ACL: %d, want 403", code)
	}
	wantOK(t, run(t, nil, "acl", "add", "--allow", "User:alice", "--operation", "DESCRIBE", "--cluster", "--controller", ctlAddr, "--data-dir", filepath.Join(dir, "data")))
	deadline := time.Now().Add(20 * time.Second)
	for get("/v1/tier/segments", "alice", "alice-secret") == http.StatusForbidden {
		if time.Now().After(deadline) {
			t.Fatal("alice is still refused after her ACL was added")
		}
		time.Sleep(50 * time.Millisecond) // the ACL refresh is asynchronous
	}
	if !strings.Contains(p.logText(), `msg="operation denied"`) || !strings.Contains(p.logText(), "principal=User:alice") {
		t.Error("no audit line for alice's denial")
	}

	// Native, over SASL_SSL.
	secure := []string{"--server", nativeAddr, "--tls-ca", pki.CAFile, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "admin"}
	pw := []string{"AEROSTREAM_SASL_PASSWORD=admin-secret"}
	wantOK(t, run(t, pw, append([]string{"create-topic", "orders", "1", "1"}, secure...)...))
	wantOK(t, run(t, pw, append([]string{"produce", "orders", "0", "hello-secure"}, secure...)...))
	wantOK(t, run(t, pw, append([]string{"consume", "orders", "0", "0", "-n", "1"}, secure...)...), "hello-secure")
	r := run(t, []string{"AEROSTREAM_SASL_PASSWORD=wrong"}, append([]string{"produce", "orders", "0", "x"}, secure...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("a wrong native password: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, nil, "produce", "orders", "0", "x", "--server", nativeAddr, "--tls-ca", pki.CAFile)
	if r.code == 0 {
		t.Errorf("native without SASL on a SASL_SSL listener: exit 0")
	}
}

// runStdin is run with stdin.
func runStdin(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = cleanEnv(env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}
