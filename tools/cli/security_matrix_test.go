package cli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// TestAuthorizationMatrix: two users, each with a different ACL set, try
// every operation class (produce, fetch, commit, create, alter configs,
// delete, describe) on both protocols against one serve process with
// SASL and the authorizer on; a third reads and is refused through
// Group: ACLs of her stored group. Each is allowed or refused exactly as the
// ACLs say, with Kafka's code, and the audit log has a line for each
// refusal, from the gateway it happened on.
func TestAuthorizationMatrix(t *testing.T) {
	dir := t.TempDir()
	kafkaAddr, nativeAddr, httpAddr, ctlAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	conf := filepath.Join(dir, "matrix.toml")
	if err := os.WriteFile(conf, []byte(`[listeners]
kafka = "SASL_PLAINTEXT://`+kafkaAddr+`"
native = "SASL_PLAINTEXT://`+nativeAddr+`"
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
		"--http-listen", httpAddr)
	p.waitFor(t, `msg=running`)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	kclient := func(user string, opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafkaAddr),
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	nclient := func(user string) *client.Client {
		t.Helper()
		cl, err := client.Dial(ctx, nativeAddr, client.Options{SASL: scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()})
		if err != nil {
			t.Fatalf("native dial as %s: %v", user, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}

	// The super user makes the users, the topics (with a record each) and
	// the ACLs.
	admin := kadm.NewClient(kclient("admin"))
	up, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("users: %v %v", err, up.Error())
	}
	// carol's rights come through her group, by Group: ACLs.
	wantOK(t, run(t, []string{"AEROSTREAM_DATA_DIR=" + filepath.Join(dir, "data")}, "user", "set-groups", "carol", "--groups", "auditors", "--controller", ctlAddr), "auditors")
	for _, n := range []string{"orders", "events", "secret"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, n); err != nil {
			t.Fatal(err)
		}
		if err := kclient("admin").ProduceSync(ctx, &kgo.Record{Topic: n, Value: []byte("seed")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Topics("events").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Topics("alice-").Operations(kadm.OpCreate, kadm.OpDelete, kadm.OpAlterConfigs).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:alice").Groups("g-alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("events").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("bob-").Operations(kadm.OpCreate).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("Group:auditors").Topics("events").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:carol").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("Group:auditors").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		// Last: once a gateway lets bob describe g-bob, it holds them all.
		kadm.NewACLs().Allow("User:bob").Groups("g-bob").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range acls {
		res, err := admin.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("create ACLs: %v", err)
		}
	}
	bobK, bobN := kadm.NewClient(kclient("bob")), nclient("bob")
	last := ""
	for {
		_, nerr := bobN.DescribeGroup(ctx, "g-bob")
		kd, kerr := bobK.DescribeGroups(ctx, "g-bob")
		if kerr == nil {
			kerr = kd.Error()
		}
		if errors.Is(kerr, kerrGroupIDNotFound) {
			kerr = nil // allowed to ask, and nobody has joined it yet
		}
		if nerr == nil && kerr == nil {
			break
		}
		if msg := fmt.Sprint(nerr, kerr); msg != last {
			t.Logf("waiting: native %v, kafka %v", nerr, kerr)
			last = msg
		}
		if ctx.Err() != nil {
			t.Fatalf("the ACLs never reached the gateways: native %v, kafka %v", nerr, kerr)
		}
		time.Sleep(20 * time.Millisecond) // the gateways follow the controller's ACLs asynchronously
	}

	// Each protocol's way of doing each operation class.
	type ops struct {
		produce, fetch                  func(user, topic string) error
		commit                          func(user, group, topic string) error
		create, alter, delete, describe func(user, topic string) error
	}
	kafkaOps := ops{
		produce: func(user, topic string) error {
			return kclient(user, kgo.RecordRetries(2)).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(user)}).FirstErr()
		},
		fetch: func(user, topic string) error {
			cl := kclient(user, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			defer cl.Close()
			for {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					return err
				}
				if fs.NumRecords() > 0 {
					return nil
				}
			}
		},
		commit: func(user, group, topic string) error {
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
			res, err := kadm.NewClient(kclient(user)).CommitOffsets(ctx, group, offs)
			if err != nil {
				return err
			}
			return res.Error()
		},
		create: func(user, topic string) error {
			_, err := kadm.NewClient(kclient(user)).CreateTopic(ctx, 1, 1, nil, topic)
			return err
		},
		alter: func(user, topic string) error {
			v := "3600000"
			res, err := kadm.NewClient(kclient(user)).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, topic)
			if err != nil {
				return err
			}
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
			return err
		},
		delete: func(user, topic string) error {
			r, err := kadm.NewClient(kclient(user)).DeleteTopic(ctx, topic)
			if err != nil {
				return err
			}
			return r.Err
		},
		describe: func(user, topic string) error {
			td, err := kadm.NewClient(kclient(user)).ListTopics(ctx, topic)
			if err != nil {
				return err
			}
			return td[topic].Err
		},
	}
	nativeOps := ops{
		produce: func(user, topic string) error {
			pr := client.NewProducer(nclient(user), client.ProducerOptions{})
			defer pr.Close(ctx)
			return pr.ProduceSync(ctx, &client.Record{Topic: topic, Value: []byte(user)})
		},
		fetch: func(user, topic string) error {
			co, err := client.NewConsumer(ctx, nclient(user), client.ConsumerOptions{Topic: topic, Start: client.StartEarliest})
			if err != nil {
				return err
			}
			defer co.Close()
			for {
				msgs, err := co.Poll(ctx)
				if err != nil || len(msgs) > 0 {
					return err
				}
			}
		},
		commit: func(user, group, topic string) error {
			return nclient(user).CommitOffsets(ctx, group, topic, map[int32]int64{0: 1})
		},
		create: func(user, topic string) error {
			_, err := nclient(user).CreateTopic(ctx, topic, 1, 1, nil)
			return err
		},
		alter: func(user, topic string) error {
			return nclient(user).AlterConfigs(ctx, topic, map[string]string{"retention.ms": "3600000"})
		},
		delete:   func(user, topic string) error { return nclient(user).DeleteTopic(ctx, topic) },
		describe: func(user, topic string) error { _, err := nclient(user).Describe(ctx, topic); return err },
	}

	topicDenied, groupDenied := kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed
	for _, proto := range []struct {
		name string
		ops  ops
	}{{"kafka", kafkaOps}, {"native", nativeOps}} {
		o := proto.ops
		sfx := "-" + proto.name // topics each protocol creates and deletes
		rows := []struct {
			user, what string
			do         func() error
			want       error
			audit      []string // the refusal's audit line holds these
		}{
			{"alice", "produce orders", func() error { return o.produce("alice", "orders") }, nil, nil},
			{"alice", "produce events", func() error { return o.produce("alice", "events") }, topicDenied, []string{"operation=WRITE", "resource=events"}},
			{"alice", "commit g-alice", func() error { return o.commit("alice", "g-alice", "orders") }, nil, nil},
			{"alice", "commit g-bob", func() error { return o.commit("alice", "g-bob", "orders") }, groupDenied, []string{"resource_type=GROUP", "resource=g-bob"}},
			{"alice", "create alice-t", func() error { return o.create("alice", "alice-t"+sfx) }, nil, nil},
			{"alice", "create bob-t", func() error { return o.create("alice", "bob-t"+sfx) }, topicDenied, []string{"operation=CREATE", "resource=bob-t" + sfx}},
			{"alice", "alter configs alice-t", func() error { return o.alter("alice", "alice-t"+sfx) }, nil, nil},
			{"alice", "alter configs orders", func() error { return o.alter("alice", "orders") }, topicDenied, []string{"operation=ALTER_CONFIGS", "resource=orders"}},
			{"alice", "delete alice-t", func() error { return o.delete("alice", "alice-t"+sfx) }, nil, nil},
			{"alice", "delete orders", func() error { return o.delete("alice", "orders") }, topicDenied, []string{"operation=DELETE", "resource=orders"}},
			{"alice", "describe orders", func() error { return o.describe("alice", "orders") }, nil, nil},
			{"alice", "describe secret", func() error { return o.describe("alice", "secret") }, topicDenied, []string{"operation=DESCRIBE", "resource=secret"}},
			{"alice", "fetch orders", func() error { return o.fetch("alice", "orders") }, nil, nil},
			{"alice", "fetch events", func() error { return o.fetch("alice", "events") }, topicDenied, []string{"operation=READ", "resource=events"}},

			{"bob", "produce orders", func() error { return o.produce("bob", "orders") }, nil, nil},
			{"bob", "produce events", func() error { return o.produce("bob", "events") }, topicDenied, []string{"operation=WRITE", "resource=events"}},
			{"bob", "commit g-bob", func() error { return o.commit("bob", "g-bob", "events") }, nil, nil},
			{"bob", "commit g-alice", func() error { return o.commit("bob", "g-alice", "events") }, groupDenied, []string{"resource_type=GROUP", "resource=g-alice"}},
			{"bob", "create bob-t", func() error { return o.create("bob", "bob-t"+sfx) }, nil, nil},
			{"bob", "create alice-t", func() error { return o.create("bob", "alice-t"+sfx) }, topicDenied, []string{"operation=CREATE", "resource=alice-t" + sfx}},
			{"bob", "alter configs bob-t", func() error { return o.alter("bob", "bob-t"+sfx) }, topicDenied, []string{"operation=ALTER_CONFIGS", "resource=bob-t" + sfx}},
			{"bob", "delete bob-t", func() error { return o.delete("bob", "bob-t"+sfx) }, topicDenied, []string{"operation=DELETE", "resource=bob-t" + sfx}},
			{"bob", "describe events", func() error { return o.describe("bob", "events") }, nil, nil},
			{"bob", "describe secret", func() error { return o.describe("bob", "secret") }, topicDenied, []string{"operation=DESCRIBE", "resource=secret"}},
			{"bob", "fetch events", func() error { return o.fetch("bob", "events") }, nil, nil},
			{"bob", "fetch orders", func() error { return o.fetch("bob", "orders") }, topicDenied, []string{"operation=READ", "resource=orders"}},

			// Through Group:auditors: its ALLOW, and its DENY over carol's own ALLOW.
			{"carol", "fetch events", func() error { return o.fetch("carol", "events") }, nil, nil},
			{"carol", "fetch orders", func() error { return o.fetch("carol", "orders") }, topicDenied, []string{"operation=READ", "resource=orders"}},
			{"carol", "describe secret", func() error { return o.describe("carol", "secret") }, topicDenied, []string{"operation=DESCRIBE", "resource=secret"}},
		}
		for _, r := range rows {
			what := fmt.Sprintf("%s: %s %s", proto.name, r.user, r.what)
			err := r.do()
			switch {
			case r.want == nil && err != nil:
				t.Errorf("%s: %v, want allowed", what, err)
			case r.want != nil && !errors.Is(err, r.want):
				t.Errorf("%s: %v, want %v", what, err, r.want)
			case r.want != nil && !p.audited(proto.name == "native", append(r.audit, "principal=User:"+r.user)...):
				t.Errorf("%s: refused, but no audit line with %v", what, r.audit)
			}
		}
	}
}

var kerrGroupIDNotFound = kerr.GroupIDNotFound

// audited waits a while for a denial line of the native gateway (native)
// or the Kafka one with every one of the key=value pairs: the process
// writes it before it answers, but its log reaches the test through a
// pipe.
func (p *proc) audited(native bool, pairs ...string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; {
		if auditLine(p.logText(), native, pairs...) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// auditLine reports whether log holds a denial line of the native gateway
// (native) or the Kafka one, with every one of the key=value pairs.
func auditLine(log string, native bool, pairs ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="operation denied"`) || strings.Contains(line, "protocol=native") != native {
			continue
		}
		all := true
		for _, p := range pairs {
			has := strings.Contains(line, p+" ") || strings.HasSuffix(line, p)
			all = all && has
		}
		if all {
			return true
		}
	}
	return false
}
