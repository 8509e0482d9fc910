package adminapi

import (
	"context"
	"testing"
)

// FuzzWalkBatches: record batches from the log (or a corrupt segment)
// never panic the inspector; they parse or fail with an error.
func FuzzWalkBatches(f *testing.F) {
	f.Add(encodeBatch(0, []rec{{key: []byte("k"), value: []byte("v"), headers: [][2][]byte{{[]byte("h"), nil}}}}))
	f.Add(encodeBatch(5, []rec{{value: nil}, {value: []byte{0, 0, 0, 0, 1}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		_ = walkBatches(b, func(record) bool { n++; return n < 1000 }, func(int64) {})
	})
}

// FuzzDecodeValue: a key or value claiming a schema id, with any payload,
// is shown (decoded, or as hex) without panicking.
func FuzzDecodeValue(f *testing.F) {
	src := newFake()
	src.schemas[1] = Schema{Type: "AVRO", Text: `{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"]},{"name":"m","type":{"type":"map","values":"long"}}]}`}
	src.schemas[2] = Schema{Type: "PROTOBUF", Text: `syntax = "proto3"; message A { string x = 1; repeated int64 n = 2; A child = 3; }`}
	src.schemas[3] = Schema{Type: "JSON", Text: `{}`}
	d := newDecoder(src)
	f.Add(framed(1, 2, 2, 'h', 'i', 0))
	f.Add(framed(2, 0, 0x0a, 1, 'x'))
	f.Add(framed(3, '{', '}'))
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := d.decode(context.Background(), b)
		if v.Encoding == "" {
			t.Fatalf("no encoding for %x", b)
		}
	})
}
