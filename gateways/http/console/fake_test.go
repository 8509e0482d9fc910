package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/chromedp/chromedp"
)

// xss is user data that would run as script if the console ever put it
// into the page as markup.
const xss = `<img src=x onerror="console.error('xss')"><script>console.error('xss')</script>`

// fakeAPI answers the /api/ routes of docs/openapi.yaml from memory, for
// the browser checks that need answers a real node gives only with effort
// (errors, hostile names, a group to delete).
type fakeAPI struct {
	mu struct {
		sync.Mutex
		retention string
		committed []int64 // group billing on orders, per partition
		deleted   bool
		patches   int
	}
}

func newFakeAPI() *fakeAPI {
	f := &fakeAPI{}
	f.mu.retention = "604800000"
	f.mu.committed = []int64{2, 5, 0}
	return f
}

var fakeEnds = []int64{7, 5, 3}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code int, kind, msg string) {
	writeJSON(w, code, map[string]string{"error": kind, "message": msg})
}

type m = map[string]any

func utf8V(s string) m { return m{"encoding": "utf8", "text": s} }

func (f *fakeAPI) topic() m {
	parts := []m{}
	for p, end := range fakeEnds {
		parts = append(parts, m{"partition": p, "leader": 1, "replicas": []int{1}, "isr": []int{1}, "log_start": 0,
			"high_watermark": end, "last_stable": end, "local_bytes": 1000 * end, "cold_bytes": 0, "tier_backlog_bytes": 0})
	}
	return m{"name": "orders", "id": "b6f0c7a8-0000-4000-8000-000000000001", "internal": false, "partitions": parts,
		"configs": []m{
			{"name": "retention.ms", "value": f.mu.retention, "is_default": f.mu.retention == "604800000", "dynamic": true, "doc": "how long records are kept"},
			{"name": "cleanup.policy", "value": "delete", "is_default": true, "dynamic": true, "doc": "delete or compact"},
			{"name": "storage.id", "value": "local", "is_default": true, "dynamic": false, "doc": "fixed at creation"},
		}}
}

