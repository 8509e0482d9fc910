package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/auth/authtest"
)

// TestMutualTLSInternalLinks: a controller, a store and a Kafka gateway,
// each its own process, with SSL:// on listeners.ring and
// listeners.controller: the store registers and serves its ring over
// mutual TLS, the gateway reaches both over it (a franz-go client
// produces and consumes through it), and the CLI reaches the controller
// with --controller SSL:// and a certificate of the cluster CA, and
// without one is refused with the reason.
func TestMutualTLSInternalLinks(t *testing.T) {
	dir := t.TempDir()
	pki, err := authtest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctlAddr, gwAddr := freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "cluster.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
ring = "SSL://127.0.0.1:0"
controller = "SSL://`+ctlAddr+`"
schema_registry = ""
http = ""
[tls]
cert_file = "`+pki.CertFile+`"
key_file = "`+pki.KeyFile+`"
ca_file = "`+pki.CAFile+`"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctl := start(t, nil, "controller", "--config", conf, "--data-dir", filepath.Join(dir, "c"), "--controller.bootstrap")
	ctl.waitFor(t, `msg=running`)
	store := start(t, nil, "store", "--config", conf, "--data-dir", filepath.Join(dir, "s"), "--controller.join", ctlAddr,
		"--controller.node_id", "7", "--kafka-listen", "", "--native-listen", "")
	store.waitFor(t, `msg="ring serving".* tls=true`)
	store.waitFor(t, `msg="registered with the controller"`)
	gw := start(t, nil, "gateway", "kafka", "--config", conf, "--gateway.node_id", "1001", "--controller.join", ctlAddr,
		"--kafka-listen", gwAddr, "--data-dir", filepath.Join(dir, "gw"))
	gw.waitFor(t, `msg=running`)

	tlsFlags := []string{"--tls-cert", pki.CertFile, "--tls-key", pki.KeyFile, "--tls-ca", pki.CAFile}
	wantOK(t, run(t, nil, append([]string{"topic", "create", "orders", "-p", "2", "--controller", "SSL://" + ctlAddr}, tlsFlags...)...), "created orders")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gwAddr), kgo.DefaultProduceTopic("orders"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over mutual TLS")}).FirstErr(); err != nil {
		t.Fatalf("produce through the gateway: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("consume through the gateway: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over mutual TLS" {
		t.Fatalf("consumed %d records", len(recs))
	}

	// Refusals: plaintext, SSL:// without a certificate, and a
	// certificate of another CA. The controller carries on.
	if r := run(t, nil, "topic", "list", "--controller", ctlAddr, "--timeout", "2s"); r.code == 0 || !strings.Contains(r.stderr, "mutual TLS") {
		t.Errorf("plaintext CLI: exit %d stderr %q", r.code, r.stderr)
	}
	if r := run(t, nil, "topic", "list", "--controller", "SSL://"+ctlAddr); r.code != 2 || !strings.Contains(r.stderr, "--tls-cert") {
		t.Errorf("SSL:// without a certificate: exit %d stderr %q", r.code, r.stderr)
	}
	other, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "topic", "list", "--controller", "SSL://"+ctlAddr, "--tls-cert", other.CertFile, "--tls-key", other.KeyFile,
		"--tls-ca", pki.CAFile); r.code == 0 || !strings.Contains(r.stderr, "unknown certificate authority") {
		t.Errorf("another CA's certificate: exit %d stderr %q", r.code, r.stderr)
	}
	ctl.waitFor(t, `does not speak TLS`)
	ctl.waitFor(t, `TLS handshake failed`)
	wantOK(t, run(t, nil, append([]string{"topic", "list", "--controller", "SSL://" + ctlAddr}, tlsFlags...)...), "orders")
}
