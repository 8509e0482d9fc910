package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestRolesEndToEnd: with SASL and the authorizer on, a user with no ACL
// may not produce; bound `writer` on a topic prefix (aerostream role
// bind) she produces there, but not elsewhere, and may not delete the
// topic. A `reader` bound to Group:ops reaches a user whose stored groups
// (aerostream user create --groups) name ops, and her unbinding takes it
// away.
func TestRolesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	kafkaAddr, ctlAddr := freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "roles.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
kafka = "SASL_PLAINTEXT://`+kafkaAddr+`"
[auth]
sasl_mechanisms = ["SCRAM-SHA-256"]
authorizer = true
super_users = ["User:admin"]
bootstrap_user = "admin"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, []string{"AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret"}, "serve", "--config", conf,
		"--data-dir", filepath.Join(dir, "data"), "--ring-listen", "127.0.0.1:0", "--controller-listen", ctlAddr,
		"--http-listen", "127.0.0.1:0", "--native-listen", "127.0.0.1:0")
	p.waitFor(t, `msg=running`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctl := []string{"--controller", ctlAddr}
	kclient := func(user string) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RecordRetries(2),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	produce := func(user, topic string) error {
		// A fresh client each time: a producer refused its producer id
		// does not ask again.
		return kclient(user).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(user)}).FirstErr()
	}
	// eventually waits for the gateway to follow the controller's roles,
	// which it does asynchronously.
	eventually := func(what string, ok func() error) {
		t.Helper()
		for {
			err := ok()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	admin := kadm.NewClient(kclient("admin"))
	for _, n := range []string{"team-a.orders", "team-b.orders"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, n); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, runStdin(t, "alice-secret\n", nil, append([]string{"user", "create", "alice", "--mechanism", "SCRAM-SHA-256", "--password-stdin"}, ctl...)...))
	wantOK(t, runStdin(t, "olga-secret\n", nil, append([]string{"user", "create", "olga", "--mechanism", "SCRAM-SHA-256", "--password-stdin", "--groups", "ops,dev"}, ctl...)...), "groups ops, dev")

	if err := produce("alice", "team-a.orders"); err == nil {
		t.Fatal("alice produced with no ACL and no role")
	}
	wantOK(t, run(t, nil, append([]string{"role", "bind", "writer", "--principal", "User:alice", "--topic-prefix", "team-a."}, ctl...)...), "User:alice", "team-a.")
	eventually("alice produces to team-a.orders as a writer", func() error { return produce("alice", "team-a.orders") })
	if err := produce("alice", "team-b.orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice produces outside her prefix: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	del, err := kadm.NewClient(kclient("alice")).DeleteTopics(ctx, "team-a.orders")
	if err == nil {
		err = del.Error()
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("a writer deletes a topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Group:ops.
	describeOK := func() error {
		md, err := kadm.NewClient(kclient("olga")).Metadata(ctx, "team-b.orders")
		if err != nil {
			return err
		}
		return md.Topics["team-b.orders"].Err
	}
	if err := describeOK(); err == nil {
		t.Fatal("olga describes team-b.orders before any binding")
	}
	wantOK(t, run(t, nil, append([]string{"role", "bind", "reader", "--principal", "Group:ops"}, ctl...)...))
	eventually("olga reads through Group:ops", describeOK)
	if err := produce("olga", "team-b.orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("a reader produces: %v", err)
	}

	wantOK(t, run(t, nil, append([]string{"role", "list"}, ctl...)...), "writer", "built-in")
	wantOK(t, run(t, nil, append([]string{"role", "describe", "operator"}, ctl...)...), "ALTER_CONFIGS")
	r := run(t, nil, append([]string{"role", "bindings"}, ctl...)...)
	wantOK(t, r, "User:alice", "Group:ops")
	wantOK(t, run(t, nil, append([]string{"user", "groups"}, ctl...)...), "olga", "dev,ops")
	if r := run(t, nil, append([]string{"role", "bind", "ghost", "--principal", "User:alice"}, ctl...)...); r.code == 0 || !strings.Contains(r.stderr, `no role "ghost"`) {
		t.Errorf("binding an unknown role: exit %d stderr %q", r.code, r.stderr)
	}

	wantOK(t, run(t, nil, append([]string{"role", "unbind", "reader", "--principal", "Group:ops"}, ctl...)...))
	eventually("olga loses the role with its binding", func() error {
		if describeOK() == nil {
			return errors.New("olga still describes team-b.orders")
		}
		return nil
	})
}
