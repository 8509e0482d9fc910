package cli

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/aerostream/aerostream/auth"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/gateways/http/icebergrest"
)

// tablesCatalog lists tables and holds none of their metadata: enough to
// see which the REST catalog shows and lets through to a load.
type tablesCatalog struct {
	icecatalog.Catalog
	names []string
}

func (c tablesCatalog) ListTables(context.Context, table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		for _, n := range c.names {
			if !yield(table.Identifier{"aerostream", n}, nil) {
				return
			}
		}
	}
}

func (tablesCatalog) LoadTable(context.Context, table.Identifier) (*table.Table, error) {
	return nil, icecatalog.ErrNoSuchTable
}

// TestIcebergRESTFollowsTopicACLs: the catalog /iceberg mounts asks the
// Guard about each table's topic, a dead-letter table's being the topic
// whose records it holds.
func TestIcebergRESTFollowsTopicACLs(t *testing.T) {
	z := auth.NewAuthorizer(true, nil)
	z.Set(1, []auth.ACL{{ResourceType: auth.ResourceTopic, ResourceName: "orders", PatternType: auth.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: auth.OpRead, Permission: auth.Allow}})
	guard := gwhttp.NewGuard(gwhttp.AuthOptions{Authorizer: z, Logger: slog.New(slog.DiscardHandler)})
	h := icebergREST(icebergrest.Options{Catalog: tablesCatalog{names: []string{"orders", "orders~dlq", "secret"}}}, guard, slog.New(slog.DiscardHandler))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := gwhttp.Principal{Name: "User:alice", Host: "127.0.0.1", Method: "basic"}
		h.ServeHTTP(w, r.WithContext(gwhttp.WithPrincipal(r.Context(), p)))
	}))
	defer ts.Close()
	get := func(path string) (int, []byte) {
		t.Helper()
		rsp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		b, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return rsp.StatusCode, b
	}
	code, body := get("/v1/namespaces/aerostream/tables")
	var list struct {
		Identifiers []struct{ Name string } `json:"identifiers"`
	}
	if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	var names []string
	for _, id := range list.Identifiers {
		names = append(names, id.Name)
	}
	if !slices.Equal(names, []string{"orders", "orders~dlq"}) {
		t.Errorf("alice lists %v, want [orders orders~dlq]", names)
	}
	// Allowed loads reach the catalog (which has no metadata: 404); the
	// refused one stops at the ACLs.
	for path, want := range map[string]int{"orders": http.StatusNotFound, "orders~dlq": http.StatusNotFound, "secret": http.StatusForbidden} {
		if code, body := get("/v1/namespaces/aerostream/tables/" + path); code != want {
			t.Errorf("load %s: %d, want %d (%s)", path, code, want, body)
		}
	}
}
