package icebergtest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// The Avro schemas of TestPyicebergAvroTyped: v2 adds an optional column,
// a BACKWARD-compatible change.
const (
	orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
	 {"name":"id","type":"string"},
	 {"name":"qty","type":"long"},
	 {"name":"price","type":"double"},
	 {"name":"paid","type":"boolean"},
	 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
	 {"name":"customer","type":{"type":"record","name":"Customer","fields":[
	   {"name":"name","type":"string"},{"name":"tier","type":"int"}]}},
	 {"name":"tags","type":{"type":"array","items":"string"}}]}`
	orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
	 {"name":"id","type":"string"},
	 {"name":"qty","type":"long"},
	 {"name":"price","type":"double"},
	 {"name":"paid","type":"boolean"},
	 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
	 {"name":"customer","type":{"type":"record","name":"Customer","fields":[
	   {"name":"name","type":"string"},{"name":"tier","type":"int"}]}},
	 {"name":"tags","type":{"type":"array","items":"string"}},
	 {"name":"coupon","type":["null","string"],"default":null}]}`
)

// registryNode starts a node with Iceberg on and the schema registry on
// its own listener (not the machine-wide default port), and returns it
// with a client of its registry.
func registryNode(t *testing.T) (*node, *sr.Client) {
	t.Helper()
	regAddr := freeAddr(t)
	n := newNode(t, append(icebergArgs(""), "--schema-registry-listen", regAddr), nil)
	n.start()
	reg, err := sr.NewClient(sr.URLs("http://" + regAddr))
	if err != nil {
		t.Fatal(err)
	}
	return n, reg
}

// TestPyicebergAvroTyped is the registry issue's Iceberg test: an Avro
// topic in iceberg.mode=value_schema_id_prefix becomes a table with typed
// columns that pyiceberg reads back equal, value by value, to what was
// produced; registering a second version that adds an optional column
// adds it to the table, null in the first version's rows.
func TestPyicebergAvroTyped(t *testing.T) {
	python := skipWithout(t, "ICEBERG_PYTHON", "`make test-iceberg` installs pyiceberg 0.12 and runs this test")
	const topic = "orders_avro"
	n, reg := registryNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subject := topic + "-value"
	for _, r := range reg.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, subject) {
		if r.Err != nil {
			t.Fatalf("set BACKWARD on %s: %v", subject, r.Err)
		}
	}
	s1, err := reg.CreateSchema(ctx, subject, sr.Schema{Schema: orderV1, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register v1: %v", err)
	}
	createTopic(t, n.kafka, topic, 2, map[string]string{
		"iceberg.enabled": "true", "iceberg.mode": "value_schema_id_prefix"})

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// want holds every produced row by "partition/offset", in the JSON
	// shape read_typed.py prints: timestamps in microseconds, the enum as
	// its symbol, the nested record as an object.
	want := map[string]map[string]any{}
	end := map[int32]int64{}
	produce := func(schemaID int, text string, from, count int, v2 bool) {
		t.Helper()
		sch := avro.MustParse(text)
		var recs []*kgo.Record
		rows := map[*kgo.Record]map[string]any{}
		for i := from; i < from+count; i++ {
			at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour + time.Duration(i)*time.Millisecond)
			v := map[string]any{
				"id":       fmt.Sprintf("order-%03d", i),
				"qty":      int64(i)*1_000_000_007 - 5,
				"price":    float64(i)*0.1 + 0.25,
				"paid":     i%2 == 0,
				"at":       at,
				"status":   []string{"NEW", "PAID", "SHIPPED"}[i%3],
				"customer": map[string]any{"name": fmt.Sprintf("cust-%d", i%7), "tier": i % 4},
				"tags":     []any{"t" + fmt.Sprint(i%5), fmt.Sprintf("batch-%d", from)}[:i%3],
			}
			row := map[string]any{
				"id": v["id"], "qty": v["qty"], "price": v["price"], "paid": v["paid"],
				"at":       at.UnixMicro(),
				"status":   v["status"],
				"customer": v["customer"],
				"tags":     v["tags"],
				"coupon":   nil,
			}
			if v2 {
				if i%2 == 0 {
					v["coupon"] = fmt.Sprintf("SAVE%d", i)
					row["coupon"] = v["coupon"]
				} else {
					v["coupon"] = nil
				}
			}
			b, err := avro.Marshal(sch, v)
			if err != nil {
				t.Fatalf("encode row %d: %v", i, err)
			}
			framed := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(schemaID)), b...)
			rec := &kgo.Record{Topic: topic, Key: []byte(v["id"].(string)), Value: framed}
			recs = append(recs, rec)
			rows[rec] = row
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		// The results come in the order they completed, not the order given.
		for _, r := range res {
			want[fmt.Sprintf("%d/%d", r.Record.Partition, r.Record.Offset)] = rows[r.Record]
			end[r.Record.Partition] = max(end[r.Record.Partition], r.Record.Offset+1)
		}
	}

	produce(s1.ID, orderV1, 0, 40, false)
	n.waitTranslated(namespace, topic, end, time.Minute)
	schema, rows := readTyped(t, python, n.catalogURI(), topic)
	wantTypes := map[string]string{"id": "string", "qty": "long", "price": "double", "paid": "boolean",
		"at": "timestamptz", "status": "string", "customer": "struct<", "tags": "list<string>"}
	checkColumns(t, schema, wantTypes, "coupon")
	sameTyped(t, want, rows, false)
	t.Logf("v1: %d rows equal value by value; columns %v", len(rows), schema)

	s2, err := reg.CreateSchema(ctx, subject, sr.Schema{Schema: orderV2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register v2 (BACKWARD-compatible, adds an optional field): %v", err)
	}
	if s2.Version != 2 {
		t.Fatalf("v2 registered as version %d", s2.Version)
	}
	produce(s2.ID, orderV2, 40, 20, true)
	n.waitTranslated(namespace, topic, end, time.Minute)
	schema, rows = readTyped(t, python, n.catalogURI(), topic)
	wantTypes["coupon"] = "string"
	checkColumns(t, schema, wantTypes, "")
	sameTyped(t, want, rows, true)
	t.Logf("v2: %d rows equal value by value; columns %v", len(rows), schema)
	n.stop()
}

