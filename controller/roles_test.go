package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
)

// TestRBACState: roles, bindings and groups go through the FSM with
// per-item outcomes, bump the security version, survive a snapshot, and
// a deleted user loses its groups.
func TestRBACState(t *testing.T) {
	f := NewFSM(nil)
	ctx := context.Background()
	v0, _, _ := f.WaitSecurity(ctx, 1<<62)
	custom := auth.Role{Name: "auditor", Permissions: []auth.RolePermission{{ResourceType: auth.ResourceCluster, Operations: []string{auth.OpDescribeConfigs}}}}
	r := applyCmd(t, f, &cmdSecurity{Op: secPutRoles, Roles: []auth.Role{custom, {Name: auth.RoleAdmin, Permissions: custom.Permissions}}})
	if r.err != nil || len(r.items) != 2 || r.items[0] != nil || !errors.Is(r.items[1], ErrInvalidRequest) {
		t.Fatalf("put roles: %+v", r)
	}
	scoped := auth.RoleBinding{Role: auth.RoleWriter, Principal: "User:alice", ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, ResourceName: "team-a."}
	r = applyCmd(t, f, &cmdSecurity{Op: secBindRoles, Bindings: []auth.RoleBinding{
		scoped,
		scoped, // twice: one kept
		{Role: "auditor", Principal: "Group:ops"},
		{Role: "nope", Principal: "User:alice"},
		{Role: auth.RoleReader, Principal: "alice"},
	}})
	if r.err != nil || r.items[0] != nil || r.items[1] != nil || r.items[2] != nil ||
		!errors.Is(r.items[3], ErrInvalidRequest) || !errors.Is(r.items[4], ErrInvalidRequest) {
		t.Fatalf("bind: %+v", r)
	}
	r = applyCmd(t, f, &cmdSecurity{Op: secSetGroups, Groups: []UserGroups{
		{User: "olga", Groups: []string{"ops", "dev", "ops"}},
		{User: "bad", Groups: []string{"a,b"}},
	}})
	if r.err != nil || r.items[0] != nil || !errors.Is(r.items[1], ErrInvalidRequest) {
		t.Fatalf("set groups: %+v", r)
	}
	r = applyCmd(t, f, &cmdSecurity{Op: secDeleteRoles, RoleNames: []string{"auditor", auth.RoleReader, "nope"}})
	if r.err != nil || !errors.Is(r.items[0], ErrInvalidRequest) || !errors.Is(r.items[1], ErrInvalidRequest) || !errors.Is(r.items[2], ErrInvalidRequest) {
		t.Fatalf("delete a bound, a built-in and an unknown role: %+v", r)
	}
	v1, rb := f.SecurityRBAC()
	if v1 <= v0 || len(rb.Roles) != 1 || len(rb.Bindings) != 2 || len(rb.UserGroups["olga"]) != 2 {
		t.Fatalf("after the writes: version %d -> %d, %+v", v0, v1, rb)
	}

	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	if v, got := g.SecurityRBAC(); v != v1 || len(got.Roles) != 1 || len(got.Bindings) != 2 || len(got.UserGroups["olga"]) != 2 {
		t.Errorf("restored: version %d, %+v", v, got)
	}

	r = applyCmd(t, f, &cmdSecurity{Op: secUnbindRoles, Bindings: []auth.RoleBinding{{Role: "auditor", Principal: "Group:ops"}, {Role: "auditor", Principal: "Group:ops"}}})
	if r.err != nil || r.items[0] != nil || !errors.Is(r.items[1], ErrInvalidRequest) {
		t.Fatalf("unbind: %+v", r)
	}
	if r = applyCmd(t, f, &cmdSecurity{Op: secDeleteRoles, RoleNames: []string{"auditor"}}); r.items[0] != nil {
		t.Fatalf("delete an unbound role: %v", r.items[0])
	}

	cred := scramCred(t, auth.ScramSHA256, "pw")
	applyCmd(t, f, &cmdSecurity{Op: secAlterUsers, Upserts: []ScramUpsert{{User: "olga", Mechanism: auth.ScramSHA256, Credential: cred}}})
	applyCmd(t, f, &cmdSecurity{Op: secAlterUsers, Deletions: []ScramDeletion{{User: "olga", Mechanism: auth.ScramSHA256}}})
	if _, rb := f.SecurityRBAC(); len(rb.UserGroups["olga"]) != 0 {
		t.Errorf("a deleted user keeps groups %v", rb.UserGroups["olga"])
	}
}

// TestRBACThroughClient: the role API over the network, and a binding
// reaching an authorizer fed from DescribeRBAC.
func TestRBACThroughClient(t *testing.T) {
	nodes := startNetCluster(t, 1)
	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 30 * time.Second})
	defer cl.Close()
	ctx := context.Background()
	w, err := cl.BindRoles(ctx, RoleBindingsRequest{Bindings: []auth.RoleBinding{{Role: auth.RoleReader, Principal: "Group:ops"}}})
	if err != nil || len(w.Errors) != 1 || w.Errors[0] != nil {
		t.Fatalf("bind: %+v %v", w, err)
	}
	if w, err = cl.SetUserGroups(ctx, SetUserGroupsRequest{Users: []UserGroups{{User: "olga", Groups: []string{"ops"}}}}); err != nil || w.Errors[0] != nil {
		t.Fatalf("set groups: %+v %v", w, err)
	}
	if w, err = cl.BindRoles(ctx, RoleBindingsRequest{Bindings: []auth.RoleBinding{{Role: "ghost", Principal: "User:x"}}}); err != nil || !errors.Is(w.Errors[0], ErrInvalidRequest) {
		t.Fatalf("bind an unknown role: %+v %v", w, err)
	}
	d, err := cl.DescribeRBAC(ctx, RBACRequest{})
	if err != nil || len(d.Roles) != 4 || !d.Roles[0].BuiltIn || len(d.Bindings) != 1 {
		t.Fatalf("describe: %+v %v", d, err)
	}
	z := auth.NewAuthorizer(true, nil)
	z.SetAll(d.Version, nil, d.RBAC())
	if !z.Authorize(auth.Request{Principal: "User:olga", Host: "127.0.0.1", Operation: auth.OpRead, ResourceType: auth.ResourceTopic, ResourceName: "t"}) {
		t.Error("olga is not a reader through Group:ops")
	}
}

