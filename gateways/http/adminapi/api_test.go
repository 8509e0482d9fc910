package adminapi

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/gateways/http/adminapi/openapitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const openapiPath = "../../../docs/openapi.yaml"

func newTestAPI(t *testing.T, f *fakeSource, authz Authorizer) (*API, *httptest.Server) {
	t.Helper()
	a := New(Options{Cluster: f, Topics: f, Log: f, Groups: f, Schemas: f, Iceberg: f, Authorizer: authz})
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", a.Handler()))
	mux.Handle("/healthz", a.Healthz())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return a, srv
}

// do sends a request and returns the status and body.
func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decodeJSON[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// TestRoutesMatchOpenAPI: every documented operation is routed, and every
// route is documented.
func TestRoutesMatchOpenAPI(t *testing.T) {
	spec, err := openapitest.Load(openapiPath)
	if err != nil {
		t.Fatal(err)
	}
	documented := spec.Operations()
	var routed []string
	for _, r := range New(Options{}).Routes() {
		routed = append(routed, r.Method+" "+r.Path)
	}
	slices.Sort(routed)
	for _, op := range documented {
		if !slices.Contains(routed, op) {
			t.Errorf("documented but not routed: %s", op)
		}
	}
	for _, op := range routed {
		if !slices.Contains(documented, op) {
			t.Errorf("routed but not documented: %s", op)
		}
	}
}

// fixture is a node with a topic of text, binary and schema-framed
// records and two groups.
func fixture() *fakeSource {
	f := newFake()
	t := f.addTopic("orders", 2)
	for i := 0; i < 30; i++ {
		t.append(0, rec{key: []byte(fmt.Sprintf("k%d", i)), value: []byte(fmt.Sprintf("v%d", i)), ts: 1000 + int64(i)*10,
			headers: [][2][]byte{{[]byte("h"), []byte{0xff, 0x00}}}})
	}
	f.addTopic("__consumer_offsets", 1)
	f.groups["idle"] = &Group{Group: "idle", Type: "classic", State: "Empty", Protocol: "consumer",
		Offsets: []CommittedOffset{{"orders", 0, 10}}}
	f.groups["busy"] = &Group{Group: "busy", Type: "consumer", State: "Stable", Protocol: "uniform",
		Members: []Member{{MemberID: "m1", ClientID: "c", Host: "/127.0.0.1", Assignments: []Assignment{{"orders", []int32{0, 1}}}}},
		Offsets: []CommittedOffset{{"orders", 0, 25}, {"orders", 1, 0}}}
	return f
}

// TestAnswersValidateAgainstOpenAPI: the answers of every route, and of
// the errors, have the documented shape.
func TestAnswersValidateAgainstOpenAPI(t *testing.T) {
	spec, err := openapitest.Load(openapiPath)
	if err != nil {
		t.Fatal(err)
	}
	_, srv := newTestAPI(t, fixture(), nil)
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/api/cluster", "", 200},
		{"GET", "/api/topics", "", 200},
		{"GET", "/api/topics/orders", "", 200},
		{"GET", "/api/topics/nope", "", 404},
		{"PATCH", "/api/topics/orders/configs", `{"configs":{"retention.ms":"1000"}}`, 200},
		{"PATCH", "/api/topics/orders/configs", `{"configs":{"fixed.thing":"y"}}`, 400},
		{"GET", "/api/topics/orders/messages?partition=0&offset=0&limit=5", "", 200},
		{"GET", "/api/topics/orders/messages?partition=0&offset=99", "", 416},
		{"GET", "/api/groups", "", 200},
		{"GET", "/api/groups/busy", "", 200},
		{"GET", "/api/lag?group=busy", "", 200},
		{"POST", "/api/groups/idle/reset", `{"topic":"orders","to":"earliest"}`, 200},
		{"POST", "/api/groups/busy/reset", `{"topic":"orders","to":"earliest"}`, 409},
		{"DELETE", "/api/groups/busy", "", 409},
		{"DELETE", "/api/groups/idle", "", 204},
		{"GET", "/api/iceberg", "", 200},
		{"GET", "/api/metrics/throughput", "", 200},
		{"GET", "/healthz", "", 200},
	} {
		status, body := do(t, srv, c.method, c.path, c.body)
		if status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, status, body, c.status)
			continue
		}
		path, _, _ := strings.Cut(c.path, "?")
		if err := spec.Validate(c.method, path, status, body); err != nil {
			t.Errorf("%s %s: %v\n%s", c.method, c.path, err, body)
		}
	}
}

