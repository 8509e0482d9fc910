package valuecodec

import (
	"testing"

	"github.com/hamba/avro/v2"
)

// fuzzValue decodes framed bytes with c and appends the row, as the
// schema modes do: any outcome but a panic is fine.
func fuzzValue(t *testing.T, c *Codec, b []byte, bare bool) {
	recoverPanics = false
	defer func() { recoverPanics = true }()
	var (
		row Row
		err error
	)
	if bare {
		row, err = c.DecodeBare(b)
	} else {
		_, payload, ferr := SplitFrame(b)
		if ferr != nil {
			return
		}
		row, err = c.Decode(payload)
	}
	if err != nil {
		return
	}
	batch := newBatch(t, c.Fields())
	_ = batch.cols.Append(row)
	rec := batch.record()
	rec.Release()
}

func FuzzAvroValue(f *testing.F) {
	c, err := Compile(Schema{ID: 7, Type: TypeAvro, Text: avroOrder})
	if err != nil {
		f.Fatal(err)
	}
	p, err := avro.Marshal(avro.MustParse(avroV1), map[string]any{"id": 1, "name": "ann", "addr": map[string]any{"city": "Oslo"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frame(7, p), false)
	f.Add([]byte{0x54, 0x06, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f}, true)
	f.Fuzz(func(t *testing.T, b []byte, bare bool) { fuzzValue(t, c, b, bare) })
}

func FuzzProtobufValue(f *testing.F) {
	c, err := Compile(Schema{ID: 9, Type: TypeProtobuf, Text: protoOrder})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frame(9, []byte{0, 0x08, 0x2a, 0x2a, 0x03, 0x61, 0x62, 0x63, 0x32, 0x05, 0x08, 0x07, 0x11, 0, 0}), false)
	f.Add(frame(9, AppendMessageIndexes(nil, []int{1, 0})), false)
	f.Add([]byte{0x3a, 0x02, 0x0a, 0x00, 0x42, 0x02, 0x08, 0x01}, true)
	f.Fuzz(func(t *testing.T, b []byte, bare bool) { fuzzValue(t, c, b, bare) })
}

func FuzzJSONValue(f *testing.F) {
	c, err := Compile(Schema{ID: 3, Type: TypeJSON, Text: jsonOrder})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frame(3, []byte(`{"id": 1, "at": "2024-01-02T03:04:05Z", "tags": ["a"], "attrs": {"k": 1}, "addr": {"city": "x"}}`)), false)
	f.Add([]byte(`{"id": 1e400, "day": "2024-13-40", "any": [[[]]]}`), true)
	f.Fuzz(func(t *testing.T, b []byte, bare bool) { fuzzValue(t, c, b, bare) })
}
