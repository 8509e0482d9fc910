package registry

import (
	"testing"

	"github.com/aerostream/aerostream/controller"
)

// The parsers' glue and the compatibility rules we wrote get arbitrary
// schemas: neither may panic, whatever two schemas they compare.

func fuzzRules(f *testing.F, typ string, seeds [][2]string) {
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 1<<14 || len(b) > 1<<14 {
			return
		}
		pa, err := parseSchema(typ, a, nil)
		if err != nil {
			return
		}
		_ = pa.fingerprint()
		_ = pa.normalized()
		pb, err := parseSchema(typ, b, nil)
		if err != nil {
			return
		}
		_ = pa.readErrors(pb)
		_ = pb.readErrors(pa)
		if len(pa.readErrors(pa)) != 0 {
			t.Fatalf("a schema cannot read its own data: %v", pa.readErrors(pa))
		}
	})
}

func FuzzJSONSchemaRules(f *testing.F) {
	fuzzRules(f, controller.SchemaJSON, [][2]string{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"type":"object","additionalProperties":false}`},
		{`{"anyOf":[{"type":"string"},{"enum":[1,2]}]}`, `{"type":"array","items":{"type":"integer","minimum":1}}`},
		{`true`, `false`},
	})
}

func FuzzProtobufRules(f *testing.F) {
	fuzzRules(f, controller.SchemaProtobuf, [][2]string{
		{`syntax = "proto3"; package p; message M { string a = 1; oneof o { int32 b = 2; } }`, `syntax = "proto3"; package p; message M { bytes a = 1; int64 b = 2; }`},
		{`syntax = "proto2"; message M { required int32 a = 1; repeated M m = 2; }`, `syntax = "proto2"; message M { optional int32 a = 1; }`},
		{`Cg1zY2hlbWEucHJvdG8SAXAiDAoBTRIHCgFhGAEgASgJYgZwcm90bzM=`, `syntax = "proto3"; package p; message M { string a = 1; }`},
	})
}
