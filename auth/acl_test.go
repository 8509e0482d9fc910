package auth

import (
	"errors"
	"strings"
	"testing"
)

func allow(principal, rt, pattern, name, op string) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pattern, Principal: principal, Host: "*", Operation: op, Permission: Allow}
}

// TestAuthorizerMatrix walks the ACL model: literal, prefixed and
// wildcard resources, deny over allow, implied operations, hosts, the
// User:* principal, super users and default deny.
func TestAuthorizerMatrix(t *testing.T) {
	z := NewAuthorizer(true, []string{"User:admin"})
	denyHost := allow("User:alice", ResourceTopic, PatternLiteral, "orders", OpWrite)
	denyHost.Permission, denyHost.Host = Deny, "10.0.0.9"
	hostOnly := allow("User:carol", ResourceTopic, PatternLiteral, "orders", OpRead)
	hostOnly.Host = "127.0.0.1"
	denyAll := allow("User:alice", ResourceTopic, PatternPrefixed, "secret-", OpAll)
	denyAll.Permission = Deny
	z.Set(1, []ACL{
		allow("User:alice", ResourceTopic, PatternLiteral, "orders", OpWrite),
		allow("User:alice", ResourceTopic, PatternLiteral, "orders", OpRead),
		allow("User:alice", ResourceGroup, PatternLiteral, "g1", OpRead),
		allow("User:alice", ResourceTopic, PatternPrefixed, "logs-", OpRead),
		allow("User:alice", ResourceTopic, PatternLiteral, "*", OpDescribeConfigs),
		allow("User:alice", ResourceTopic, PatternPrefixed, "", OpAll), // prefix "" is every topic...
		denyAll, // ...but not secret-*
		denyHost,
		hostOnly,
		allow("User:*", ResourceTopic, PatternLiteral, "public", OpRead),
		allow("User:bob", ResourceCluster, PatternLiteral, ClusterName, OpAlterConfigs),
	})
	for _, tc := range []struct {
		p, host, op, rt, name string
		want                  bool
	}{
		{"User:alice", "127.0.0.1", OpWrite, ResourceTopic, "orders", true},
		{"User:alice", "127.0.0.1", OpDescribe, ResourceTopic, "orders", true}, // implied by READ/WRITE
		{"User:alice", "10.0.0.9", OpWrite, ResourceTopic, "orders", false},    // denied from that host
		{"User:alice", "10.0.0.9", OpRead, ResourceTopic, "orders", true},      // the deny is for WRITE only
		{"User:alice", "127.0.0.1", OpRead, ResourceTopic, "logs-app", true},   // prefixed
		{"User:alice", "127.0.0.1", OpRead, ResourceTopic, "secret-x", false},  // DENY ALL prefixed wins
		{"User:alice", "127.0.0.1", OpRead, ResourceGroup, "g1", true},
		{"User:alice", "127.0.0.1", OpRead, ResourceGroup, "g2", false},
		{"User:alice", "127.0.0.1", OpCreate, ResourceCluster, ClusterName, false},
		{"User:bob", "127.0.0.1", OpRead, ResourceTopic, "orders", false}, // default deny
		{"User:bob", "127.0.0.1", OpRead, ResourceTopic, "public", true},  // User:*
		{"User:bob", "127.0.0.1", OpDescribeConfigs, ResourceCluster, ClusterName, true},
		{"User:bob", "127.0.0.1", OpAlterConfigs, ResourceCluster, ClusterName, true},
		{"User:bob", "127.0.0.1", OpAlter, ResourceCluster, ClusterName, false},
		{"User:carol", "127.0.0.1", OpRead, ResourceTopic, "orders", true},
		{"User:carol", "127.0.0.2", OpRead, ResourceTopic, "orders", false},
		{"User:admin", "10.0.0.9", OpDelete, ResourceTopic, "secret-x", true}, // super user
		{"User:ANONYMOUS", "127.0.0.1", OpDescribe, ResourceTopic, "orders", false},
	} {
		got := z.Authorize(Request{Principal: tc.p, Host: tc.host, Operation: tc.op, ResourceType: tc.rt, ResourceName: tc.name})
		if got != tc.want {
			t.Errorf("%s from %s: %s %s %q = %v, want %v", tc.p, tc.host, tc.op, tc.rt, tc.name, got, tc.want)
		}
	}
	writesSome := func(p string) bool {
		return z.AuthorizeAny(Request{Principal: p, Host: "127.0.0.1", Operation: OpWrite, ResourceType: ResourceTopic})
	}
	if !writesSome("User:alice") || writesSome("User:bob") {
		t.Error("AuthorizeAny")
	}
	off := NewAuthorizer(false, nil)
	if !off.Authorize(Request{Principal: "User:x", Operation: OpDelete, ResourceType: ResourceTopic, ResourceName: "t"}) {
		t.Error("an authorizer that is off denies")
	}
	z.Set(0, nil) // older: ignored
	if !z.Authorize(Request{Principal: "User:alice", Host: "h", Operation: OpRead, ResourceType: ResourceTopic, ResourceName: "orders"}) {
		t.Error("an older ACL set replaced a newer one")
	}
}

