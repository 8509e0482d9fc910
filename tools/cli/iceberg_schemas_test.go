package cli_test

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/aerostream/aerostream/iceberg"
)

// TestIcebergSchemaModeAgainstServe: an Avro schema registered through
// serve's registry (franz-go's sr client), values framed with its id
// produced by franz-go to a topic in value_schema_id_prefix mode, become
// typed columns read back with iceberg-go; a second version adds a
// column that the first version's rows read as null; records that do
// not frame or name an unknown id land in <topic>~dlq.
func TestIcebergSchemaModeAgainstServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	kafkaAddr := freeAddr(t)
	p := start(t, nil, "serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0",
		"--kafka-listen", kafkaAddr, "--native-listen", "", "--http-listen", "127.0.0.1:0",
		"--iceberg.commit_interval_ms", "200")
	m := p.waitFor(t, `msg=running .*http_addr=(\S+)`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const (
		topic = "users"
		v1    = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},
		 {"name":"born","type":{"type":"int","logicalType":"date"}}]}`
		v2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},
		 {"name":"born","type":{"type":"int","logicalType":"date"}},{"name":"email","type":["null","string"],"default":null}]}`
	)
	rcl, err := sr.NewClient(sr.URLs("http://" + m[1] + "/schema-registry"))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: v1, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	mode, enabled := iceberg.ModeValueSchemaIDPrefix, "true"
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		iceberg.ConfigEnabled: &enabled, iceberg.ConfigMode: &mode}, topic); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	framed := func(id int, text string, v map[string]any) []byte {
		b, err := avro.Marshal(avro.MustParse(text), v)
		if err != nil {
			t.Fatal(err)
		}
		return append(bin.BigEndian.AppendUint32([]byte{0}, uint32(id)), b...)
	}
	born := time.Date(1990, 5, 17, 0, 0, 0, 0, time.UTC)
	produce := func(values ...[]byte) {
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Offsets 0-2: v1 rows; 3: not framed; 4: an id no version has.
	produce(
		framed(s1.ID, v1, map[string]any{"id": int64(0), "name": "u0", "born": born}),
		framed(s1.ID, v1, map[string]any{"id": int64(1), "name": "u1", "born": born}),
		framed(s1.ID, v1, map[string]any{"id": int64(2), "name": "u2", "born": born}),
		[]byte("not framed"),
		framed(9999, v1, map[string]any{"id": int64(4), "name": "u4", "born": born}),
	)
	// Offsets 5-6: v2 rows, with the email column v1 lacks.
	s2, err := rcl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: v2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	produce(
		framed(s2.ID, v2, map[string]any{"id": int64(5), "name": "u5", "born": born, "email": "u5@x"}),
		framed(s2.ID, v2, map[string]any{"id": int64(6), "name": "u6", "born": born, "email": nil}),
	)

	cat, err := iceberg.OpenCatalog(ctx, iceberg.Config{Catalog: "sql", DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer iceberg.CloseCatalog(cat)
	tbl := waitTableOffset(t, ctx, cat, topic, 7)
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rows := map[int64]string{}
	col := func(name string) []arrow.Array {
		idx := at.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s in %s", name, at.Schema())
		}
		return at.Column(idx[0]).Data().Chunks()
	}
	meta, ids, names, borns, emails := col("aerostream"), col("id"), col("name"), col("born"), col("email")
	for c := range meta {
		offs := meta[c].(*array.Struct).Field(1).(*array.Int64)
		for r := 0; r < offs.Len(); r++ {
			email := "null"
			if !emails[c].IsNull(r) {
				email = emails[c].(*array.String).Value(r)
			}
			rows[offs.Value(r)] = fmt.Sprintf("%d %s %s %s", ids[c].(*array.Int64).Value(r), names[c].(*array.String).Value(r),
				borns[c].(*array.Date32).Value(r).ToTime().Format(time.DateOnly), email)
		}
	}
	want := map[int64]string{
		0: "0 u0 1990-05-17 null", 1: "1 u1 1990-05-17 null", 2: "2 u2 1990-05-17 null",
		5: "5 u5 1990-05-17 u5@x", 6: "6 u6 1990-05-17 null",
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("table rows by offset:\n got %v\nwant %v", rows, want)
	}

	dlq := waitTableOffset(t, ctx, cat, topic+iceberg.DLQSuffix, 5)
	dat, err := dlq.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dat.Release()
	var dlqOffsets []int64
	for _, ch := range dat.Column(0).Data().Chunks() {
		offs := ch.(*array.Struct).Field(1).(*array.Int64)
		for r := 0; r < offs.Len(); r++ {
			dlqOffsets = append(dlqOffsets, offs.Value(r))
		}
	}
	if fmt.Sprint(dlqOffsets) != "[3 4]" {
		t.Errorf("DLQ table holds offsets %v, want [3 4]", dlqOffsets)
	}
}

// waitTableOffset waits until the table's offsets summary says partition
// 0 is translated up to next.
func waitTableOffset(t *testing.T, ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, name string, next int64) *table.Table {
	t.Helper()
	for {
		tbl, err := cat.LoadTable(ctx, table.Identifier{iceberg.DefaultNamespace, name})
		if err == nil {
			if o, err := iceberg.TableOffsets(tbl.Metadata()); err == nil && o[0] >= next {
				return tbl
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("table %s never reached offset %d (last error %v)", name, next, err)
		case <-time.After(50 * time.Millisecond): // polling the catalog: serve commits in its own process
		}
	}
}
