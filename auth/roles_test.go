package auth

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestRolesAuthorize: built-in roles expand to what they say, a scoped
// binding grants on its pattern only, a Group binding reaches the
// group's members (stored or from a token), a DENY ACL wins over a role,
// and a binding of an unknown role grants nothing.
func TestRolesAuthorize(t *testing.T) {
	z := NewAuthorizer(true, nil)
	denyOrders := allow("User:wendy", ResourceTopic, PatternLiteral, "team-a.orders", OpWrite)
	denyOrders.Permission = Deny
	z.SetAll(3, []ACL{denyOrders, allow("User:carl", ResourceTopic, PatternLiteral, "x", OpRead)}, RBAC{
		Roles: []Role{{Name: "auditor", Permissions: []RolePermission{{ResourceCluster, []string{OpDescribeConfigs}}}}},
		Bindings: []RoleBinding{
			{Role: RoleReader, Principal: "User:rita"},
			{Role: RoleWriter, Principal: "User:wendy", ResourceType: ResourceTopic, PatternType: PatternPrefixed, ResourceName: "team-a."},
			{Role: RoleOperator, Principal: "Group:ops"},
			{Role: RoleAdmin, Principal: "User:ada"},
			{Role: "auditor", Principal: "Group:audit"},
			{Role: "gone", Principal: "User:carl"},
			{Role: RoleReader, Principal: "Group:sso", ResourceType: ResourceGroup, PatternType: PatternLiteral, ResourceName: "g1"},
		},
		UserGroups: map[string][]string{"olga": {"ops"}, "ada": {"audit"}},
	})
	// tom's session holds a token naming sso.
	tokenGroups := map[string][]string{"User:tom": {"Group:sso"}}
	for _, tc := range []struct {
		p, op, rt, name string
		want            bool
	}{
		{"User:rita", OpRead, ResourceTopic, "any", true},
		{"User:rita", OpDescribe, ResourceGroup, "g", true},
		{"User:rita", OpWrite, ResourceTopic, "any", false},
		{"User:rita", OpIdempotentWrite, ResourceCluster, ClusterName, false},
		{"User:wendy", OpWrite, ResourceTopic, "team-a.events", true},
		{"User:wendy", OpRead, ResourceTopic, "team-a.events", true},
		{"User:wendy", OpWrite, ResourceTopic, "team-b.events", false},  // outside the prefix
		{"User:wendy", OpDelete, ResourceTopic, "team-a.events", false}, // not a writer's
		{"User:wendy", OpWrite, ResourceTopic, "team-a.orders", false},  // DENY ACL wins
		{"User:wendy", OpRead, ResourceGroup, "g", false},               // scoped to topics
		{"User:olga", OpDelete, ResourceTopic, "t", true},               // operator through Group:ops
		{"User:olga", OpAlterConfigs, ResourceGroup, "g", true},
		{"User:olga", OpDescribe, ResourceCluster, ClusterName, true},
		{"User:olga", OpAlter, ResourceCluster, ClusterName, false}, // the HTTP admin routes' operation
		{"User:ada", OpAlter, ResourceCluster, ClusterName, true},
		{"User:ada", OpDelete, ResourceTransactionalID, "tx", true},
		{"User:ada", OpDescribeConfigs, ResourceCluster, ClusterName, true},
		{"User:carl", OpRead, ResourceTopic, "x", true},  // his ACL
		{"User:carl", OpRead, ResourceTopic, "y", false}, // an unknown role grants nothing
		{"User:tom", OpRead, ResourceGroup, "g1", true},  // token groups
		{"User:tom", OpRead, ResourceGroup, "g2", false},
		{"User:rita", OpRead, ResourceGroup, "g1", true}, // her own binding, not the token's
		{"Group:ops", OpRead, ResourceTopic, "t", false}, // a group is not a principal that asks
	} {
		got := z.Authorize(Request{Principal: tc.p, Groups: tokenGroups[tc.p], Host: "127.0.0.1", Operation: tc.op, ResourceType: tc.rt, ResourceName: tc.name})
		if got != tc.want {
			t.Errorf("%s %s %s:%s = %v, want %v", tc.p, tc.op, tc.rt, tc.name, got, tc.want)
		}
	}
	if !z.AuthorizeAny(Request{Principal: "User:wendy", Host: "127.0.0.1", Operation: OpWrite, ResourceType: ResourceTopic}) {
		t.Error("AuthorizeAny: wendy writes some topic through her role")
	}
	if z.AuthorizeAny(Request{Principal: "User:rita", Host: "127.0.0.1", Operation: OpWrite, ResourceType: ResourceTopic}) {
		t.Error("AuthorizeAny: rita writes no topic")
	}

	// New ACLs keep the roles; an older version changes nothing.
	z.Set(4, nil)
	if !z.Authorize(Request{Principal: "User:wendy", Operation: OpWrite, ResourceType: ResourceTopic, ResourceName: "team-a.orders"}) {
		t.Error("after the DENY is gone, wendy's role lets her write team-a.orders")
	}
	z.SetRBAC(2, RBAC{})
	if !z.Authorize(Request{Principal: "User:rita", Operation: OpRead, ResourceType: ResourceTopic, ResourceName: "t"}) {
		t.Error("an older role state replaced a newer one")
	}
	z.SetRBAC(5, RBAC{})
	if z.Authorize(Request{Principal: "User:rita", Operation: OpRead, ResourceType: ResourceTopic, ResourceName: "t"}) {
		t.Error("rita's role outlived its binding")
	}
}

