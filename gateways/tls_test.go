package gateways

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

// syncBuffer is a log sink the server's goroutines write to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestServerTLSPrincipal serves a TLS listener that verifies client
// certificates when sent: a verified certificate's subject, mapped by the
// rules, is the connection's principal; a client without one is
// anonymous; a certificate no rule maps, a client that does not speak TLS
// and one that never finishes its handshake each lose their own
// connection, with a log line, while the others carry on.
func TestServerTLSPrincipal(t *testing.T) {
	defer goleak.VerifyNone(t)
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, ClientAuth: "requested"})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := auth.ParsePrincipalMappingRules("RULE:^CN=([^,]+),OU=eng,O=corp$/$1/L")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	s := &Server{Name: "test", Protocol: &lineProto{}, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Principals: rules, HandshakeTimeout: 500 * time.Millisecond}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := raw.Addr().String()
	_, stop := startServerOn(t, s, tls.NewListener(raw, tc))
	defer stop()

	clientTLS := func(cn string, subject pkix.Name) *tls.Config {
		c := &tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1"}
		if cn != "" {
			subject.CommonName = cn
			cert, key, err := pki.IssueClientName(subject, int64(len(cn)+10))
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return c
	}
	whoami := func(c *tls.Config) (string, error) {
		nc, err := tls.Dial("tcp", addr, c)
		if err != nil {
			return "", err
		}
		cl := &client{t, nc}
		_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
		defer nc.Close()
		cl.send([]byte("whoami"))
		return cl.recv()
	}
	eng := pkix.Name{OrganizationalUnit: []string{"eng"}, Organization: []string{"corp"}}
	if got, err := whoami(clientTLS("Alice", eng)); err != nil || got != MechanismTLS+"/alice" {
		t.Errorf("alice's certificate: %q, %v", got, err)
	}
	if got, err := whoami(clientTLS("", pkix.Name{})); err != nil || got != "/ANONYMOUS" {
		t.Errorf("no certificate: %q, %v", got, err)
	}
	// No rule maps bob's subject (and there is no DEFAULT): refused.
	if got, err := whoami(clientTLS("bob", pkix.Name{OrganizationalUnit: []string{"sales"}})); err == nil {
		t.Errorf("bob's unmapped certificate was served as %q", got)
	}

	// Kafka bytes on the TLS port, and a client that sends nothing: each
	// connection ends; a TLS client connected beside them is served.
	plain := dial(t, addr)
	plain.send([]byte("whoami"))
	stalled := dial(t, addr)
	for _, c := range []*client{plain, stalled} {
		if _, err := io.ReadAll(c.nc); err != nil && !isReset(err) {
			t.Errorf("a client that does not finish a handshake: %v", err)
		}
	}
	// A TCP probe opens and closes without a byte: no failure counted.
	probe := dial(t, addr)
	_ = probe.nc.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "connection closed before a TLS handshake"); {
		if time.Now().After(deadline) {
			t.Fatalf("the probe's close was not seen as one:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := whoami(clientTLS("Alice", eng)); err != nil || got != MechanismTLS+"/alice" {
		t.Errorf("alice after the failed handshakes: %q, %v", got, err)
	}
	for _, want := range []string{
		"first record does not look like a TLS handshake",
		"no TLS handshake within 500ms",
		"no principal mapping rule applies",
	} {
		if !strings.Contains(logs.String(), `msg="TLS handshake failed, closing connection"`) || !strings.Contains(logs.String(), want) {
			t.Errorf("no handshake failure logged with %q:\n%s", want, logs.String())
		}
	}
	if n := s.Stats().HandshakeErrors; n != 3 {
		t.Errorf("HandshakeErrors = %d, want 3", n)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}
