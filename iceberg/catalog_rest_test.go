package iceberg

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRESTCatalogConnectsWhenUp: a REST catalog that is down when the
// node opens it fails each call with the reason, and serves once it is
// up, with no reopening.
func TestRESTCatalogConnectsWhenUp(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"starting","type":"ServiceUnavailableException","code":503}}`))
			return
		}
		switch r.URL.Path {
		case "/v1/config":
			_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
		case "/v1/namespaces":
			_, _ = w.Write([]byte(`{"namespaces":[["aerostream"]]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	cat, err := OpenCatalog(context.Background(), Config{Catalog: "rest", RestURI: srv.URL, Warehouse: "file:///tmp/h-icerest-none"})
	if err != nil {
		t.Fatalf("OpenCatalog with the catalog down: %v", err)
	}
	defer CloseCatalog(cat)
	if _, err := cat.ListNamespaces(context.Background(), nil); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("ListNamespaces with the catalog down = %v; want an error naming %s", err, srv.URL)
	}
	up.Store(true)
	ns, err := cat.ListNamespaces(context.Background(), nil)
	if err != nil || len(ns) != 1 || ns[0][0] != "aerostream" {
		t.Fatalf("ListNamespaces once up = %v, %v", ns, err)
	}
}
