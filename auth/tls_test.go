package auth

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth/authtest"
)

// handshake dials ln with TLS and returns the server certificate's common
// name.
func handshake(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestCertificateReload: a renewed certificate is served to the next
// handshake without a restart, and a connection made before keeps going.
func TestCertificateReload(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := serverTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile}, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	client := &tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1"}
	old, err := tls.Dial("tcp", addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if cn := old.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "aerostream test server" {
		t.Fatalf("first certificate: %q", cn)
	}
	if err := pki.Issue("renewed", 3); err != nil {
		t.Fatal(err)
	}
	cn, err := handshake(t, addr, client)
	if err != nil || cn != "renewed" {
		t.Fatalf("after renewal: %q %v", cn, err)
	}
	if cs := old.ConnectionState(); !cs.HandshakeComplete {
		t.Error("the earlier connection lost its session")
	}
}

// TestTLSOnlyModernSuites: a client offering only legacy suites (CBC, no
// forward secrecy) or TLS 1.1 is refused.
func TestTLSOnlyModernSuites(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	for name, c := range map[string]*tls.Config{
		"cbc":     {RootCAs: pki.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
		"tls 1.1": {RootCAs: pki.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS11},
	} {
		if _, err := handshake(t, addr, c); err == nil {
			t.Errorf("%s: handshake succeeded", name)
		}
	}
	if _, err := handshake(t, addr, &tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12}); err != nil {
		t.Errorf("TLS 1.2 with modern suites: %v", err)
	}
}

func TestServerTLSBadFiles(t *testing.T) {
	if _, err := ServerTLS(TLSOptions{CertFile: "/nonexistent.pem", KeyFile: "/nonexistent-key.pem"}); err == nil {
		t.Error("missing files accepted")
	}
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, ClientAuth: "always"}); err == nil {
		t.Error("bad client_auth accepted")
	}
	if _, err := ServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.KeyFile}); err == nil {
		t.Error("a key as ca_file accepted")
	}
}