func TestExpandBinding(t *testing.T) {
	writer, _ := FindRole(nil, RoleWriter)
	all := ExpandBinding(writer, RoleBinding{Role: RoleWriter, Principal: "User:a"})
	scoped := ExpandBinding(writer, RoleBinding{Role: RoleWriter, Principal: "User:a", ResourceType: ResourceTopic, PatternType: PatternLiteral, ResourceName: "orders"})
	if len(all) != 8 || len(scoped) != 3 {
		t.Fatalf("writer: %d entries unscoped (want 8), %d on one topic (want 3)", len(all), len(scoped))
	}
	for _, a := range append(all, scoped...) {
		if err := a.Check(); err != nil {
			t.Errorf("%s: %v", a, err)
		}
		if a.Permission != Allow || a.Host != Wildcard {
			t.Errorf("%s: a role grants ALLOW from any host", a)
		}
	}
	for _, a := range scoped {
		if a.ResourceType != ResourceTopic || a.ResourceName != "orders" || a.PatternType != PatternLiteral {
			t.Errorf("scoped entry %s", a)
		}
	}
}

func TestRoleAndBindingCheck(t *testing.T) {
	ok := []RoleBinding{
		{Role: RoleReader, Principal: "User:a"},
		{Role: RoleReader, Principal: "User:*"},
		{Role: "custom-1", Principal: "Group:ops", ResourceType: ResourceGroup, PatternType: PatternPrefixed, ResourceName: "g"},
	}
	for _, b := range ok {
		if err := b.Check(); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	bad := []RoleBinding{
		{Role: "", Principal: "User:a"},
		{Role: "-x", Principal: "User:a"},
		{Role: RoleReader, Principal: "alice"},
		{Role: RoleReader, Principal: "Group:"},
		{Role: RoleReader, Principal: "Group:a b"},
		{Role: RoleReader, Principal: "User:a", ResourceType: ResourceCluster, PatternType: PatternLiteral, ResourceName: ClusterName},
		{Role: RoleReader, Principal: "User:a", ResourceType: ResourceTopic, PatternType: "MATCH", ResourceName: "t"},
		{Role: RoleReader, Principal: "User:a", ResourceType: ResourceTopic, PatternType: PatternLiteral},
		{Role: RoleReader, Principal: "User:a", ResourceName: "t"},
	}
	for _, b := range bad {
		if err := b.Check(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", b, err)
		}
	}
	badRoles := []Role{
		{Name: RoleAdmin, Permissions: adminPerms},
		{Name: "r"},
		{Name: "r", Permissions: []RolePermission{{"BROKER", []string{OpRead}}}},
		{Name: "r", Permissions: []RolePermission{{ResourceTopic, []string{"FLY"}}}},
		{Name: "r", Permissions: []RolePermission{{ResourceTopic, nil}}},
		{Name: "r", Permissions: []RolePermission{{ResourceTopic, []string{OpRead}}, {ResourceTopic, []string{OpWrite}}}},
	}
	for _, r := range badRoles {
		if err := r.Check(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", r, err)
		}
	}
	if err := (Role{Name: "r", Permissions: []RolePermission{{ResourceTopic, []string{OpRead}}}}).Check(); err != nil {
		t.Error(err)
	}
}

// TestClaimGroups: a token's groups claim, an array or names separated
// by spaces, gives its valid names once each, as Group: principals.
func TestClaimGroups(t *testing.T) {
	for _, tc := range []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"groups": []any{"ops", "dev", "ops", 7, "bad name"}}, "Group:ops,Group:dev"},
		{map[string]any{"groups": "ops  dev"}, "Group:ops,Group:dev"},
		{map[string]any{"groups": map[string]any{"ops": true}}, ""},
		{map[string]any{"roles": []any{"ops"}}, ""},
	} {
		if got := strings.Join(claimGroups(tc.claims, "groups"), ","); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.claims, got, tc.want)
		}
	}
	if got := claimGroups(map[string]any{"groups": "ops"}, ""); got != nil {
		t.Errorf("no claim configured: %v", got)
	}
}

// BenchmarkAuthorizeWithRoles measures a produce's topic check against
// 1000 ACLs of other users and 100 role bindings, the asking user being
// a member of two groups, one of them bound; with "token" the bound group
// comes from the session's token instead of the user's stored groups.
func BenchmarkAuthorizeWithRoles(b *testing.B) {
	for _, name := range []string{"acls", "acls+roles", "acls+roles+token"} {
		roles, token := name != "acls", name == "acls+roles+token"
		b.Run(name, func(b *testing.B) {
			z := NewAuthorizer(true, nil)
			var acls []ACL
			for i := range 1000 {
				acls = append(acls, allow("User:u"+strconv.Itoa(i), ResourceTopic, PatternLiteral, "t"+strconv.Itoa(i), OpWrite))
			}
			r := RBAC{UserGroups: map[string][]string{"alice": {"dev", "ops"}}}
			if roles {
				for i := range 100 {
					r.Bindings = append(r.Bindings, RoleBinding{Role: RoleReader, Principal: "Group:g" + strconv.Itoa(i)})
				}
				r.Bindings = append(r.Bindings, RoleBinding{Role: RoleWriter, Principal: "Group:ops", ResourceType: ResourceTopic, PatternType: PatternPrefixed, ResourceName: "orders"})
			} else {
				acls = append(acls, allow("User:alice", ResourceTopic, PatternPrefixed, "orders", OpWrite))
			}
			req := Request{Principal: "User:alice", Host: "127.0.0.1", Operation: OpWrite, ResourceType: ResourceTopic, ResourceName: "orders"}
			if token {
				r.UserGroups["alice"], req.Groups = []string{"dev"}, []string{"Group:ops"}
			}
			z.SetAll(1, acls, r)
			b.ReportAllocs()
			for b.Loop() {
				if !z.Authorize(req) {
					b.Fatal("denied")
				}
			}
		})
	}
}
