package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/auth/authtest"
	"github.com/aerostream/aerostream/tools/config"
)

// TestWarnAnonymous: with the authorizer on, a listener that takes client
// certificates does not claim every client is User:ANONYMOUS; one that
// only requests them says a client without one is.
func TestWarnAnonymous(t *testing.T) {
	for _, c := range []struct {
		addr, clientAuth string
		sasl             bool
		want             string // "" is silence
	}{
		{"PLAINTEXT://127.0.0.1:9092", "required", false, "every client is User:ANONYMOUS"},
		{"SSL://127.0.0.1:9092", "none", false, "every client is User:ANONYMOUS"},
		{"SSL://127.0.0.1:9092", "required", false, ""},
		{"SSL://127.0.0.1:9092", "requested", false, "a client that sends none is User:ANONYMOUS"},
		{"SASL_PLAINTEXT://127.0.0.1:9092", "none", true, ""},
	} {
		var buf bytes.Buffer
		cfg := config.Default()
		cfg.Auth.Authorizer = true
		cfg.TLS.ClientAuth = c.clientAuth
		warnAnonymous(cfg, "listeners.kafka", c.addr, c.sasl, slog.New(slog.NewTextHandler(&buf, nil)))
		got := buf.String()
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s, client_auth %s: logged %q, want %q", c.addr, c.clientAuth, got, c.want)
		}
	}
}

// TestInternalKafkaClientCert: on an SSL:// Kafka listener that requires
// client certificates, this process's own Kafka client presents the node
// certificate, and a refusal names its mapped principal and
// auth.super_users.
func TestInternalKafkaClientCert(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listeners.Kafka = "SSL://127.0.0.1:9092"
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.CAFile = pki.CertFile, pki.KeyFile, pki.CAFile
	cfg.TLS.ClientAuth = "required"
	cfg.TLS.PrincipalMappingRules = `RULE:^CN=aerostream (.*?)$/node-$1/, DEFAULT`

	ln, err := tlsListener(cfg, "listeners.kafka", cfg.Listeners.Kafka, mustListen(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peer <- err.Error()
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			peer <- err.Error()
			return
		}
		peer <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}()
	cl, err := kgo.NewClient(append(mustOpts(t, cfg), kgo.SeedBrokers(ln.Addr().String()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go cl.Ping(context.Background()) //nolint:errcheck // the listener only handshakes
	if got := <-peer; got != "aerostream test server" {
		t.Errorf("the Kafka listener saw client certificate %q, want the node's", got)
	}

	err = internalRefused(cfg, fmt.Errorf("init producer id: %w", kerr.ClusterAuthorizationFailed))
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) || !strings.Contains(err.Error(), "User:node-test server") ||
		!strings.Contains(err.Error(), "auth.super_users") {
		t.Errorf("refusal: %v, want CLUSTER_AUTHORIZATION_FAILED naming User:node-test server and auth.super_users", err)
	}
	if err := internalRefused(cfg, kerr.CoordinatorNotAvailable); err != kerr.CoordinatorNotAvailable {
		t.Errorf("a refusal other than authorization is kept as is: %v", err)
	}
	// The admin API's group calls name it too.
	r := &remoteGroups{refused: func(err error) error { return internalRefused(cfg, err) }}
	if err := r.remoteErr(kerr.GroupAuthorizationFailed); !strings.Contains(fmt.Sprint(err), "User:node-test server") {
		t.Errorf("admin API group refusal: %v, want it to name User:node-test server", err)
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func mustOpts(t *testing.T, cfg config.Config) []kgo.Opt {
	t.Helper()
	opts, err := internalKafkaOpts(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestPresentsNodeCert: where the Kafka listener only requests client
// certificates, this process's client keeps a server-only node
// certificate to itself, since the listener would refuse it; where it
// requires them, the certificate goes, and a refusal then names it. A key
// before the certificate in tls.cert_file is passed over.
func TestPresentsNodeCert(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "server only"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	serverOnly := filepath.Join(dir, "server-only.pem")
	if err := os.WriteFile(serverOnly, append(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...), 0o600); err != nil {
		t.Fatal(err)
	}
	pki, err := authtest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cert, clientAuth string
		want             bool
	}{
		{pki.CertFile, "requested", true},
		{pki.CertFile, "none", false},
		{serverOnly, "requested", false},
		{serverOnly, "required", true},
	} {
		cfg := config.Default()
		cfg.Listeners.Kafka = "SSL://127.0.0.1:9092"
		cfg.TLS.CertFile, cfg.TLS.CAFile, cfg.TLS.ClientAuth = c.cert, pki.CAFile, c.clientAuth
		if got := presentsNodeCert(cfg); got != c.want {
			t.Errorf("%s, client_auth %s: presents = %v, want %v", filepath.Base(c.cert), c.clientAuth, got, c.want)
		}
		if c.want && c.cert == serverOnly {
			if p := internalPrincipal(cfg); p != "User:CN=server only" {
				t.Errorf("principal = %q", p)
			}
		}
	}
}
