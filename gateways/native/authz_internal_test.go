package native

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// TestEveryOpcodeReviewed: an opcode added without an ACL rule would be
// refused to everyone but super users; this names it at once.
func TestEveryOpcodeReviewed(t *testing.T) {
	for op := range wire.Opcode(0x80) {
		if op.Known() && !reviewed[op] {
			t.Errorf("%v has no ACL rule in authz.go", op)
		}
	}
}

// BenchmarkTopicDecision: what a produce pays per partition with the
// authorizer on: the connection's kept decision, against asking the
// authorizer (an ACL walk) every time.
func BenchmarkTopicDecision(b *testing.B) {
	z := auth.NewAuthorizer(true, nil)
	var acls []auth.ACL
	for i := range 200 {
		acls = append(acls, auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: fmt.Sprintf("t%d-", i), PatternType: auth.PatternPrefixed,
			Principal: "User:other", Host: "*", Operation: auth.OpRead, Permission: auth.Allow})
	}
	acls = append(acls, auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: "bench", PatternType: auth.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: auth.OpWrite, Permission: auth.Allow})
	z.Set(1, acls)
	t := &Topic{Name: "bench", ID: [16]byte{1}}
	b.Run("kept", func(b *testing.B) {
		s := &session{g: &Gateway{z: z}, authz: connAuthz{principal: "User:alice", host: "127.0.0.1", groups: []string{"Group:dev"},
			gen: z.Generation(), decisions: map[topicOp]bool{}}}
		b.ReportAllocs()
		for range b.N {
			if z.Generation() != s.authz.gen || !s.canTopic(t, opWrite) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("asked", func(b *testing.B) {
		r := auth.Request{Principal: "User:alice", Host: "127.0.0.1", Operation: auth.OpWrite, ResourceType: auth.ResourceTopic, ResourceName: "bench"}
		for range b.N {
			if !z.Authorize(r) {
				b.Fatal("refused")
			}
		}
	})
}

// TestDecisionsAreTheConnections: two connections of one user whose
// tokens name different groups each decide, and keep decisions, by their
// own token's groups; groups stored with the user reach both, as a moved
// generation.
func TestDecisionsAreTheConnections(t *testing.T) {
	z := auth.NewAuthorizer(true, nil)
	z.Set(1, []auth.ACL{{ResourceType: auth.ResourceTopic, ResourceName: "orders", PatternType: auth.PatternLiteral,
		Principal: "Group:ops", Host: "*", Operation: auth.OpWrite, Permission: auth.Allow}})
	g := &Gateway{z: z, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	conn := func(groups ...string) *session {
		return &session{g: g, authz: connAuthz{principal: "User:alice", host: "127.0.0.1", groups: groups}, op: wire.OpProduce}
	}
	ops, dev := conn("Group:ops"), conn("Group:dev")
	orders := &Topic{Name: "orders", ID: [16]byte{7}}
	step := func(s *session, want bool, why string) {
		t.Helper()
		for range 2 { // the second ask is answered from the kept decision
			if resp := s.authzFrame(1); resp != nil {
				t.Fatalf("%s: the frame was refused", why)
			}
			if got := s.canTopic(orders, opWrite); got != want {
				t.Fatalf("%s: WRITE on orders = %v, want %v", why, got, want)
			}
		}
	}
	step(ops, true, "the connection whose token names ops")
	step(dev, false, "the connection whose token names dev")
	step(ops, true, "the ops connection, after the dev one asked")
	z.SetRBAC(2, auth.RBAC{UserGroups: map[string][]string{"alice": {"ops"}}})
	step(dev, true, "the dev connection, once ops is stored with alice")
	z.SetRBAC(3, auth.RBAC{})
	step(dev, false, "the dev connection, once alice's stored groups are gone")
	step(ops, true, "the ops connection, whose token still names ops")
}