type messagesJSON struct {
	Messages []struct {
		Offset    int64 `json:"offset"`
		Timestamp int64 `json:"timestamp"`
		Key       Value `json:"key"`
		Value     Value `json:"value"`
		Headers   []struct {
			Key   string `json:"key"`
			Value Value  `json:"value"`
		} `json:"headers"`
	} `json:"messages"`
	NextOffset    int64 `json:"next_offset"`
	HighWatermark int64 `json:"high_watermark"`
}

func TestMessagesByOffsetAndTime(t *testing.T) {
	_, srv := newTestAPI(t, fixture(), nil)
	status, b := do(t, srv, "GET", "/api/topics/orders/messages?partition=0&offset=7&limit=4", "")
	if status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	m := decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 4 || m.Messages[0].Offset != 7 || m.Messages[3].Offset != 10 || m.NextOffset != 11 || m.HighWatermark != 30 {
		t.Fatalf("offset 7 limit 4: %s", b)
	}
	first := m.Messages[0]
	if first.Key != (Value{Encoding: "utf8", Text: "k7"}) || first.Value != (Value{Encoding: "utf8", Text: "v7"}) || first.Timestamp != 1070 {
		t.Errorf("record 7: %+v", first)
	}
	if len(first.Headers) != 1 || first.Headers[0].Key != "h" || first.Headers[0].Value != (Value{Encoding: "hex", Text: "ff00"}) {
		t.Errorf("record 7 headers: %+v", first.Headers)
	}

	// By time: the first record at or after 1105 is offset 11.
	_, b = do(t, srv, "GET", "/api/topics/orders/messages?partition=0&timestamp=1105&limit=2", "")
	m = decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 2 || m.Messages[0].Offset != 11 {
		t.Errorf("timestamp 1105: %s", b)
	}
	// After the last record: nothing, and the next offset is the end.
	_, b = do(t, srv, "GET", "/api/topics/orders/messages?partition=0&timestamp=999999", "")
	m = decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 0 || m.NextOffset != 30 {
		t.Errorf("timestamp after the log: %s", b)
	}
	// Without a position: the latest limit records.
	_, b = do(t, srv, "GET", "/api/topics/orders/messages?partition=0&limit=3", "")
	m = decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 3 || m.Messages[0].Offset != 27 || m.NextOffset != 30 {
		t.Errorf("latest: %s", b)
	}
	// At the high watermark: an empty page, not an error.
	_, b = do(t, srv, "GET", "/api/topics/orders/messages?partition=0&offset=30", "")
	m = decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 0 || m.NextOffset != 30 {
		t.Errorf("at the end: %s", b)
	}
	// The default limit is 20.
	_, b = do(t, srv, "GET", "/api/topics/orders/messages?partition=0&offset=0", "")
	if m = decodeJSON[messagesJSON](t, b); len(m.Messages) != DefaultLimit {
		t.Errorf("default limit: %d records", len(m.Messages))
	}
}

