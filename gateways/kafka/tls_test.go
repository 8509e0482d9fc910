package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, tls.NewListener(raw, tc)) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
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
