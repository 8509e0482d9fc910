package http

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeTier holds one topic, "t", with one segment at base 0 of partition
// 0; tiering is on unless disabled.
type fakeTier struct {
	disabled bool
	gotGC    struct {
		dry    bool
		minAge time.Duration
	}
}

var _ TierOps = (*fakeTier)(nil)

func (f *fakeTier) Segments(_ context.Context, topic string, partition int32) ([]SegmentView, error) {
	if topic != "" && topic != "t" {
		return nil, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	}
	if partition > 0 {
		return nil, fmt.Errorf("%w %d", ErrUnknownPartition, partition)
	}
	return []SegmentView{{Topic: "t", State: "active", Location: "local"}}, nil
}

func (f *fakeTier) Segment(_ context.Context, topic string, partition int32, base int64) (SegmentView, error) {
	if topic != "t" || partition != 0 || base != 0 {
		return SegmentView{}, ErrUnknownSegment
	}
	return SegmentView{Topic: "t"}, nil
}

func (f *fakeTier) Verify(_ context.Context, _ string, progress Progress) ([]VerifyResult, error) {
	if f.disabled {
		return nil, ErrTierDisabled
	}
	progress(1, 2)
	progress(2, 2)
	return []VerifyResult{{Topic: "t", OK: true}}, nil
}

func (f *fakeTier) Offload(_ context.Context, _ string, progress Progress) (OffloadResult, error) {
	progress(0, 1)
	return OffloadResult{}, fmt.Errorf("upload failed")
}

func (f *fakeTier) Rehydrate(context.Context, string, int32, int64, Progress) (RehydrateResult, error) {
	return RehydrateResult{Segments: 3}, nil
}

func (f *fakeTier) GC(_ context.Context, dry bool, minAge time.Duration) (GCResult, error) {
	f.gotGC.dry, f.gotGC.minAge = dry, minAge
	return GCResult{}, nil
}

func (f *fakeTier) Restore(context.Context, string, Progress) (RestoreResult, error) {
	return RestoreResult{}, ErrTierDisabled
}

func do(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return e.Error
}

func tierServer(t *testing.T, ops TierOps) http.Handler {
	s := NewServer(Options{})
	if err := s.Mount("/v1/tier", TierAPI(ops, nil)); err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

func TestTierAPIStatuses(t *testing.T) {
	h := tierServer(t, &fakeTier{})
	for _, tc := range []struct {
		method, path string
		code         int
		wantErr      string
	}{
		{"GET", "/v1/tier/segments", 200, ""},
		{"GET", "/v1/tier/segments?topic=t&partition=0", 200, ""},
		{"GET", "/v1/tier/segments?topic=nope", 404, `unknown topic "nope"`},
		{"GET", "/v1/tier/segments?topic=t&partition=7", 404, "unknown partition 7"},
		{"GET", "/v1/tier/segments?partition=x", 400, "partition"},
		{"GET", "/v1/tier/segment?topic=t&partition=0&base=0", 200, ""},
		{"GET", "/v1/tier/segment?topic=t&partition=0&base=5", 404, "no such segment"},
		// No silent partition 0 or base 0.
		{"GET", "/v1/tier/segment?topic=t&base=0", 400, "partition"},
		{"GET", "/v1/tier/segment?topic=t&partition=0", 400, "base"},
		{"GET", "/v1/tier/segment?partition=0&base=0", 400, "topic is required"},
		{"POST", "/v1/tier/rehydrate?topic=t&from=0", 400, "partition"},
		{"POST", "/v1/tier/gc?min_age_ms=-1", 400, "min_age_ms"},
		// A stream that fails before its first progress line gets a status.
		{"POST", "/v1/tier/restore?topic=t", 409, "tiered storage is disabled"},
		{"POST", "/v1/tier/restore", 400, "topic is required"},
		{"GET", "/v1/tier/verify", 405, ""},
	} {
		rec := do(t, h, tc.method, tc.path)
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.code, rec.Body.String())
			continue
		}
		if tc.wantErr != "" && !strings.Contains(errorOf(t, rec), tc.wantErr) {
			t.Errorf("%s %s: error %q, want %q", tc.method, tc.path, errorOf(t, rec), tc.wantErr)
		}
	}
}

// ndjson reads a streamed answer's lines.
func ndjson(t *testing.T, rec *httptest.ResponseRecorder) []map[string]json.RawMessage {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestTierAPIStreams(t *testing.T) {
	h := tierServer(t, &fakeTier{})
	lines := ndjson(t, do(t, h, "POST", "/v1/tier/verify"))
	if len(lines) != 3 || lines[0]["progress"] == nil || lines[1]["progress"] == nil || lines[2]["result"] == nil {
		t.Fatalf("verify lines: %v", lines)
	}
	var res []VerifyResult
	if err := json.Unmarshal(lines[2]["result"], &res); err != nil || len(res) != 1 || !res[0].OK {
		t.Errorf("verify result %s: %v", lines[2]["result"], err)
	}
	// A failure after progress began ends the stream with an error line.
	rec := do(t, h, "POST", "/v1/tier/offload")
	lines = ndjson(t, rec)
	if rec.Code != 200 || len(lines) != 2 || string(lines[1]["error"]) != `"upload failed"` {
		t.Errorf("offload: %d %v", rec.Code, lines)
	}
	// A result with no progress is still one result line.
	lines = ndjson(t, do(t, h, "POST", "/v1/tier/rehydrate?topic=t&partition=0&from=0"))
	if len(lines) != 1 || string(lines[0]["result"]) != `{"segments":3}` {
		t.Errorf("rehydrate: %v", lines)
	}
}

func TestTierAPIDisabledVerify(t *testing.T) {
	rec := do(t, tierServer(t, &fakeTier{disabled: true}), "POST", "/v1/tier/verify")
	if rec.Code != http.StatusConflict || !strings.Contains(errorOf(t, rec), "disabled") {
		t.Errorf("verify with tiering off: %d %s", rec.Code, rec.Body.String())
	}
}

func TestTierAPIGCDefaultsToADryRun(t *testing.T) {
	f := &fakeTier{}
	h := tierServer(t, f)
	rec := do(t, h, "POST", "/v1/tier/gc")
	if rec.Code != 200 || !f.gotGC.dry || f.gotGC.minAge != time.Hour {
		t.Errorf("gc: %d dry %v minAge %v", rec.Code, f.gotGC.dry, f.gotGC.minAge)
	}
	if !strings.Contains(rec.Body.String(), `"orphans":[]`) || !strings.Contains(rec.Body.String(), `"dry_run":true`) {
		t.Errorf("gc body %s", rec.Body.String())
	}
	do(t, h, "POST", "/v1/tier/gc?dry_run=false&min_age_ms=5")
	if f.gotGC.dry || f.gotGC.minAge != 5*time.Millisecond {
		t.Errorf("gc dry_run=false: dry %v minAge %v", f.gotGC.dry, f.gotGC.minAge)
	}
}
