package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// users is a credential store for tests.
type users map[string]map[string]ScramCredential

func (u users) lookup(_ context.Context, user, mech string) (ScramCredential, bool, error) {
	c, ok := u[user][mech]
	return c, ok, nil
}

func mustCred(t testing.TB, mech, password string) ScramCredential {
	t.Helper()
	c, err := NewScramCredential(mech, password, MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScramRFC7677 runs the SCRAM-SHA-256 example exchange of RFC 7677
// section 3 against the server, byte for byte.
func TestScramRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := DeriveScramCredential(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := NewScramServer(ScramSHA256, users{"user": {ScramSHA256: cred}}.lookup)
	if err != nil {
		t.Fatal(err)
	}
	ex.(*scramServer).nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	ctx := context.Background()
	reply, done, err := ex.Step(ctx, []byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("client-first: %v %v", done, err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(reply) != want {
		t.Fatalf("server-first = %s\nwant %s", reply, want)
	}
	reply, done, err = ex.Step(ctx, []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("client-final: %v %v", done, err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(reply) != want {
		t.Fatalf("server-final = %s, want %s", reply, want)
	}
	if ex.User() != "user" {
		t.Errorf("user = %q", ex.User())
	}
}

// run drives a franz-go client mechanism against a server exchange.
func run(t *testing.T, client sasl.Mechanism, server Exchange) error {
	t.Helper()
	ctx := context.Background()
	sess, msg, err := client.Authenticate(ctx, "host:1")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		reply, done, err := server.Step(ctx, msg)
		if err != nil {
			return err
		}
		cdone, next, cerr := sess.Challenge(reply)
		if cerr != nil {
			t.Fatalf("client rejects the server's reply: %v", cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			return nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return nil
}

// TestScramWithFranzGoClient authenticates franz-go's SCRAM and PLAIN
// clients, and refuses a wrong password and an unknown user.
func TestScramWithFranzGoClient(t *testing.T) {
	u := users{"alice": {
		ScramSHA256: mustCred(t, ScramSHA256, "alice-secret"),
		ScramSHA512: mustCred(t, ScramSHA512, "alice-secret"),
	}}
	all := []string{ScramSHA256, ScramSHA512, Plain}
	for _, tc := range []struct {
		name   string
		mech   string
		client sasl.Mechanism
		ok     bool
	}{
		{"sha256", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), true},
		{"sha512", ScramSHA512, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), true},
		{"plain", Plain, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), true},
		{"sha256 wrong password", ScramSHA256, scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), false},
		{"sha512 unknown user", ScramSHA512, scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism(), false},
		{"plain wrong password", Plain, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), false},
		{"plain unknown user", Plain, plain.Auth{User: "bob", Pass: "x"}.AsMechanism(), false},
		{"other authzid", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret", Zid: "admin"}.AsSha256Mechanism(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := NewExchange(tc.mech, all, u.lookup)
			if err != nil {
				t.Fatal(err)
			}
			err = run(t, tc.client, ex)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && !errors.Is(err, ErrAuthentication):
				t.Fatalf("err = %v, want ErrAuthentication", err)
			case tc.ok && ex.User() != "alice":
				t.Fatalf("user = %q", ex.User())
			}
		})
	}
	if _, err := NewExchange(Plain, []string{ScramSHA256}, u.lookup); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Errorf("disabled mechanism: err = %v", err)
	}
}

func TestCredentialHoldsNoPassword(t *testing.T) {
	c := mustCred(t, ScramSHA512, "hunter2-hunter2")
	if err := c.Check(ScramSHA512); err != nil {
		t.Fatal(err)
	}
	if !c.VerifyPassword(ScramSHA512, "hunter2-hunter2") || c.VerifyPassword(ScramSHA512, "hunter3") {
		t.Error("VerifyPassword is wrong")
	}
	if err := c.Check(ScramSHA256); err == nil {
		t.Error("a SHA-512 credential passes as SHA-256")
	}
	if _, err := NewScramCredential(ScramSHA256, "x", 100); !errors.Is(err, ErrInvalid) {
		t.Errorf("100 iterations: err = %v", err)
	}
}

func TestParseScramMalformed(t *testing.T) {
	for _, m := range []string{
		"", "n", "n,,", "x,,n=a,r=b", "p=tls-unique,,n=a,r=b", "n,,m=x,n=a,r=b", "n,,n=,r=b",
		"n,,n=a=2,r=b", "n,,n=a", "n,,r=b,n=a", "n,b,n=a,r=b", "n,,n=a,r=b,bad",
	} {
		if _, err := ParseScramClientFirst(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("client-first %q: err = %v", m, err)
		}
	}
	for _, m := range []string{"", "c=biws,r=x", "c=biws,r=x,p=!!", "r=x,c=biws,p=AAAA", "c=%%,r=x,p=AAAA", "c=biws,p=AAAA"} {
		if _, err := ParseScramClientFinal(m); !errors.Is(err, ErrMalformed) {
			t.Errorf("client-final %q: err = %v", m, err)
		}
	}
	cf, err := ParseScramClientFirst("n,a=a=2Cb,n=a=2Cb,r=nonce,tokenauth=true")
	if err != nil || cf.User != "a,b" || cf.Extensions["tokenauth"] != "true" {
		t.Errorf("escaped name: %+v %v", cf, err)
	}
}
