// Package kafka is the Kafka wire-protocol gateway: it lets unmodified Kafka
// clients produce, consume, manage topics and run consumer groups against
// AeroStream.
//
// # What it owns
//
//   - The Kafka protocol, on franz-go's kmsg (messages), kbin (primitives)
//     and kerr (error codes): request framing with a size limit
//     (socket.request.max.bytes), header and body decoding for flexible and
//     non-flexible versions, the ApiVersions negotiation with the KIP-511 v0
//     fallback, and one file per API key (NN_name.go), each opening with
//     what it does and which versions it serves. A request for a key or
//     version not served closes the connection with a log line, as Kafka
//     does (ApiVersions is the exception and answers).
//   - Authentication and authorization (auth.go, authz.go): SASL
//     (SaslHandshake, SaslAuthenticate with PLAIN and SCRAM, KIP-368
//     re-authentication) against the users a Security store holds, and
//     Kafka's ACL checks on every key through an auth.Authorizer, with the
//     ACL and SCRAM admin keys (29-31, 50-51) managing both.
//   - The mapping of errors to Kafka codes, in one table (errors.go).
//   - Fetch sessions (KIP-227) and the zero-copy Fetch response encoder
//     (fetch_encode.go): hot records go from the segment file to the
//     socket with sendfile(2).
//   - The group coordinator for the classic protocol (groups*.go): eager
//     and cooperative rebalancing (the latter is the clients' business; the
//     coordinator runs the rejoin rounds), static membership, session and
//     rebalance timeouts. Committed offsets are durable: they are written
//     (acks all) to the internal topic __consumer_offsets, offsets.topic
//     .num.partitions partitions (8 by default, where Kafka has 50; a group
//     goes to partition abs(javaHashCode(group)) mod P, as in Kafka) in
//     Kafka's own record format, and read back at startup, the latest
//     record per group/topic/partition winning and null values deleting.
//     The store has no compaction yet, so the topic keeps every commit
//     (retention -1) and startup reads it all; a compacting snapshot is
//     future work.
//   - KIP-848 consumer groups (groups_consumer.go, groups_assignors.go):
//     server-side assignment ("uniform", "range"), member epochs,
//     revoke-before-assign reconciliation, on the same group goroutines
//     and __consumer_offsets as classic groups; an empty group moves
//     between the two protocols, and a classic group with members is
//     upgraded online, its members kept as classic members of the
//     consumer group (groups_classic_members.go), which goes back to a
//     classic group when its last consumer-protocol member leaves while
//     classic members remain. Their state is written as snapshot
//     records, so consumer groups survive a restart.
//   - KIP-932 share groups (groups_share.go for membership,
//     share_partitions.go for delivery state, share_dlq.go for the
//     dead-letter topic) and group configs (group_configs.go). The
//     in-flight window of a share partition lives in the memory of the
//     gateway leading it; its start offset is written to
//     __consumer_offsets about once a second, so a restart redelivers
//     from there (at least once). Admin resets of the start offset and
//     members leaving, both served by the group's coordinator, reach the
//     gateway leading the partition through the same partition of
//     __consumer_offsets, which it reads on that round.
//   - The transaction coordinator (txn_coordinator.go and the keys
//     22, 24-26, 28, 65, 66): transactional ids are placed like groups
//     (hashed over the live gateways), their state is written (acks all)
//     to __transaction_state in Kafka's record format and read back at
//     startup, so a transaction prepared before a crash is completed
//     after it; markers go to the stores through the ring, which keep
//     each partition's last stable offset and aborted transactions
//     (logstore/txn.go) for read_committed fetches. Offsets committed in
//     a transaction are applied to their group when it commits: through
//     the group's coordinator when that is the same gateway, otherwise
//     as records appended to __consumer_offsets, which the other gateway
//     reads when it next loads the group (an active group there keeps
//     its older offsets until then).
//   - Producer id allocation for idempotent producers (producer_ids.go).
//     The sequence checks themselves live in the store, per partition.
//   - Its request metrics (metrics.go): the time spent on each request,
//     per API, from the parsed frame to the built response (Collectors).
//
// # Membership is soft state
//
// Group membership (members, generation, assignments) lives only in the
// coordinating gateway's memory and is not written anywhere. After a
// gateway restart its groups are empty: members get UNKNOWN_MEMBER_ID or
// ILLEGAL_GENERATION on their next heartbeat and rejoin, resuming from the
// committed offsets, which are durable. This is what Kafka clients already
// do when a coordinator moves.
//
// # Several gateways
//
// Every gateway can serve every partition: it routes each partition to the
// ring of the store that leads it (kmeta's Router, from the same metadata
// snapshot Metadata answers from), so Kafka's "leader" of a partition says
// nothing about where its data is. Metadata shows the live gateways as the
// brokers and uses partition "leadership" only to spread client
// connections: the leader of (topic, p) is the live gateway with the
// highest rendezvous weight hash(topic, p, gateway id), and its replicas
// and ISR are the first replication-factor gateways in weight order. The
// leader epoch shown is the leader store's, so a client's epoch checks
// (KIP-320) follow real leader changes; a partition no store leads answers
// LEADER_NOT_AVAILABLE with leader -1.
//
// Why rendezvous hashing. Every gateway computes the same answer from the
// same live set, with no coordination and no state; it spreads partitions
// evenly; and when a gateway joins or leaves only the partitions it gains
// or loses move (a modulo hash would reshuffle nearly all of them, and
// every client would reconnect). The replicas list is that same order, so
// the gateway a client falls back to when its leader dies is the one that
// becomes leader.
//
// How others do it. WarpStream's agents are stateless like our gateways:
// its metadata answers with a leader chosen among the agents of the
// client's availability zone (given in the client id), balancing
// connections while keeping traffic in the zone, and any agent serves any
// partition because the data lives in object storage. Kafka's rack-aware
// assignment places real replicas round-robin across racks so a rack's
// loss leaves a copy, and KIP-392 lets a consumer fetch from a replica in
// its own rack. Neither applies as is: our gateways hold no replicas, so
// there is nothing to place by rack, and gateways carry no zone yet. The
// natural extension is WarpStream's: with Broker.Rack set, rank only the
// gateways of the client's rack (Fetch v11 sends it), falling back to all.
// Partition reassignments (AlterPartitionReassignments) are about the
// stores, and name store ids.
//
// Groups are different:
// a group must have exactly one coordinator. FindCoordinator hashes the
// group id over the live gateways the Cluster lists (node id order), every
// gateway computing the same answer, and a gateway answers group requests
// only for the groups hashed to it (NOT_COORDINATOR otherwise, and the
// client looks again). A gateway that starts coordinating a group re-reads
// the group's __consumer_offsets partition from where it last read, so it
// sees commits another gateway made while that one coordinated the group.
// Limits, honestly: while gateways disagree about the live set (for up to
// a heartbeat interval after a gateway joins or dies), two of them may both
// accept a group's requests; the group then rebalances when they agree
// again, and a commit made on the losing side can be overwritten by an
// older value on re-read. Nothing fences a stale coordinator yet; a
// coordinator epoch recorded through the controller would.
//
// # Imports
//
// kafka imports the shared plumbing (gateways), the shard ring client
// (logstore/ring), the controller (for its sentinels only, which errorTable
// maps to Kafka codes) and franz-go's protocol packages. It must not import
// logstore or catalog (storage is reached only through ring.Backend), any
// other gateway, or tools; metadata comes through the Cluster interface,
// which kmeta implements over the controller client, as an immutable
// snapshot (Metadata) that produce and fetch read without a lock.
package kafka
