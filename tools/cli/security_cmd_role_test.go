package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
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

// TestTokenGroupsReachTheAuthorizer: a bearer token accepted through
// withTokenGroups makes its user a member of the groups its
// auth.oauth_groups_claim lists, so a Group: binding applies.
func TestTokenGroupsReachTheAuthorizer(t *testing.T) {
	iss, err := authtest.NewIssuer("https://issuer.test", "aerostream")
	if err != nil {
		t.Fatal(err)
	}
	z := auth.NewAuthorizer(true, nil)
	z.SetAll(1, nil, auth.RBAC{Bindings: []auth.RoleBinding{{Role: auth.RoleReader, Principal: "Group:ops"}}})
	accept := func(context.Context, string) (string, time.Time, error) { return "tom", time.Now().Add(time.Hour), nil }
	cfg := config.Default()
	v := withTokenGroups(cfg, accept, z)
	read := auth.Request{Principal: "User:tom", Host: "127.0.0.1", Operation: auth.OpRead, ResourceType: auth.ResourceTopic, ResourceName: "t"}
	if z.Authorize(read) {
		t.Fatal("tom reads before any token")
	}
	if _, _, err := v(context.Background(), iss.Sign(t, "RS256", map[string]any{"sub": "tom", "groups": []string{"ops"}})); err != nil {
		t.Fatal(err)
	}
	if !z.Authorize(read) {
		t.Error("tom's token names ops, bound reader, and tom may not read")
	}
	cfg.Auth.OAuthGroupsClaim = ""
	if withTokenGroups(cfg, accept, z) == nil || withTokenGroups(cfg, nil, z) != nil {
		t.Error("without a claim the validator is passed through as is")
	}
}
