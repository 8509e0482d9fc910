package http

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echo answers with the path it sees.
func echo(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+" "+r.URL.Path)
	})
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestMountStripsItsPrefix(t *testing.T) {
	s := NewServer(Options{})
	for _, p := range []string{"/v1/tier", "/metrics", "/v1"} {
		if err := s.Mount(p, echo(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"/v1/tier/segments", "/v1/tier /segments"},
		{"/v1/tier", "/v1/tier /"},
		{"/metrics", "/metrics /"},
		{"/v1/other", "/v1 /other"}, // the longest prefix wins
	} {
		code, body := get(t, s.Handler(), tc.path)
		if code != http.StatusOK || body != tc.want {
			t.Errorf("GET %s: %d %q, want %q", tc.path, code, body, tc.want)
		}
	}
	if code, _ := get(t, s.Handler(), "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	// A prefix is not a string prefix: /metricsx is not under /metrics.
	if code, _ := get(t, s.Handler(), "/metricsx"); code != http.StatusNotFound {
		t.Errorf("GET /metricsx: %d, want 404", code)
	}
}

func TestMountRefusesBadAndTakenPrefixes(t *testing.T) {
	s := NewServer(Options{})
	if err := s.Mount("/a", echo("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Mount("/a", echo("again")); !errors.Is(err, ErrMounted) {
		t.Errorf("mount /a twice: %v, want ErrMounted", err)
	}
	for _, p := range []string{"", "a", "/a/", "//", "/{x}"} {
		if err := s.Mount(p, echo(p)); !errors.Is(err, ErrBadPrefix) {
			t.Errorf("mount %q: %v, want ErrBadPrefix", p, err)
		}
	}
}

// The console mounts at "/": it sees whole paths and gets only what no
// other prefix claims.
func TestMountAtRootGetsTheRest(t *testing.T) {
	s := NewServer(Options{})
	for _, p := range []string{"/", "/api"} {
		if err := s.Mount(p, echo(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Mount("/", echo("again")); !errors.Is(err, ErrMounted) {
		t.Errorf("mount / twice: %v, want ErrMounted", err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/", "/ /"},
		{"/topics/orders", "/ /topics/orders"},
		{"/apix", "/ /apix"},
		{"/api/topics", "/api /topics"},
		{"/api", "/api /"},
	} {
		code, body := get(t, s.Handler(), tc.path)
		if code != http.StatusOK || body != tc.want {
			t.Errorf("GET %s: %d %q, want %q", tc.path, code, body, tc.want)
		}
	}
}

func TestPprofServesProfiles(t *testing.T) {
	s := NewServer(Options{})
	if err := s.Mount("/debug/pprof", Pprof()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, s.Handler(), "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("index: %d %.200q", code, body)
	}
	if code, body := get(t, s.Handler(), "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine: %d %.200q", code, body)
	}
	if code, _ := get(t, s.Handler(), "/debug/pprof/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown profile: %d, want 404", code)
	}
}

func TestServeStopsWithItsContext(t *testing.T) {
	s := NewServer(Options{})
	if err := s.Mount("/x", echo("x")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/x/y")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "x /y" {
		t.Errorf("body %q", body)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after ctx ended: %v, want nil", err)
	}
}

// TestServeReportsItsDeath: a serve loop that fails on its own returns the
// error, so that the daemon above it can stop instead of running
// half-alive.
func TestServeReportsItsDeath(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // the listener dies under the server
	if err := NewServer(Options{}).Serve(context.Background(), ln); err == nil {
		t.Fatal("Serve on a dead listener returned nil")
	}
}