func (f *fakeAPI) group() m {
	offsets := []m{}
	for p, c := range f.mu.committed {
		offsets = append(offsets, m{"topic": "orders", "partition": p, "committed": c, "end": fakeEnds[p], "lag": fakeEnds[p] - c})
	}
	return m{"group": "billing", "type": "classic", "state": "Empty", "members": []m{}, "offsets": offsets}
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := r.URL.Path // below /api
	switch {
	case r.Method == http.MethodGet && path == "/cluster":
		writeJSON(w, 200, m{"cluster_id": "fake-cluster",
			"controller": m{"leader": 1, "voters": []m{{"id": 1, "addr": "127.0.0.1:9093"}}, "non_voters": []m{}},
			"stores":     []m{{"id": 1, "addr": "127.0.0.1:9094", "live": true, "draining": false, "partitions": 3, "leaders": 3, "disk_bytes": 15000, "cold_bytes": 0}},
			"gateways":   []m{{"id": "kafka-1", "kind": "kafka", "addr": "127.0.0.1:9092"}},
			"leadership": []m{{"topic": "orders", "partition": 0, "leader": 1, "replicas": []int{1}, "isr": []int{1}}}})
	case r.Method == http.MethodGet && path == "/topics":
		writeJSON(w, 200, m{"topics": []m{
			{"name": "orders", "id": "x", "partitions": 3, "replication_factor": 1, "internal": false, "local_bytes": 15000, "cold_bytes": 2048, "tier_backlog_bytes": 0, "iceberg": true},
			{"name": xss, "id": "y", "partitions": 1, "replication_factor": 1, "internal": false, "local_bytes": 0, "cold_bytes": 0, "tier_backlog_bytes": 0, "iceberg": false},
			{"name": "__consumer_offsets", "id": "z", "partitions": 50, "replication_factor": 1, "internal": true, "local_bytes": 0, "cold_bytes": 0, "tier_backlog_bytes": 0, "iceberg": false},
		}})
	case r.Method == http.MethodGet && path == "/topics/orders":
		writeJSON(w, 200, f.topic())
	case r.Method == http.MethodPatch && path == "/topics/orders/configs":
		var req struct {
			Configs map[string]string `json:"configs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, 400, "bad_parameter", "body: "+err.Error())
			return
		}
		for k, v := range req.Configs {
			if k != "retention.ms" {
				apiError(w, 400, "not_dynamic", k+" is not a dynamic config")
				return
			}
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				apiError(w, 400, "bad_parameter", fmt.Sprintf("retention.ms: %q is not a number of milliseconds", v))
				return
			}
			f.mu.retention = v
			f.mu.patches++
		}
		writeJSON(w, 200, f.topic())
	case r.Method == http.MethodGet && path == "/topics/orders/messages":
		q := r.URL.Query()
		part, _ := strconv.Atoi(q.Get("partition"))
		off, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
		if part < 0 || part >= len(fakeEnds) {
			apiError(w, 404, "unknown_partition", fmt.Sprintf("orders has no partition %d", part))
			return
		}
		end := fakeEnds[part]
		if off > end {
			apiError(w, 416, "offset_out_of_range", fmt.Sprintf("offset %d is beyond the high watermark %d", off, end))
			return
		}
		msgs := []m{}
		for o := off; o < end && int64(len(msgs)) < limit; o++ {
			v := utf8V(fmt.Sprintf(`{"order":%d}`, o))
			if o == 0 {
				v = utf8V(xss)
			}
			msgs = append(msgs, m{"offset": o, "timestamp": 1767225600000 + o, "key": m{"encoding": "hex", "text": "00ff"},
				"value": v, "headers": []m{{"key": "trace", "value": utf8V("t-" + strconv.FormatInt(o, 10))}}})
		}
		writeJSON(w, 200, m{"topic": "orders", "partition": part, "messages": msgs, "next_offset": off + int64(len(msgs)), "high_watermark": end})
	case r.Method == http.MethodGet && path == "/groups":
		groups := []m{}
		if !f.mu.deleted {
			total := int64(0)
			for p, c := range f.mu.committed {
				total += fakeEnds[p] - c
			}
			groups = append(groups, m{"group": "billing", "type": "classic", "state": "Empty", "members": 0, "protocol": "", "total_lag": total})
		}
		writeJSON(w, 200, m{"groups": groups})
	case r.Method == http.MethodGet && path == "/groups/billing" && !f.mu.deleted:
		writeJSON(w, 200, f.group())
	case r.Method == http.MethodPost && path == "/groups/billing/reset" && !f.mu.deleted:
		var req struct {
			Topic string `json:"topic"`
			To    string `json:"to"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Topic != "orders" || req.To != "earliest" {
			apiError(w, 400, "bad_parameter", fmt.Sprintf("the fake resets orders to earliest only, not %+v (%v)", req, err))
			return
		}
		for p := range f.mu.committed {
			f.mu.committed[p] = 0
		}
		writeJSON(w, 200, f.group())
	case r.Method == http.MethodDelete && path == "/groups/billing" && !f.mu.deleted:
		f.mu.deleted = true
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/groups/"):
		g := strings.TrimPrefix(path, "/groups/")
		apiError(w, 404, "unknown_group", fmt.Sprintf("group %q does not exist", g))
	case r.Method == http.MethodGet && path == "/iceberg":
		writeJSON(w, 200, m{"tables": []m{{"topic": "orders", "table": "aerostream.orders", "last_commit_ms": 1767225600000,
			"lag_records": 12, "lag_ms": 3400, "files": 4, "bytes": 81920, "snapshot_id": 4242}}})
	case r.Method == http.MethodGet && path == "/metrics/throughput":
		samples := []m{}
		for i := 0; i < 20; i++ {
			samples = append(samples, m{"t_ms": 1767225600000 + int64(i)*5000, "produce_bytes_per_s": 1000.0 * float64(i%7),
				"produce_records_per_s": 10.0 * float64(i%5), "fetch_bytes_per_s": 800.0 * float64(i%3)})
		}
		writeJSON(w, 200, m{"samples": samples})
	default:
		apiError(w, 404, "not_found", "no route "+r.Method+" /api"+path)
	}
}

// fakeServer mounts the console at / and the fake API at /api on the
// node's HTTP server, as tools/cli mounts the real ones.
func fakeServer(t *testing.T) (*httptest.Server, *fakeAPI) {
	t.Helper()
	h, err := Handler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI()
	srv := gwhttp.NewServer(gwhttp.Options{})
	if err := srv.Mount("/", h); err != nil {
		t.Fatal(err)
	}
	if err := srv.Mount("/api", api); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, api
}

// TestConsoleAgainstFakeAPI drives every page against the fake API: what
// the tables show, a config edited inline, paging through messages, a
// hostile name and value shown as text, the API's error message shown
// on the page, and a group reset and deleted through the confirmation.
func TestConsoleAgainstFakeAPI(t *testing.T) {
	markFailed(t)
	ts, api := fakeServer(t)
	tb := newTab(t, ts.URL)
	var n int

	if st := tb.open("/"); st != "ready" {
		t.Fatalf("cluster page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("stores", "live"); len(got) != 1 || got[0] != "yes" {
		t.Errorf("stores live column %q", got)
	}
	if got := tb.text("#controller-leader"); got != "1" {
		t.Errorf("controller leader %q", got)
	}
	tb.shot("cluster")
	tb.checkClean("cluster page")

	if st := tb.open("/topics"); st != "ready" {
		t.Fatalf("topics page: %s: %s", st, tb.text("#error"))
	}
	names := tb.column("topics", "name")
	if len(names) != 2 || names[0] != xss || names[1] != "orders" {
		t.Errorf("topics listed %q (internal ones hidden)", names)
	}
	n = evalAs[int](tb, `document.querySelectorAll('img, main script').length`)
	if n != 0 {
		t.Errorf("a topic name became %d elements", n)
	}
	tb.do("show internal", chromedp.Click(chromedp.CSS("#show-internal")))
	if names := tb.column("topics", "name"); len(names) != 3 {
		t.Errorf("with internal topics: %q", names)
	}
	tb.shot("topics")
	tb.checkClean("topics page")

	if st := tb.open("/topics/orders"); st != "ready" {
		t.Fatalf("topic page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("partitions", "high_watermark"); strings.Join(got, ",") != "7,5,3" {
		t.Errorf("high watermarks %q", got)
	}
	n = evalAs[int](tb, `document.querySelectorAll('button[data-edit]').length`)
	if n != 2 {
		t.Errorf("%d Edit buttons, want 2 (the dynamic configs only)", n)
	}
	// A bad value: the API's message is shown and nothing changes.
	tb.do("edit retention.ms",
		chromedp.Click(chromedp.CSS(`button[data-edit="retention.ms"]`)),
		chromedp.SetValue(chromedp.CSS(`input[data-input="retention.ms"]`), "soon"),
		chromedp.Click(chromedp.CSS(`button[data-save="retention.ms"]`)))
	if st := tb.settle("bad patch"); st != "error" || !strings.Contains(tb.text("#error"), `bad_parameter: retention.ms: "soon" is not a number of milliseconds`) {
		t.Errorf("bad config value: state %s, error %q", st, tb.text("#error"))
	}
	tb.shot("topic-config-error")
	tb.do("fix retention.ms",
		chromedp.SetValue(chromedp.CSS(`input[data-input="retention.ms"]`), "3600000"),
		chromedp.Click(chromedp.CSS(`button[data-save="retention.ms"]`)))
	if st := tb.settle("patch"); st != "ready" {
		t.Fatalf("patch: %s: %s", st, tb.text("#error"))
	}
	if got := tb.text(`.config-value[data-config="retention.ms"]`); got != "3600000" {
		t.Errorf("retention.ms shows %q after the edit", got)
	}
	api.mu.Lock()
	if api.mu.retention != "3600000" || api.mu.patches != 1 {
		t.Errorf("the API has retention.ms %s after %d patches", api.mu.retention, api.mu.patches)
	}
	api.mu.Unlock()
	tb.shot("topic")
	tb.checkClean("topic page")

	if st := tb.open("/messages?topic=orders&partition=0&offset=0&limit=4"); st != "ready" {
		t.Fatalf("messages page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("messages", "offset"); strings.Join(got, ",") != "0,1,2,3" {
		t.Errorf("offsets %q", got)
	}
	vals := tb.column("messages", "value")
	if len(vals) != 4 || vals[0] != "utf8 "+xss || vals[1] != `utf8 {"order":1}` {
		t.Errorf("values %q", vals)
	}
	if keys := tb.column("messages", "key"); len(keys) == 0 || keys[0] != "hex 00ff" {
		t.Errorf("keys %q", keys)
	}
	if h := tb.column("messages", "headers"); len(h) == 0 || h[0] != "trace: utf8 t-0" {
		t.Errorf("headers %q", h)
	}
	n = evalAs[int](tb, `document.querySelectorAll('img, main script').length`)
	if n != 0 {
		t.Errorf("a message value became %d elements", n)
	}
	tb.shot("messages")
	tb.do("next page", chromedp.Click(chromedp.CSS("#next-page")))
	tb.settle("next page")
	if got := tb.column("messages", "offset"); strings.Join(got, ",") != "4,5,6" {
		t.Errorf("next page offsets %q", got)
	}
	if !evalAs[bool](tb, `document.getElementById('next-page').hidden`) {
		t.Errorf("Next page offered at the high watermark")
	}
	// Beyond the log: the API's 416 message, not an empty page.
	if st := tb.open("/messages?topic=orders&partition=2&offset=99"); st != "error" ||
		!strings.Contains(tb.text("#error"), "416") || !strings.Contains(tb.text("#error"), "offset_out_of_range: offset 99 is beyond the high watermark 3") {
		t.Errorf("offset beyond the log: %s %q", st, tb.text("#error"))
	}
	tb.shot("messages-out-of-range")
	tb.checkClean("messages page")

	if st := tb.open("/groups/nope"); st != "error" || !strings.Contains(tb.text("#error"), `unknown_group: group "nope" does not exist`) {
		t.Errorf("unknown group: %s %q", st, tb.text("#error"))
	}
	tb.shot("group-unknown")

	if st := tb.open("/groups"); st != "ready" {
		t.Fatalf("groups page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("groups", "total_lag"); len(got) != 1 || got[0] != "8" {
		t.Errorf("total lag %q, want 8", got)
	}
	tb.shot("groups")
	if st := tb.open("/groups/billing"); st != "ready" {
		t.Fatalf("group page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("offsets", "lag"); strings.Join(got, ",") != "5,0,3" {
		t.Errorf("lag per partition %q", got)
	}
	tb.shot("group")
	// Cancel changes nothing.
	tb.do("reset, cancel",
		chromedp.Click(chromedp.CSS("#reset")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")),
		chromedp.Click(chromedp.CSS("#confirm-cancel")),
		chromedp.WaitNotPresent(chromedp.CSS("#confirm[open]")))
	api.mu.Lock()
	if api.mu.committed[0] != 2 {
		t.Errorf("cancelled reset reached the API: %v", api.mu.committed)
	}
	api.mu.Unlock()
	tb.do("reset, confirm",
		chromedp.Click(chromedp.CSS("#reset")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")))
	if got := tb.text("#confirm-text"); !strings.Contains(got, `group "billing" on topic "orders" (all partitions) to earliest`) {
		t.Errorf("confirmation says %q", got)
	}
	tb.shot("group-reset-confirm")
	tb.do("confirm", chromedp.Click(chromedp.CSS("#confirm-ok")))
	tb.waitFor("reset done", `!document.getElementById('notice').hidden && document.body.getAttribute('data-state') === 'ready'`)
	if got := tb.column("offsets", "lag"); strings.Join(got, ",") != "7,5,3" {
		t.Errorf("lag after reset to earliest %q", got)
	}
	if got := tb.text("#total-lag"); got != "15" {
		t.Errorf("total lag after reset %q", got)
	}
	tb.do("delete",
		chromedp.Click(chromedp.CSS("#delete")),
		chromedp.WaitVisible(chromedp.CSS("#confirm[open]")),
		chromedp.Click(chromedp.CSS("#confirm-ok")))
	tb.waitFor("delete done", `location.pathname === '/groups' && document.body.getAttribute('data-state') === 'ready'`)
	if got := tb.text("#notice"); got != "Deleted group billing." {
		t.Errorf("after delete the notice says %q", got)
	}
	if got := tb.column("groups", "group"); len(got) != 0 {
		t.Errorf("groups after delete %q", got)
	}
	tb.shot("groups-after-delete")
	tb.checkClean("group pages")

	if st := tb.open("/tables"); st != "ready" {
		t.Fatalf("tables page: %s: %s", st, tb.text("#error"))
	}
	if got := tb.column("tables", "lag_records"); len(got) != 1 || got[0] != "12" {
		t.Errorf("iceberg lag %q", got)
	}
	tb.shot("tables")
	tb.checkClean("tables page")

	if st := tb.open("/throughput"); st != "ready" {
		t.Fatalf("throughput page: %s: %s", st, tb.text("#error"))
	}
	// Some pixel of the chart is not blank once a line is drawn.
	painted := evalAs[bool](tb, `(function () {
		var c = document.getElementById('chart-bytes');
		var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
		return false;
	})()`)
	if !painted {
		t.Errorf("the throughput chart is blank")
	}
	if got := tb.text("#tp-latest"); !strings.Contains(got, "20 samples") {
		t.Errorf("throughput summary %q", got)
	}
	tb.shot("throughput")
	tb.checkClean("throughput page")

	if st := tb.open("/no/such/page"); st != "ready" || !strings.Contains(tb.text("#missing-path"), "/no/such/page") {
		t.Errorf("404 page: %s", st)
	}
	tb.checkClean("404 page")
}
