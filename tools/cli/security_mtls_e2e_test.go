package cli_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/auth/authtest"
	"github.com/aerostream/aerostream/gateways/native/client"
)

// TestClientCertificatePrincipals: serve with SSL:// Kafka and native
// listeners, tls.client_auth = "required", a principal mapping rule and
// the authorizer on. Each client is the principal its certificate names:
// CN=Admin,OU=eng,O=corp maps to User:admin (the super user), who creates
// a topic and lets User:alice (CN=Alice,OU=eng,O=corp) write it; bob's
// certificate matches no rule but DEFAULT, so he is his full DN, which no
// ACL names: his produce gets TOPIC_AUTHORIZATION_FAILED on both
// protocols and the audit lines name that DN. The node certificate
// (CN=aerostream test server) is a super user, as Kafka's inter-broker
// principal is: the native gateway's own Kafka client presents it. The
// HTTP listener names each certificate by the same rules.
func TestClientCertificatePrincipals(t *testing.T) {
	dir := t.TempDir()
	pki, err := authtest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	kafkaAddr, nativeAddr, httpAddr, ctlAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "mtls.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
kafka = "SSL://`+kafkaAddr+`"
native = "SSL://`+nativeAddr+`"
[tls]
cert_file = "`+pki.CertFile+`"
key_file = "`+pki.KeyFile+`"
ca_file = "`+pki.CAFile+`"
client_auth = "required"
principal_mapping_rules = 'RULE:^CN=([^,]+),OU=eng,O=corp$/$1/L, DEFAULT'
[auth]
authorizer = true
super_users = ["User:admin", "User:CN=aerostream test server"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, []string{"AEROSTREAM_LISTENERS_HTTP=SSL://" + httpAddr}, "serve", "--config", conf, "--data-dir", filepath.Join(dir, "data"),
		"--ring-listen", "127.0.0.1:0", "--controller-listen", ctlAddr)
	p.waitFor(t, `msg=running`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	certTLS := func(cn, ou string) *tls.Config {
		t.Helper()
		cert, key, err := pki.IssueClientName(pkix.Name{CommonName: cn, OrganizationalUnit: []string{ou}, Organization: []string{"corp"}}, time.Now().UnixNano())
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: pki.Pool(), Certificates: []tls.Certificate{pair}}
	}
	adminTLS, aliceTLS, bobTLS := certTLS("Admin", "eng"), certTLS("Alice", "eng"), certTLS("bob", "sales")
	kclient := func(tc *tls.Config) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DialTLSConfig(tc), kgo.RecordRetries(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	admin := kadm.NewClient(kclient(adminTLS))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatalf("the super user (by certificate) creates a topic: %v", err)
	}
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("create ACL: %v", err)
	}

	// The ACL reaches the gateway's authorizer asynchronously.
	alice := kclient(aliceTLS)
	for deadline := time.Now().Add(20 * time.Second); ; {
		err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("alice")}).FirstErr()
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) || time.Now().After(deadline) {
			t.Fatalf("alice (CN=Alice,OU=eng,O=corp) produces with her ACL: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	bobDN := `principal="User:CN=bob,OU=sales,O=corp"`
	err = kclient(bobTLS).ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("bob")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if !p.audited(false, bobDN, "resource=orders") { // kgo asks Metadata first: DESCRIBE is refused
		t.Errorf("no Kafka audit line with %s:\n%s", bobDN, p.logText())
	}

	// The native listener shares the connection server. Its producers are
	// idempotent: the gateway asks the Kafka listener for their ids with
	// its own client, which presents the node certificate (a super user).
	nproduce := func(tc *tls.Config, who string) error {
		cl, err := client.Dial(ctx, nativeAddr, client.Options{TLS: tc})
		if err != nil {
			return err
		}
		defer cl.Close()
		pr := client.NewProducer(cl, client.ProducerOptions{})
		defer pr.Close(ctx)
		return pr.ProduceSync(ctx, &client.Record{Topic: "orders", Value: []byte(who)})
	}
	if err := nproduce(aliceTLS, "alice"); err != nil {
		t.Errorf("alice over the native protocol: %v", err)
	}
	if err := nproduce(bobTLS, "bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob over the native protocol: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if !p.audited(true, bobDN, "resource=orders") {
		t.Errorf("no native audit line with %s:\n%s", bobDN, p.logText())
	}

	// The HTTP listener maps the same certificates by the same rules:
	// alice is User:alice (WRITE implies DESCRIBE), bob his full DN.
	hget := func(tc *tls.Config, path string) (int, string) {
		t.Helper()
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + httpAddr + path)
		if err != nil {
			t.Fatalf("%v\n%s", err, p.logText())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := hget(aliceTLS, "/api/topics/orders"); code != http.StatusOK {
		t.Errorf("alice over HTTP: %d %s, want 200 as User:alice", code, body)
	}
	if code, body := hget(bobTLS, "/api/topics/orders"); code != http.StatusForbidden || !strings.Contains(body, "User:CN=bob,OU=sales,O=corp may not") {
		t.Errorf("bob over HTTP: %d %s, want 403 naming User:CN=bob,OU=sales,O=corp\n%s", code, body, p.logText())
	}
}
