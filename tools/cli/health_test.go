package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func runHealth(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), append([]string{"health"}, args...), Env{Stdout: &out, Stderr: &errOut, Environ: environ})
	return code, out.String(), errOut.String()
}

func TestHealthExitCodeFollowsReadiness(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/ready/healthz":
			w.Write([]byte(`{"status":"ready"}`))
		case "/starting/healthz":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"starting","reasons":["store: recovering partitions","controller: no leader"]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	code, out, errOut := runHealth(t, nil, "--url", srv.URL+"/ready/healthz")
	if code != 0 || strings.TrimSpace(out) != "ready" {
		t.Errorf("ready: exit %d, stdout %q, stderr %q; want 0 and \"ready\"", code, out, errOut)
	}
	code, _, errOut = runHealth(t, nil, "--url", srv.URL+"/starting/healthz")
	if code != 1 || !strings.Contains(errOut, "503") || !strings.Contains(errOut, "starting: store: recovering partitions; controller: no leader") {
		t.Errorf("starting: exit %d, stderr %q; want 1 naming the status and its reasons", code, errOut)
	}
	code, _, errOut = runHealth(t, nil, "--url", srv.URL+"/nothing/here")
	if code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("unknown path: exit %d, stderr %q; want 1 naming the 404", code, errOut)
	}
}

func TestHealthNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errOut := runHealth(t, nil, "--url", "http://"+addr+"/healthz")
	if code != 1 || !strings.Contains(errOut, addr) {
		t.Errorf("exit %d, stderr %q; want 1 naming the address", code, errOut)
	}
}

// Without --url the probe asks listeners.http as the daemon's own config
// sets it, which is how the image's HEALTHCHECK finds the node.
func TestHealthFindsListenerFromEnv(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	t.Chdir(t.TempDir()) // no ./aerostream.toml
	code, out, errOut := runHealth(t, []string{"AEROSTREAM_LISTENERS_HTTP=0.0.0.0:" + port})
	if code != 0 || strings.TrimSpace(out) != "ready" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and \"ready\"", code, out, errOut)
	}
}

func TestHealthURL(t *testing.T) {
	cases := []struct{ listener, want, err string }{
		{"127.0.0.1:9001", "http://127.0.0.1:9001/healthz", ""},
		{":9001", "http://127.0.0.1:9001/healthz", ""},
		{"0.0.0.0:9001", "http://127.0.0.1:9001/healthz", ""},
		{"[::]:9001", "http://127.0.0.1:9001/healthz", ""},
		{"SSL://node-1.example:9443", "https://node-1.example:9443/healthz", ""},
		{"", "", "listeners.http is empty"},
		{"unix:/run/a.sock", "", "Unix socket"},
		{"GOPHER://x:1", "", "unknown security protocol"},
	}
	for _, c := range cases {
		got, err := healthURL(c.listener)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("healthURL(%q) = %q, %v; want an error containing %q", c.listener, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", c.listener, got, err, c.want)
		}
	}
}
