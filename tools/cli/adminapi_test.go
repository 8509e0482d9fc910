package cli_test

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/gateways/http/adminapi/openapitest"
)

// adminClient calls a node's admin API and checks every answer against
// docs/openapi.yaml.
type adminClient struct {
	t    *testing.T
	base string
	spec *openapitest.Spec
}

func (c *adminClient) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	p, _, _ := strings.Cut(path, "?")
	if err := c.spec.Validate(method, p, resp.StatusCode, b); err != nil {
		c.t.Errorf("%s %s: the answer does not match docs/openapi.yaml: %v\n%s", method, path, err, b)
	}
	return resp.StatusCode, b
}

// get GETs path, wants status, and decodes the answer into v.
func (c *adminClient) get(path string, status int, v any) {
	c.t.Helper()
	got, b := c.do("GET", path, "")
	if got != status {
		c.t.Fatalf("GET %s: %d %s, want %d", path, got, b, status)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			c.t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
}

// TestAdminAPIAgainstServe: a real serve, written to by franz-go, answers
// the admin API with its topics, records (decoded through the registry),
// committed offsets and lag, resets and deletes a group, and every answer
// has the shape docs/openapi.yaml documents.
func TestAdminAPIAgainstServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	kafkaAddr := freeAddr(t)
	p := start(t, nil, "serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0",
		"--kafka-listen", kafkaAddr, "--native-listen", "", "--http-listen", "127.0.0.1:0")
	m := p.waitFor(t, `msg=running .*http_addr=(\S+)`)
	if !strings.Contains(p.logText(), "committed offsets loaded") {
		p.waitFor(t, `msg="committed offsets loaded"`)
	}
	spec, err := openapitest.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api := &adminClient{t: t, base: "http://" + m[1], spec: spec}
	defer http.DefaultClient.CloseIdleConnections()

	var health struct{ Status string }
	api.get("/healthz", 200, &health)
	if health.Status != "ready" {
		t.Errorf("healthz: %+v", health)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}

	// An Avro schema in serve's registry, and a record framed with its id.
	schemaText := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	body, _ := json.Marshal(map[string]string{"schema": schemaText})
	resp, err := http.Post(api.base+"/schema-registry/subjects/orders-value/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct{ ID int32 }
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("register a schema: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	av, err := avro.Marshal(avro.MustParse(schemaText), map[string]any{"id": int64(7)})
	if err != nil {
		t.Fatal(err)
	}
	framed := bin.BigEndian.AppendUint32([]byte{0}, uint32(reg.ID))
	framed = append(framed, av...)

	for i := 0; i < 9; i++ {
		r := &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte{0xff, 0xfe}}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: framed}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 4, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g1", offs); err != nil {
		t.Fatal(err)
	}

	var topics struct {
		Topics []struct {
			Name       string
			Partitions int
			LocalBytes int64 `json:"local_bytes"`
		}
	}
	api.get("/api/topics", 200, &topics)
	found := false
	for _, tp := range topics.Topics {
		if tp.Name == "orders" {
			found = tp.Partitions == 2 && tp.LocalBytes > 0
		}
	}
	if !found {
		t.Errorf("/api/topics does not list orders with 2 partitions and bytes: %+v", topics)
	}
	var topic struct {
		Partitions []struct {
			Partition     int32
			HighWatermark int64 `json:"high_watermark"`
		}
	}
	api.get("/api/topics/orders", 200, &topic)
	if len(topic.Partitions) != 2 || topic.Partitions[0].HighWatermark != 10 {
		t.Errorf("/api/topics/orders: %+v", topic)
	}

	type value struct {
		Encoding string
		SchemaID *int32 `json:"schema_id"`
		Text     string
	}
	var msgs struct {
		Messages []struct {
			Offset  int64
			Key     value
			Value   value
			Headers []struct {
				Key   string
				Value value
			}
		}
		NextOffset int64 `json:"next_offset"`
	}
	api.get("/api/topics/orders/messages?partition=0&offset=2&limit=3", 200, &msgs)
	if len(msgs.Messages) != 3 || msgs.Messages[0].Offset != 2 || msgs.NextOffset != 5 ||
		msgs.Messages[0].Value.Text != "v2" || msgs.Messages[0].Key.Text != "k2" ||
		len(msgs.Messages[0].Headers) != 1 || msgs.Messages[0].Headers[0].Value.Text != "fffe" {
		t.Errorf("messages from 2: %+v", msgs)
	}
	api.get("/api/topics/orders/messages?partition=0&offset=9&limit=1", 200, &msgs)
	if len(msgs.Messages) != 1 || msgs.Messages[0].Value.Encoding != "avro" || msgs.Messages[0].Value.Text != `{"id":7}` {
		t.Errorf("the Avro record: %+v", msgs.Messages)
	}
	api.get("/api/topics/orders/messages?partition=0&offset=11", 416, nil)

	// A schema that uses a named type of another subject's schema decodes
	// with it (through the registry's references), not as hex.
	customer := `{"type":"record","name":"Customer","namespace":"crm","fields":[{"name":"name","type":"string"}]}`
	register := func(subject string, req map[string]any) int32 {
		t.Helper()
		body, _ := json.Marshal(req)
		resp, err := http.Post(api.base+"/schema-registry/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var reg struct{ ID int32 }
		if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != 200 {
			t.Fatalf("register %s: %d %v", subject, resp.StatusCode, err)
		}
		return reg.ID
	}
	register("customer", map[string]any{"schema": customer})
	withRef := `{"type":"record","name":"Sale","fields":[{"name":"id","type":"long"},{"name":"buyer","type":"crm.Customer"}]}`
	refID := register("sales-value", map[string]any{"schema": withRef,
		"references": []map[string]any{{"name": "crm.Customer", "subject": "customer", "version": 1}}})
	cache := &avro.SchemaCache{}
	if _, err := avro.ParseWithCache(customer, "", cache); err != nil {
		t.Fatal(err)
	}
	saleSchema, err := avro.ParseWithCache(withRef, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	sale, err := avro.Marshal(saleSchema, map[string]any{"id": int64(3), "buyer": map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1,
		Value: append(bin.BigEndian.AppendUint32([]byte{0}, uint32(refID)), sale...)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	api.get("/api/topics/orders/messages?partition=1&offset=0&limit=1", 200, &msgs)
	if len(msgs.Messages) != 1 || msgs.Messages[0].Value.Encoding != "avro" || msgs.Messages[0].Value.Text != `{"buyer":{"name":"Ada"},"id":3}` {
		t.Errorf("the Avro record with a reference: %+v", msgs.Messages)
	}
	api.get("/api/topics/orders/messages?partition=5", 400, nil)
	api.get("/api/topics/nope", 404, nil)

	type lagAnswer struct {
		TotalLag   int64 `json:"total_lag"`
		Partitions []struct {
			Topic               string
			Partition           int32
			Committed, End, Lag int64
		}
	}
	var lag lagAnswer
	api.get("/api/lag?group=g1", 200, &lag)
	if lag.TotalLag != 6 || len(lag.Partitions) != 1 || lag.Partitions[0].Committed != 4 || lag.Partitions[0].End != 10 {
		t.Errorf("lag of g1: %+v", lag)
	}
	var groups struct {
		Groups []struct{ Group, Type string }
	}
	api.get("/api/groups", 200, &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Group != "g1" || groups.Groups[0].Type != "classic" {
		t.Errorf("groups: %+v", groups)
	}
	api.get("/api/groups/nope", 404, nil)

	// Reset to the start, seen by a Kafka client too; then delete.
	if status, b := api.do("POST", "/api/groups/g1/reset", `{"topic":"orders","partitions":[0],"to":"earliest"}`); status != 200 {
		t.Fatalf("reset: %d %s", status, b)
	}
	fetched, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("orders", 0); !ok || o.At != 0 {
		t.Errorf("committed after the reset: %+v", o)
	}
	api.get("/api/lag?group=g1", 200, &lag)
	if lag.TotalLag != 10 {
		t.Errorf("lag after the reset: %+v", lag)
	}
	if status, b := api.do("DELETE", "/api/groups/g1", ""); status != 204 {
		t.Fatalf("delete: %d %s", status, b)
	}
	api.get("/api/lag?group=g1", 404, nil)

	if status, b := api.do("PATCH", "/api/topics/orders/configs", `{"configs":{"retention.ms":"3600000"}}`); status != 200 || !strings.Contains(string(b), `"name":"retention.ms","value":"3600000"`) {
		t.Errorf("patch retention.ms: %d %s", status, b)
	}
	api.get("/api/cluster", 200, nil)
	api.get("/api/iceberg", 200, nil)
	api.get("/api/metrics/throughput", 200, nil)

	// Cold records read like hot ones: offload a topic whose local
	// retention is 0, then browse it from the start.
	lr := "0"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"local.retention.ms": &lr}, "cold"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cold", Partition: 0, Value: []byte(fmt.Sprintf("c%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(t, nil, "tier", "offload", "--now", "--topic", "cold", "--admin", m[1]); r.code != 0 {
		t.Fatalf("tier offload: %d %s", r.code, r.stderr)
	}
	var coldTopic struct {
		Partitions []struct {
			LocalBytes int64 `json:"local_bytes"`
			ColdBytes  int64 `json:"cold_bytes"`
		}
	}
	api.get("/api/topics/cold", 200, &coldTopic)
	if len(coldTopic.Partitions) != 1 || coldTopic.Partitions[0].ColdBytes == 0 || coldTopic.Partitions[0].LocalBytes != 0 {
		t.Errorf("after the offload, want the records in the cold tier only: %+v", coldTopic)
	}
	api.get("/api/topics/cold/messages?partition=0&offset=0&limit=10", 200, &msgs)
	if len(msgs.Messages) != 5 || msgs.Messages[4].Value.Text != "c4" || msgs.NextOffset != 5 {
		t.Errorf("cold messages: %+v", msgs)
	}

	// The node's registry counts what clients produced.
	resp, err = http.Get(api.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(mb), "aerostream_produce_records_total 16") {
		t.Errorf("/metrics: no aerostream_produce_records_total of 16 records produced")
	}

	cl.Close()
	http.DefaultClient.CloseIdleConnections()
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.logText())
	}
}
