package cli_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth/authtest"
)

// TestSecureGatewayKafkaProcess: a separate `aerostream gateway kafka`
// process on SASL_SSL with the authorizer on checks SCRAM passwords
// against the controller's users and follows its ACLs: the bootstrap
// admin produces, alice is refused until an ACL for her is added through
// the CLI, and a wrong password is SASL_AUTHENTICATION_FAILED.
func TestSecureGatewayKafkaProcess(t *testing.T) {
	dir := t.TempDir()
	pki, err := authtest.NewPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster secret every process of the cluster, and the CLI, holds.
	secret := filepath.Join(dir, "cluster-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("c3", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withSecret := []string{"AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE=" + secret}
	ctlAddr, gwAddr := freeAddr(t), freeAddr(t)
	srv := start(t, append([]string{"AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret", "AEROSTREAM_AUTH_BOOTSTRAP_USER=admin"}, withSecret...),
		"serve", "--data-dir", filepath.Join(dir, "serve"), "--ring-listen", "127.0.0.1:0", "--controller-listen", ctlAddr,
		"--kafka-listen", "", "--native-listen", "")
	srv.waitFor(t, `msg=running`)

	conf := filepath.Join(dir, "gateway.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
kafka = "SASL_SSL://`+gwAddr+`"
schema_registry = ""
[tls]
cert_file = "`+pki.CertFile+`"
key_file = "`+pki.KeyFile+`"
[auth]
authorizer = true
super_users = ["User:admin"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	gwArgs := []string{"gateway", "kafka", "--config", conf, "--gateway.node_id", "1001", "--controller.join", ctlAddr,
		"--data-dir", filepath.Join(dir, "gw")}
	// With the authorizer on, a gateway without the secret does not start.
	wantOneLineFailure(t, run(t, nil, gwArgs...), "auth.controller_secret_file is not set")
	gw := start(t, withSecret, gwArgs...)
	gw.waitFor(t, `msg=running`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(gwAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool()}),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.DefaultProduceTopic("orders"),
			kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	if err := client("admin", "admin-secret").ProduceSync(ctx, &kgo.Record{Value: []byte("from admin")}).FirstErr(); err != nil {
		t.Fatalf("admin through the gateway process: %v", err)
	}
	if err := client("admin", "wrong").Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	wantOK(t, runStdin(t, "alice-secret\n", withSecret, "user", "create", "alice", "--password-stdin", "--controller", ctlAddr))
	alice := client("alice", "alice-secret")
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	wantOK(t, run(t, withSecret, "acl", "add", "--allow", "User:alice", "--operation", "WRITE,DESCRIBE", "--topic", "orders", "--controller", ctlAddr))
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("from alice")}).FirstErr()
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) || time.Now().After(deadline) {
			t.Fatalf("alice after her ACL: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the gateway polls the controller's ACLs
	}
}
