package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
)

func scramCred(t testing.TB, mech, pass string) auth.ScramCredential {
	t.Helper()
	c, err := auth.NewScramCredential(mech, pass, auth.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func topicACL(principal, name, op string) auth.ACL {
	return auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: name, PatternType: auth.PatternLiteral,
		Principal: principal, Host: "*", Operation: op, Permission: auth.Allow}
}

// TestSecurityState: users and ACLs go through the FSM with per-item
// outcomes, survive a snapshot, and the snapshot holds no password.
func TestSecurityState(t *testing.T) {
	f := NewFSM(nil)
	cred := scramCred(t, auth.ScramSHA256, "alice-secret")
	r := applyCmd(t, f, &cmdSecurity{Op: secAlterUsers, Upserts: []ScramUpsert{
		{User: "alice", Mechanism: auth.ScramSHA256, Credential: cred},
		{User: "", Mechanism: auth.ScramSHA256, Credential: cred},
		{User: "bob", Mechanism: auth.ScramSHA512, Credential: cred}, // a SHA-256 credential as SHA-512
	}, Deletions: []ScramDeletion{{User: "carol", Mechanism: auth.ScramSHA256}}})
	if r.err != nil || len(r.items) != 4 || r.items[0] != nil || !errors.Is(r.items[1], ErrInvalidRequest) ||
		!errors.Is(r.items[2], ErrInvalidRequest) || !errors.Is(r.items[3], ErrUnknownUser) {
		t.Fatalf("alter users: %+v", r)
	}
	if got, ok := f.ScramCredential("alice", auth.ScramSHA256); !ok || !got.VerifyPassword(auth.ScramSHA256, "alice-secret") {
		t.Fatal("alice's credential is not stored")
	}
	ctx := context.Background()
	v0, _, _ := f.WaitSecurity(ctx, 0)

	r = applyCmd(t, f, &cmdSecurity{Op: secCreateACLs, ACLs: []auth.ACL{
		topicACL("User:alice", "orders", auth.OpWrite),
		topicACL("User:alice", "orders", auth.OpWrite), // twice: one kept
		topicACL("alice", "orders", auth.OpRead),       // not a principal
		topicACL("User:bob", "logs", auth.OpRead),
	}})
	if r.err != nil || r.items[0] != nil || r.items[1] != nil || !errors.Is(r.items[2], ErrInvalidRequest) || r.items[3] != nil {
		t.Fatalf("create acls: %+v", r)
	}
	v1, acls, err := f.WaitSecurity(ctx, v0)
	if err != nil || v1 <= v0 || len(acls) != 2 {
		t.Fatalf("after create: version %d -> %d, %d ACLs, %v", v0, v1, len(acls), err)
	}

	data := snapshotBytes(t, f)
	if bytes.Contains(data, []byte("alice-secret")) {
		t.Fatal("the snapshot holds a password")
	}
	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if v, acls := g.SecurityACLs(); v != v1 || len(acls) != 2 {
		t.Errorf("restored: version %d, %d ACLs", v, len(acls))
	}
	if _, ok := g.ScramCredential("alice", auth.ScramSHA256); !ok {
		t.Error("restored: no alice")
	}

	r = applyCmd(t, f, &cmdSecurity{Op: secDeleteACLs, Filters: []auth.ACLFilter{{Principal: "User:alice"}, {ResourceName: "nothing"}}})
	if r.err != nil || len(r.acls) != 2 || len(r.acls[0]) != 1 || len(r.acls[1]) != 0 {
		t.Fatalf("delete acls: %+v", r)
	}
	r = applyCmd(t, f, &cmdSecurity{Op: secAlterUsers, Deletions: []ScramDeletion{{User: "alice", Mechanism: auth.ScramSHA256}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	if _, ok := f.ScramCredential("alice", auth.ScramSHA256); ok {
		t.Error("alice survives her deletion")
	}
	if r := applyCmd(t, f, &cmdSecurity{Op: "grant_everything"}); !errors.Is(r.err, ErrMalformedCommand) {
		t.Errorf("unknown op: %v", r.err)
	}
}

// TestWaitSecurityWakesOnChange: a waiter on the current version returns
// when an ACL is added, not before.
func TestWaitSecurityWakesOnChange(t *testing.T) {
	f := NewFSM(nil)
	v, _, _ := f.WaitSecurity(context.Background(), 1<<62)
	done := make(chan uint64)
	go func() {
		nv, _, _ := f.WaitSecurity(context.Background(), v)
		done <- nv
	}()
	applyCmd(t, f, &cmdSecurity{Op: secCreateACLs, ACLs: []auth.ACL{topicACL("User:a", "t", auth.OpRead)}})
	if nv := <-done; nv == v {
		t.Errorf("woke at the same version %d", nv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	v, _ = f.SecurityACLs()
	if _, _, err := f.WaitSecurity(ctx, v); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no change: err = %v", err)
	}
}

func TestSecuritySnapshotRejectsBadEntries(t *testing.T) {
	for _, bad := range []string{
		`{"format":1,"cluster_id":"","version":0,"topics":[],"nodes":[],"broker_configs":{},"deleted":[],"security":{"version":1,"acls":[{"resource_type":"BROKER","resource_name":"x","pattern_type":"LITERAL","principal":"User:a","host":"*","operation":"READ","permission":"ALLOW"}]}}`,
		`{"format":1,"cluster_id":"","version":0,"topics":[],"nodes":[],"broker_configs":{},"deleted":[],"security":{"version":1,"users":{"a":{"SCRAM-SHA-256":{"salt":"AA==","iterations":1,"stored_key":"","server_key":""}}}}}`,
	} {
		g := NewFSM(nil)
		if err := g.Restore(io.NopCloser(strings.NewReader(bad))); err == nil {
			t.Errorf("restored %s", bad)
		}
	}
}

// TestSecurityOverTheNetwork: users and ACLs through Client, as tools/
// and separate gateways use them, on a single-voter cluster; every error
// keeps its sentinel across the wire.
func TestSecurityOverTheNetwork(t *testing.T) {
	nodes := startNetCluster(t, 1)
	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 30 * time.Second})
	defer cl.Close()
	ctx := context.Background()

	cred := scramCred(t, auth.ScramSHA512, "pw-pw-pw")
	ar, err := cl.AlterScramUsers(ctx, AlterScramRequest{
		Upserts:   []ScramUpsert{{User: "alice", Mechanism: auth.ScramSHA512, Credential: cred}},
		Deletions: []ScramDeletion{{User: "nobody", Mechanism: auth.ScramSHA256}},
	})
	if err != nil || len(ar.Errors) != 2 || ar.Errors[0] != nil || !errors.Is(ar.Errors[1], ErrUnknownUser) {
		t.Fatalf("alter users: %+v %v", ar, err)
	}
	g, err := cl.GetScramCredential(ctx, GetScramRequest{User: "alice", Mechanism: auth.ScramSHA512})
	if err != nil || !g.Found || !g.Credential.VerifyPassword(auth.ScramSHA512, "pw-pw-pw") {
		t.Fatalf("get credential: %+v %v", g, err)
	}
	d, err := cl.DescribeScramUsers(ctx, DescribeScramRequest{Users: []string{"alice", "bob"}})
	if err != nil || len(d.Users) != 2 || len(d.Users[0].Credentials) != 1 || d.Users[0].Credentials[0].Iterations != auth.MinIterations ||
		!errors.Is(d.Users[1].Error, ErrUnknownUser) {
		t.Fatalf("describe users: %+v %v", d, err)
	}

	cr, err := cl.CreateACLs(ctx, CreateACLsRequest{ACLs: []auth.ACL{topicACL("User:alice", "orders", auth.OpRead), topicACL("User:alice", "", auth.OpRead)}})
	if err != nil || cr.Errors[0] != nil || !errors.Is(cr.Errors[1], ErrInvalidRequest) {
		t.Fatalf("create ACLs: %+v %v", cr, err)
	}
	acls, err := cl.DescribeACLs(ctx, DescribeACLsRequest{Filter: auth.ACLFilter{PatternType: auth.Match, ResourceName: "orders"}})
	if err != nil || len(acls.ACLs) != 1 || acls.Version == 0 {
		t.Fatalf("describe ACLs: %+v %v", acls, err)
	}
	del, err := cl.DeleteACLs(ctx, DeleteACLsRequest{Filters: []auth.ACLFilter{{Principal: "User:alice"}}})
	if err != nil || len(del.Deleted) != 1 || len(del.Deleted[0]) != 1 {
		t.Fatalf("delete ACLs: %+v %v", del, err)
	}
}
