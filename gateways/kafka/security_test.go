package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
)

// memSecurity is an in-memory user and ACL store that keeps an authorizer
// current, as the controller and tools/ do in a real process.
type memSecurity struct {
	z  *auth.Authorizer
	mu struct {
		sync.Mutex
		users   map[string]map[string]auth.ScramCredential
		acls    []auth.ACL
		version uint64
	}
}

func newMemSecurity(z *auth.Authorizer) *memSecurity {
	s := &memSecurity{z: z}
	s.mu.users = map[string]map[string]auth.ScramCredential{}
	return s
}

func (s *memSecurity) lookup(_ context.Context, user, mech string) (auth.ScramCredential, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.mu.users[user][mech]
	return c, ok, nil
}

func (s *memSecurity) addUser(t *testing.T, user, pass string) {
	t.Helper()
	for _, m := range []string{auth.ScramSHA256, auth.ScramSHA512} {
		c, err := auth.NewScramCredential(m, pass, auth.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AlterScramUsers(context.Background(), []ScramUpsert{{User: user, Mechanism: m, Credential: c}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *memSecurity) DescribeScramUsers(_ context.Context, users []string) ([]ScramUser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if users == nil {
		for u := range s.mu.users {
			users = append(users, u)
		}
	}
	var out []ScramUser
	for _, u := range users {
		m, ok := s.mu.users[u]
		if !ok {
			continue
		}
		su := ScramUser{User: u}
		for mech, c := range m {
			su.Mechanisms, su.Iterations = append(su.Mechanisms, mech), append(su.Iterations, c.Iterations)
		}
		out = append(out, su)
	}
	return out, nil
}

func (s *memSecurity) AlterScramUsers(_ context.Context, ups []ScramUpsert, dels []ScramDeletion) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, u := range ups {
		if s.mu.users[u.User] == nil {
			s.mu.users[u.User] = map[string]auth.ScramCredential{}
		}
		s.mu.users[u.User][u.Mechanism] = u.Credential
		errs = append(errs, nil)
	}
	for _, d := range dels {
		if _, ok := s.mu.users[d.User][d.Mechanism]; !ok {
			errs = append(errs, kerr.ResourceNotFound)
			continue
		}
		delete(s.mu.users[d.User], d.Mechanism)
		errs = append(errs, nil)
	}
	return errs, nil
}

func (s *memSecurity) CreateACLs(_ context.Context, acls []auth.ACL) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.acls = append(s.mu.acls, acls...)
	s.mu.version++
	s.z.Set(s.mu.version, slices.Clone(s.mu.acls))
	return make([]error, len(acls)), nil
}

func (s *memSecurity) DescribeACLs(_ context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []auth.ACL
	for _, a := range s.mu.acls {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (s *memSecurity) DeleteACLs(_ context.Context, fs []auth.ACLFilter) ([][]auth.ACL, []error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]auth.ACL, len(fs))
	for i, f := range fs {
		kept := s.mu.acls[:0:0]
		for _, a := range s.mu.acls {
			if f.Matches(a) {
				out[i] = append(out[i], a)
			} else {
				kept = append(kept, a)
			}
		}
		s.mu.acls = kept
	}
	s.mu.version++
	s.z.Set(s.mu.version, slices.Clone(s.mu.acls))
	return out, nil, nil
}

// fakeClock is a settable clock for session expiry.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type secEnv struct {
	*testEnv
	sec   *memSecurity
	clock *fakeClock
}

// newSecEnv starts a SASL_PLAINTEXT gateway with the authorizer on and
// User:admin a super user; admin, alice and bob exist.
func newSecEnv(t *testing.T, reauth time.Duration) *secEnv {
	z := auth.NewAuthorizer(true, []string{"User:admin"})
	sec := newMemSecurity(z)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	e := newTestEnv(t, func(o *Options) {
		o.Auth = AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: sec.lookup, Authorizer: z,
			Security: sec, ReauthAfter: reauth, Now: clock.Now}
	})
	sec.addUser(t, "admin", "admin-secret")
	sec.addUser(t, "alice", "alice-secret")
	sec.addUser(t, "bob", "bob-secret")
	return &secEnv{testEnv: e, sec: sec, clock: clock}
}

func scramClient(t *testing.T, addr, user, pass string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())}, opts...)...)
}

// TestSASLMechanisms: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN clients
// authenticate; a wrong password is SASL_AUTHENTICATION_FAILED.
func TestSASLMechanisms(t *testing.T) {
	e := newSecEnv(t, 0)
	ctx := testCtx(t)
	for name, m := range map[string]kgo.Opt{
		"sha256": kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism()),
		"sha512": kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()),
		"plain":  kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()),
	} {
		cl := newClient(t, e.addr, m)
		if err := cl.Ping(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := newClient(t, e.addr, kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()))
	err := bad.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// saslConn speaks Kafka's framing over a plain TCP connection.
type saslConn struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

func dialSASL(t *testing.T, addr string) *saslConn {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &saslConn{t: t, c: c, r: bufio.NewReader(c)}
}

// do sends req and reads its response; io.EOF means the broker closed the
// connection.
func (rc *saslConn) do(req kmsg.Request, resp kmsg.Response) error {
	rc.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	b := f.AppendRequest(nil, req, rc.corr)
	if _, err := rc.c.Write(b); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(rc.r, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.r, body); err != nil {
		return err
	}
	body = body[4:] // correlation id
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		body = body[1:] // no header tags in our answers
	}
	return resp.ReadFrom(body)
}

