package icebergrest

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// emptyCatalog has one namespace and no tables; the fuzz target needs no
// SQL catalog, only answers for every read the server makes.
type emptyCatalog struct{ catalog.Catalog }

func (emptyCatalog) ListNamespaces(context.Context, table.Identifier) ([]table.Identifier, error) {
	return []table.Identifier{{"aerostream"}}, nil
}

func (emptyCatalog) LoadNamespaceProperties(_ context.Context, ns table.Identifier) (iceberg.Properties, error) {
	if len(ns) == 1 && ns[0] == "aerostream" {
		return iceberg.Properties{}, nil
	}
	return nil, catalog.ErrNoSuchNamespace
}

func (emptyCatalog) ListTables(context.Context, table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {}
}

func (emptyCatalog) LoadTable(context.Context, table.Identifier) (*table.Table, error) {
	return nil, catalog.ErrNoSuchTable
}

// FuzzServe: any method, escaped path and query the HTTP server lets
// through gets an answer, never a panic; an error answer is an ErrorModel
// whose code is the status, and no write is ever answered 2xx except a
// metrics report.
func FuzzServe(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/v1/config", "warehouse=x"},
		{"GET", "/v1/namespaces", "parent=a%1Fb&pageToken=1&pageSize=2"},
		{"HEAD", "/v1/namespaces/aerostream", ""},
		{"GET", "/v1/wh/namespaces/aerostream/tables", "pageSize=1"},
		{"GET", "/v1/namespaces/aerostream/tables/orders%7Edlq", "snapshots=refs"},
		{"POST", "/v1/namespaces/aerostream/tables/t/metrics", ""},
		{"DELETE", "/v1/namespaces/a%1F%1Fb", ""},
		{"GET", "/v1/namespaces/%2F/tables/%2F%2F", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	srv := New(Options{Catalog: emptyCatalog{}, Prefix: "wh", Logger: slog.New(slog.DiscardHandler)})
	f.Fuzz(func(t *testing.T, method, path, query string) {
		u, err := url.Parse("http://x" + path + "?" + query)
		if err != nil || !validMethod(method) {
			return // the HTTP server refuses these before any handler
		}
		req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		req.Method, req.URL = method, u
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		code := rec.Code
		write := method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete
		if write && code < 300 && code != http.StatusNoContent {
			t.Fatalf("%s %s answered %d", method, path, code)
		}
		if code >= 400 && method != http.MethodHead {
			var e struct {
				Error errorModel `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != code || e.Error.Type == "" {
				t.Fatalf("%s %s: %d %q is not an ErrorModel", method, path, code, rec.Body.Bytes())
			}
		}
	})
}

// validMethod is net/http's token check for a request method.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || c == '(' || c == ')' || c == '<' || c == '>' || c == '@' || c == ',' ||
			c == ';' || c == ':' || c == '\\' || c == '"' || c == '/' || c == '[' || c == ']' || c == '?' ||
			c == '=' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}
