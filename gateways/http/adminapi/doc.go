// Package adminapi is AeroStream's REST admin API, mounted under /api on
// the node's HTTP listener, and its readiness probe, /healthz. The web
// console is built on these routes alone, and docs/openapi.yaml documents
// them (a test checks the two against each other both ways).
//
// It owns the HTTP side only: routing, parameter checks, the JSON answers
// and errors ({"error": code, "message": text}), ACL checks through an
// Authorizer, the decoding of records for the message inspector (RecordBatch
// v2, Confluent's schema-id framing, Avro, Protobuf and JSON through the
// schema registry's schemas) and the throughput samples taken from the
// node's Prometheus registry.
//
// Imports: like every gateway, it reaches no storage, controller or
// gateway package. The data comes through the narrow interfaces of api.go
// (ClusterSource, TopicSource, LogSource, GroupSource, SchemaSource,
// IcebergSource), which tools/cli implements over the controller, the
// shard-ring backend, the tier catalog, the Kafka gateway's group
// coordinator and the schema registry. Nothing but tools/ imports it.
package adminapi
