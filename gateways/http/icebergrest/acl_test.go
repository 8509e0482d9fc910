package icebergrest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/aerostream/aerostream/auth"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
)

// syncLog is a log destination read while the server writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestACLs: with the authorizer on, behind gateways/http's Guard, a
// principal lists the tables whose topic it may DESCRIBE and loads those
// whose topic it may READ (a dead-letter table goes with its topic); any
// other load is a 403 ForbiddenException, whether or not the table
// exists, and is audited. With the authorizer off all is served.
func TestACLs(t *testing.T) {
	cat := newSQLCatalog(t)
	for _, name := range []string{"orders", "orders~dlq", "secret"} {
		makeTable(t, cat, table.Identifier{"aerostream", name}, 1)
	}
	acl := func(user, op, topic string) auth.ACL {
		return auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: topic, PatternType: auth.PatternLiteral,
			Principal: "User:" + user, Host: "*", Operation: op, Permission: auth.Allow}
	}
	on := auth.NewAuthorizer(true, nil)
	on.Set(1, []auth.ACL{acl("alice", auth.OpRead, "orders"), acl("bob", auth.OpDescribe, "orders")})
	logs := &syncLog{}
	serveAs := func(z *auth.Authorizer) *httptest.Server {
		guard := gwhttp.NewGuard(gwhttp.AuthOptions{Authorizer: z, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		h := New(Options{Catalog: cat, Authorizer: guard, Logger: slog.New(slog.DiscardHandler),
			Topic: func(id table.Identifier) string { return strings.TrimSuffix(id[len(id)-1], "~dlq") }})
		// Stands in for the Guard's authentication: the principal is
		// the header's.
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := gwhttp.Principal{Name: r.Header.Get("X-Principal"), Host: "127.0.0.1", Method: "basic"}
			h.ServeHTTP(w, r.WithContext(gwhttp.WithPrincipal(r.Context(), p)))
		}))
		t.Cleanup(ts.Close)
		return ts
	}
	getAs := func(ts *httptest.Server, principal, path string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Principal", principal)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		body, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return rsp.StatusCode, body
	}
	list := func(ts *httptest.Server, principal string) []string {
		t.Helper()
		code, body := getAs(ts, principal, "/v1/namespaces/aerostream/tables")
		var out listTablesResponse
		if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil {
			t.Fatalf("list as %s: %d %s", principal, code, body)
		}
		var names []string
		for _, id := range out.Identifiers {
			names = append(names, id.Name)
		}
		return names
	}

	ts := serveAs(on)
	for _, p := range []string{"User:alice", "User:bob"} {
		if got := list(ts, p); !slices.Equal(got, []string{"orders", "orders~dlq"}) {
			t.Errorf("%s lists %v, want [orders orders~dlq]", p, got)
		}
	}
	if got := list(ts, "User:carol"); len(got) != 0 {
		t.Errorf("carol, without ACLs, lists %v", got)
	}
	for _, c := range []struct {
		principal, table string
		want             int
	}{
		{"User:alice", "orders", http.StatusOK},
		{"User:alice", "orders~dlq", http.StatusOK},
		{"User:alice", "secret", http.StatusForbidden},
		{"User:alice", "nope", http.StatusForbidden}, // no READ: existence is not told
		{"User:bob", "orders", http.StatusForbidden}, // DESCRIBE lists, READ loads
	} {
		code, body := getAs(ts, c.principal, "/v1/namespaces/aerostream/tables/"+c.table)
		if code != c.want {
			t.Errorf("%s loads %s: %d, want %d (%s)", c.principal, c.table, code, c.want, body)
			continue
		}
		if code == http.StatusForbidden {
			if e := errorOf(t, body); e.Type != "ForbiddenException" || !strings.Contains(e.Message, "READ") {
				t.Errorf("%s loads %s: error %+v", c.principal, c.table, e)
			}
		}
	}
	for _, want := range [][]string{{"principal=User:bob", "operation=READ resource_type=TOPIC resource=orders"},
		{"principal=User:alice", "operation=READ resource_type=TOPIC resource=secret"}} {
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			found = found || strings.Contains(line, `msg="operation denied"`) && strings.Contains(line, want[0]) && strings.Contains(line, want[1])
		}
		if !found {
			t.Errorf("no audit line with %q in:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "User:carol") {
		t.Errorf("a listing's hidden tables were audited as denials:\n%s", logs)
	}

	// The authorizer off: everything is served, as before.
	off := serveAs(auth.NewAuthorizer(false, nil))
	if got := list(off, "User:carol"); len(got) != 3 {
		t.Errorf("authorizer off: carol lists %v, want all 3", got)
	}
	if code, body := getAs(off, "User:carol", "/v1/namespaces/aerostream/tables/secret"); code != http.StatusOK {
		t.Errorf("authorizer off: load secret: %d %s", code, body)
	}
}
