package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUserAndACLUsage: a password never comes from argv, and an ACL
// command that names no principal, operation or resource says so; none
// of them reaches for a controller (exit 2, nothing dialled).
func TestUserAndACLUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"user", "create", "alice"}, "--password-stdin or --password-file (never the command line)"},
		{[]string{"user", "create", "alice", "--password", "pw"}, "unknown flag: --password"},
		{[]string{"user", "create", "alice", "--password-stdin", "--mechanism", "PLAIN"}, `--mechanism "PLAIN"`},
		{[]string{"user", "create"}, "missing the user NAME"},
		{[]string{"acl", "add", "--operation", "READ", "--topic", "t"}, "name a principal with --allow or --deny"},
		{[]string{"acl", "add", "--allow", "User:a", "--topic", "t"}, "name the operations with --operation"},
		{[]string{"acl", "add", "--allow", "User:a", "--operation", "READ"}, "name a resource"},
		{[]string{"acl", "add", "--allow", "alice", "--operation", "READ", "--topic", "t"}, `principal "alice"`},
		{[]string{"acl", "add", "--allow", "User:a", "--operation", "FLY", "--topic", "t"}, `operation "FLY"`},
		{[]string{"acl", "remove"}, "name a principal or a resource"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append(tc.args, "--controller", "127.0.0.1:1"), Env{Stdout: &stdout, Stderr: &stderr})
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestReadPassword(t *testing.T) {
	for in, want := range map[string]string{"pw": "pw", "pw\n": "pw", "pw\r\nrest": "pw", "a b\n": "a b"} {
		if got, err := readPassword(strings.NewReader(in), "stdin"); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "\n", strings.Repeat("x", maxPasswordBytes+1)} {
		if _, err := readPassword(strings.NewReader(in), "stdin"); err == nil {
			t.Errorf("%.20q accepted", in)
		}
	}
}

func TestACLFlagsExpand(t *testing.T) {
	f := aclFlags{allow: []string{"User:alice"}, deny: []string{"User:bob"}, operations: []string{"write", "read"},
		topics: []string{"orders"}, groups: []string{"g1"}, hosts: []string{"*"}, pattern: "prefixed"}
	acls, err := f.bindings()
	if err != nil {
		t.Fatal(err)
	}
	if len(acls) != 8 {
		t.Fatalf("%d bindings, want 2 principals x 2 operations x 2 resources", len(acls))
	}
	for _, a := range acls {
		if a.PatternType != "PREFIXED" || (a.Principal == "User:bob") != (a.Permission == "DENY") {
			t.Errorf("binding %s", a)
		}
	}
	if fs := (&aclFlags{pattern: "any"}).filters(); len(fs) != 1 || fs[0].ResourceType != "ANY" || fs[0].Operation != "ANY" {
		t.Errorf("an empty filter: %+v", fs)
	}
}
