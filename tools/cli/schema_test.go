package cli_test

import (
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/registry"
)

// schemaRegistry serves a registry over an in-process single-voter
// controller and returns its URL.
func schemaRegistry(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := controller.Open(controller.Options{NodeID: 1, Dir: filepath.Join(t.TempDir(), "raft"), Listener: ln,
		Bootstrap: true, Logger: quiet})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for !c.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reg, err := registry.New(registry.Options{Store: c, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSchemaCLI(t *testing.T) {
	url := schemaRegistry(t)
	sch := func(args ...string) result {
		t.Helper()
		return run(t, nil, append(append([]string{"schema"}, args...), "--registry", url)...)
	}
	want := func(r result, code int, out string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stdout+r.stderr, out) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", r.code, r.stdout, r.stderr, code, out)
		}
	}
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	want(sch("register", "r-value", "--schema", v1), 0, "1\n")
	want(sch("list"), 0, "r-value\n")
	want(sch("list", "r-value"), 0, "1\n")
	want(sch("get", "r-value"), 0, `"version": 1`)
	want(sch("get", "--id", "1"), 0, `"schema"`)
	want(sch("check", "r-value", "--schema", `{"type":"record","name":"R","fields":[{"name":"b","type":"int"}]}`), 1, "BACKWARD")
	want(sch("check", "r-value", "--schema", v1), 0, "compatible")
	want(sch("config"), 0, "BACKWARD")
	want(sch("config", "r-value", "full"), 0, "FULL")
	want(sch("config", "r-value"), 0, "FULL")
	want(sch("config", "--mode"), 0, "READWRITE")
	want(sch("delete", "r-value", "--permanent"), 1, "40405")
	want(sch("delete", "r-value"), 0, "deleted [1]")
	want(sch("delete", "r-value", "--permanent"), 0, "deleted [1]")
	want(sch("get", "--id", "99"), 1, "40403")
	want(sch("register", "x", "--schema", `{"type":`), 1, "42201")
	want(sch("register", "x"), 2, "no schema")
	want(sch("get", "x", "--id", "1"), 2, "not both")
}
