// Package native is AeroStream's native protocol gateway (PROTOCOL.md in
// this folder is the spec, kept exact): the second front door, on :9091,
// beside the Kafka one. It serves the same topics, ids and log as the
// Kafka gateway: produce carries RecordBatch v2 exactly as the store keeps
// it, and fetch returns the segment files' bytes with sendfile(2).
//
// # What it owns
//
//   - The protocol's server side, one Session per connection on the
//     shared plumbing (gateways.Server): the handshake, topic lookups by
//     name (the hot path then carries 16-byte topic ids, the same ids
//     Kafka clients see), produce and ProduceMany (produce.go: pipelined,
//     a connection's produces served concurrently, each partition's
//     appends in arrival order), fetch with long poll and an optional
//     commit, list offsets by time, and topic admin through Cluster.
//   - Native consumer groups (groups.go): membership and partition
//     assignment in this gateway's memory; committed offsets through
//     Offsets, which tools/ wires to the Kafka gateways' coordinators, so
//     they live in __consumer_offsets in Kafka's format and a group
//     continues across protocols. DescribeGroup, ListGroups and GroupLag
//     are answered here (groupops.go).
//   - InitProducerID: idempotent producer ids through ProducerIDs, which
//     tools/ wires to the Kafka gateways' InitProducerId, the cluster's
//     one allocator.
//   - Subscribe (subscribe.go): a server-push stream per subscription, one
//     goroutine each, pushing through gateways.Conn.Push within a credit
//     window the client gives back.
//   - Authorization (authz.go): every operation decided by the ACLs of
//     AuthOptions.Authorizer, with Kafka's rules and codes, decisions on
//     a topic id kept per connection until the ACLs change, and each
//     refusal in the audit log.
//   - Its error mapping (errors.go): Kafka's codes, one table.
//
// The codec lives in wire/, shared with the Go SDK in client/, which
// imports no server code.
//
// # Not built yet
//
// Group membership shared with Kafka clients: native members and Kafka
// members of a group of the same name do not coordinate (offsets are
// shared, membership is not).
//
// # Imports
//
// native imports the shared plumbing (gateways, and gateways/internal/kcode
// for the Kafka codes of store and controller errors), the ring client
// (logstore/ring) and franz-go's kerr (the codes). It must not import logstore internals,
// catalog, another gateway, or tools; metadata comes through Cluster, which
// tools/ implements over the Kafka gateway's metadata (kmeta).
package native
