package native

import (
	"testing"

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
