package auth

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
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

// TestTLSPolicy: tls.enabled_protocols and tls.cipher_suites narrow what a
// listener negotiates, as Kafka's ssl.enabled.protocols and
// ssl.cipher.suites do, by the same names.
func TestTLSPolicy(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	client := func(lo, hi uint16, suites ...uint16) *tls.Config {
		return &tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1", MinVersion: lo, MaxVersion: hi, CipherSuites: suites}
	}
	for _, tc := range []struct {
		name              string
		suites, protocols []string
		ok                map[string]*tls.Config // client -> must connect
		refused           map[string]*tls.Config // client -> must fail
		version, suite    uint16                 // what the first ok client gets
	}{
		{
			name: "TLS 1.2 only", protocols: []string{"TLSv1.2"},
			ok:      map[string]*tls.Config{"any": client(0, 0)},
			refused: map[string]*tls.Config{"1.3": client(tls.VersionTLS13, 0)},
			version: tls.VersionTLS12,
		},
		{
			name: "TLS 1.3 only", protocols: []string{"TLSv1.3"},
			ok:      map[string]*tls.Config{"any": client(0, 0)},
			refused: map[string]*tls.Config{"1.2": client(0, tls.VersionTLS12)},
			version: tls.VersionTLS13,
		},
		{
			name: "one TLS 1.2 suite", suites: []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
			ok: map[string]*tls.Config{"any": client(0, 0)},
			refused: map[string]*tls.Config{
				"other suite": client(0, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
				"1.3":         client(tls.VersionTLS13, 0),
			},
			version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		},
		{
			name:    "TLS 1.3 suites only",
			suites:  []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"},
			ok:      map[string]*tls.Config{"any": client(0, 0)},
			refused: map[string]*tls.Config{"1.2": client(0, tls.VersionTLS12)},
			version: tls.VersionTLS13,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CipherSuites: tc.suites, Protocols: tc.protocols})
			if err != nil {
				t.Fatal(err)
			}
			addr := serveTLS(t, cfg)
			for name, c := range tc.ok {
				conn, err := tls.Dial("tcp", addr, c)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				cs := conn.ConnectionState()
				conn.Close()
				if cs.Version != tc.version || (tc.suite != 0 && cs.CipherSuite != tc.suite) {
					t.Errorf("%s: got %s %s", name, tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite))
				}
			}
			for name, c := range tc.refused {
				if _, err := handshake(t, addr, c); err == nil {
					t.Errorf("%s: handshake succeeded", name)
				}
			}
		})
	}
}

// TestTLSPolicyBadNames: a name Kafka would not know, a legacy suite or
// version, or a combination that leaves nothing usable is refused with
// the name in the error, at start rather than at the first handshake.
func TestTLSPolicyBadNames(t *testing.T) {
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		suites, protocols []string
		want              string
	}{
		{"unknown suite", []string{"TLS_FOO"}, nil, `"TLS_FOO"`},
		{"CBC suite", []string{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"}, nil, "insecure cipher suite"},
		{"OpenSSL name", []string{"ECDHE-RSA-AES128-GCM-SHA256"}, nil, `"ECDHE-RSA-AES128-GCM-SHA256"`},
		{"one TLS 1.3 suite", []string{"TLS_AES_256_GCM_SHA384"}, nil, "all three TLS 1.3 suites"},
		{"TLS 1.1", nil, []string{"TLSv1.2", "TLSv1.1"}, "TLS before 1.2 is insecure"},
		{"unknown version", nil, []string{"TLSv1.4"}, `unknown protocol "TLSv1.4"`},
		{"nothing usable", []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, []string{"TLSv1.3"}, "no suite named is usable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ServerTLS(TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CipherSuites: tc.suites, Protocols: tc.protocols})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}
