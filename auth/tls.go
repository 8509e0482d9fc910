package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TLSOptions configure a server TLS configuration.
type TLSOptions struct {
	CertFile, KeyFile string
	// CAFile verifies client certificates; "" uses the system roots.
	CAFile string
	// ClientAuth is Kafka's ssl.client.auth: "none" (or ""), "requested"
	// or "required".
	ClientAuth string
	// CipherSuites and Protocols are Kafka's ssl.cipher.suites and
	// ssl.enabled.protocols, by the names Kafka writes; empty = all
	// that ParseCipherSuites and ParseTLSProtocols accept.
	CipherSuites, Protocols []string
	Logger                  *slog.Logger
}

// modernSuites are the TLS 1.2 suites allowed: forward-secret ECDHE with
// an AEAD cipher only. TLS 1.3's suites are all modern and not
// configurable.
var modernSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// tls13Suites are TLS 1.3's suites. Go's server picks among them itself
// (AES-128-GCM first where the CPU has AES instructions and the client
// prefers AES), so they are allowed all together or not at all.
var tls13Suites = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}

// tlsVersions are the protocol versions served, by Kafka's names.
var tlsVersions = []struct {
	name string
	v    uint16
}{{"TLSv1.2", tls.VersionTLS12}, {"TLSv1.3", tls.VersionTLS13}}

// ParseTLSProtocols checks Kafka's ssl.enabled.protocols names and
// returns the range of versions they span: TLSv1.2 and TLSv1.3 (both when
// names is empty). Older versions are refused by name, not ignored, so a
// configuration copied from a broker that allowed them says so.
func ParseTLSProtocols(names []string) (lo, hi uint16, err error) {
	if len(names) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, n := range names {
		var v uint16
		for _, k := range tlsVersions {
			if n == k.name {
				v = k.v
			}
		}
		switch {
		case v != 0:
		case n == "TLSv1" || n == "TLSv1.1" || n == "SSLv3":
			return 0, 0, fmt.Errorf("%w: %q is not served: TLS before 1.2 is insecure (want TLSv1.2, TLSv1.3)", ErrInvalid, n)
		default:
			return 0, 0, fmt.Errorf("%w: unknown protocol %q (want TLSv1.2, TLSv1.3)", ErrInvalid, n)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// ParseCipherSuites checks Kafka's ssl.cipher.suites names (the IANA
// names, as Java writes them) against the suites served, and narrows the
// version range [lo, hi] to the versions they leave usable: without the
// TLS 1.3 suites TLS 1.3 is off, without a TLS 1.2 suite TLS 1.2 is. It
// returns the TLS 1.2 suites to configure, nil when names is empty (every
// modern suite).
func ParseCipherSuites(names []string, lo, hi uint16) (suites []uint16, newLo, newHi uint16, err error) {
	if len(names) == 0 {
		return nil, lo, hi, nil
	}
	var n13 int
	seen := map[uint16]bool{}
	for _, n := range names {
		id, ok := suiteByName(n)
		if !ok {
			return nil, 0, 0, fmt.Errorf("%w: unknown or insecure cipher suite %q (want some of %s)", ErrInvalid, n, strings.Join(servedSuiteNames(), ", "))
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if slices.Contains(tls13Suites, id) {
			n13++
		} else {
			suites = append(suites, id)
		}
	}
	if n13 > 0 && n13 < len(tls13Suites) {
		return nil, 0, 0, fmt.Errorf("%w: name all three TLS 1.3 suites (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256) or none, which turns TLS 1.3 off: Go's TLS 1.3 server chooses among them itself", ErrInvalid)
	}
	if n13 == 0 {
		hi = min(hi, tls.VersionTLS12)
	}
	if len(suites) == 0 {
		lo = max(lo, tls.VersionTLS13)
	}
	if lo > hi {
		return nil, 0, 0, fmt.Errorf("%w: no suite named is usable with the enabled protocols", ErrInvalid)
	}
	return suites, lo, hi, nil
}

// suiteByName finds a served suite by its IANA name.
func suiteByName(name string) (uint16, bool) {
	for _, id := range append(slices.Clone(modernSuites), tls13Suites...) {
		if tls.CipherSuiteName(id) == name {
			return id, true
		}
	}
	return 0, false
}

func servedSuiteNames() []string {
	var s []string
	for _, id := range append(slices.Clone(tls13Suites), modernSuites...) {
		s = append(s, tls.CipherSuiteName(id))
	}
	return s
}

// ServerTLS builds the tls.Config of a TLS listener. The certificate is
// loaded now (a bad file is an error at start, not at the first
// handshake) and re-read by handshakes that find the files changed, so
// renewing a certificate needs no restart; a renewal that does not load
// keeps the previous certificate, with a log line.
func ServerTLS(o TLSOptions) (*tls.Config, error) { return serverTLS(o, time.Second) }

func serverTLS(o TLSOptions, statEvery time.Duration) (*tls.Config, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &certReloader{certFile: o.CertFile, keyFile: o.KeyFile, log: o.Logger, statEvery: statEvery}
	if err := r.load(); err != nil {
		return nil, err
	}
	lo, hi, err := ParseTLSProtocols(o.Protocols)
	if err != nil {
		return nil, fmt.Errorf("tls.enabled_protocols: %w", err)
	}
	suites, lo, hi, err := ParseCipherSuites(o.CipherSuites, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("tls.cipher_suites: %w", err)
	}
	if len(o.CipherSuites) == 0 {
		suites = modernSuites
	}
	cfg := &tls.Config{
		MinVersion:     lo,
		MaxVersion:     hi,
		CipherSuites:   suites,
		GetCertificate: r.get,
	}
	switch o.ClientAuth {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("%w: client_auth %q (want none, requested or required)", ErrInvalid, o.ClientAuth)
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: tls.ca_file %s holds no PEM certificate", ErrInvalid, o.CAFile)
		}
		cfg.ClientCAs = pool
	}
	return cfg, nil
}

// certReloader serves the certificate of two files, re-reading them when
// their modification time or size changes. Handshakes look at most once a
// second, so a busy listener does not stat the files for each.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	statEvery         time.Duration

	mu struct {
		sync.Mutex
		cert       *tls.Certificate
		stamp      string
		lastStatAt time.Time
	}
}

func fileStamp(paths ...string) (string, error) {
	s := ""
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		// The inode too: file times can be coarser than two quick
		// renewals, and a rename into place changes it.
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		s += fmt.Sprintf("%d/%d/%d;", fi.ModTime().UnixNano(), fi.Size(), ino)
	}
	return s, nil
}

func (r *certReloader) load() error {
	stamp, err := fileStamp(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: cert_file %s, key_file %s: %w", r.certFile, r.keyFile, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.cert, r.mu.stamp, r.mu.lastStatAt = &cert, stamp, time.Now()
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.mu.lastStatAt) < r.statEvery {
		return r.mu.cert, nil
	}
	r.mu.lastStatAt = time.Now()
	stamp, err := fileStamp(r.certFile, r.keyFile)
	if err != nil || stamp == r.mu.stamp {
		return r.mu.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		// Often the certificate is replaced before its key: keep the old
		// pair until both files agree.
		r.log.Warn("tls: keeping the current certificate: the new files do not load", "cert_file", r.certFile, "err", err)
		return r.mu.cert, nil
	}
	r.mu.cert, r.mu.stamp = &cert, stamp
	r.log.Info("tls: certificate reloaded", "cert_file", r.certFile)
	return r.mu.cert, nil
}