// TestRBACSurvivesRestart: roles, bindings and groups come back when the
// controller restarts, from its snapshot and from its log.
func TestRBACSurvivesRestart(t *testing.T) {
	mc := newMemCluster(t, 1, nil, nil)
	l := mc.leader()
	ctx := context.Background()
	bind := func(p string) {
		t.Helper()
		w, err := l.c.BindRoles(ctx, RoleBindingsRequest{Bindings: []auth.RoleBinding{{Role: auth.RoleWriter, Principal: p}}})
		if err != nil || w.Errors[0] != nil {
			t.Fatalf("bind %s: %+v %v", p, w, err)
		}
	}
	bind("User:in-snapshot")
	if w, err := l.c.SetUserGroups(ctx, SetUserGroupsRequest{Users: []UserGroups{{User: "olga", Groups: []string{"ops"}}}}); err != nil || w.Errors[0] != nil {
		t.Fatalf("set groups: %+v %v", w, err)
	}
	if err := l.c.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	bind("User:in-log")
	mc.stop(l)
	mc.start(l)
	l = mc.leader()
	mc.converged()
	_, rb := l.c.fsm.SecurityRBAC()
	if len(rb.Bindings) != 2 || len(rb.UserGroups["olga"]) != 1 {
		t.Errorf("after a restart: %+v", rb)
	}
	mc.stop(l)
}

// TestBindingEntriesListed: DescribeACLs lists the role bindings' entries
// apart from the ACLs, and only when asked (the ACL refresh of a gateway
// must not take them for ACLs); DeleteACLs leaves them and names, per
// filter, the bindings whose entries it selected. Group: ACLs are stored
// like User: ones.
func TestBindingEntriesListed(t *testing.T) {
	nodes := startNetCluster(t, 1)
	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 30 * time.Second})
	defer cl.Close()
	ctx := context.Background()
	scoped := auth.RoleBinding{Role: auth.RoleWriter, Principal: "User:alice", ResourceType: auth.ResourceTopic, PatternType: auth.PatternPrefixed, ResourceName: "team-a."}
	if w, err := cl.BindRoles(ctx, RoleBindingsRequest{Bindings: []auth.RoleBinding{scoped}}); err != nil || w.Errors[0] != nil {
		t.Fatalf("bind: %+v %v", w, err)
	}
	groupACL := topicACL("Group:ops", "orders", auth.OpRead)
	cr, err := cl.CreateACLs(ctx, CreateACLsRequest{ACLs: []auth.ACL{topicACL("User:alice", "orders", auth.OpRead), groupACL, topicACL("Group:*", "orders", auth.OpRead)}})
	if err != nil || cr.Errors[0] != nil || cr.Errors[1] != nil || !errors.Is(cr.Errors[2], ErrInvalidRequest) {
		t.Fatalf("create ACLs (Group:ops, then Group:*): %+v %v", cr, err)
	}

	alice := auth.ACLFilter{Principal: "User:alice"}
	plain, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: alice})
	if err != nil || len(plain.ACLs) != 1 || len(plain.Bindings) != 0 {
		t.Fatalf("describe without bindings: %+v %v", plain, err)
	}
	all, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: alice, Bindings: true})
	if err != nil || len(all.ACLs) != 1 || len(all.Bindings) != 3 { // writer on topics: READ, DESCRIBE, WRITE
		t.Fatalf("describe with bindings: %+v %v", all, err)
	}
	for _, b := range all.Bindings {
		if b.Binding != scoped || b.Listed().Host != auth.BindingHostPrefix+auth.RoleWriter || b.ACL.ResourceName != "team-a." {
			t.Errorf("bound entry %+v", b)
		}
	}
	byHost, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: auth.ACLFilter{Host: auth.BindingHostPrefix + auth.RoleWriter}, Bindings: true})
	if err != nil || len(byHost.ACLs) != 0 || len(byHost.Bindings) != 3 {
		t.Fatalf("describe by the binding's host: %+v %v", byHost, err)
	}
	groups, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: auth.ACLFilter{Principal: "Group:ops"}})
	if err != nil || len(groups.ACLs) != 1 || groups.ACLs[0] != groupACL {
		t.Fatalf("describe Group:ops: %+v %v", groups, err)
	}

	del, err := cl.DeleteACLs(ctx, DeleteACLsRequest{Filters: []auth.ACLFilter{alice, {Principal: "User:alice", PatternType: auth.PatternPrefixed}}})
	if err != nil || len(del.Deleted) != 2 || len(del.Deleted[0]) != 1 || len(del.Deleted[1]) != 0 {
		t.Fatalf("delete: %+v %v", del, err)
	}
	for i := range 2 {
		if len(del.Bindings) != 2 || len(del.Bindings[i]) != 1 || del.Bindings[i][0] != scoped {
			t.Fatalf("delete filter %d: bindings kept %+v, want the writer binding", i, del.Bindings)
		}
	}
	after, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: alice, Bindings: true})
	if err != nil || len(after.ACLs) != 0 || len(after.Bindings) != 3 {
		t.Fatalf("after delete: %+v %v", after, err)
	}
}