// TestMessagesBounded: a page never holds more than limit records, and a
// request reads at most maxBytesPerRequest (plus the one batch a fetch
// always returns) however many records the partition has.
func TestMessagesBounded(t *testing.T) {
	f := newFake()
	tp := f.addTopic("big", 1)
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i)
	}
	for range 100 { // 10 MiB of records, one per batch
		tp.append(0, rec{value: big})
	}
	_, srv := newTestAPI(t, f, nil)
	status, b := do(t, srv, "GET", "/api/topics/big/messages?partition=0&offset=0&limit=500", "")
	if status != 200 {
		t.Fatalf("%d %s", status, b[:min(len(b), 200)])
	}
	m := decodeJSON[messagesJSON](t, b)
	if f.fetched > maxBytesPerRequest+len(tp.parts[0].batches[0]) {
		t.Errorf("read %d bytes, more than the bound %d", f.fetched, maxBytesPerRequest)
	}
	if len(m.Messages) == 0 || len(m.Messages) >= 100 || m.NextOffset != int64(len(m.Messages)) {
		t.Errorf("%d records, next %d: want a bounded page that says where to go on", len(m.Messages), m.NextOffset)
	}
	if m.Messages[0].Value.Encoding != "hex" {
		t.Errorf("binary value: %s", m.Messages[0].Value.Encoding)
	}
	_, b = do(t, srv, "GET", "/api/topics/big/messages?partition=0&offset=3&limit=2", "")
	if m = decodeJSON[messagesJSON](t, b); len(m.Messages) != 2 || m.NextOffset != 5 {
		t.Errorf("limit 2: %d records, next %d", len(m.Messages), m.NextOffset)
	}
}

// framed is Confluent's framing: magic 0, the schema id, then payload.
func framed(id int32, payload ...byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

func TestMessagesDecodedThroughSchemas(t *testing.T) {
	f := newFake()
	avroText := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	f.schemas[1] = Schema{Type: "AVRO", Text: avroText}
	f.schemas[2] = Schema{Type: "PROTOBUF", Text: `syntax = "proto3"; package p; message A { string x = 1; } message B { string name = 1; int32 n = 2; }`}
	f.schemas[3] = Schema{Type: "JSON", Text: `{"type":"object"}`}
	sch := avro.MustParse(avroText)
	av, err := avro.Marshal(sch, map[string]any{"id": int64(42), "item": "book"})
	if err != nil {
		t.Fatal(err)
	}
	// Protobuf: message index [1] (B), then name="x" n=5.
	pb := append([]byte{0x02, 0x02}, 0x0a, 0x01, 'x', 0x10, 0x05)
	tp := f.addTopic("s", 1)
	tp.append(0,
		rec{key: framed(1, av...), value: framed(1, av...)},
		rec{value: framed(2, pb...)},
		rec{value: framed(3, []byte(`{ "a" : 1 }`)...)},
		rec{value: framed(9, 1, 2)},       // unknown id
		rec{value: framed(1, 0xff, 0xff)}, // not the schema's bytes
		rec{value: nil},
	)
	_, srv := newTestAPI(t, f, nil)
	_, b := do(t, srv, "GET", "/api/topics/s/messages?partition=0&offset=0", "")
	m := decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 6 {
		t.Fatalf("%s", b)
	}
	id := func(i int32) *int32 { return &i }
	want := []Value{
		{Encoding: "avro", SchemaID: id(1), Text: `{"id":42,"item":"book"}`},
		{Encoding: "protobuf", SchemaID: id(2), Text: `{"name":"x","n":5}`},
		{Encoding: "json", SchemaID: id(3), Text: `{"a":1}`},
		{Encoding: "hex", Text: "00000000090102"},
		{Encoding: "hex", SchemaID: id(1), Text: "0000000001ffff"},
		{Encoding: "null"},
	}
	for i, w := range want {
		got := m.Messages[i].Value
		if got.Encoding != w.Encoding || got.Text != w.Text || (got.SchemaID == nil) != (w.SchemaID == nil) ||
			got.SchemaID != nil && *got.SchemaID != *w.SchemaID {
			t.Errorf("record %d: %+v (id %v), want %+v", i, got, got.SchemaID, w)
		}
	}
}

func TestBadInput(t *testing.T) {
	_, srv := newTestAPI(t, fixture(), nil)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/api/topics/nope", "", 404, "unknown_topic"},
		{"GET", "/api/topics/nope/messages?partition=0", "", 404, "unknown_topic"},
		{"GET", "/api/topics/orders/messages", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=2", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=-1", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=x", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=0&limit=0", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=0&limit=501", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=0&offset=1&timestamp=1", "", 400, "bad_parameter"},
		{"GET", "/api/topics/orders/messages?partition=0&offset=31", "", 416, "offset_out_of_range"},
		{"GET", "/api/topics/orders/messages?partition=0&offset=-5", "", 400, "bad_parameter"},
		{"PATCH", "/api/topics/orders/configs", `{"configs":{"fixed.thing":"y"}}`, 400, "not_dynamic"},
		{"PATCH", "/api/topics/orders/configs", `{"configs":{"no.such":"y"}}`, 400, "bad_parameter"},
		{"PATCH", "/api/topics/orders/configs", `{"configs":{}}`, 400, "bad_parameter"},
		{"PATCH", "/api/topics/orders/configs", `{"confs":{}}`, 400, "bad_parameter"},
		{"PATCH", "/api/topics/orders/configs", ``, 400, "bad_parameter"},
		{"GET", "/api/groups/nope", "", 404, "unknown_group"},
		{"GET", "/api/lag", "", 400, "bad_parameter"},
		{"GET", "/api/lag?group=nope", "", 404, "unknown_group"},
		{"DELETE", "/api/groups/nope", "", 404, "unknown_group"},
		{"POST", "/api/groups/idle/reset", `{"topic":"orders","to":"yesterday"}`, 400, "bad_parameter"},
		{"POST", "/api/groups/idle/reset", `{"topic":"orders","to":"offset"}`, 400, "bad_parameter"},
		{"POST", "/api/groups/idle/reset", `{"topic":"orders","to":"offset","offset":99}`, 416, "offset_out_of_range"},
		{"POST", "/api/groups/idle/reset", `{"topic":"orders","to":"earliest","partitions":[7]}`, 400, "bad_parameter"},
		{"POST", "/api/groups/idle/reset", `{"topic":"nope","to":"earliest"}`, 404, "unknown_topic"},
		{"POST", "/api/groups/nope/reset", `{"topic":"orders","to":"earliest"}`, 404, "unknown_group"},
		{"POST", "/api/groups/busy/reset", `{"topic":"orders","to":"earliest"}`, 409, "group_not_empty"},
		{"GET", "/api/nothing", "", 404, "not_found"},
	} {
		status, b := do(t, srv, c.method, c.path, c.body)
		e := decodeJSON[errorBody](t, b)
		if status != c.status || e.Error != c.code || e.Message == "" {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, status, b, c.status, c.code)
		}
	}
}

