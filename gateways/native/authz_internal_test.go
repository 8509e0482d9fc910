package native

import (
	"fmt"
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
		s := &session{g: &Gateway{z: z}, authz: connAuthz{principal: "User:alice", host: "127.0.0.1", version: 1, decisions: map[topicOp]bool{}}}
		for range b.N {
			if z.Version() != s.authz.version || !s.canTopic(t, opWrite) {
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
