package native

import (
	"fmt"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Authorization of every native operation through the same ACLs, and the
// same rules, as the Kafka gateway's (AuthOptions.Authorizer): produce
// needs WRITE on the topic, fetch and subscribe READ, lookups, ListOffsets
// and Describe DESCRIBE (and Describe's configs DESCRIBE_CONFIGS),
// CreateTopic CREATE on the cluster or the topic, DeleteTopic DELETE,
// AlterConfigs ALTER_CONFIGS; commits need READ on the group and the
// topic, offset reads and lag DESCRIBE on both, membership READ on the
// group. A denial is answered with Kafka's TOPIC_, GROUP_ or
// CLUSTER_AUTHORIZATION_FAILED in the error_code the request would carry
// any other failure in, and goes to the audit log. ListTopics and
// ListGroups hide what the principal may not describe. A topic named by
// name is checked before it is looked up, so a denied principal cannot
// tell whether it exists.
//
// The hot path asks once per connection: a decision on a topic id is
// kept in the session until the authorizer's generation moves (ACLs,
// roles, users' stored groups), so a producer pays a map lookup per
// partition, not an ACL walk per batch. The cache is the connection's,
// as the groups its OAUTHBEARER token named are (connSASL.groups): they
// are asked with, never stored in the authorizer, and end with the
// connection when the token expires.
//
// An opcode without a rule below (one added later) is refused to all but
// super users and principals with ALL on the cluster: default deny holds
// for what nobody has reviewed.

// reviewed lists the opcodes whose handlers check their own ACLs, or
// that need none (the handshake, SASL and the credit of the connection's
// own subscriptions).
var reviewed = map[wire.Opcode]bool{
	wire.OpHandshake: true, wire.OpSaslAuthenticate: true, wire.OpLookup: true, wire.OpProduce: true,
	wire.OpProduceMany: true, wire.OpFetch: true, wire.OpListOffsets: true, wire.OpCreateTopic: true,
	wire.OpDeleteTopic: true, wire.OpListTopics: true, wire.OpDescribe: true, wire.OpOffsetCommit: true,
	wire.OpOffsetFetch: true, wire.OpJoinGroup: true, wire.OpHeartbeat: true, wire.OpLeaveGroup: true,
	wire.OpSubscribe: true, wire.OpCredit: true, wire.OpUnsubscribe: true, wire.OpAlterConfigs: true,
	wire.OpInitProducerID: true, wire.OpDescribeGroup: true, wire.OpListGroups: true, wire.OpGroupLag: true,
}

// topicOp is a cached decision's question: an operation on a topic id.
type topicOp struct {
	id [16]byte
	op cachedOp
}

// cachedOp names the operations the hot path asks about.
type cachedOp uint8

const (
	opRead cachedOp = iota
	opWrite
	opDescribe
)

var cachedOpNames = [...]string{opRead: auth.OpRead, opWrite: auth.OpWrite, opDescribe: auth.OpDescribe}

// maxDecisions bounds the decisions a connection keeps.
const maxDecisions = 4096

// connAuthz is a connection's authorization state, owned by its read
// goroutine.
type connAuthz struct {
	// principal and host are who asks (User:NAME) and from where, and
	// groups its token's groups; set at the first question after the
	// connection authenticated.
	principal, host string
	groups          []string
	// gen is the authorizer's generation the decisions were made at.
	gen       uint64
	decisions map[topicOp]bool
}

// authzFrame readies the connection's authorization for a frame: it
// drops the decisions when anything they were made from changed, and
// refuses an opcode that has no rule.
func (s *session) authzFrame(corr uint32) *gateways.Response {
	z := s.g.z
	a := &s.authz
	if a.principal == "" {
		a.principal, a.host, a.groups = "User:"+s.conn.Principal().Name, s.clientHost(), s.sasl.groups
	}
	if g := z.Generation(); g != a.gen || a.decisions == nil {
		// The generation is read first: a change after it moves it again
		// and the next frame starts over.
		a.gen, a.decisions = g, make(map[topicOp]bool, len(a.decisions))
	}
	if !reviewed[s.op] && !s.can(auth.OpAll, auth.ResourceCluster, auth.ClusterName) {
		return s.fail(s.op, corr, s.denied(auth.OpAll, auth.ResourceCluster, auth.ClusterName), -1)
	}
	return nil
}

// authenticated forgets the principal the connection acted as, for one
// that has just proved another.
func (a *connAuthz) authenticated() {
	a.principal, a.decisions = "", nil
}

func (s *session) request(op, rt, name string) auth.Request {
	a := &s.authz
	return auth.Request{Principal: a.principal, Groups: a.groups, Host: a.host, Operation: op, ResourceType: rt, ResourceName: name}
}

// can decides op on a resource, auditing a refusal; true when the
// authorizer is off.
func (s *session) can(op, rt, name string) bool {
	z := s.g.z
	if z == nil {
		return true
	}
	if z.Authorize(s.request(op, rt, name)) {
		return true
	}
	s.g.auditDenied(s.authz.principal, s.authz.host, op, rt, name)
	return false
}

// quiet decides without auditing: for listings, where hiding is the
// answer, not a refusal.
func (s *session) quiet(op, rt, name string) bool {
	z := s.g.z
	return z == nil || z.Authorize(s.request(op, rt, name))
}

// canTopic decides op on t from the connection's decisions, asking the
// authorizer on a miss; a refusal is audited each time, as the Kafka
// gateway audits each denied request.
func (s *session) canTopic(t *Topic, op cachedOp) bool {
	if s.g.z == nil {
		return true
	}
	k := topicOp{t.ID, op}
	a := &s.authz
	allowed, hit := a.decisions[k]
	if !hit {
		allowed = s.g.z.Authorize(s.request(cachedOpNames[op], auth.ResourceTopic, t.Name))
		if len(a.decisions) >= maxDecisions {
			clear(a.decisions)
		}
		a.decisions[k] = allowed
	}
	if !allowed {
		s.g.auditDenied(a.principal, a.host, cachedOpNames[op], auth.ResourceTopic, t.Name)
	}
	return allowed
}

// topicErr is canTopic's refusal as the error to answer, nil when allowed.
func (s *session) topicErr(t *Topic, op cachedOp) error {
	if s.canTopic(t, op) {
		return nil
	}
	return s.denied(cachedOpNames[op], auth.ResourceTopic, t.Name)
}

// groupErr decides op on a group: nil when allowed, else the error to
// answer (audited).
func (s *session) groupErr(op, group string) error {
	if s.can(op, auth.ResourceGroup, group) {
		return nil
	}
	return s.denied(op, auth.ResourceGroup, group)
}

// mayInitProducerID is Kafka's rule for an idempotent producer's id:
// IDEMPOTENT_WRITE on the cluster, or WRITE on some topic. A refusal is
// audited as the IDEMPOTENT_WRITE it lacks.
func (s *session) mayInitProducerID() bool {
	z := s.g.z
	if z == nil || s.quiet(auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) ||
		z.AuthorizeAny(s.request(auth.OpWrite, auth.ResourceTopic, "")) {
		return true
	}
	s.g.auditDenied(s.authz.principal, s.authz.host, auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName)
	return false
}

// denied is the error a refusal of op on a resource is answered with.
func (s *session) denied(op, rt, name string) error {
	return deniedErr(s.authz.principal, op, rt, name)
}

func deniedErr(principal, op, rt, name string) error {
	code := ErrTopicAuthorization
	switch rt {
	case auth.ResourceGroup:
		code = ErrGroupAuthorization
	case auth.ResourceCluster:
		code = ErrClusterAuthorization
	}
	return fmt.Errorf("%w: %s may not %s %s %q", code, principal, op, rt, name)
}

// subAuthz is what a subscription's goroutine needs to ask again when the
// ACLs change under a long-lived stream: who asks (with its token's
// groups), the authorizer's generation its topics were last allowed at,
// and when the token that authenticated the connection expires (zero:
// never), which ends the stream as it ends the connection's requests.
type subAuthz struct {
	principal, host string
	groups          []string
	gen             uint64
	expires         time.Time
}

// recheck asks again whether the subscription may still READ its topics,
// once per generation, so that a revoked ACL ends a stream as it would
// refuse the next Fetch.
func (s *session) recheck(sub *subscription) error {
	z := s.g.z
	a := &sub.authz
	if !a.expires.IsZero() && !s.g.now().Before(a.expires) {
		return fmt.Errorf("%w: the OAUTHBEARER token expired at %s: reconnect with a fresh one", ErrSASLFailed, a.expires.UTC().Format(time.RFC3339))
	}
	if z == nil {
		return nil
	}
	v := z.Generation()
	if v == a.gen {
		return nil
	}
	for i, p := range sub.parts {
		if i > 0 && sub.parts[i-1].Topic == p.Topic {
			continue
		}
		if !z.Authorize(auth.Request{Principal: a.principal, Groups: a.groups, Host: a.host, Operation: auth.OpRead, ResourceType: auth.ResourceTopic, ResourceName: p.Topic}) {
			s.g.auditDenied(a.principal, a.host, auth.OpRead, auth.ResourceTopic, p.Topic)
			return deniedErr(a.principal, auth.OpRead, auth.ResourceTopic, p.Topic)
		}
	}
	a.gen = v
	return nil
}

// auditDenied logs a denied operation as the Kafka gateway does,
// rate-limited per principal and client.
func (g *Gateway) auditDenied(principal, host, op, rt, name string) {
	ok, dropped := g.auditLimit.Allow(g.now(), principal+"|"+host)
	if !ok {
		return
	}
	args := []any{"audit", true, "protocol", "native", "principal", principal, "client", host, "operation", op,
		"resource_type", rt, "resource", name}
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	g.log.Warn("operation denied", args...)
}