func TestGroupsLagResetDelete(t *testing.T) {
	f := fixture()
	_, srv := newTestAPI(t, f, nil)
	_, b := do(t, srv, "GET", "/api/lag?group=busy", "")
	lag := decodeJSON[struct {
		TotalLag   int64       `json:"total_lag"`
		Partitions []offsetLag `json:"partitions"`
	}](t, b)
	// orders/0: end 30, committed 25; orders/1: empty.
	if lag.TotalLag != 5 || len(lag.Partitions) != 2 || lag.Partitions[0] != (offsetLag{"orders", 0, 25, 30, 5}) {
		t.Errorf("lag: %s", b)
	}
	_, b = do(t, srv, "GET", "/api/groups", "")
	gs := decodeJSON[struct{ Groups []groupSummaryJSON }](t, b)
	if len(gs.Groups) != 2 || gs.Groups[0].Group != "busy" || gs.Groups[0].Members != 1 || gs.Groups[0].TotalLag != 5 || gs.Groups[1].TotalLag != 20 {
		t.Errorf("groups: %s", b)
	}
	status, b := do(t, srv, "POST", "/api/groups/idle/reset", `{"topic":"orders","partitions":[0],"to":"offset","offset":12}`)
	if status != 200 {
		t.Fatalf("reset: %d %s", status, b)
	}
	if g := f.groups["idle"]; g.Offsets[0].Offset != 12 {
		t.Errorf("after reset to 12: %+v", g.Offsets)
	}
	status, _ = do(t, srv, "POST", "/api/groups/idle/reset", `{"topic":"orders","to":"timestamp","timestamp":1105}`)
	if g := f.groups["idle"]; status != 200 || len(g.Offsets) != 2 || g.Offsets[0].Offset != 11 || g.Offsets[1].Offset != 0 {
		t.Errorf("after reset to a time: %d %+v", status, g.Offsets)
	}
	if status, _ = do(t, srv, "DELETE", "/api/groups/idle", ""); status != 204 || f.groups["idle"] != nil {
		t.Errorf("delete: %d", status)
	}
}

