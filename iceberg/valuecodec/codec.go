package valuecodec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/hamba/avro/v2"
)

// Schema types as the registry stores them.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// MetadataColumn is the struct column AeroStream keeps beside the value's
// columns; a value field of that name would hide it.
const MetadataColumn = "aerostream"

// maxDepth bounds how deeply a schema's types nest: Iceberg columns are a
// finite tree, and a decoder must not recurse without bound on hostile
// bytes.
const maxDepth = 64

var (
	// ErrFrame: the value does not start with Confluent's wire format
	// (magic byte 0, a 4-byte schema id, for Protobuf the message indexes).
	ErrFrame = errors.New("valuecodec: bad Confluent framing")
	// ErrSchema: the registry schema does not parse or cannot be mapped
	// to Iceberg columns (recursive types, unknown type names, clashes).
	ErrSchema = errors.New("valuecodec: schema does not map to Iceberg columns")
	// ErrDecode: the payload does not decode with its schema.
	ErrDecode = errors.New("valuecodec: value does not decode with its schema")
	// ErrColumn: a decoded value does not fit the table's column type.
	ErrColumn = errors.New("valuecodec: value does not fit the table's columns")
	// ErrEvolve: a schema's columns cannot merge into the table's (a
	// column changes type other than by widening, or changes kind).
	ErrEvolve = errors.New("valuecodec: schema does not evolve the table's columns")
	// ErrUnknownSchema: the registry has no such schema id, subject or
	// version (as opposed to a registry that cannot answer now).
	ErrUnknownSchema = errors.New("valuecodec: unknown schema")
)

// Reference is a schema another imports, under the name the reference
// gives it (an Avro type name, a .proto import path, a JSON Schema $ref
// URL). A Schema lists its references dependencies first.
type Reference struct {
	Name   string
	Schema string
}

// Schema is one registry schema with its references resolved.
type Schema struct {
	ID         int32
	Type       string
	Text       string
	References []Reference
}

// Row is one decoded value: its top-level fields by name. Nested records
// are map[string]any, arrays []any, maps map[string]any (or Entries when
// keys are not strings); scalars are Go values the appender converts to
// the table's column types.
type Row map[string]any

// Entries is a map value whose keys are not strings (Protobuf maps with
// integer or bool keys), in wire order.
type Entries [][2]any

// recoverPanics turns a decoder's panic into an error, so a library bug
// costs one record rather than the translator; the fuzz tests turn it
// off to see the panics.
var recoverPanics = true

// Codec decodes the values of one registry schema.
type Codec struct {
	id     int32
	fields []iceberg.NestedField
	decode func(payload []byte) (Row, error)
	// decodeBare, when set, decodes a value without framing.
	decodeBare func(payload []byte) (Row, error)
	// avro is an Avro codec's record schema, for the direct path
	// (avro_direct.go).
	avro *avro.RecordSchema
}

// Compile maps s to Iceberg value columns and prepares its decoder.
func Compile(s Schema) (*Codec, error) {
	var (
		c   *Codec
		err error
	)
	switch s.Type {
	case TypeAvro, "":
		c, err = compileAvro(s)
	case TypeProtobuf:
		c, err = compileProtobuf(s)
	case TypeJSON:
		c, err = compileJSON(s)
	default:
		return nil, fmt.Errorf("%w: schema %d: unknown schema type %q", ErrSchema, s.ID, s.Type)
	}
	if err != nil {
		return nil, err
	}
	c.id = s.ID
	if len(c.fields) == 0 {
		return nil, fmt.Errorf("%w: schema %d has no fields to make columns of", ErrSchema, s.ID)
	}
	seen := map[string]bool{}
	for _, f := range c.fields {
		if strings.EqualFold(f.Name, MetadataColumn) {
			return nil, fmt.Errorf("%w: schema %d: field %q clashes with the %s metadata column", ErrSchema, s.ID, f.Name, MetadataColumn)
		}
		if seen[strings.ToLower(f.Name)] {
			return nil, fmt.Errorf("%w: schema %d: two fields named %q", ErrSchema, s.ID, f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
	}
	sch, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, c.fields...), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	c.fields = sch.Fields()
	return c, nil
}

// ID is the registry id of the codec's schema.
func (c *Codec) ID() int32 { return c.id }

// Fields are the value's columns, all optional so that a field a later
// version removes reads as null. Their ids are fresh (1..n); a table
// gets its own through Evolve or when it is created.
func (c *Codec) Fields() []iceberg.NestedField { return c.fields }

// Decode decodes a payload (the value after its magic byte and schema
// id; for Protobuf it starts with the message indexes) into a row.
// Hostile bytes give an error wrapping ErrFrame or ErrDecode, never a
// panic.
func (c *Codec) Decode(payload []byte) (Row, error) { return c.run(c.decode, payload) }

// DecodeBare decodes a value that carries no framing at all: for
// Protobuf, the bare message of the schema's first message type.
func (c *Codec) DecodeBare(payload []byte) (Row, error) {
	if c.decodeBare != nil {
		return c.run(c.decodeBare, payload)
	}
	return c.run(c.decode, payload)
}

func (c *Codec) run(decode func([]byte) (Row, error), payload []byte) (row Row, err error) {
	defer func() {
		if !recoverPanics {
			return
		}
		if r := recover(); r != nil {
			row, err = nil, fmt.Errorf("%w: schema %d: decoder failed: %v", ErrDecode, c.id, r)
		}
	}()
	return decode(payload)
}

// optional returns a column of type t that may be null.
func optional(name string, t iceberg.Type, doc string) iceberg.NestedField {
	return iceberg.NestedField{Name: name, Type: t, Required: false, Doc: doc}
}

// columnName makes a name usable as an Iceberg column: dots are path
// separators in iceberg-go's lookups.
func columnName(s string) string { return strings.ReplaceAll(s, ".", "_") }
