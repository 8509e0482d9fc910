package registry

import (
	"fmt"

	"github.com/hamba/avro/v2"
)

// Avro schemas parse with hamba/avro; compatibility is its checker's
// (the Avro specification's schema resolution: promotions, defaults,
// aliases, unions, enum symbols).

type avroSchema struct {
	schema  avro.Schema
	compact string
}

func parseAvro(text string, refs []refSchema) (parsedSchema, error) {
	compact, err := compactJSON(text)
	if err != nil {
		return nil, fmt.Errorf("%w: Invalid schema: %v", ErrInvalidSchema, err)
	}
	// A cache per parse: hamba's default cache is global, and named types
	// of unrelated subjects would see each other in it.
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r.schema.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidSchema, r.name, err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("%w: Invalid schema: %v", ErrInvalidSchema, err)
	}
	return &avroSchema{schema: s, compact: compact}, nil
}

func (a *avroSchema) fingerprint() string { return a.compact }
func (a *avroSchema) normalized() string  { return a.compact }

func (a *avroSchema) readErrors(writer parsedSchema) []string {
	w, ok := writer.(*avroSchema)
	if !ok {
		return []string{"not an Avro schema"}
	}
	if err := avro.NewSchemaCompatibility().Compatible(a.schema, w.schema); err != nil {
		return []string{err.Error()}
	}
	return nil
}
