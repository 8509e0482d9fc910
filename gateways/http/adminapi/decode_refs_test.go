package adminapi

import (
	"testing"

	"github.com/hamba/avro/v2"
)

// TestMessagesDecodedThroughReferencedSchemas: schemas that use types of
// other registered schemas (Avro named types, Protobuf imports, JSON
// $ref) decode with those, transitively, instead of showing hex.
func TestMessagesDecodedThroughReferencedSchemas(t *testing.T) {
	f := newFake()
	// Avro: Order uses Address, which uses Country; the references come
	// dependencies first.
	country := `{"type":"record","name":"Country","namespace":"geo","fields":[{"name":"code","type":"string"}]}`
	address := `{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"city","type":"string"},{"name":"country","type":"geo.Country"}]}`
	order := `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"ship_to","type":"geo.Address"}]}`
	f.schemas[1] = Schema{Type: "AVRO", Text: order, Refs: []SchemaRef{{Name: "geo.Country", Text: country}, {Name: "geo.Address", Text: address}}}
	// Protobuf: the message imports a file that imports another.
	f.schemas[2] = Schema{Type: "PROTOBUF",
		Text: `syntax = "proto3"; package shop; import "geo/address.proto"; message Order { int64 id = 1; geo.Address ship_to = 2; }`,
		Refs: []SchemaRef{
			{Name: "geo/country.proto", Text: `syntax = "proto3"; package geo; message Country { string code = 1; }`},
			{Name: "geo/address.proto", Text: `syntax = "proto3"; package geo; import "geo/country.proto"; message Address { string city = 1; Country country = 2; }`},
		}}
	// JSON: the payload is JSON whatever the $refs say.
	f.schemas[3] = Schema{Type: "JSON",
		Text: `{"type":"object","properties":{"ship_to":{"$ref":"address.json"}}}`,
		Refs: []SchemaRef{{Name: "address.json", Text: `{"type":"object","properties":{"city":{"type":"string"}}}`}}}

	cache := &avro.SchemaCache{}
	for _, s := range []string{country, address} {
		if _, err := avro.ParseWithCache(s, "", cache); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := avro.ParseWithCache(order, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	av, err := avro.Marshal(sch, map[string]any{"id": int64(7),
		"ship_to": map[string]any{"city": "Lyon", "country": map[string]any{"code": "FR"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Protobuf: message index 0 (Order), id=7, ship_to={city="Lyon",
	// country={code="FR"}}.
	pb := []byte{0x00, 0x08, 0x07, 0x12, 0x0c, 0x0a, 0x04, 'L', 'y', 'o', 'n', 0x12, 0x04, 0x0a, 0x02, 'F', 'R'}
	tp := f.addTopic("refs", 1)
	tp.append(0,
		rec{value: framed(1, av...)},
		rec{value: framed(2, pb...)},
		rec{value: framed(3, []byte(`{"ship_to": {"city": "Lyon"}}`)...)},
	)
	_, srv := newTestAPI(t, f, nil)
	_, b := do(t, srv, "GET", "/api/topics/refs/messages?partition=0&offset=0", "")
	m := decodeJSON[messagesJSON](t, b)
	if len(m.Messages) != 3 {
		t.Fatalf("%s", b)
	}
	want := []Value{
		{Encoding: "avro", Text: `{"id":7,"ship_to":{"city":"Lyon","country":{"code":"FR"}}}`},
		{Encoding: "protobuf", Text: `{"id":"7","shipTo":{"city":"Lyon","country":{"code":"FR"}}}`},
		{Encoding: "json", Text: `{"ship_to":{"city":"Lyon"}}`},
	}
	for i, w := range want {
		got := m.Messages[i].Value
		if got.Encoding != w.Encoding || got.Text != w.Text || got.SchemaID == nil || *got.SchemaID != int32(i+1) {
			t.Errorf("record %d: %+v, want %+v with schema id %d", i, got, w, i+1)
		}
	}
}
