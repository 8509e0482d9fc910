package native_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/gateways/native/client"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// logBuf is a log destination tests read while the gateway writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// audited reports whether the log holds a denial line with every one of
// the key=value pairs.
func (l *logBuf) audited(pairs ...string) bool {
	for _, line := range strings.Split(l.String(), "\n") {
		if !strings.Contains(line, `msg="operation denied"`) || !strings.Contains(line, "protocol=native") {
			continue
		}
		all := true
		for _, p := range pairs {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func allow(principal, rt, pattern, name string, ops ...string) []auth.ACL {
	var out []auth.ACL
	for _, op := range ops {
		out = append(out, auth.ACL{ResourceType: rt, ResourceName: name, PatternType: pattern, Principal: principal,
			Host: "*", Operation: op, Permission: auth.Allow})
	}
	return out
}

// authzOpts turns the authorizer on over the gateway, its log in logs.
func authzOpts(z *auth.Authorizer, logs *logBuf) func(*native.Options) {
	return func(o *native.Options) {
		o.Auth.Authorizer = z
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
}

// TestAuthorization: two users with different ACLs over SASL, through
// the SDK: each operation is allowed or refused with Kafka's code as the
// ACLs say, listings hide what a user may not describe, each refusal is
// audited, and an ACL change reaches a connection already open.
func TestAuthorization(t *testing.T) {
	users := newScramUsers(t, map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"})
	z := auth.NewAuthorizer(true, []string{"User:admin"})
	var acls []auth.ACL
	acls = append(acls, allow("User:alice", auth.ResourceTopic, auth.PatternLiteral, "orders", auth.OpWrite, auth.OpRead)...)
	acls = append(acls, allow("User:alice", auth.ResourceTopic, auth.PatternPrefixed, "alice-", auth.OpCreate, auth.OpDelete, auth.OpAlterConfigs)...)
	acls = append(acls, allow("User:alice", auth.ResourceGroup, auth.PatternLiteral, "g1", auth.OpRead)...)
	acls = append(acls, allow("User:bob", auth.ResourceTopic, auth.PatternLiteral, "orders", auth.OpDescribe)...)
	z.Set(1, acls)
	logs := &logBuf{}
	e := newEnv(t, saslOpts(users), authzOpts(z, logs))
	ctx := saslCtx(t)
	dial := func(user string) *client.Client {
		cl, err := client.Dial(ctx, e.addr, client.Options{SASL: scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism()})
		if err != nil {
			t.Fatalf("%s dials: %v", user, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	admin, alice, bob := dial("admin"), dial("alice"), dial("bob")
	for _, n := range []string{"orders", "secret"} {
		if _, err := admin.CreateTopic(ctx, n, 1, 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := admin.AlterConfigs(ctx, n, map[string]string{"retention.ms": "3600000"}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, err, code error) {
		t.Helper()
		switch {
		case code == nil && err != nil:
			t.Errorf("%s: %v, want allowed", what, err)
		case code != nil && !errors.Is(err, code):
			t.Errorf("%s: %v, want %v", what, err, code)
		}
	}
	produce := func(cl *client.Client, topic string) error {
		p := client.NewProducer(cl, client.ProducerOptions{NotIdempotent: true})
		defer p.Close(ctx)
		return p.ProduceSync(ctx, &client.Record{Topic: topic, Value: []byte("v")})
	}
	fetch := func(cl *client.Client, topic string) error {
		co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: topic, Start: client.StartEarliest})
		if err != nil {
			return err
		}
		defer co.Close()
		_, err = co.Poll(ctx)
		return err
	}

	// alice: orders to write and read, g1, and topics of her prefix.
	want("alice produces to orders", produce(alice, "orders"), nil)
	want("alice fetches orders", fetch(alice, "orders"), nil)
	want("alice commits in g1", alice.CommitOffsets(ctx, "g1", "orders", map[int32]int64{0: 1}), nil)
	_, err := alice.FetchOffsets(ctx, "g1", "orders")
	want("alice reads g1's offsets", err, nil)
	want("alice commits in g2", alice.CommitOffsets(ctx, "g2", "orders", map[int32]int64{0: 1}), kerr.GroupAuthorizationFailed)
	_, err = alice.Topic(ctx, "secret")
	want("alice looks secret up", err, kerr.TopicAuthorizationFailed)
	_, err = alice.Topic(ctx, "nowhere")
	want("alice looks up a topic that does not exist", err, kerr.TopicAuthorizationFailed)
	_, err = alice.CreateTopic(ctx, "alice-1", 1, 1, nil)
	want("alice creates alice-1", err, nil)
	_, err = alice.CreateTopic(ctx, "other", 1, 1, nil)
	want("alice creates other", err, kerr.TopicAuthorizationFailed)
	want("alice alters alice-1", alice.AlterConfigs(ctx, "alice-1", map[string]string{"retention.ms": "1000"}), nil)
	want("alice alters orders", alice.AlterConfigs(ctx, "orders", map[string]string{"retention.ms": "1000"}), kerr.TopicAuthorizationFailed)
	d, err := alice.Describe(ctx, "orders")
	want("alice describes orders", err, nil)
	if len(d.Configs) != 0 {
		t.Errorf("alice, without DESCRIBE_CONFIGS, sees orders' configs %v", d.Configs)
	}
	ts, err := alice.ListTopics(ctx)
	want("alice lists topics", err, nil)
	if names := topicNames(ts); !slices.Equal(names, []string{"alice-1", "orders"}) {
		t.Errorf("alice lists %v, want [alice-1 orders]", names)
	}
	want("alice deletes alice-1", alice.DeleteTopic(ctx, "alice-1"), nil)
	want("alice deletes secret", alice.DeleteTopic(ctx, "secret"), kerr.TopicAuthorizationFailed)
	_, err = alice.InitProducerID(ctx)
	want("alice asks for a producer id", err, nil)

	// bob: orders to describe alone.
	want("bob produces to orders", produce(bob, "orders"), kerr.TopicAuthorizationFailed)
	want("bob fetches orders", fetch(bob, "orders"), kerr.TopicAuthorizationFailed)
	want("bob commits in g1", bob.CommitOffsets(ctx, "g1", "orders", map[int32]int64{0: 1}), kerr.GroupAuthorizationFailed)
	_, err = bob.CreateTopic(ctx, "bob-1", 1, 1, nil)
	want("bob creates bob-1", err, kerr.TopicAuthorizationFailed)
	want("bob deletes orders", bob.DeleteTopic(ctx, "orders"), kerr.TopicAuthorizationFailed)
	want("bob alters orders", bob.AlterConfigs(ctx, "orders", map[string]string{"retention.ms": "1000"}), kerr.TopicAuthorizationFailed)
	_, err = bob.Describe(ctx, "orders")
	want("bob describes orders", err, nil)
	_, err = bob.Describe(ctx, "secret")
	want("bob describes secret", err, kerr.TopicAuthorizationFailed)
	_, err = bob.InitProducerID(ctx)
	want("bob asks for a producer id", err, kerr.ClusterAuthorizationFailed)
	_, err = bob.DescribeGroup(ctx, "g1")
	want("bob describes g1", err, kerr.GroupAuthorizationFailed)
	gs, err := bob.ListGroups(ctx)
	want("bob lists groups", err, nil)
	if len(gs) != 0 {
		t.Errorf("bob lists groups %v, want none", gs)
	}
	ts, err = bob.ListTopics(ctx)
	want("bob lists topics", err, nil)
	if names := topicNames(ts); !slices.Equal(names, []string{"orders"}) {
		t.Errorf("bob lists %v, want [orders]", names)
	}
	// The super user sees everything, configs included.
	if d, err := admin.Describe(ctx, "orders"); err != nil || len(d.Configs) == 0 {
		t.Errorf("admin describes orders: %v, configs %v", err, d.Configs)
	}

	for _, line := range [][]string{
		{"principal=User:alice", "operation=READ", "resource_type=GROUP", "resource=g2"},
		{"principal=User:alice", "operation=DESCRIBE", "resource=secret"},
		{"principal=User:alice", "operation=CREATE", "resource=other"},
		{"principal=User:alice", "operation=ALTER_CONFIGS", "resource=orders"},
		{"principal=User:alice", "operation=DELETE", "resource=secret"},
		{"principal=User:bob", "operation=WRITE", "resource=orders"},
		{"principal=User:bob", "operation=READ", "resource_type=TOPIC", "resource=orders"},
		{"principal=User:bob", "operation=READ", "resource_type=GROUP", "resource=g1"},
		{"principal=User:bob", "operation=IDEMPOTENT_WRITE", "resource_type=CLUSTER"},
		{"principal=User:bob", "operation=DESCRIBE", "resource_type=GROUP", "resource=g1"},
	} {
		if !logs.audited(line...) {
			t.Errorf("no audit line with %v", line)
		}
	}
	if logs.audited("resource=alice-1") {
		t.Error("a topic hidden from a listing was audited as a denial")
	}

	// An ACL added later reaches bob's open connection, whose refusal of
	// the same topic was decided (and kept) before.
	p := client.NewProducer(bob, client.ProducerOptions{NotIdempotent: true})
	defer p.Close(ctx)
	want("bob produces before his ACL", p.ProduceSync(ctx, &client.Record{Topic: "orders", Value: []byte("no")}), kerr.TopicAuthorizationFailed)
	z.Set(2, append(slices.Clone(acls), allow("User:bob", auth.ResourceTopic, auth.PatternLiteral, "orders", auth.OpWrite)...))
	want("bob produces after his ACL", p.ProduceSync(ctx, &client.Record{Topic: "orders", Value: []byte("yes")}), nil)
}

func topicNames(ts []client.TopicInfo) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// readHead reads one frame and returns its opcode, head and body.
func (rc *rawConn) readHead() (wire.Opcode, wire.Head, *wire.Reader) {
	rc.t.Helper()
	h := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(rc.br, h); err != nil {
		rc.t.Fatal(err)
	}
	op, n, err := wire.ParseHeader(h, 64<<20)
	if err != nil {
		rc.t.Fatal(err)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(rc.br, p); err != nil {
		rc.t.Fatal(err)
	}
	r := wire.NewReader(p)
	return op, wire.ReadHead(&r), &r
}

// TestAuthorizationByTopicID: the hot path's requests carry topic ids;
// each partition of a ProduceMany and a Fetch is allowed or refused on
// its own, and a subscription ends with TOPIC_AUTHORIZATION_FAILED once
// the ACL that let it read is gone.
func TestAuthorizationByTopicID(t *testing.T) {
	z := auth.NewAuthorizer(true, nil)
	anon := "User:ANONYMOUS"
	acls := slices.Concat(
		allow(anon, auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, auth.OpCreate),
		allow(anon, auth.ResourceTopic, auth.PatternLiteral, "open", auth.OpWrite, auth.OpRead),
		allow(anon, auth.ResourceTopic, auth.PatternLiteral, "closed", auth.OpDescribe))
	z.Set(1, acls)
	logs := &logBuf{}
	e := newEnv(t, authzOpts(z, logs))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	open, err := cl.CreateTopic(ctx, "open", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := cl.CreateTopic(ctx, "closed", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, e.addr)
	var bb wire.BatchBuilder
	bb.Add(time.Now().UnixMilli(), nil, []byte("v"), nil)
	batch, err := bb.AppendBatch(nil)
	if err != nil {
		t.Fatal(err)
	}
	pm := wire.ProduceMany{Acks: 1, TimeoutMs: 10000, Partitions: []wire.ManyPart{
		{TopicID: open.ID, Records: batch}, {TopicID: closed.ID, Records: batch}}}
	for i := range 2 { // the second from the connection's kept decisions
		rc.send(wire.OpProduceMany, uint32(10+i), pm.Append)
		_, h, r := rc.readHead()
		var out wire.ProduceManyResponse
		if err := out.Decode(r); err != nil || h.Code != 0 || len(out.Partitions) != 2 {
			t.Fatalf("produce many: head %+v, %v, %+v", h, err, out)
		}
		if out.Partitions[0].Code != 0 || out.Partitions[1].Code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("produce many #%d: codes %d, %d, want 0, %d", i, out.Partitions[0].Code, out.Partitions[1].Code, kerr.TopicAuthorizationFailed.Code)
		}
	}
	f := wire.Fetch{MaxWaitMs: 0, MaxBytes: 1 << 20, Partitions: []wire.FetchPartition{
		{TopicID: open.ID, MaxBytes: 1 << 20}, {TopicID: closed.ID, MaxBytes: 1 << 20}}}
	rc.send(wire.OpFetch, 20, f.Append)
	_, h, r := rc.readHead()
	var fr wire.FetchResponse
	if err := fr.Decode(r); err != nil || h.Code != 0 || len(fr.Partitions) != 2 {
		t.Fatalf("fetch: head %+v, %v", h, err)
	}
	if fr.Partitions[0].Code != 0 || len(fr.Partitions[0].Records) == 0 || fr.Partitions[1].Code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch: open code %d with %d bytes, closed code %d", fr.Partitions[0].Code, len(fr.Partitions[0].Records), fr.Partitions[1].Code)
	}
	if !logs.audited("principal=User:ANONYMOUS", "operation=WRITE", "resource=closed") ||
		!logs.audited("principal=User:ANONYMOUS", "operation=READ", "resource=closed") {
		t.Errorf("the refusals were not audited:\n%s", logs)
	}

	// A subscription to open, then its READ taken away.
	sub := wire.Subscribe{MaxBytes: 1 << 20, CreditBytes: 1 << 20, Partitions: []wire.SubscribePartition{{TopicID: open.ID}}}
	rc.send(wire.OpSubscribe, 30, sub.Append)
	if _, h, _ := rc.readHead(); h.Code != 0 || h.Corr != 30 {
		t.Fatalf("subscribe answered %+v", h)
	}
	if _, h, _ := rc.readHead(); h.Code != 0 || h.Corr != 30 {
		t.Fatalf("first push %+v", h)
	}
	z.Set(2, slices.Concat(
		allow(anon, auth.ResourceTopic, auth.PatternLiteral, "open", auth.OpWrite),
		allow(anon, auth.ResourceTopic, auth.PatternLiteral, "closed", auth.OpDescribe)))
	for {
		_, h, _ := rc.readHead()
		if h.Corr != 30 {
			t.Fatalf("a frame for corr %d", h.Corr)
		}
		if h.Code == kerr.TopicAuthorizationFailed.Code {
			break
		}
		if h.Code != 0 {
			t.Fatalf("the subscription ended with %+v, want TOPIC_AUTHORIZATION_FAILED", h)
		}
	}
}

// BenchmarkProduceAuthorizer: the SDK producer's throughput to one
// partition with the authorizer off and on (an ACL set of some size, the
// producer allowed by one of them), in one run, so that the cost of
// asking on the hot path shows as their ratio.
func BenchmarkProduceAuthorizer(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			z := auth.NewAuthorizer(on, nil)
			var acls []auth.ACL
			for i := range 200 {
				acls = append(acls, allow("User:someone-else", auth.ResourceTopic, auth.PatternPrefixed, "t"+strings.Repeat("x", i%10), auth.OpRead)...)
			}
			acls = append(acls, allow("User:ANONYMOUS", auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, auth.OpCreate)...)
			acls = append(acls, allow("User:ANONYMOUS", auth.ResourceTopic, auth.PatternLiteral, "bench", auth.OpWrite)...)
			z.Set(1, acls)
			e := newEnv(b, authzOpts(z, &logBuf{}))
			ctx := context.Background()
			cl, err := client.Dial(ctx, e.addr, client.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.CreateTopic(ctx, "bench", 1, 1, nil); err != nil {
				b.Fatal(err)
			}
			p := client.NewProducer(cl, client.ProducerOptions{NotIdempotent: true, Acks: 1})
			defer p.Close(ctx)
			value := bytes.Repeat([]byte("v"), 100)
			var failed error
			var mu sync.Mutex
			done := func(_ *client.Record, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Produce(ctx, &client.Record{Topic: "bench", Value: value}, done)
			}
			if err := p.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}
