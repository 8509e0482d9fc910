package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth/authtest"
	"github.com/aerostream/aerostream/tools/config"
)

// TestRoleUsage: a role command that names no principal, two scopes, a
// malformed principal or no operation says so before dialling anything
// (exit 2).
func TestRoleUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"role", "bind", "writer"}, "--principal User:NAME or Group:NAME"},
		{[]string{"role", "bind"}, "missing the role NAME"},
		{[]string{"role", "bind", "writer", "--principal", "alice"}, `principal "alice"`},
		{[]string{"role", "bind", "writer", "--principal", "Group:"}, `principal "Group:"`},
		{[]string{"role", "bind", "writer", "--principal", "User:a", "--topic", "t", "--group", "g"}, "at most one of --topic and --group"},
		{[]string{"role", "unbind", "_x", "--principal", "User:a"}, `role name "_x"`},
		{[]string{"role", "create", "r"}, "name the role's operations"},
		{[]string{"role", "create", "admin", "--topic-operation", "READ"}, "built in"},
		{[]string{"role", "create", "r", "--topic-operation", "FLY"}, `operation "FLY"`},
		{[]string{"user", "set-groups", "alice"}, "--groups"},
		{[]string{"user", "set-groups", "alice", "--groups", "a b"}, `group name "a b"`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append(tc.args, "--controller", "127.0.0.1:1"), Env{Stdout: &stdout, Stderr: &stderr})
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestRoleScopeFlags(t *testing.T) {
	bs, err := roleBindings("writer", []string{"User:alice", "Group:ops"}, roleScopeFlags{topicPrefix: "team-a."})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[1].Principal != "Group:ops" || bs[0].ResourceType != "TOPIC" || bs[0].PatternType != "PREFIXED" || bs[0].ResourceName != "team-a." {
		t.Errorf("bindings %+v", bs)
	}
	bs, err = roleBindings("reader", []string{"User:*"}, roleScopeFlags{})
	if err != nil || len(bs) != 1 || bs[0].ResourceType != "" {
		t.Errorf("unscoped: %+v %v", bs, err)
	}
}

// TestTokenValidatorReadsGroups: the validator serve builds from
// auth.oauth_* gives each token the groups its auth.oauth_groups_claim
// lists, as Group: principals for the session it authenticates; without
// the claim a token names none.
func TestTokenValidatorReadsGroups(t *testing.T) {
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Auth.OAuthJWKSFile, cfg.Auth.OAuthGroupsClaim = jwks, "groups"
	tok := iss.Sign(t, "RS256", map[string]any{"sub": "tom", "exp": time.Now().Add(time.Hour).Unix(), "groups": []string{"ops", "dev"}})
	for _, tc := range []struct{ claim, want string }{{"groups", "Group:ops,Group:dev"}, {"", ""}} {
		cfg.Auth.OAuthGroupsClaim = tc.claim
		v, err := tokenValidator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v(context.Background(), tok)
		if err != nil || got.User != "tom" || strings.Join(got.Groups, ",") != tc.want {
			t.Errorf("claim %q: %+v %v, want groups %q", tc.claim, got, err, tc.want)
		}
	}
}
