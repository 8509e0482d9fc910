// Package valuecodec turns a topic's registry-typed values into Iceberg
// columns: it maps a schema registry schema (Avro, Protobuf or JSON
// Schema) to Iceberg value columns, decodes a value in Confluent's wire
// format into a row, appends rows to the Arrow builders of the table's
// schema, and evolves that schema as the registry's versions change.
//
// It owns:
//
//   - the framing (frame.go): magic byte 0, a big-endian 4-byte schema
//     id, and for Protobuf the message-index list;
//   - the mapping of each schema type to Iceberg types and the decoder of
//     its values (avro.go, protobuf.go, jsonschema.go), behind one Codec;
//   - the two-pass append to Arrow builders (arrow.go): a row is
//     converted to the table's column types first and appended only when
//     all of it fits, so a record that does not fit goes to the DLQ table
//     and leaves the batch intact;
//   - the direct path of flat Avro records (avro_direct.go): read with
//     the same hamba calls straight into the builders, the rows of the
//     generic path without a map and boxes per value;
//   - schema evolution (evolve.go): iceberg-go's union by name, so
//     columns keep their field ids across versions, new ones are added,
//     types only widen, and removed fields stay as columns that new rows
//     leave null.
//
// Every value column is optional, whatever the schema says, because a
// later version may remove a field that an earlier one required, and
// the table must still take the new rows.
//
// Decoders face untrusted bytes: they return errors wrapping ErrFrame or
// ErrDecode, bound what a length prefix can make them allocate and how
// deep they recurse, and never panic (fuzz_test.go).
//
// # Imports
//
// valuecodec imports no other AeroStream package: schemas come in as
// plain Schema values (with their references resolved), which tools/
// fetches from the registry, so neither iceberg nor this package
// imports registry or a gateway.
package valuecodec
