package native

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

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
		s := &session{g: &Gateway{z: z}, authz: connAuthz{principal: "User:alice", host: "127.0.0.1", gen: z.Generation(), decisions: map[topicOp]bool{}}}
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

// TestDecisionsFollowTokenGroups: a bearer token's groups move no ACL
// version, yet the decisions a connection keeps follow them: a newer
// token of the user naming other groups, and the lapse of the groups the
// decisions were made with, both drop the kept decisions.
func TestDecisionsFollowTokenGroups(t *testing.T) {
	z := auth.NewAuthorizer(true, nil)
	z.Set(1, []auth.ACL{{ResourceType: auth.ResourceTopic, ResourceName: "orders", PatternType: auth.PatternLiteral,
		Principal: "Group:ops", Host: "*", Operation: auth.OpWrite, Permission: auth.Allow}})
	s := &session{g: &Gateway{z: z, log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		authz: connAuthz{principal: "User:alice", host: "127.0.0.1"}, op: wire.OpProduce}
	orders := &Topic{Name: "orders", ID: [16]byte{7}}
	step := func(want bool, why string) {
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
	step(false, "no groups")
	z.SetTokenGroups("alice", []string{"ops"}, time.Now().Add(time.Hour))
	step(true, "a token naming ops")
	z.SetTokenGroups("alice", []string{"dev"}, time.Now().Add(time.Hour))
	step(false, "a newer token naming dev only")
	until := time.Now().Add(20 * time.Millisecond)
	z.SetTokenGroups("alice", []string{"ops"}, until)
	step(true, "a short-lived token naming ops")
	time.Sleep(time.Until(until) + time.Millisecond)
	step(false, "after that token's groups lapsed")
}