// scramRaw authenticates rc as user with SCRAM-SHA-256; it returns the
// last SaslAuthenticate response.
func (rc *saslConn) scram(user, pass string) (*kmsg.SASLAuthenticateResponse, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.ScramSHA256
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	if err := rc.do(hs, hsr); err != nil {
		return nil, err
	}
	if hsr.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(hsr.ErrorCode)
	}
	sess, msg, err := scram.Auth{User: user, Pass: pass}.AsSha256Mechanism().Authenticate(context.Background(), "")
	if err != nil {
		rc.t.Fatal(err)
	}
	for {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.Version, ar.SASLAuthBytes = 2, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := rc.do(ar, resp); err != nil {
			return nil, err
		}
		if resp.ErrorCode != 0 {
			return resp, kerr.ErrorForCode(resp.ErrorCode)
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			rc.t.Fatal(err)
		}
		if done {
			return resp, nil
		}
		msg = next
	}
}

func metadataReq() (*kmsg.MetadataRequest, *kmsg.MetadataResponse) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	return req, kmsg.NewPtrMetadataResponse()
}

// TestSASLRequiredAndReauthentication: before authenticating, only
// ApiVersions and the SASL keys are served and anything else closes the
// connection; a session past connections.max.reauth.ms is closed unless
// re-authenticated, and re-authenticating as someone else fails.
func TestSASLRequiredAndReauthentication(t *testing.T) {
	e := newSecEnv(t, time.Hour)

	rc := dialSASL(t, e.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	if err := rc.do(av, kmsg.NewPtrApiVersionsResponse()); err != nil {
		t.Fatalf("ApiVersions before SASL: %v", err)
	}
	req, resp := metadataReq()
	if err := rc.do(req, resp); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		t.Fatalf("Metadata before SASL: err = %v, want the connection closed", err)
	}

	rc = dialSASL(t, e.addr)
	ar, err := rc.scram("alice", "alice-secret")
	if err != nil {
		t.Fatal(err)
	}
	if ar.SessionLifetimeMillis != time.Hour.Milliseconds() {
		t.Errorf("session lifetime %d ms, want an hour", ar.SessionLifetimeMillis)
	}
	req, resp = metadataReq()
	if err := rc.do(req, resp); err != nil {
		t.Fatalf("Metadata after SASL: %v", err)
	}
	// Re-authenticate within the session: it goes on.
	e.clock.advance(50 * time.Minute)
	if _, err := rc.scram("alice", "alice-secret"); err != nil {
		t.Fatalf("re-authentication: %v", err)
	}
	e.clock.advance(50 * time.Minute) // 100 minutes since the first, 50 since the second
	req, resp = metadataReq()
	if err := rc.do(req, resp); err != nil {
		t.Fatalf("Metadata in the renewed session: %v", err)
	}
	e.clock.advance(11 * time.Minute)
	req, resp = metadataReq()
	if err := rc.do(req, resp); err == nil {
		t.Fatal("Metadata after the session expired was answered")
	}

	rc = dialSASL(t, e.addr)
	if _, err := rc.scram("alice", "alice-secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.scram("bob", "bob-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("re-authentication as bob: err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	rc = dialSASL(t, e.addr)
	ar2 := kmsg.NewPtrSASLAuthenticateRequest()
	ar2.Version, ar2.SASLAuthBytes = 1, []byte("n,,n=alice")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, auth.ScramSHA256
	if err := rc.do(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatal(err)
	}
	bad := kmsg.NewPtrSASLAuthenticateResponse()
	if err := rc.do(ar2, bad); err != nil || bad.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("malformed client-first: %v, code %d", err, bad.ErrorCode)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// TestAuthorization: ACLs allow and deny per topic, group and cluster,
// with Kafka's codes, and Metadata hides what a principal may not
// describe.
func TestAuthorization(t *testing.T) {
	e := newSecEnv(t, 0)
	ctx := testCtx(t)
	admin := scramClient(t, e.addr, "admin", "admin-secret")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secret"); err != nil {
		t.Fatal(err)
	}
	acls := kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("create ACLs: %v %+v", err, res)
	}
	gacl := kadm.NewACLs().Allow("User:alice").Groups("g1").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, gacl); err != nil || res[0].Err != nil {
		t.Fatalf("create group ACL: %v %+v", err, res)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 4 {
		t.Fatalf("describe ACLs: %v %+v", err, described)
	}

	alice := scramClient(t, e.addr, "alice", "alice-secret", kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("alice produces to orders: %v", err)
	}
	ra := kmsg.NewPtrProduceRequest()
	ra.Acks, ra.TimeoutMillis = -1, 5000
	for _, n := range []string{"orders", "secret"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = n
		rp := kmsg.NewProduceRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		ra.Topics = append(ra.Topics, rt)
	}
	presp, err := ra.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range presp.Topics {
		code := rt.Partitions[0].ErrorCode
		if rt.Topic == "secret" && code != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("produce to secret: code %d, want TOPIC_AUTHORIZATION_FAILED", code)
		}
		if rt.Topic == "orders" && code == kerr.TopicAuthorizationFailed.Code {
			t.Errorf("produce to orders denied alongside secret")
		}
	}

	// Metadata hides secret from alice, and everything from bob.
	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has("orders") || topics.Has("secret") {
		t.Errorf("alice sees %v", topics.Names())
	}
	bob := scramClient(t, e.addr, "bob", "bob-secret")
	if topics, err := kadm.NewClient(bob).ListTopics(ctx); err != nil || len(topics.Names()) != 0 {
		t.Errorf("bob sees %v (%v)", topics.Names(), err)
	}
	err = bob.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("no")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob produces: err = %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Groups: alice may use g1, not g2.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1})
	if res, err := kadm.NewClient(alice).CommitOffsets(ctx, "g1", offs); err != nil || res.Error() != nil {
		t.Errorf("alice commits in g1: %v %v", err, res.Error())
	}
	res, err := kadm.NewClient(alice).CommitOffsets(ctx, "g2", offs)
	if err == nil {
		err = res.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("alice commits in g2: err = %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	// The cluster: alice may not create topics, manage ACLs or users.
	if _, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 1, nil, "mine"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice creates a topic: err = %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	cres, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("secret").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil && len(cres) > 0 {
		err = cres[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice creates an ACL: err = %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := kadm.NewClient(alice).DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice describes users: err = %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	// Users through Kafka's API: admin adds carol, who then logs in.
	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("upsert carol: %v %v", err, up.Error())
	}
	if err := scramClient(t, e.addr, "carol", "carol-secret").Ping(ctx); err != nil {
		t.Errorf("carol logs in: %v", err)
	}
	users, err := adm.DescribeUserSCRAMs(ctx, "carol")
	if err != nil || users["carol"].Err != nil || len(users["carol"].CredInfos) != 1 || users["carol"].CredInfos[0].Iterations != 4096 {
		t.Errorf("describe carol: %v %+v", err, users)
	}

	// Deleting alice's ACLs takes her access away.
	if _, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil {
		t.Fatal(err)
	}
	err = alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("late")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("alice produces after her ACLs went: err = %v", err)
	}
}

// TestTransactionACLs: the transaction keys need WRITE on the
// transactional id (and READ on the group for offsets); a denied
// AddPartitionsToTxn adds nothing.
func TestTransactionACLs(t *testing.T) {
	e := newSecEnv(t, 0)
	ctx := testCtx(t)
	s := &session{g: e.gw}
	ask := func(key int16, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := e.gw.authorized(ctx, &reqCtx{s: s, key: key, version: req.GetVersion(), req: req})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID = "t1"
	if r := ask(26, end).(*kmsg.EndTxnResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("EndTxn: code %d", r.ErrorCode)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.Group = "t1", "g"
	if r := ask(25, ao).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("AddOffsetsToTxn: code %d", r.ErrorCode)
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.Version, ap.TransactionalID = 3, "t1"
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "orders", []int32{0, 1}
	ap.Topics = append(ap.Topics, at)
	r := ask(24, ap).(*kmsg.AddPartitionsToTxnResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 || r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn: %+v", r.Topics)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group = "t1", "g"
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "orders"
	tt.Partitions = append(tt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	tc.Topics = append(tc.Topics, tt)
	if r := ask(28, tc).(*kmsg.TxnOffsetCommitResponse); len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("TxnOffsetCommit: %+v", r.Topics)
	}
	// With WRITE on t1 but no READ on the group, the group is the reason.
	if _, err := e.sec.CreateACLs(ctx, []auth.ACL{{ResourceType: auth.ResourceTransactionalID, ResourceName: "t1", PatternType: auth.PatternLiteral,
		Principal: "User:ANONYMOUS", Host: "*", Operation: auth.OpWrite, Permission: auth.Allow}}); err != nil {
		t.Fatal(err)
	}
	if r := ask(25, ao).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("AddOffsetsToTxn with WRITE on t1: code %d", r.ErrorCode)
	}
	r = ask(24, ap).(*kmsg.AddPartitionsToTxnResponse)
	if len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn with WRITE on t1 only: %+v", r.Topics)
	}
}
