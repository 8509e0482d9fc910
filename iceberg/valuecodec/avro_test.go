package valuecodec

import (
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"
)

const avroOrder = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"qty","type":"int"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"double"}},
 {"name":"sku","type":{"type":"fixed","name":"Sku","size":4}},
 {"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"},{"name":"zip","type":["null","int"]}]}},
 {"name":"pick","type":["null","int","string"]},
 {"name":"raw","type":"bytes"},
 {"name":"ok","type":"boolean"}
]}`

func TestAvroColumns(t *testing.T) {
	c, err := Compile(Schema{ID: 7, Type: TypeAvro, Text: avroOrder})
	if err != nil {
		t.Fatal(err)
	}
	got := fieldTypes(c.Fields())
	want := map[string]string{
		"id": "long", "qty": "int", "note": "string", "price": "decimal(9, 2)",
		"at": "timestamptz", "day": "date", "status": "string", "tags": "list<string>",
		"attrs": "map<string, double>", "sku": "fixed[4]",
		"addr": "struct<15: city: optional string, 16: zip: optional int>",
		"pick": "struct<18: int: optional int, 19: string: optional string>",
		"raw":  "binary", "ok": "boolean",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("column %s: type %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("columns %v, want %d of them", got, len(want))
	}
	for _, f := range c.Fields() {
		if f.Required {
			t.Errorf("column %s is required; every value column must be optional", f.Name)
		}
	}
}

func TestAvroDecodeAppend(t *testing.T) {
	c, err := Compile(Schema{ID: 7, Type: TypeAvro, Text: avroOrder})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1_700_000_000_123).UTC()
	in := map[string]any{
		"id": int64(42), "qty": 3, "note": nil, "price": big.NewRat(1999, 100),
		"at": at, "day": time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "status": "PAID",
		"tags": []any{"a", "b"}, "attrs": map[string]any{"w": 1.5},
		"sku":  [4]byte{1, 2, 3, 4},
		"addr": map[string]any{"city": "Oslo", "zip": 150},
		"pick": map[string]any{"string": "x"}, "raw": []byte{0xff}, "ok": true,
	}
	payload, err := avro.Marshal(avro.MustParse(avroOrder), in)
	if err != nil {
		t.Fatal(err)
	}
	row := decodeFramed(t, c, frame(7, payload))
	b := newBatch(t, c.Fields())
	if err := b.cols.Append(row); err != nil {
		t.Fatalf("Append: %v", err)
	}
	rec := b.record()
	defer rec.Release()

	if v := column(t, rec, "id").(*array.Int64).Value(0); v != 42 {
		t.Errorf("id %d", v)
	}
	if v := column(t, rec, "qty").(*array.Int32).Value(0); v != 3 {
		t.Errorf("qty %d", v)
	}
	if !column(t, rec, "note").IsNull(0) {
		t.Errorf("note not null")
	}
	if v := column(t, rec, "price").(*array.Decimal128).Value(0); v.BigInt().Int64() != 1999 {
		t.Errorf("price unscaled %v, want 1999", v.BigInt())
	}
	if v := column(t, rec, "at").(*array.Timestamp).Value(0); v != arrow.Timestamp(at.UnixMicro()) {
		t.Errorf("at %d, want %d", v, at.UnixMicro())
	}
	if v := column(t, rec, "day").(*array.Date32).Value(0); v.ToTime().Format(time.DateOnly) != "2024-02-29" {
		t.Errorf("day %v", v.ToTime())
	}
	if v := column(t, rec, "status").(*array.String).Value(0); v != "PAID" {
		t.Errorf("status %q", v)
	}
	tags := column(t, rec, "tags").(*array.List)
	if s, e := tags.ValueOffsets(0); e-s != 2 || tags.ListValues().(*array.String).Value(int(s)+1) != "b" {
		t.Errorf("tags %v", tags)
	}
	attrs := column(t, rec, "attrs").(*array.Map)
	if attrs.Keys().(*array.String).Value(0) != "w" || attrs.Items().(*array.Float64).Value(0) != 1.5 {
		t.Errorf("attrs %v", attrs)
	}
	if v := column(t, rec, "sku").(*array.FixedSizeBinary).Value(0); string(v) != "\x01\x02\x03\x04" {
		t.Errorf("sku %x", v)
	}
	addr := column(t, rec, "addr").(*array.Struct)
	if addr.Field(0).(*array.String).Value(0) != "Oslo" || addr.Field(1).(*array.Int32).Value(0) != 150 {
		t.Errorf("addr %v", addr)
	}
	pick := column(t, rec, "pick").(*array.Struct)
	if !pick.Field(0).IsNull(0) || pick.Field(1).(*array.String).Value(0) != "x" {
		t.Errorf("pick %v", pick)
	}
	if v := column(t, rec, "ok").(*array.Boolean).Value(0); !v {
		t.Errorf("ok false")
	}
}

func TestAvroBadInput(t *testing.T) {
	c, err := Compile(Schema{ID: 7, Type: TypeAvro, Text: avroOrder})
	if err != nil {
		t.Fatal(err)
	}
	for name, payload := range map[string][]byte{
		"empty":     nil,
		"truncated": {0x54, 0x06},
		"huge len":  {0x54, 0x06, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := c.Decode(payload); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: err %v, want ErrDecode", name, err)
		}
	}
	for name, text := range map[string]string{
		"not json":   `{"type":`,
		"recursive":  `{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}`,
		"not record": `"string"`,
		"clash":      `{"type":"record","name":"R","fields":[{"name":"aerostream","type":"int"}]}`,
	} {
		if _, err := Compile(Schema{ID: 1, Type: TypeAvro, Text: text}); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", name, err)
		}
	}
}

func TestSplitFrame(t *testing.T) {
	for name, b := range map[string][]byte{"short": {0, 0, 0}, "magic": {1, 0, 0, 0, 1}} {
		if _, _, err := SplitFrame(b); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: err %v, want ErrFrame", name, err)
		}
	}
	id, p, err := SplitFrame([]byte{0, 0, 0, 1, 2, 9})
	if err != nil || id != 258 || len(p) != 1 || p[0] != 9 {
		t.Errorf("SplitFrame = %d %v %v", id, p, err)
	}
}

// A value that does not fit its column leaves the builders untouched,
// so the record can go to the DLQ table and the batch stays aligned.
func TestAppendIsAllOrNothing(t *testing.T) {
	c, err := Compile(Schema{ID: 1, Type: TypeAvro, Text: `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"int"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	b := newBatch(t, c.Fields())
	if err := b.cols.Append(Row{"a": int64(1), "b": int64(1) << 40}); !errors.Is(err, ErrColumn) {
		t.Fatalf("err %v, want ErrColumn (int overflow)", err)
	}
	if err := b.cols.Append(Row{"a": int64(2), "b": 5}); err != nil {
		t.Fatal(err)
	}
	rec := b.record()
	defer rec.Release()
	if rec.NumRows() != 1 || column(t, rec, "a").(*array.Int64).Value(0) != 2 {
		t.Errorf("rows %d, a %v: the failed row left something behind", rec.NumRows(), column(t, rec, "a"))
	}
	for i := range rec.NumCols() {
		if rec.Column(int(i)).Len() != 1 {
			t.Errorf("column %d has %d values", i, rec.Column(int(i)).Len())
		}
	}
}

// hamba's Unmarshal takes running out of bytes for success; a value cut
// short must not decode with zero values in its last fields.
func TestAvroTruncated(t *testing.T) {
	text := `{"type":"record","name":"U","fields":[{"name":"id","type":"long"},{"name":"email","type":["null","string"]}]}`
	c, err := Compile(Schema{ID: 1, Type: TypeAvro, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	full, err := avro.Marshal(avro.MustParse(text), map[string]any{"id": int64(300), "email": "a@b"})
	if err != nil {
		t.Fatal(err)
	}
	if row, err := c.Decode(full); err != nil || row["email"] != "a@b" {
		t.Fatalf("full value: %v %v", row, err)
	}
	for n := range len(full) {
		if row, err := c.Decode(full[:n]); !errors.Is(err, ErrDecode) {
			t.Errorf("first %d of %d bytes: row %v err %v, want ErrDecode", n, len(full), row, err)
		}
	}
}
