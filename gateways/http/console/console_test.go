package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func newHandler(t *testing.T) http.Handler {
	t.Helper()
	h, err := Handler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Every page is a shell that names itself for the script and loads only
// the embedded script and stylesheet, under a policy that forbids inline
// script.
func TestPagesAreShells(t *testing.T) {
	h := newHandler(t)
	for _, tc := range []struct{ path, page string }{
		{"/", "cluster"},
		{"/topics", "topics"},
		{"/topics/orders", "topic"},
		{"/messages?topic=orders", "messages"},
		{"/groups", "groups"},
		{"/groups/billing", "group"},
		{"/tables", "tables"},
		{"/throughput", "throughput"},
	} {
		resp, body := get(t, h, tc.path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", tc.path, resp.StatusCode)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
		if !strings.Contains(body, `data-page="`+tc.page+`"`) {
			t.Errorf("GET %s: no data-page=%q in\n%s", tc.path, tc.page, body)
		}
		if !strings.Contains(body, `<script src="/assets/console.js" defer></script>`) || strings.Count(body, "<script") != 1 {
			t.Errorf("GET %s: want exactly the one external script:\n%s", tc.path, body)
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("GET %s: the page refers to another origin:\n%s", tc.path, body)
		}
	}
}

func TestAssetsAreEmbedded(t *testing.T) {
	h := newHandler(t)
	for path, ct := range map[string]string{
		"/assets/console.js":  "text/javascript; charset=utf-8",
		"/assets/console.css": "text/css; charset=utf-8",
	} {
		resp, body := get(t, h, path)
		if resp.StatusCode != http.StatusOK || len(body) < 100 {
			t.Errorf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if got := resp.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	// The script never puts API data into the page as markup.
	_, js := get(t, h, "/assets/console.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(js, bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
	if resp, _ := get(t, h, "/assets/nothing.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /assets/nothing.js: %d, want 404", resp.StatusCode)
	}
}

// A name from the path reaches the page only escaped.
func TestPathNamesAreEscaped(t *testing.T) {
	h := newHandler(t)
	resp, body := get(t, h, "/groups/%3Cscript%3Ealert(1)%3C%2Fscript%3E%22x")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d", resp.StatusCode)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, `"x"`) {
		t.Errorf("group name not escaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;&#34;x") {
		t.Errorf("group name not shown escaped:\n%s", body)
	}
	// Group ids may hold "/".
	if _, body := get(t, h, "/groups/team%2Fbilling"); !strings.Contains(body, `data-group="team/billing"`) {
		t.Errorf("group with a slash:\n%s", body)
	}
}

func TestUnknownPageIs404(t *testing.T) {
	h := newHandler(t)
	resp, body := get(t, h, "/nothing/<b>here")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", resp.StatusCode)
	}
	if !strings.Contains(body, `data-page="notfound"`) || strings.Contains(body, "<b>here") {
		t.Errorf("404 page:\n%s", body)
	}
	req := httptest.NewRequest(http.MethodPost, "/topics", strings.NewReader("x"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		t.Errorf("POST /topics: %d; the console's pages are read-only", rec.Code)
	}
}
