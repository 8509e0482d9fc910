// Package ring is the shard ring: the seam between the gateways and the
// storage engine.
//
// It owns three things:
//
//   - the Backend interface, the only view of the store that gateways get.
//     Backend mirrors logstore.Store's request methods, and this package
//     re-exports the logstore request/result types and sentinel errors as
//     aliases so a gateway imports ring and never logstore;
//   - the in-process transport (NewInProcess), used by `aerostream serve`,
//     which hands the store's zero-copy file ranges straight through;
//   - the network transport: Server, run by a storage node on its ring
//     listener (TCP or a Unix socket), and the client returned by Dial, which
//     keeps one connection per shard and routes each partition to the
//     connection of logstore.ShardFor(topic, partition, shards). With
//     Server.TLS and DialOptions.TLS every connection is mutual TLS, so
//     only holders of a certificate of the cluster CA reach the shards
//     (tls.go).
//
// The wire format reuses the native protocol's 7-byte frame header layout
// (magic 0xAE, version, opcode, big-endian uint32 payload length) with
// internal opcodes from 0x80 up and its own version byte (frame.go), which
// peers of different ring releases refuse at the first frame; frame.go
// documents the opcode table and message.go the payload layouts.
//
// Replication rides the same wire: a follower store fetches from its
// leader with Fetch (FetchPartition.FollowerID and LeaderEpoch set) and
// truncates by OffsetForLeaderEpoch before it follows. Fetch responses carry record bytes inline;
// the server writes hot segment ranges to the socket with sendfile(2).
//
// The conformance suite every Backend must pass lives in ring/ringtest.
//
// Imports: ring may import logstore (and, through it, nothing else of ours).
// It must not import any gateway, the controller, tierd, fetchcache or
// tools: the dependency arrow points from the gateways to the ring, and the
// ring knows nothing of Kafka or the native protocol beyond the frame header.
package ring
