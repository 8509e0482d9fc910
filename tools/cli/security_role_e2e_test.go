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
// topic. DescribeAcls and acl list show the binding's entries marked with
// its role; DeleteAcls and acl remove refuse them, naming the unbind
// command. A `reader` bound to Group:ops reaches a user whose stored
// groups (aerostream user create --groups) name ops, a DENY ACL to
// another of her groups wins over it, an ALLOW ACL to Group:ops lets her
// produce, and unbinding takes the role away.
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
	ctl := []string{"--controller", ctlAddr, "--data-dir", filepath.Join(dir, "data")} // serve's own cluster secret is there
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

	// The binding's entries are listed, marked, by DescribeAcls and acl
	// list; neither DeleteAcls nor acl remove takes them for ACLs.
	wantOK(t, run(t, nil, append([]string{"acl", "list", "--allow", "User:alice"}, ctl...)...), "User:alice", "team-a.", "PREFIXED", "role-binding:writer")
	aliceACLs := func() *kadm.ACLBuilder {
		return kadm.NewACLs().Topics().Allow("User:alice").AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)
	}
	described, err := admin.DescribeACLs(ctx, aliceACLs())
	if err == nil && len(described) == 1 {
		err = described[0].Err
	}
	if err != nil || len(described) != 1 {
		t.Fatalf("DescribeAcls: %v (%d results)", err, len(described))
	}
	writes := 0
	for _, a := range described[0].Described {
		if a.Host != "role-binding:writer" || a.Principal != "User:alice" || a.Name != "team-a." || a.Pattern != kadm.ACLPatternPrefixed {
			t.Errorf("DescribeAcls lists %+v for alice, who has no ACL but the writer binding on team-a.", a)
		}
		if a.Operation == kadm.OpWrite {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("DescribeAcls shows %d WRITE entries of the writer binding, want 1: %+v", writes, described[0].Described)
	}
	deleted, err := admin.DeleteACLs(ctx, aliceACLs())
	if err != nil || len(deleted) != 1 {
		t.Fatalf("DeleteAcls: %v (%d results)", err, len(deleted))
	}
	unbind := "aerostream role unbind writer --principal User:alice --topic-prefix team-a."
	if !errors.Is(deleted[0].Err, kerr.InvalidRequest) || !strings.Contains(deleted[0].ErrMessage, unbind) || len(deleted[0].Deleted) != 0 {
		t.Errorf("DeleteAcls of a binding's entries: %v %q, deleted %v; want INVALID_REQUEST naming %q", deleted[0].Err, deleted[0].ErrMessage, deleted[0].Deleted, unbind)
	}
	if r := run(t, nil, append([]string{"acl", "remove", "--allow", "User:alice"}, ctl...)...); r.code == 0 || !strings.Contains(r.stderr, unbind) {
		t.Errorf("acl remove of a binding's entries: exit %d, stderr %q; want a refusal naming %q", r.code, r.stderr, unbind)
	}
	if err := produce("alice", "team-a.orders"); err != nil {
		t.Errorf("alice lost her role to a refused delete: %v", err)
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

	// Group: principals in ACLs. A DENY to one of olga's groups wins over
	// the reader role another of her groups has; an ALLOW to a group
	// lets her produce.
	wantOK(t, run(t, nil, append([]string{"acl", "add", "--deny", "Group:dev", "--operation", "DESCRIBE", "--topic", "team-b.orders"}, ctl...)...), "Group:dev", "DENY")
	eventually("a DENY to Group:dev refuses olga", func() error {
		if describeOK() == nil {
			return errors.New("olga still describes team-b.orders")
		}
		return nil
	})
	wantOK(t, run(t, nil, append([]string{"acl", "remove", "--deny", "Group:dev", "--topic", "team-b.orders"}, ctl...)...), "Group:dev")
	eventually("olga describes again once the DENY is gone", describeOK)
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("Group:ops").Topics("team-b.").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("CreateAcls with Group:ops: %v", err)
	}
	eventually("olga produces through an ALLOW to Group:ops", func() error { return produce("olga", "team-b.orders") })
	if err := produce("alice", "team-b.orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice, in no group, produces through Group:ops's ACL: %v", err)
	}
	wantOK(t, run(t, nil, append([]string{"acl", "remove", "--allow", "Group:ops", "--topic", "team-b.", "--resource-pattern-type", "prefixed"}, ctl...)...), "Group:ops", "WRITE")
	if r := run(t, nil, append([]string{"acl", "add", "--allow", "Group:*", "--operation", "READ", "--topic", "x"}, ctl...)...); r.code == 0 || !strings.Contains(r.stderr, `principal "Group:*"`) {
		t.Errorf("acl add Group:*: exit %d stderr %q", r.code, r.stderr)
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
