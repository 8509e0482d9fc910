// Package registry is AeroStream's schema registry: Confluent's Schema
// Registry REST API (media type application/vnd.schemaregistry.v1+json),
// served on listeners.schema_registry and mounted on the HTTP admin
// listener under /schema-registry, so that Confluent's serializers,
// franz-go's sr client and curl work against it unchanged.
//
// It owns:
//
//   - the REST API (http.go): subjects and versions, lookups, schemas by
//     id, deletes (soft, and permanent=true after a soft one), the
//     compatibility level (/config) and mode (/mode) globally and per
//     subject, the compatibility check endpoint, references between
//     schemas, and errors as {error_code, message} with Confluent's codes;
//   - parsing and compatibility of the three schema types: Avro with
//     github.com/hamba/avro/v2 and its checker (avro.go); Protobuf parsed
//     with github.com/bufbuild/protocompile and checked with our rules,
//     Confluent's documented ones (protobuf.go); JSON Schema validated with
//     github.com/santhosh-tekuri/jsonschema/v6 and checked with our rules
//     (jsonschema.go);
//   - the checks on what a client sends: the schema's size (bounded by
//     Options.MaxSchemaBytes), its parse, its references (which must exist,
//     and must not form a cycle).
//
// # Storage: the controller's Raft state
//
// Subjects, versions, schemas and ids live in the controller's replicated
// state machine (controller/schemas.go), not in a compacted topic. The
// controller's Raft log is already durable and replicated to every
// controller voter, already the one place cluster metadata changes, and
// already reachable from every process (in process in serve, over the
// controller client from a gateway), so the registry needs no leader
// election, no topic-reading bootstrap and no second consistency story. A
// registry is small (thousands of schemas, not millions), well within what
// the controller snapshots.
//
// Ids are global, stable and never reused: the state machine allocates
// them from a counter that only grows, in log order, so every replica
// hands out the same ids, and a permanently deleted schema's id stays
// spent. Registering a schema that is already stored, under any subject,
// gives back its id. A register carries the latest version the
// compatibility check was made against, and the state machine refuses it
// if another version came first; the registry then checks again, so two
// concurrent registrations cannot both skip the check.
//
// # Imports
//
// registry imports controller (the state) and nothing else of AeroStream's.
// Only tools/ imports it: it wires the API to the listeners, and hands the
// Kafka gateway an IDCache as the gateway's own SchemaIDs interface, so no
// gateway imports the registry.
package registry
