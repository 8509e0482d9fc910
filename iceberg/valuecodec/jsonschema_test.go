package valuecodec

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

const jsonOrder = `{
 "$schema": "http://json-schema.org/draft-07/schema#",
 "type": "object",
 "properties": {
  "id": {"type": "integer"},
  "price": {"type": "number"},
  "note": {"type": ["null", "string"]},
  "at": {"type": "string", "format": "date-time"},
  "day": {"type": "string", "format": "date"},
  "ok": {"type": "boolean"},
  "tags": {"type": "array", "items": {"type": "string"}},
  "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
  "addr": {"$ref": "#/definitions/Addr"},
  "any": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
  "status": {"enum": ["NEW", "PAID"]}
 },
 "required": ["id"],
 "definitions": {"Addr": {"type": "object", "properties": {"city": {"type": "string"}}}}
}`

func TestJSONColumns(t *testing.T) {
	c, err := Compile(Schema{ID: 3, Type: TypeJSON, Text: jsonOrder})
	if err != nil {
		t.Fatal(err)
	}
	got := fieldTypes(c.Fields())
	want := map[string]string{
		"id": "long", "price": "double", "note": "string", "at": "timestamptz",
		"day": "date", "ok": "boolean", "tags": "list<string>", "attrs": "map<string, long>",
		"any": "string", "status": "string",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("column %s: type %q, want %q", k, got[k], v)
		}
	}
	if got["addr"] == "" || len(got) != len(want)+1 {
		t.Errorf("columns %v", got)
	}
}

func TestJSONDecodeAppend(t *testing.T) {
	c, err := Compile(Schema{ID: 3, Type: TypeJSON, Text: jsonOrder})
	if err != nil {
		t.Fatal(err)
	}
	value := frame(3, []byte(`{"id": 9007199254740993, "price": 2.5, "note": null, "at": "2024-01-02T03:04:05.5Z",
		"day": "2024-01-02", "ok": true, "tags": ["a"], "attrs": {"k": 1}, "addr": {"city": "Oslo"},
		"any": 5, "status": "PAID", "extra": "ignored"}`))
	row := decodeFramed(t, c, value)
	b := newBatch(t, c.Fields())
	if err := b.cols.Append(row); err != nil {
		t.Fatalf("Append: %v", err)
	}
	rec := b.record()
	defer rec.Release()
	if v := column(t, rec, "id").(*array.Int64).Value(0); v != 9007199254740993 {
		t.Errorf("id %d: a long lost precision", v)
	}
	if v := column(t, rec, "at").(*array.Timestamp).Value(0); int64(v) != 1704164645500000 {
		t.Errorf("at %d", v)
	}
	if v := column(t, rec, "any").(*array.String).Value(0); v != "5" {
		t.Errorf("any %q, want the JSON text 5", v)
	}
	if v := column(t, rec, "addr").(*array.Struct).Field(0).(*array.String).Value(0); v != "Oslo" {
		t.Errorf("addr.city %q", v)
	}
	if !column(t, rec, "note").IsNull(0) {
		t.Errorf("note not null")
	}
}

func TestJSONBadInput(t *testing.T) {
	c, err := Compile(Schema{ID: 3, Type: TypeJSON, Text: jsonOrder})
	if err != nil {
		t.Fatal(err)
	}
	for name, payload := range map[string]string{
		"not json":    `{"id":`,
		"wrong type":  `{"id": "x"}`,
		"missing req": `{"price": 1}`,
		"bad time":    `{"id": 1, "at": "yesterday"}`,
	} {
		if _, err := c.Decode([]byte(payload)); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: err %v, want ErrDecode", name, err)
		}
	}
	for name, text := range map[string]string{
		"recursive":  `{"type":"object","properties":{"n":{"$ref":"#"}}}`,
		"not object": `{"type":"string"}`,
		"bad ref":    `{"type":"object","properties":{"n":{"$ref":"#/nowhere"}}}`,
	} {
		if _, err := Compile(Schema{ID: 1, Type: TypeJSON, Text: text}); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", name, err)
		}
	}
}