// readTyped runs read_typed.py: the table's top-level columns and its
// rows as JSON values.
func readTyped(t *testing.T, python, uri, tbl string) ([][2]string, []map[string]any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "typed.json")
	cmd := exec.Command(python, "read_typed.py", uri, namespace, tbl, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("read_typed.py: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema [][2]string      `json:"schema"`
		Rows   []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("read_typed.py output: %v", err)
	}
	return got.Schema, got.Rows
}

// checkColumns fails unless the table has each column of want with a
// type starting with the given text, and lacks the column absent.
func checkColumns(t *testing.T, schema [][2]string, want map[string]string, absent string) {
	t.Helper()
	have := map[string]string{}
	for _, c := range schema {
		have[c[0]] = c[1]
	}
	for name, typ := range want {
		if !strings.HasPrefix(have[name], typ) {
			t.Errorf("column %s has type %q, want %s", name, have[name], typ)
		}
	}
	if _, ok := have[absent]; absent != "" && ok {
		t.Errorf("column %s exists before any version has it", absent)
	}
}

// sameTyped fails unless the table's rows are exactly want, every column
// of every row; without the coupon column yet, rows must not have it.
func sameTyped(t *testing.T, want map[string]map[string]any, rows []map[string]any, coupon bool) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("table has %d rows, %d were produced", len(rows), len(want))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		key := fmt.Sprintf("%v/%v", r["_partition"], r["_offset"])
		if seen[key] {
			t.Fatalf("row %s twice in the table", key)
		}
		seen[key] = true
		w, ok := want[key]
		if !ok {
			t.Fatalf("table row %s was never produced: %v", key, r)
		}
		delete(r, "_partition")
		delete(r, "_offset")
		exp := map[string]any{}
		for k, v := range w {
			if k != "coupon" || coupon {
				exp[k] = v
			}
		}
		// Through JSON, so that both sides hold the same Go types.
		var norm map[string]any
		b, _ := json.Marshal(exp)
		if err := json.Unmarshal(b, &norm); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(norm, r) {
			gb, _ := json.Marshal(r)
			t.Fatalf("row %s:\n got %s\nwant %s", key, gb, b)
		}
	}
}