type denyAll struct{ unauth bool }

func (d denyAll) Authorize(r *http.Request, op Operation, res Resource) error {
	if d.unauth {
		return ErrUnauthenticated
	}
	if res.Type == ResourceTopic && res.Name == "orders" && op == OpDescribe {
		return nil
	}
	return errors.New("no ACL")
}

func TestAuthorizer(t *testing.T) {
	_, srv := newTestAPI(t, fixture(), denyAll{})
	if status, b := do(t, srv, "GET", "/api/cluster", ""); status != 403 || decodeJSON[errorBody](t, b).Error != "forbidden" {
		t.Errorf("cluster without DESCRIBE: %d %s", status, b)
	}
	if status, _ := do(t, srv, "GET", "/api/topics/orders/messages?partition=0", ""); status != 403 {
		t.Errorf("messages without READ: %d", status)
	}
	// Lists hide what the caller may not describe.
	_, b := do(t, srv, "GET", "/api/topics", "")
	ts := decodeJSON[struct{ Topics []topicSummary }](t, b)
	if len(ts.Topics) != 1 || ts.Topics[0].Name != "orders" {
		t.Errorf("topics: %s", b)
	}
	if status, _ := do(t, srv, "GET", "/healthz", ""); status != 200 {
		t.Errorf("healthz is open: %d", status)
	}
	_, srv = newTestAPI(t, fixture(), denyAll{unauth: true})
	if status, b := do(t, srv, "GET", "/api/topics", ""); status != 401 || decodeJSON[errorBody](t, b).Error != "unauthorized" {
		t.Errorf("unauthenticated: %d %s", status, b)
	}
}

func TestHealthz(t *testing.T) {
	a := New(Options{Health: func(context.Context) Health { return Health{Status: "starting", Reasons: []string{"recovering"}} }})
	srv := httptest.NewServer(a.Healthz())
	defer srv.Close()
	status, b := do(t, srv, "GET", "/", "")
	if h := decodeJSON[Health](t, b); status != 503 || h.Status != "starting" || len(h.Reasons) != 1 {
		t.Errorf("%d %s", status, b)
	}
}

func TestUnavailableSources(t *testing.T) {
	a := New(Options{})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	for _, p := range []string{"/groups", "/topics", "/cluster"} {
		if status, b := do(t, srv, "GET", p, ""); status != 503 || decodeJSON[errorBody](t, b).Error != "unavailable" {
			t.Errorf("%s: %d %s", p, status, b)
		}
	}
	if status, b := do(t, srv, "GET", "/iceberg", ""); status != 200 || string(b) != "{\"tables\":[]}\n" {
		t.Errorf("iceberg without a source: %d %s", status, b)
	}
}

// TestSampler: the samples are rates between gathers, oldest first, and
// the ring keeps the last ones.
func TestSampler(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: MetricProduceBytes})
	reg.MustRegister(c)
	s := newSampler(reg, 3)
	prev, err := s.gather()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		c.Add(100)
		cur, err := s.gather()
		if err != nil {
			t.Fatal(err)
		}
		cur.at = prev.at.Add(2 * time.Second)
		s.add(prev, cur)
		prev = cur
	}
	got := s.snapshot()
	if len(got) != 3 {
		t.Fatalf("%d samples, want the last 3", len(got))
	}
	for i, smp := range got {
		if smp.ProduceBytesPerS != 50 || i > 0 && smp.TMs <= got[i-1].TMs {
			t.Errorf("sample %d: %+v", i, smp)
		}
	}
	// run stops with its ctx.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, time.Millisecond, testLogger(t)); close(done) }()
	cancel()
	<-done
}