func TestACLCheckAndFilter(t *testing.T) {
	good := allow("User:alice", ResourceTopic, PatternPrefixed, "orders-", OpRead)
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*ACL){
		"type":       func(a *ACL) { a.ResourceType = "BROKER" },
		"pattern":    func(a *ACL) { a.PatternType = Match },
		"name":       func(a *ACL) { a.ResourceName = "" },
		"cluster":    func(a *ACL) { a.ResourceType, a.ResourceName = ResourceCluster, "c" },
		"op":         func(a *ACL) { a.Operation = Any },
		"permission": func(a *ACL) { a.Permission = Any },
		"principal":  func(a *ACL) { a.Principal = "alice" },
		"group *":    func(a *ACL) { a.Principal = "Group:*" },
		"group name": func(a *ACL) { a.Principal = "Group:a b" },
		"host":       func(a *ACL) { a.Host = "" },
		"bound host": func(a *ACL) { a.Host = BindingHostPrefix + RoleReader },
	} {
		a := good
		mut(&a)
		if err := a.Check(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	for _, p := range []string{"User:*", "Group:ops"} {
		a := good
		a.Principal = p
		if err := a.Check(); err != nil {
			t.Errorf("principal %s: %v", p, err)
		}
	}
	lit := allow("User:alice", ResourceTopic, PatternLiteral, "orders", OpRead)
	wild := allow("User:bob", ResourceTopic, PatternLiteral, "*", OpRead)
	for _, tc := range []struct {
		f    ACLFilter
		a    ACL
		want bool
	}{
		{ACLFilter{}, good, true},
		{ACLFilter{ResourceType: ResourceGroup}, good, false},
		{ACLFilter{PatternType: Match, ResourceName: "orders-1"}, good, true},
		{ACLFilter{PatternType: Match, ResourceName: "orders"}, lit, true},
		{ACLFilter{PatternType: Match, ResourceName: "orders"}, wild, true},
		{ACLFilter{PatternType: Match, ResourceName: "orders"}, good, false},
		{ACLFilter{PatternType: PatternLiteral, ResourceName: "orders"}, lit, true},
		{ACLFilter{PatternType: PatternLiteral}, good, false},
		{ACLFilter{Principal: "User:bob"}, lit, false},
		{ACLFilter{Operation: Any, Permission: Allow}, lit, true},
	} {
		if got := tc.f.Matches(tc.a); got != tc.want {
			t.Errorf("%+v matches %s = %v, want %v", tc.f, tc.a, got, tc.want)
		}
	}
}

// TestGroupACLs: Group:NAME entries apply to the group's members, by
// stored groups and by token groups, allow and deny alike, and deny wins
// across a user's entries and its groups' in both directions.
func TestGroupACLs(t *testing.T) {
	z := NewAuthorizer(true, nil)
	deny := func(a ACL) ACL { a.Permission = Deny; return a }
	z.SetAll(1, []ACL{
		allow("Group:ops", ResourceTopic, PatternPrefixed, "ops.", OpAll),
		allow("Group:ops", ResourceGroup, PatternLiteral, "g-ops", OpRead),
		deny(allow("Group:contractors", ResourceTopic, PatternLiteral, "ops.payroll", OpRead)),
		allow("User:bob", ResourceTopic, PatternLiteral, "ops.payroll", OpRead),
		deny(allow("User:olga", ResourceTopic, PatternLiteral, "ops.audit", OpWrite)),
	}, RBAC{UserGroups: map[string][]string{"olga": {"ops"}, "bob": {"contractors"}, "carl": {"ops", "contractors"}}})
	// tina's session holds a token naming ops; carl's one naming none.
	tokenGroups := map[string][]string{"User:tina": {"Group:ops"}}
	for _, tc := range []struct {
		p, op, rt, name string
		want            bool
	}{
		{"User:olga", OpWrite, ResourceTopic, "ops.metrics", true}, // stored group
		{"User:olga", OpRead, ResourceGroup, "g-ops", true},
		{"User:tina", OpRead, ResourceTopic, "ops.metrics", true},       // token group
		{"User:tina", OpRead, ResourceTopic, "other", false},            // the group's entries only
		{"User:bob", OpWrite, ResourceTopic, "ops.metrics", false},      // not a member
		{"User:bob", OpRead, ResourceTopic, "ops.payroll", false},       // group DENY beats user ALLOW
		{"User:carl", OpRead, ResourceTopic, "ops.payroll", false},      // DENY of one group beats ALLOW of another
		{"User:carl", OpRead, ResourceTopic, "ops.metrics", true},       // ...on that topic only
		{"User:olga", OpWrite, ResourceTopic, "ops.audit", false},       // user DENY beats group ALLOW
		{"User:ops", OpRead, ResourceTopic, "ops.metrics", false},       // a user named like the group is no member
		{"Group:ops", OpRead, ResourceTopic, "ops.metrics", false},      // a request never acts as a group
		{"User:ANONYMOUS", OpRead, ResourceTopic, "ops.metrics", false}, // default deny
	} {
		got := z.Authorize(Request{Principal: tc.p, Groups: tokenGroups[tc.p], Host: "127.0.0.1", Operation: tc.op, ResourceType: tc.rt, ResourceName: tc.name})
		if got != tc.want {
			t.Errorf("%s: %s %s %q = %v, want %v", tc.p, tc.op, tc.rt, tc.name, got, tc.want)
		}
	}
	// Token groups are the session's: tina without them is no member.
	if z.Authorize(Request{Principal: "User:tina", Host: "127.0.0.1", Operation: OpRead, ResourceType: ResourceTopic, ResourceName: "ops.metrics"}) {
		t.Error("tina's token groups outlived her session's request")
	}
	// A token's group DENY binds a user whose stored groups allow.
	if z.Authorize(Request{Principal: "User:olga", Groups: []string{"Group:contractors"}, Host: "127.0.0.1", Operation: OpRead, ResourceType: ResourceTopic, ResourceName: "ops.payroll"}) {
		t.Error("a token group's DENY did not win")
	}
	anyTopic := func(p string, groups ...string) bool {
		return z.AuthorizeAny(Request{Principal: p, Groups: groups, Host: "127.0.0.1", Operation: OpWrite, ResourceType: ResourceTopic})
	}
	if !anyTopic("User:tina", "Group:ops") || anyTopic("User:tina") || anyTopic("User:bob") {
		t.Error("AuthorizeAny with group entries")
	}
}

// TestGeneration: the generation moves with every change that can turn
// a decision: ACLs, roles and stored groups alike.
func TestGeneration(t *testing.T) {
	z := NewAuthorizer(true, nil)
	step := func(what string, f func()) {
		t.Helper()
		g := z.Generation()
		f()
		if z.Generation() == g {
			t.Errorf("%s: the generation did not move", what)
		}
	}
	step("Set", func() { z.Set(1, []ACL{allow("Group:ops", ResourceTopic, PatternLiteral, "t", OpRead)}) })
	step("SetRBAC", func() { z.SetRBAC(2, RBAC{UserGroups: map[string][]string{"alice": {"ops"}}}) })
	step("SetAll", func() { z.SetAll(3, nil, RBAC{}) })
}

// TestBoundACLs: a binding's entries as listings show them are marked
// with the role, cannot be created as ACLs, and the refusal to delete
// them names the binding and the command that removes it.
func TestBoundACLs(t *testing.T) {
	r := RBAC{Bindings: []RoleBinding{
		{Role: RoleReader, Principal: "Group:ops"},
		{Role: RoleWriter, Principal: "User:alice", ResourceType: ResourceTopic, PatternType: PatternPrefixed, ResourceName: "team-a."},
		{Role: "gone", Principal: "User:x"},
	}}
	bound := r.BoundACLs()
	if len(bound) != len(r.Expand()) {
		t.Fatalf("%d bound entries, %d expanded", len(bound), len(r.Expand()))
	}
	for i, b := range bound {
		if b.ACL != r.Expand()[i] {
			t.Errorf("entry %d: %s, expanded %s", i, b.ACL, r.Expand()[i])
		}
		l := b.Listed()
		if l.Host != BindingHostPrefix+b.Binding.Role || l.Permission != Allow {
			t.Errorf("listed %s", l)
		}
		if err := l.Check(); !errors.Is(err, ErrInvalid) {
			t.Errorf("a listed entry of a binding passes as an ACL: %v", err)
		}
	}
	if got, want := r.Bindings[1].UnbindCommand(), "aerostream role unbind writer --principal User:alice --topic-prefix team-a."; got != want {
		t.Errorf("UnbindCommand = %q, want %q", got, want)
	}
	if got, want := r.Bindings[0].UnbindCommand(), "aerostream role unbind reader --principal Group:ops"; got != want {
		t.Errorf("UnbindCommand = %q, want %q", got, want)
	}
	err := ErrBindingEntries(r.Bindings[:2])
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "aerostream role unbind reader --principal Group:ops") ||
		!strings.Contains(err.Error(), "--topic-prefix team-a.") {
		t.Errorf("ErrBindingEntries = %v", err)
	}
}
