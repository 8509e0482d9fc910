package auth

import (
	"crypto/tls"
	"testing"

	"github.com/aerostream/aerostream/auth/authtest"
)

// mtlsPeer serves ln with cfg and reports the common name of each
// client certificate it verifies.
func mtlsPeer(t *testing.T, cfg *tls.Config) (string, <-chan string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	seen := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil {
				seen <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
				_, _ = tc.Write([]byte{1})
			}
			tc.Close()
		}
	}()
	return ln.Addr().String(), seen
}

// TestClientTLSPresentsRenewedCertificate: an internal client presents the
// node certificate, and a renewed one from the next handshake on.
func TestClientTLSPresentsRenewedCertificate(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := InternalServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	addr, seen := mtlsPeer(t, srv)
	cl, err := clientTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile}, 0)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() {
		t.Helper()
		c, err := tls.Dial("tcp", addr, cl)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The server's verdict on the client certificate arrives after
		// the client's side of a TLS 1.3 handshake: read its byte.
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	}
	dial()
	if cn := <-seen; cn != "aerostream test server" {
		t.Fatalf("first client certificate: %q", cn)
	}
	if err := pki.Issue("renewed node", 5); err != nil {
		t.Fatal(err)
	}
	dial()
	if cn := <-seen; cn != "renewed node" {
		t.Fatalf("after renewal the client presented %q", cn)
	}
}

// TestInternalTLSNeedsCA: mutual TLS without a CA to verify against is a
// configuration error, on either side.
func TestInternalTLSNeedsCA(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InternalServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile}); err == nil {
		t.Error("server without ca_file accepted")
	}
	if _, err := ClientTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile}); err == nil {
		t.Error("client without ca_file accepted")
	}
	if _, err := ClientTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.KeyFile}); err == nil {
		t.Error("a key as ca_file accepted")
	}
}
