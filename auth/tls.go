package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
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
	Logger     *slog.Logger
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
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   modernSuites,
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
