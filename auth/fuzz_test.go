package auth

import (
	"context"
	"testing"
)

// FuzzScramServer feeds arbitrary client messages to the SCRAM parsers
// and to a server exchange: none may panic, and only a correct proof
// authenticates.
func FuzzScramServer(f *testing.F) {
	f.Add("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("y,a=user,n=user,r=abc,ext=1", "c=eSxhPXVzZXIs,r=abcdef,x=1,p=AAAA")
	f.Add("n,,n=a=3Db,r=x", "c=biws,r=x")
	cred := mustCred(f, ScramSHA256, "pencil")
	u := users{"user": {ScramSHA256: cred}}
	f.Fuzz(func(t *testing.T, first, final string) {
		_, _ = ParseScramClientFirst(first)
		_, _ = ParseScramClientFinal(final)
		_, _, _, _ = ParsePlain([]byte(first))
		ex, err := NewScramServer(ScramSHA256, u.lookup)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, _, err := ex.Step(ctx, []byte(first)); err != nil {
			return
		}
		if _, done, err := ex.Step(ctx, []byte(final)); done || err == nil {
			// The server nonce is random, so a fixed input cannot carry
			// a valid proof.
			t.Fatalf("authenticated on fuzz input %q %q", first, final)
		}
	})
}
