package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// newSQLCatalog is an embedded SQL catalog on SQLite, as `serve` opens
// one, with its warehouse in a temporary folder.
func newSQLCatalog(t *testing.T) catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	cat, err := catalog.Load(context.Background(), "test", iceberg.Properties{
		"uri":             "file://" + filepath.Join(dir, "catalog.db"),
		sqlcat.DriverKey:  sqliteshim.ShimName,
		sqlcat.DialectKey: string(sqlcat.SQLite),
		"type":            "sql",
		"warehouse":       "file://" + filepath.Join(dir, "warehouse"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(catalog.Closer); ok {
			_ = c.Close()
		}
	})
	return cat
}

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

// makeTable creates ident with rows rows (id 0..rows-1) in one snapshot.
func makeTable(t *testing.T, cat catalog.Catalog, ident table.Identifier, rows int) *table.Table {
	t.Helper()
	ctx := context.Background()
	ns := catalog.NamespaceFromIdent(ident)
	if ok, err := cat.CheckNamespaceExists(ctx, ns); err != nil {
		t.Fatal(err)
	} else if !ok {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.CreateTable(ctx, ident, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(testSchema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("row")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	tbl, err = tbl.AppendTable(ctx, at, 1024, iceberg.Properties{"aerostream.offsets": `{"0":1}`})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func serve(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ts := httptest.NewServer(New(opts))
	t.Cleanup(ts.Close)
	return ts
}

func restClient(t *testing.T, uri string, opts ...rest.Option) *rest.Catalog {
	t.Helper()
	rc, err := rest.NewCatalog(context.Background(), "aerostream", uri, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

func countRows(t *testing.T, tbl *table.Table) int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return at.NumRows()
}

// TestLoadTableThroughRESTClient: iceberg-go's own REST client loads, via
// the server, the same table the SQL catalog holds, and reads its rows.
func TestLoadTableThroughRESTClient(t *testing.T) {
	ctx := context.Background()
	cat := newSQLCatalog(t)
	src := makeTable(t, cat, table.Identifier{"aerostream", "orders"}, 100)
	makeTable(t, cat, table.Identifier{"aerostream", "orders~dlq"}, 3)
	io := map[string]string{"s3.endpoint": "http://127.0.0.1:9000", "s3.path-style-access": "true"}
	ts := serve(t, Options{Catalog: cat, IOProps: io})
	rc := restClient(t, ts.URL)

	got, err := rc.LoadTable(ctx, table.Identifier{"aerostream", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if got.MetadataLocation() != src.MetadataLocation() {
		t.Errorf("metadata location %q, want %q", got.MetadataLocation(), src.MetadataLocation())
	}
	if got.CurrentSnapshot().SnapshotID != src.CurrentSnapshot().SnapshotID {
		t.Errorf("snapshot %d, want %d", got.CurrentSnapshot().SnapshotID, src.CurrentSnapshot().SnapshotID)
	}
	if v := got.CurrentSnapshot().Summary.Properties["aerostream.offsets"]; v != `{"0":1}` {
		t.Errorf("summary aerostream.offsets = %q", v)
	}
	if !got.Schema().Equals(src.Schema()) {
		t.Errorf("schema %v, want %v", got.Schema(), src.Schema())
	}
	if n := countRows(t, got); n != 100 {
		t.Errorf("read %d rows through the REST catalog, want 100", n)
	}

	dlq, err := rc.LoadTable(ctx, table.Identifier{"aerostream", "orders~dlq"})
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, dlq); n != 3 {
		t.Errorf("read %d DLQ rows, want 3", n)
	}

	// The FileIO properties reach the reader in LoadTableResult.config.
	rsp, body := get(t, ts.URL+"/v1/namespaces/aerostream/tables/orders%7Edlq")
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("load orders~dlq (escaped): %d %s", rsp.StatusCode, body)
	}
	var ltr struct {
		MetadataLocation string            `json:"metadata-location"`
		Metadata         json.RawMessage   `json:"metadata"`
		Config           map[string]string `json:"config"`
	}
	if err := json.Unmarshal(body, &ltr); err != nil {
		t.Fatal(err)
	}
	if ltr.Config["s3.endpoint"] != io["s3.endpoint"] || ltr.Config["s3.path-style-access"] != "true" {
		t.Errorf("config %v, want the FileIO properties %v", ltr.Config, io)
	}
	if _, err := table.ParseMetadataBytes(ltr.Metadata); err != nil {
		t.Errorf("metadata does not parse: %v", err)
	}
}

func TestListAndExists(t *testing.T) {
	ctx := context.Background()
	cat := newSQLCatalog(t)
	for _, name := range []string{"b", "a", "orders~dlq", "with space"} {
		makeTable(t, cat, table.Identifier{"aerostream", name}, 1)
	}
	makeTable(t, cat, table.Identifier{"other", "x"}, 1)
	ts := serve(t, Options{Catalog: cat})
	rc := restClient(t, ts.URL)

	nss, err := rc.ListNamespaces(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nss) != 2 || nss[0][0] != "aerostream" || nss[1][0] != "other" {
		t.Errorf("namespaces %v", nss)
	}
	var names []string
	for id, err := range rc.ListTables(ctx, table.Identifier{"aerostream"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, catalog.TableNameFromIdent(id))
	}
	if want := []string{"a", "b", "orders~dlq", "with space"}; !slices.Equal(names, want) {
		t.Errorf("tables %v, want %v", names, want)
	}
	// A small page size makes the client follow next-page-token.
	pctx := rc.SetPageSize(ctx, 1)
	names = nil
	for id, err := range rc.ListTables(pctx, table.Identifier{"aerostream"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, catalog.TableNameFromIdent(id))
	}
	if len(names) != 4 {
		t.Errorf("paged listing gave %v, want 4 tables", names)
	}

	for _, c := range []struct {
		ident table.Identifier
		want  bool
	}{{table.Identifier{"aerostream", "with space"}, true}, {table.Identifier{"aerostream", "nope"}, false}, {table.Identifier{"nons", "a"}, false}} {
		ok, err := rc.CheckTableExists(ctx, c.ident)
		if err != nil || ok != c.want {
			t.Errorf("CheckTableExists(%v) = %v, %v; want %v", c.ident, ok, err, c.want)
		}
	}
	if ok, err := rc.CheckNamespaceExists(ctx, table.Identifier{"other"}); err != nil || !ok {
		t.Errorf("CheckNamespaceExists(other) = %v, %v", ok, err)
	}
	if ok, err := rc.CheckNamespaceExists(ctx, table.Identifier{"nons"}); err != nil || ok {
		t.Errorf("CheckNamespaceExists(nons) = %v, %v", ok, err)
	}
	props, err := rc.LoadNamespaceProperties(ctx, table.Identifier{"aerostream"})
	if err != nil || props == nil {
		t.Errorf("LoadNamespaceProperties = %v, %v", props, err)
	}
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	cat := newSQLCatalog(t)
	makeTable(t, cat, table.Identifier{"aerostream", "a"}, 1)
	ts := serve(t, Options{Catalog: cat})
	rc := restClient(t, ts.URL)

	if _, err := rc.LoadTable(ctx, table.Identifier{"aerostream", "missing"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("LoadTable(missing) = %v, want ErrNoSuchTable", err)
	}
	for id, err := range rc.ListTables(ctx, table.Identifier{"nons"}) {
		if !errors.Is(err, catalog.ErrNoSuchNamespace) {
			t.Errorf("ListTables(nons) = %v, %v; want ErrNoSuchNamespace", id, err)
		}
		break
	}

	for _, c := range []struct{ path, typ string }{
		{"/v1/namespaces/aerostream/tables/missing", "NoSuchTableException"},
		{"/v1/namespaces/nons/tables", "NoSuchNamespaceException"},
		{"/v1/namespaces/nons", "NoSuchNamespaceException"},
	} {
		rsp, body := get(t, ts.URL+c.path)
		e := errorOf(t, body)
		if rsp.StatusCode != http.StatusNotFound || e.Type != c.typ || e.Code != 404 || e.Message == "" {
			t.Errorf("GET %s: %d %s; want 404 %s", c.path, rsp.StatusCode, body, c.typ)
		}
	}
	for _, path := range []string{"/v1/namespaces/%1Fx/tables", "/v1/namespaces/a%1F/tables/t", "/v1/namespaces?pageToken=x", "/v1/namespaces?pageSize=0"} {
		rsp, body := get(t, ts.URL+path)
		if e := errorOf(t, body); rsp.StatusCode != http.StatusBadRequest || e.Type != "BadRequestException" {
			t.Errorf("GET %s: %d %s; want 400 BadRequestException", path, rsp.StatusCode, body)
		}
	}
}

// TestWritesRefused: every write, through iceberg-go's client and raw,
// is refused with a 403 ErrorModel that says why, and changes nothing.
func TestWritesRefused(t *testing.T) {
	ctx := context.Background()
	cat := newSQLCatalog(t)
	src := makeTable(t, cat, table.Identifier{"aerostream", "a"}, 1)
	ts := serve(t, Options{Catalog: cat})
	rc := restClient(t, ts.URL)

	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, rest.ErrForbidden) || !strings.Contains(err.Error(), RefusedMessage) {
			t.Errorf("%s: %v; want a 403 saying %q", what, err, RefusedMessage)
		}
	}
	_, err := rc.CreateTable(ctx, table.Identifier{"aerostream", "new"}, testSchema)
	refused("CreateTable", err)
	refused("DropTable", rc.DropTable(ctx, table.Identifier{"aerostream", "a"}))
	_, err = rc.RenameTable(ctx, table.Identifier{"aerostream", "a"}, table.Identifier{"aerostream", "b"})
	refused("RenameTable", err)
	refused("CreateNamespace", rc.CreateNamespace(ctx, table.Identifier{"x"}, nil))
	refused("DropNamespace", rc.DropNamespace(ctx, table.Identifier{"aerostream"}))
	_, _, err = rc.CommitTable(ctx, table.Identifier{"aerostream", "a"}, nil,
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
	refused("CommitTable", err)

	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequest(m, ts.URL+"/v1/namespaces/aerostream/tables/a", strings.NewReader("{}"))
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rsp.Body)
		rsp.Body.Close()
		e := errorOf(t, body)
		if rsp.StatusCode != http.StatusForbidden || e.Type != "ForbiddenException" || e.Code != 403 || e.Message != RefusedMessage {
			t.Errorf("%s: %d %s", m, rsp.StatusCode, body)
		}
	}

	got, err := cat.LoadTable(ctx, table.Identifier{"aerostream", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got.MetadataLocation() != src.MetadataLocation() {
		t.Errorf("a refused write changed the table: %s -> %s", src.MetadataLocation(), got.MetadataLocation())
	}
	if ok, _ := cat.CheckTableExists(ctx, table.Identifier{"aerostream", "new"}); ok {
		t.Error("a refused CreateTable created the table")
	}

	// A scan report is accepted and dropped.
	rsp, err := http.Post(ts.URL+"/v1/namespaces/aerostream/tables/a/metrics", "application/json", strings.NewReader(`{"report-type":"scan-report"}`))
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusNoContent {
		t.Errorf("metrics report: %d, want 204", rsp.StatusCode)
	}
}

// TestPrefix: a server with a prefix hands it out in v1/config overrides,
// and a client that follows it reaches the tables under it.
func TestPrefix(t *testing.T) {
	ctx := context.Background()
	cat := newSQLCatalog(t)
	makeTable(t, cat, table.Identifier{"aerostream", "a"}, 5)
	ts := serve(t, Options{Catalog: cat, Prefix: "wh"})

	rsp, body := get(t, ts.URL+"/v1/config?warehouse=x")
	var cfg configResponse
	if err := json.Unmarshal(body, &cfg); err != nil || rsp.StatusCode != http.StatusOK {
		t.Fatalf("config: %d %s %v", rsp.StatusCode, body, err)
	}
	if cfg.Overrides["prefix"] != "wh" {
		t.Errorf("overrides %v, want prefix wh", cfg.Overrides)
	}
	var hits []string
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.URL.Path)
		New(Options{Catalog: cat, Prefix: "wh", Logger: slog.New(slog.DiscardHandler)}).ServeHTTP(w, r)
	}))
	defer counting.Close()
	rc := restClient(t, counting.URL)
	tbl, err := rc.LoadTable(ctx, table.Identifier{"aerostream", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, tbl); n != 5 {
		t.Errorf("rows %d, want 5", n)
	}
	if !slices.Contains(hits, "/v1/wh/namespaces/aerostream/tables/a") {
		t.Errorf("client paths %v, want one under the prefix", hits)
	}
	// Paths without the prefix are served too.
	if rsp, body := get(t, ts.URL+"/v1/namespaces/aerostream/tables/a"); rsp.StatusCode != http.StatusOK {
		t.Errorf("unprefixed load: %d %s", rsp.StatusCode, body)
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	rsp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rsp, body
}

func errorOf(t *testing.T, body []byte) errorModel {
	t.Helper()
	var e struct {
		Error errorModel `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("error body %q is not an ErrorModel: %v", body, err)
	}
	return e.Error
}
