package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a CA and the files of one server certificate it signed.
type PKI struct {
	Dir                       string
	CAFile, CertFile, KeyFile string // ca.pem, server.pem, server-key.pem

	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// NewPKI writes ca.pem, and server.pem and server-key.pem for 127.0.0.1,
// ::1 and localhost, into dir.
func NewPKI(dir string) (*PKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "aerostream test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"),
		KeyFile: filepath.Join(dir, "server-key.pem"), caCert: ca, caKey: key}
	if err := writePEM(p.CAFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return p, p.Issue("aerostream test server", 2)
}

// Issue writes a new server certificate (serial number serial, common name
// cn) over server.pem and server-key.pem, as a certificate renewal does.
func (p *PKI) Issue(cn string, serial int64) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	// The key first: a reader that sees the new certificate with the old
	// key keeps its current pair until both agree.
	if err := writePEM(p.KeyFile, "EC PRIVATE KEY", kder); err != nil {
		return err
	}
	return writePEM(p.CertFile, "CERTIFICATE", der)
}

// Pool is a cert pool holding the CA.
func (p *PKI) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	return pool
}

func writePEM(path, typ string, der []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// IssueClient writes a client certificate for common name cn, signed by
// the CA, as <cn>.pem and <cn>-key.pem, and returns their paths.
func (p *PKI) IssueClient(cn string, serial int64) (certFile, keyFile string, err error) {
	return p.IssueClientName(pkix.Name{CommonName: cn}, serial)
}

// IssueClientName is IssueClient for a whole subject, named after its
// common name.
func (p *PKI) IssueClientName(subject pkix.Name, serial int64) (certFile, keyFile string, err error) {
	cn := subject.CommonName
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(p.Dir, cn+".pem"), filepath.Join(p.Dir, cn+"-key.pem")
	if err := writePEM(keyFile, "EC PRIVATE KEY", kder); err != nil {
		return "", "", err
	}
	return certFile, keyFile, writePEM(certFile, "CERTIFICATE", der)
}
