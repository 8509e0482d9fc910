package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/tools/config"
)

// internalTLS secures a process's internal links: the shard ring when
// listeners.ring says SSL://, the controller when listeners.controller
// does. Both sides of a link present tls.cert_file and verify the other's
// certificate against tls.ca_file, so only the cluster's nodes (and
// operators holding a certificate of its CA) reach a store's shards, Raft
// or the controller's client API. A nil config is plaintext.
//
// ctlSecret is the cluster secret of auth.controller_secret_file, which the
// controller requires of its clients and they present (nil: none);
// ctlOldSecrets are the file's further lines, which a controller still
// accepts during a rotation.
type internalTLS struct {
	ringServer, ringClient *tls.Config
	ctlServer, ctlClient   *tls.Config
	ctlSecret              []byte
	ctlOldSecrets          [][]byte
}

// newInternalTLS loads the [tls] files the internal links need, so a bad
// file stops the process at start.
func newInternalTLS(cfg config.Config, logger *slog.Logger) (internalTLS, error) {
	var t internalTLS
	o := auth.TLSOptions{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, CAFile: cfg.TLS.CAFile, Logger: logger}
	var err error
	if cfg.RingTLS() {
		if t.ringServer, err = auth.InternalServerTLS(o); err != nil {
			return t, fmt.Errorf("listeners.ring: %w", err)
		}
		if t.ringClient, err = auth.ClientTLS(o); err != nil {
			return t, fmt.Errorf("listeners.ring: %w", err)
		}
	}
	if cfg.ControllerTLS() {
		if t.ctlServer, err = auth.InternalServerTLS(o); err != nil {
			return t, fmt.Errorf("listeners.controller: %w", err)
		}
		if t.ctlClient, err = auth.ClientTLS(o); err != nil {
			return t, fmt.Errorf("listeners.controller: %w", err)
		}
	}
	if t.ctlSecret, t.ctlOldSecrets, err = readClusterSecret("auth.controller_secret_file", cfg.Auth.ControllerSecretFile); err != nil {
		return t, err
	}
	return t, nil
}

// readClusterSecret reads the cluster secret from path (key names where it
// came from, for the error); "" is none. The first non-empty line is the
// secret; further lines are older secrets a controller still accepts, for
// a rolling rotation. Surrounding whitespace, as echo and editors leave,
// is not part of a secret.
func readClusterSecret(key, path string) (secret []byte, old [][]byte, err error) {
	if path == "" {
		return nil, nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", key, err)
	}
	var secrets [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			secrets = append(secrets, line)
		}
	}
	if len(secrets) == 0 {
		return nil, nil, fmt.Errorf("%s %s: the file is empty: write the cluster secret in it (openssl rand -hex 32)", key, path)
	}
	for _, s := range secrets {
		if err := controller.CheckClusterSecret(s); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", key, path, err)
		}
	}
	return secrets[0], secrets[1:], nil
}

// localSecretFile is where, in its data_dir, serve keeps the cluster
// secret it makes for itself once security is on without
// auth.controller_secret_file.
const localSecretFile = "controller.secret"

// ensureLocalClusterSecret returns <dataDir>/controller.secret, made with a
// random secret on the first call (created); a later start reuses it, so
// the CLI's copy stays good. The file is the whole credential of the
// controller's API, so it is refused if others may read it.
func ensureLocalClusterSecret(dataDir string) (path string, created bool, err error) {
	path = filepath.Join(dataDir, localSecretFile)
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if fi.Mode().Perm()&0o077 != 0 {
			return "", false, fmt.Errorf("%s: mode %v lets other users read the cluster secret: chmod 600 %s", path, fi.Mode().Perm(), path)
		}
		return path, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("the cluster secret: %w", err)
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	// Written aside and renamed, so a crash leaves no empty secret file.
	tmp, err := os.CreateTemp(dataDir, "."+localSecretFile+"-*") // mode 0600
	if err != nil {
		return "", false, fmt.Errorf("the cluster secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", false, fmt.Errorf("the cluster secret: %w", err)
	}
	return path, true, nil
}

// ringDial dials other stores' rings over mutual TLS; nil, the dialers'
// own plaintext default, when the ring is plaintext.
func (t internalTLS) ringDial(timeout time.Duration, logger *slog.Logger) kmeta.DialFunc {
	if t.ringClient == nil {
		return nil
	}
	return func(ctx context.Context, addr string) (ring.Backend, error) {
		return ring.Dial(ctx, addr, ring.DialOptions{DialTimeout: timeout, Logger: logger, TLS: t.ringClient})
	}
}

// controllerClient is a client of the controllers at addrs, over mutual
// TLS when the controller link is, presenting the cluster secret when
// there is one.
func (t internalTLS) controllerClient(addrs []string, logger *slog.Logger) *controller.Client {
	return controller.NewClient(addrs, controller.ClientOptions{Logger: logger, TLS: t.ctlClient, ClusterSecret: t.ctlSecret})
}

// controllers parses --controller: the addresses, and the TLS to reach
// them with when they say SSL:// (nil for plaintext), from --tls-cert,
// --tls-key and --tls-ca or the [tls] keys' environment variables, so a
// shell set up for a node works as is.
func (f *clientFlags) controllers() ([]string, *tls.Config, error) {
	var list []string
	secure := 0
	for _, a := range splitAddrs(f.addrs) {
		proto, addr, err := config.SplitListener(a)
		if err != nil || proto != config.Plaintext && proto != config.SSL {
			return nil, nil, usageError{fmt.Errorf("--controller %q: want host:port or SSL://host:port", a)}
		}
		if proto == config.SSL {
			secure++
		}
		list = append(list, addr)
	}
	switch {
	case len(list) == 0:
		return nil, nil, usageError{errors.New("--controller is empty")}
	case secure == 0:
		return list, nil, nil
	case secure < len(list):
		return nil, nil, usageError{errors.New("--controller mixes SSL:// and plaintext addresses: a controller cluster is one or the other")}
	}
	cert, key, ca := orEnv(f.tlsCert, "tls.cert_file"), orEnv(f.tlsKey, "tls.key_file"), orEnv(f.tlsCA, "tls.ca_file")
	if cert == "" || key == "" || ca == "" {
		return nil, nil, usageError{errors.New("--controller SSL:// needs a client certificate of the cluster CA: give --tls-cert, --tls-key and --tls-ca (or AEROSTREAM_TLS_CERT_FILE, AEROSTREAM_TLS_KEY_FILE and AEROSTREAM_TLS_CA_FILE)")}
	}
	tc, err := auth.ClientTLS(auth.TLSOptions{CertFile: cert, KeyFile: key, CAFile: ca, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, fmt.Errorf("--controller SSL://: %w", err)
	}
	return list, tc, nil
}

// orEnv is v, or the environment variable of the config key when v is
// empty.
func orEnv(v, key string) string {
	if v != "" {
		return v
	}
	k, _ := config.Lookup(key)
	return os.Getenv(k.Env)
}
