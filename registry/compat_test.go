package registry

import (
	"strings"
	"testing"

	"github.com/aerostream/aerostream/controller"
)

// compatCase is one rule: can a reader with schema reader read what a
// writer with schema writer wrote? want is the start of the first
// message, "" for compatible.
type compatCase struct {
	name           string
	reader, writer string
	want           string
}

func runCompat(t *testing.T, typ string, cases []compatCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseSchema(typ, tc.reader, nil)
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
			w, err := parseSchema(typ, tc.writer, nil)
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			got := r.readErrors(w)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("incompatible: %v", got)
			case tc.want != "" && len(got) == 0:
				t.Fatalf("compatible, want %s", tc.want)
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
}

func avroRecord(fields string) string {
	return `{"type":"record","name":"R","fields":[` + fields + `]}`
}

func TestAvroCompatibility(t *testing.T) {
	runCompat(t, controller.SchemaAvro, []compatCase{
		{"same", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int"}`), ""},
		{"field added with default", avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string","default":""}`), avroRecord(`{"name":"a","type":"int"}`), ""},
		{"field added without default", avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), avroRecord(`{"name":"a","type":"int"}`), "b"},
		{"field removed", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), ""},
		{"int promoted to long", avroRecord(`{"name":"a","type":"long"}`), avroRecord(`{"name":"a","type":"int"}`), ""},
		{"long narrowed to int", avroRecord(`{"name":"a","type":"int"}`), avroRecord(`{"name":"a","type":"long"}`), "int"},
		{"type changed", avroRecord(`{"name":"a","type":"string"}`), avroRecord(`{"name":"a","type":"int"}`), "string"},
		{"enum symbol added", `{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, ""},
		{"enum symbol removed", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, "B"},
		{"record renamed", `{"type":"record","name":"S","fields":[]}`, `{"type":"record","name":"R","fields":[]}`, "R"},
		{"union widened", `["null","int","string"]`, `["null","int"]`, ""},
	})
}

func TestProtobufCompatibility(t *testing.T) {
	msg := func(body string) string { return `syntax = "proto3"; package p; message M { ` + body + ` }` }
	runCompat(t, controller.SchemaProtobuf, []compatCase{
		{"same", msg(`string a = 1;`), msg(`string a = 1;`), ""},
		{"field added", msg(`string a = 1; int32 b = 2;`), msg(`string a = 1;`), ""},
		{"field removed", msg(`string a = 1;`), msg(`string a = 1; int32 b = 2;`), ""},
		{"field renamed", msg(`string z = 1;`), msg(`string a = 1;`), ""},
		{"varint kinds interchange", msg(`int64 a = 1;`), msg(`int32 a = 1;`), ""},
		{"string and bytes interchange", msg(`bytes a = 1;`), msg(`string a = 1;`), ""},
		{"scalar kind changed", msg(`string a = 1;`), msg(`int32 a = 1;`), "FIELD_SCALAR_KIND_CHANGED"},
		{"zigzag is not varint", msg(`sint32 a = 1;`), msg(`int32 a = 1;`), "FIELD_SCALAR_KIND_CHANGED"},
		{"scalar to message", msg(`M a = 1;`), msg(`int32 a = 1;`), "FIELD_KIND_CHANGED"},
		{"named type changed", `syntax = "proto3"; package p; message A {} message B {} message M { B a = 1; }`,
			`syntax = "proto3"; package p; message A {} message B {} message M { A a = 1; }`, "FIELD_NAMED_TYPE_CHANGED"},
		{"package changed", `syntax = "proto3"; package q; message M { string a = 1; }`, msg(`string a = 1;`), "PACKAGE_CHANGED"},
		{"message removed", msg(`string a = 1;`), `syntax = "proto3"; package p; message M { string a = 1; } message N {}`, "MESSAGE_REMOVED"},
		{"message added", `syntax = "proto3"; package p; message M { string a = 1; } message N {}`, msg(`string a = 1;`), ""},
		{"oneof field removed", msg(`oneof o { string a = 1; }`), msg(`oneof o { string a = 1; int32 b = 2; }`), "ONEOF_FIELD_REMOVED"},
		{"field moved to a new oneof alone", msg(`oneof o { string a = 1; }`), msg(`string a = 1;`), ""},
		{"fields moved to a new oneof together", msg(`oneof o { string a = 1; int32 b = 2; }`), msg(`string a = 1; int32 b = 2;`), "MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
		{"field moved to an existing oneof", msg(`oneof o { string a = 1; int32 b = 2; }`), msg(`oneof o { string a = 1; } int32 b = 2;`), "FIELD_MOVED_TO_EXISTING_ONEOF"},
		{"required field added", `syntax = "proto2"; package p; message M { optional string a = 1; required int32 b = 2; }`,
			`syntax = "proto2"; package p; message M { optional string a = 1; }`, "REQUIRED_FIELD_ADDED"},
		{"required field removed", `syntax = "proto2"; package p; message M { optional string a = 1; }`,
			`syntax = "proto2"; package p; message M { optional string a = 1; required int32 b = 2; }`, "REQUIRED_FIELD_REMOVED"},
		{"numeric made repeated", `syntax = "proto2"; package p; message M { repeated int32 a = 1; }`,
			`syntax = "proto2"; package p; message M { optional int32 a = 1; }`, "FIELD_LABEL_CHANGED"},
		{"string made repeated", msg(`repeated string a = 1;`), msg(`string a = 1;`), ""},
		{"enum and varint interchange", `syntax = "proto3"; package p; enum E { Z = 0; } message M { E a = 1; }`, msg(`int32 a = 1;`), ""},
	})
}

func TestJSONSchemaCompatibility(t *testing.T) {
	obj := func(props, extra string) string {
		return `{"type":"object","properties":{` + props + `}` + extra + `}`
	}
	closed := `,"additionalProperties":false`
	runCompat(t, controller.SchemaJSON, []compatCase{
		{"same", obj(`"a":{"type":"string"}`, ""), obj(`"a":{"type":"string"}`, ""), ""},
		{"integer widened to number", obj(`"a":{"type":"number"}`, ""), obj(`"a":{"type":"integer"}`, ""), ""},
		{"number narrowed to integer", obj(`"a":{"type":"integer"}`, ""), obj(`"a":{"type":"number"}`, ""), "TYPE_CHANGED"},
		{"type changed", obj(`"a":{"type":"string"}`, ""), obj(`"a":{"type":"integer"}`, ""), "TYPE_CHANGED"},
		{"type added", obj(`"a":{"type":"string"}`, ""), obj(`"a":{}`, ""), "TYPE_NARROWED"},
		{"type union widened", obj(`"a":{"type":["string","null"]}`, ""), obj(`"a":{"type":"string"}`, ""), ""},
		{"property added to closed model", obj(`"a":{"type":"string"},"b":{"type":"string"}`, closed), obj(`"a":{"type":"string"}`, closed), ""},
		{"property added to open model", obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), obj(`"a":{"type":"string"}`, ""), "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"property removed from open model", obj(`"a":{"type":"string"}`, ""), obj(`"a":{"type":"string"},"b":{"type":"string"}`, ""), ""},
		{"property removed from closed model", obj(`"a":{"type":"string"}`, closed), obj(`"a":{"type":"string"},"b":{"type":"string"}`, closed), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
		{"required added", obj(`"a":{"type":"string"}`, `,"required":["a"]`), obj(`"a":{"type":"string"}`, ""), "REQUIRED_PROPERTY_ADDED"},
		{"required removed", obj(`"a":{"type":"string"}`, ""), obj(`"a":{"type":"string"}`, `,"required":["a"]`), ""},
		{"additionalProperties closed", obj(`"a":{"type":"string"}`, closed), obj(`"a":{"type":"string"}`, ""), "ADDITIONAL_PROPERTIES_REMOVED"},
		{"additionalProperties opened", obj(`"a":{"type":"string"}`, ""), obj(`"a":{"type":"string"}`, closed), ""},
		{"additionalProperties narrowed", obj(`"a":{"type":"string"}`, `,"additionalProperties":{"type":"string"}`), obj(`"a":{"type":"string"}`, ""), "ADDITIONAL_PROPERTIES_NARROWED"},
		{"enum widened", `{"enum":["a","b"]}`, `{"enum":["a"]}`, ""},
		{"enum narrowed", `{"enum":["a"]}`, `{"enum":["a","b"]}`, "ENUM_ARRAY_NARROWED"},
		{"maxLength decreased", `{"type":"string","maxLength":5}`, `{"type":"string","maxLength":10}`, "MAXLENGTH_DECREASED"},
		{"minimum increased", `{"type":"number","minimum":5}`, `{"type":"number","minimum":1}`, "MINIMUM_INCREASED"},
		{"maximum increased", `{"type":"number","maximum":10}`, `{"type":"number","maximum":5}`, ""},
		{"nested change", obj(`"a":`+obj(`"x":{"type":"string"}`, ""), ""), obj(`"a":`+obj(`"x":{"type":"integer"}`, ""), ""), "#/properties/a/properties/x"},
		{"items changed", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"integer"}}`, "TYPE_CHANGED"},
		{"reader accepts anything", `true`, obj(`"a":{"type":"string"}`, ""), ""},
		{"anyOf widened", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"}]}`, ""},
		{"anyOf narrowed", `{"anyOf":[{"type":"string"}]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, "COMBINED_TYPE"},
	})
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ typ, text, want string }{
		{controller.SchemaAvro, `{"type":"record","name":"R"}`, "fields"},
		{controller.SchemaAvro, `{"type":`, "Invalid schema"},
		{controller.SchemaProtobuf, `syntax = "proto3"; message M { string a = 1; string b = 1; }`, "1"},
		{controller.SchemaProtobuf, `syntax = "proto3"; import "missing.proto"; message M {}`, "missing.proto"},
		{controller.SchemaJSON, `{"type":"nonsense"}`, "Invalid schema"},
		{controller.SchemaJSON, `{"$ref":"file:///etc/passwd"}`, "Invalid schema"},
		{"XML", `<a/>`, "unknown schema type"},
	} {
		if _, err := parseSchema(tc.typ, tc.text, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want %q", tc.typ, tc.text, err, tc.want)
		}
	}
}

func TestProtobufBase64Descriptor(t *testing.T) {
	p, err := parseSchema(controller.SchemaProtobuf, `syntax = "proto3"; package p; message M { string a = 1; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	b64, err := p.(*protoSchema).serialized()
	if err != nil {
		t.Fatal(err)
	}
	q, err := parseSchema(controller.SchemaProtobuf, b64, nil)
	if err != nil {
		t.Fatalf("the serialized form does not parse back: %v", err)
	}
	if errs := q.readErrors(p); len(errs) > 0 {
		t.Fatalf("descriptor form differs from source: %v", errs)
	}
}

// What Confluent's Python serializer sends for a message built with
// descriptor_pb2: a base64 FileDescriptorProto whose fields have no
// json_name.
func TestProtobufPythonDescriptor(t *testing.T) {
	const b64 = "CgtvcmRlci5wcm90bxIEc2hvcCIgCgVPcmRlchIKCgJpZBgBIAEoCRILCgNxdHkYAiABKANiBnByb3RvMw=="
	p, err := parseSchema(controller.SchemaProtobuf, b64, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.(*protoSchema).fd.Messages().ByName("Order"); m == nil || m.Fields().Len() != 2 {
		t.Fatalf("parsed %v", p.(*protoSchema).fd)
	}
}
