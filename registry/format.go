package registry

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aerostream/aerostream/controller"
)

// refSchema is a schema that another imports, under the name the
// reference gives it (an Avro type name, a .proto import path, a JSON
// Schema $ref URL).
type refSchema struct {
	name   string
	schema *controller.StoredSchema
}

// parsedSchema is one parsed schema of any type.
type parsedSchema interface {
	// fingerprint is the schema's identity: its text with differences that
	// mean nothing removed (whitespace).
	fingerprint() string
	// normalized is the text stored with normalize=true.
	normalized() string
	// readErrors lists why a reader with this schema cannot read what a
	// writer with the other wrote; none when it can. The other is of the
	// same type.
	readErrors(writer parsedSchema) []string
}

// parseSchema parses text of type typ with its references, dependencies
// first. Its error is the parser's message, for a 42201 answer.
func parseSchema(typ, text string, refs []refSchema) (parsedSchema, error) {
	switch typ {
	case controller.SchemaAvro:
		return parseAvro(text, refs)
	case controller.SchemaProtobuf:
		return parseProtobuf(text, refs)
	case controller.SchemaJSON:
		return parseJSONSchema(text, refs)
	}
	return nil, fmt.Errorf("%w: unknown schema type %q; want AVRO, PROTOBUF or JSON", ErrInvalidSchema, typ)
}

// compactJSON removes insignificant whitespace from a JSON text, keeping
// key order (which is significant to Avro's field order).
func compactJSON(text string) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return "", err
	}
	return b.String(), nil
}