// orderFlat is a flat record (primitives, logical types, an enum, a
// nullable union), which valuecodec decodes by its direct path rather
// than through a generic row.
const orderFlat = `{"type":"record","name":"Flat","namespace":"shop","fields":[
 {"name":"id","type":"string"},
 {"name":"qty","type":"long"},
 {"name":"n","type":"int"},
 {"name":"price","type":"double"},
 {"name":"ratio","type":"float"},
 {"name":"paid","type":"boolean"},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"raw","type":"bytes"},
 {"name":"coupon","type":["null","string"],"default":null}]}`

// TestPyicebergAvroFlat: values of a flat Avro record, which take
// valuecodec's direct path into the Arrow builders, read back through
// pyiceberg equal to what was produced, value by value.
func TestPyicebergAvroFlat(t *testing.T) {
	python := skipWithout(t, "ICEBERG_PYTHON", "`make test-iceberg` installs pyiceberg 0.12 and runs this test")
	const topic = "orders_flat"
	n, reg := registryNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := reg.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderFlat, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	createTopic(t, n.kafka, topic, 2, map[string]string{
		"iceberg.enabled": "true", "iceberg.mode": "value_schema_id_prefix"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sch := avro.MustParse(orderFlat)
	want := map[string]map[string]any{}
	end := map[int32]int64{}
	var recs []*kgo.Record
	rows := map[*kgo.Record]map[string]any{}
	for i := range 60 {
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour + time.Duration(i)*time.Millisecond)
		day := time.Date(2026, 3, 1+i%28, 0, 0, 0, 0, time.UTC)
		raw := []byte{byte(i), 0, 0xff, byte(i * 7)}
		v := map[string]any{
			"id": fmt.Sprintf("order-%03d", i), "qty": int64(i)*1_000_000_007 - 5, "n": i - 30,
			"price": float64(i)*0.1 + 0.25, "ratio": float32(i) * 0.25, "paid": i%2 == 0, "at": at, "day": day,
			"status": []string{"NEW", "PAID", "SHIPPED"}[i%3], "raw": raw, "coupon": nil,
		}
		row := map[string]any{
			"id": v["id"], "qty": v["qty"], "n": v["n"], "price": v["price"], "ratio": float64(i) * 0.25,
			"paid": v["paid"], "at": at.UnixMicro(), "day": day.Format("2006-01-02"), "status": v["status"],
			"raw": fmt.Sprintf("%x", raw), "coupon": nil,
		}
		if i%2 == 0 {
			v["coupon"] = fmt.Sprintf("SAVE%d", i)
			row["coupon"] = v["coupon"]
		}
		b, err := avro.Marshal(sch, v)
		if err != nil {
			t.Fatalf("encode row %d: %v", i, err)
		}
		rec := &kgo.Record{Topic: topic, Value: append(binary.BigEndian.AppendUint32([]byte{0}, uint32(s.ID)), b...)}
		recs = append(recs, rec)
		rows[rec] = row
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for _, r := range res {
		want[fmt.Sprintf("%d/%d", r.Record.Partition, r.Record.Offset)] = rows[r.Record]
		end[r.Record.Partition] = max(end[r.Record.Partition], r.Record.Offset+1)
	}
	n.waitTranslated(namespace, topic, end, time.Minute)
	schema, got := readTyped(t, python, n.catalogURI(), topic)
	checkColumns(t, schema, map[string]string{"id": "string", "qty": "long", "n": "int", "price": "double",
		"ratio": "float", "paid": "boolean", "at": "timestamptz", "day": "date", "status": "string",
		"raw": "binary", "coupon": "string"}, "")
	sameTyped(t, want, got, true)
	t.Logf("%d rows equal value by value; columns %v", len(got), schema)
	n.stop()
}
