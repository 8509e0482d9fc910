package registry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSubjectSettings pins how /config and /mode fall back from a subject
// to the global setting and what a delete answers, for both endpoints.
func TestSubjectSettings(t *testing.T) {
	url := serveRegistry(t, openVoter(t), 0)
	do := func(method, path, body string) string {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	steps := []struct{ method, path, body, want string }{
		{"GET", "/config", "", `{"compatibilityLevel":"BACKWARD"}`},
		{"GET", "/config/s", "", `"error_code":40408`},
		{"GET", "/config/s?defaultToGlobal=true", "", `{"compatibilityLevel":"BACKWARD"}`},
		{"PUT", "/config/s", `{"compatibility":"full"}`, `{"compatibility":"FULL"}`},
		{"GET", "/config/s", "", `{"compatibilityLevel":"FULL"}`},
		{"DELETE", "/config/s", "", `{"compatibilityLevel":"FULL"}`},
		{"GET", "/config/s", "", `"error_code":40408`},
		{"DELETE", "/config/s", "", `"error_code":40408`},
		{"GET", "/mode", "", `{"mode":"READWRITE"}`},
		{"GET", "/mode/s", "", `"error_code":40409`},
		{"GET", "/mode/s?defaultToGlobal=true", "", `{"mode":"READWRITE"}`},
		{"PUT", "/mode/s", `{"mode":"readonly"}`, `{"mode":"READONLY"}`},
		{"GET", "/mode/s", "", `{"mode":"READONLY"}`},
		{"DELETE", "/mode/s", "", `{"mode":"READONLY"}`},
		{"GET", "/mode/s", "", `"error_code":40409`},
		{"DELETE", "/mode/s", "", `"error_code":40409`},
	}
	for _, s := range steps {
		if got := do(s.method, s.path, s.body); !strings.Contains(got, s.want) {
			t.Fatalf("%s %s: got %s, want %s", s.method, s.path, got, s.want)
		}
	}
}
