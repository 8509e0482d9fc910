package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
