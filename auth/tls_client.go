package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Internal links (the shard ring, controller Raft and the controller's
// client API) authenticate both ways with the node certificate: each side
// presents tls.cert_file and checks the other against tls.ca_file.

// InternalServerTLS is the tls.Config of an internal listener: ServerTLS
// with client certificates required and verified against o.CAFile, which
// must be set, whatever o.ClientAuth says (that key is for Kafka clients).
func InternalServerTLS(o TLSOptions) (*tls.Config, error) {
	if o.CAFile == "" {
		return nil, fmt.Errorf("%w: tls.ca_file is required by mutual TLS on internal links", ErrInvalid)
	}
	o.ClientAuth = "required"
	return ServerTLS(o)
}

// ClientTLS is the tls.Config an internal link dials with: it presents
// o.CertFile and o.KeyFile, re-read when they change as ServerTLS's are,
// and verifies the server against o.CAFile (which must be set). The
// server name is the caller's to set per address, or taken from the
// dialled host by tls.Dial.
func ClientTLS(o TLSOptions) (*tls.Config, error) { return clientTLS(o, time.Second) }

func clientTLS(o TLSOptions, statEvery time.Duration) (*tls.Config, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CAFile == "" {
		return nil, fmt.Errorf("%w: tls.ca_file is required by mutual TLS on internal links", ErrInvalid)
	}
	pool, err := loadPool(o.CAFile)
	if err != nil {
		return nil, err
	}
	r := &certReloader{certFile: o.CertFile, keyFile: o.KeyFile, log: o.Logger, statEvery: statEvery}
	if err := r.load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: modernSuites,
		RootCAs:      pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.get(nil)
		},
	}, nil
}

// loadPool reads a PEM CA bundle.
func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: tls.ca_file %s holds no PEM certificate", ErrInvalid, file)
	}
	return pool, nil
}
