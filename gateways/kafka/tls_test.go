package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

// TestSASLSSLListener serves a gateway on a TLS listener made as
// tools/cli makes it: a client that does not speak TLS is dropped while
// TLS clients carry on, and a certificate renewed on disk is served to
// new connections while a connected client keeps working.
func TestSASLSSLListener(t *testing.T) {
	e := newTestEnv(t)
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := auth.NewAuthorizer(false, nil)
	sec := newMemSecurity(z)
	sec.addUser(t, "alice", "alice-secret")
	gw, err := New(Options{Backend: e.backend, Cluster: e.cluster, Logger: quietLogger(), AdvertisedAddr: raw.Addr().String(),
		AutoCreateTopics: true, OffsetsPartitions: 4,
		Auth: AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: sec.lookup, Security: sec}})
	if err != nil {
		t.Fatal(err)
	}
	serveTLS(t, gw, raw, tc)
	addr := raw.Addr().String()
	clientTLS := func() *tls.Config { return &tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1"} }
	alice := newClient(t, addr, kgo.DialTLSConfig(clientTLS()), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("tls"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	tctx := testCtx(t)
	createTopic(t, alice, "tls", 1)
	if err := alice.ProduceSync(tctx, &kgo.Record{Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("produce over SASL_SSL: %v", err)
	}

	// Plain Kafka bytes on the TLS port: that connection ends.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("plaintext on the TLS port: %v", err)
	}

	// Renewal: a new client sees the new certificate; alice carries on.
	if err := pki.Issue("renewed", 7); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, clientTLS())
		if err != nil {
			t.Fatal(err)
		}
		cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName
		conn.Close()
		if cn == "renewed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q 30s after the renewal", cn)
		}
		// The reloader looks at the files at most once a second.
		time.Sleep(100 * time.Millisecond)
	}
	if err := alice.ProduceSync(tctx, &kgo.Record{Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatalf("produce after the renewal: %v", err)
	}
}

// TestSASLReplacesCertificatePrincipal: on a SASL_SSL listener that
// requires client certificates, SASL's principal wins over the
// certificate's, as in Kafka: a client holding alice's certificate but
// authenticated as bob is refused what an ACL grants alice's certificate
// principal, and allowed it once bob has the ACL.
func TestSASLReplacesCertificatePrincipal(t *testing.T) {
	e := newTestEnv(t)
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, ClientAuth: "required"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := auth.NewAuthorizer(true, []string{"User:admin"})
	sec := newMemSecurity(z)
	sec.addUser(t, "admin", "admin-secret")
	sec.addUser(t, "bob", "bob-secret")
	gw, err := New(Options{Backend: e.backend, Cluster: e.cluster, Logger: quietLogger(), AdvertisedAddr: raw.Addr().String(),
		OffsetsPartitions: 4,
		Auth:              AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: sec.lookup, Security: sec, Authorizer: z}})
	if err != nil {
		t.Fatal(err)
	}
	serveTLS(t, gw, raw, tc)
	cert, key, err := pki.IssueClient("alice", 20)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	aliceCert := kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}})
	addr, tctx := raw.Addr().String(), testCtx(t)
	admin := newClient(t, addr, aliceCert, kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()))
	createTopic(t, admin, "certs", 1)
	allow := func(principal string) {
		if _, err := sec.CreateACLs(tctx, []auth.ACL{{Principal: principal, Host: "*", Operation: auth.OpWrite, Permission: auth.Allow,
			ResourceType: auth.ResourceTopic, ResourceName: "certs", PatternType: auth.PatternLiteral}}); err != nil {
			t.Fatal(err)
		}
	}
	allow("User:CN=alice")
	bob := newClient(t, addr, aliceCert, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("certs"), kgo.RecordRetries(2))
	if err := bob.ProduceSync(tctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob with alice's certificate, under alice's ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	allow("User:bob")
	bob2 := newClient(t, addr, aliceCert, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("certs"))
	if err := bob2.ProduceSync(tctx, &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("bob with his own ACL: %v", err)
	}
}

// serveTLS serves gw on raw wrapped in TLS until the test ends.
func serveTLS(t *testing.T, gw *Gateway, raw net.Listener, tc *tls.Config) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, tls.NewListener(raw, tc)) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
