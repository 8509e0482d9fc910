package valuecodec

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
)

const (
	avroV1 = `{"type":"record","name":"User","fields":[
	 {"name":"id","type":"int"},{"name":"name","type":"string"},
	 {"name":"addr","type":{"type":"record","name":"A","fields":[{"name":"city","type":"string"}]}}]}`
	// v2 widens id, drops name, adds email and addr.zip: BACKWARD
	// compatible in the registry's terms.
	avroV2 = `{"type":"record","name":"User","fields":[
	 {"name":"id","type":"long"},
	 {"name":"addr","type":{"type":"record","name":"A","fields":[{"name":"city","type":"string"},{"name":"zip","type":["null","string"],"default":null}]}},
	 {"name":"email","type":["null","string"],"default":null}]}`
	// v3 turns id into a string: no table can take both.
	avroV3 = `{"type":"record","name":"User","fields":[{"name":"id","type":"string"}]}`
)

// memTable is a table with the metadata column and v1's columns, as the
// translator would create it; no catalog is needed to stage schema
// changes in a transaction.
func memTable(t *testing.T, value []iceberg.NestedField) *table.Table {
	t.Helper()
	meta := iceberg.NestedField{Name: MetadataColumn, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	}}, Required: true}
	sc, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, append([]iceberg.NestedField{meta}, value...)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	md, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///tmp/valuecodec-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return table.New(table.Identifier{"ns", "users"}, md, "", nil, nil)
}

func ids(sc *iceberg.Schema) map[string]int {
	out := map[string]int{}
	for _, name := range []string{"aerostream", "id", "name", "addr", "addr.city", "addr.zip", "email"} {
		if f, ok := sc.FindFieldByName(name); ok {
			out[name] = f.ID
		}
	}
	return out
}

func TestEvolveAcrossVersions(t *testing.T) {
	v1, err := Compile(Schema{ID: 1, Type: TypeAvro, Text: avroV1})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Compile(Schema{ID: 2, Type: TypeAvro, Text: avroV2})
	if err != nil {
		t.Fatal(err)
	}
	tbl := memTable(t, v1.Fields())
	before := ids(tbl.Schema())

	txn := tbl.NewTransaction()
	sc, changed, err := Evolve(txn, v2.Fields())
	if err != nil || !changed {
		t.Fatalf("Evolve v2: changed %v err %v", changed, err)
	}
	after := ids(sc)
	for _, name := range []string{"aerostream", "id", "name", "addr", "addr.city"} {
		if after[name] != before[name] {
			t.Errorf("%s: field id %d became %d; ids must be stable", name, before[name], after[name])
		}
	}
	for _, name := range []string{"addr.zip", "email"} {
		if after[name] <= tbl.Metadata().LastColumnID() {
			t.Errorf("%s: id %d, want a fresh one above %d", name, after[name], tbl.Metadata().LastColumnID())
		}
	}
	if f, _ := sc.FindFieldByName("id"); !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Errorf("id is %s, want widened to long", f.Type)
	}

	// The same version again changes nothing, and v1 (narrower) fits too.
	for _, c := range []*Codec{v2, v1} {
		if _, changed, err := Evolve(txn, c.Fields()); err != nil || changed {
			t.Errorf("Evolve schema %d again: changed %v err %v", c.ID(), changed, err)
		}
	}

	// v3 changes a type incompatibly: an error, and the schema stays.
	v3, err := Compile(Schema{ID: 3, Type: TypeAvro, Text: avroV3})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Evolve(txn, v3.Fields()); !errors.Is(err, ErrEvolve) {
		t.Errorf("Evolve v3: err %v, want ErrEvolve", err)
	}

	// Rows of both versions land in the evolved columns: v1's has no
	// email (null), v2's no name (null).
	var value []iceberg.NestedField
	for _, f := range sc.Fields() {
		if f.Name != MetadataColumn {
			value = append(value, f)
		}
	}
	b := newBatch(t, value)
	p1, _ := avro.Marshal(avro.MustParse(avroV1), map[string]any{"id": 1, "name": "ann", "addr": map[string]any{"city": "Oslo"}})
	p2, _ := avro.Marshal(avro.MustParse(avroV2), map[string]any{"id": int64(1) << 40, "addr": map[string]any{"city": "Rome", "zip": "00100"}, "email": "b@x"})
	for _, v := range []struct {
		c *Codec
		p []byte
	}{{v1, p1}, {v2, p2}} {
		row, err := v.c.Decode(v.p)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.cols.Append(row); err != nil {
			t.Fatalf("append schema %d row: %v", v.c.ID(), err)
		}
	}
	rec := b.record()
	defer rec.Release()
	if id := column(t, rec, "id").(*array.Int64); id.Value(0) != 1 || id.Value(1) != 1<<40 {
		t.Errorf("id %v", id)
	}
	if email := column(t, rec, "email"); !email.IsNull(0) || email.(*array.String).Value(1) != "b@x" {
		t.Errorf("email %v, want null then b@x", email)
	}
	if name := column(t, rec, "name"); name.(*array.String).Value(0) != "ann" || !name.IsNull(1) {
		t.Errorf("name %v, want ann then null", name)
	}
	zip := column(t, rec, "addr").(*array.Struct).Field(1)
	if !zip.IsNull(0) || zip.(*array.String).Value(1) != "00100" {
		t.Errorf("addr.zip %v", zip)
	}
}
