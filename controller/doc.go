// Package controller is AeroStream's control plane: a hashicorp/raft
// cluster of controller voters whose replicated state machine (FSM) owns
// the cluster's metadata:
//
//   - the cluster id;
//   - topics: name, topic id (a Kafka UUID), replication factor, partition
//     count and the configs set on them, under Kafka's names (the
//     topicconfig registry lists the ones known, with defaults and ranges);
//   - placement: each partition's replicas (store nodes, the preferred
//     leader first), its leader and leader epoch, its in-sync replica set
//     (ISR) and partition epoch, and the target of a reassignment in
//     progress;
//   - registered stores and gateways: id, kind, addresses, the store's shard
//     ring (shard count, ring address, and a ring version the controller
//     bumps when either changes), liveness, last heartbeat and whether it
//     is draining;
//   - the dynamic cluster-default (broker-level) configs;
//   - users (SCRAM credentials: salt, iterations and derived keys, never a
//     password) and Kafka ACLs (security.go), under a security version of
//     their own that gateways follow to refresh their authorizers.
//
// Every change goes through Raft as a command (command.go: a version byte,
// an op byte, a JSON payload) and bumps the metadata version. Apply
// validates every value itself, so a bad or undecodable entry yields an
// error, the same on every replica, never a panic (FuzzDecodeCommand).
//
// # Placement
//
// A topic has a replication factor of 1 to MaxReplicationFactor (3). Each
// new partition gets that many distinct stores among the live ones that
// are not draining: those holding the fewest replicas (ties to the lowest
// id), and of these the one leading the fewest partitions is the leader,
// listed first in Replicas as the preferred leader, so that leadership
// spreads as well as data. The ISR starts as all the replicas, at leader
// epoch 0 and partition epoch 0. A replication factor above the live
// stores that are not draining is refused (INVALID_REPLICATION_FACTOR,
// naming how many are live), as is min.insync.replicas above the factor
// (INVALID_CONFIG). A store may register a partition budget
// (RegisterNodeRequest.MaxPartitions, from its descriptor and mapping
// limits): placement puts no more replicas on it, and a create whose
// replicas do not fit in the live stores' budgets is refused whole
// (ErrTooManyPartitions, naming each store's count and budget), so no
// topic is left half-created. With no live store, a partition of factor 1
// waits unplaced (no replicas, leader -1) and is placed when one registers.
// Partitions from before replication (no Replicas) read as their leader
// alone. Replica ids are store node ids everywhere in this API: gateways
// hold no data.
//
// Only the controller changes leaders and ISRs, each change a Raft command
// that bumps the partition epoch (and the leader epoch when the leader
// changes):
//
//   - AlterPartition: the leader store proposes a new ISR (KIP-497). It is
//     refused as stale (ErrStaleRequest) unless it names the current
//     leader, leader epoch and partition epoch and the leader is live; the
//     ISR must hold the leader and only replicas, and a store it adds must
//     be live (ErrIneligibleReplica).
//   - Session expiry (fencing): a store marked down leaves every ISR it is
//     in, unless it is the last member (KRaft keeps it, so the partition
//     waits for it), and each partition it led elects the first replica,
//     in Replicas order, that is in the ISR and live. With none, and
//     unclean.leader.election.enable (topic config, else cluster default)
//     true, the first live replica leads with an ISR of itself; otherwise
//     the leader is NoLeader until an ISR member returns. A live store
//     registering again (a restart within its session) is fenced the same
//     way first, so it comes back as a follower. A store that returns
//     leads the leaderless partitions whose ISR holds it. Stores keep a
//     leadership lease from their heartbeats (MemberOptions.OnHeartbeat),
//     ending before the controller can fence them, so a fenced leader has
//     stopped serving by the time another is elected.
//   - Preferred leader: every LeaderRebalanceInterval (5 s; Kafka's
//     auto.leader.rebalance.enable) the leader hands leadership back to
//     each partition's first replica when it is live, in the ISR, not
//     draining and not leading.
//   - Reassignment (AlterPartitionReassignments): a target of 1 to 3
//     distinct registered stores that are not draining. Replicas become
//     the original ones followed by the new ones until every target
//     replica is in the ISR (checked when an AlterPartition commits, or at
//     once when the target only drops or reorders); then Replicas become
//     the target, the ISR keeps only target members, and a leader outside
//     the target hands over to the first in-sync target replica. A nil
//     target cancels, back to the original replicas.
//     ListPartitionReassignments reports replicas, adding and removing as
//     Kafka does.
//   - Drain (DrainStore): the store is marked draining (placement skips
//     it) and every partition holding it gets a target with it replaced by
//     the live, non-draining store holding the fewest replicas that is not
//     a replica yet; when one partition has no such store, the drain is
//     refused and nothing changes. Leadership leaves the store as each
//     move completes. Calling DrainStore again reports the replicas and
//     leaderships it still has; at 0 and 0 the store holds nothing and can
//     be removed (it stays registered until then).
//   - Controlled shutdown (DrainStore with LeadershipOnly): the store is
//     marked shutting down, is not elected leader while it is, and every
//     partition it leads moves to the first other in-sync, live replica
//     (one whose only in-sync replica it is keeps it). It also leaves the
//     ISR of every partition it no longer leads, as in Kafka, so that
//     acks=all writes stop waiting for it at once rather than when its
//     session expires, and AlterPartition refuses to add it back
//     (ErrIneligibleReplica) while it shuts down. Replicas stay, so a
//     restart copies nothing; the store registering again clears the mark,
//     its leaders add it back to the ISRs once it has caught up, and the
//     preferred leader election gives leadership back.
//
// StoreAgent, run by each store, creates the partitions it is a replica
// of, deletes those of deleted topics and those a completed move took
// away from it, and hands each view to the store's replica manager
// (StoreAgentOptions.OnView), which follows leaders and proposes ISR
// changes.
//
// # Membership and heartbeats
//
// Stores and gateways register (RegisterNode), then heartbeat every
// HeartbeatInterval (500 ms). A registration whose node id another node holds
// (one of another kind, or a live one at other addresses) is refused with
// ErrNodeIDInUse, naming the holder. A reply carries the changes since the version
// the node last saw (topics created or changed, with their configs and
// placement; topics deleted; nodes whose ring or liveness changed; the
// cluster defaults), from a change log of the last 4096 changes; a node
// further behind, or new, gets the full state. A heartbeat is a long poll
// (HeartbeatRequest.WaitMs, up to the interval): the leader answers as soon
// as the metadata moves, so a change reaches every member within a round
// trip, and the member heartbeats again at once. The leader renews the
// session when the poll arrives and again when it answers, and says how
// long it held it (HeldMs), so that a store's lease counts from the later
// renewal. While a member applies changes (a store creating partitions)
// it goes on heartbeating without a long poll, so a slow apply does not
// get it fenced; those heartbeats renew no lease. Each heartbeat also says
// which version the node has acted on; CreateTopics, CreatePartitions and
// DeleteTopics with WaitMs answer once the stores holding the replicas
// concerned have. Heartbeat times live in the leader's memory; the leader
// checks them every tenth of a session (at most 250 ms) and proposes
// "down" for a node silent for SessionTimeout (2 s, against Kafka's 9 s,
// so that a dead leader store is replaced within about 3 s) and "up" when
// it speaks again. A new leader gives every node a fresh session.
//
// A store's heartbeat also carries its storage stats (StoreStats: local
// bytes, cold bytes, partitions held), which only the store can count.
// They are not replicated through Raft, as they change all the time and
// matter only to operators: the leader keeps each store's last report in
// memory and ListNodes shows it (NodeInfo.Stats); a follower's ListNodes
// asks the leader for them (one client API call), and lists the nodes
// without them when it cannot. A new leader starts with none, and has
// them again at each store's next heartbeat.
//
// # Port, protocol and joining
//
// One TCP port (--controller-listen, default :8001) carries both Raft and
// the client API: a connection whose first byte is 0xAF is a Raft stream
// (raft.NetworkTransport over a StreamLayer that writes that byte when it
// dials); any other connection is the client API, HTTP/1.1 with JSON bodies
// (api.go has the types, server.go the paths under /v1/). So the Raft
// address of a voter is also where clients reach it, and curl works:
//
//	curl -s localhost:8001/v1/cluster
//	curl -s localhost:8001/v1/metadata
//	curl -s -d '{"topics":[{"name":"t","partitions":3,"replication_factor":1}]}' localhost:8001/v1/topics/create
//
// With Options.TLS the port serves mutual TLS for both (transport.go):
// voters dial each other with Options.PeerTLS, clients with
// ClientOptions.TLS, each presenting a certificate of the cluster CA, and
// a connection without one is refused at the handshake, so the client API
// then answers only the cluster's nodes and operators holding such a
// certificate. A plaintext HTTP client is answered 400 saying so.
//
// With Options.ClusterSecret the port requires the cluster credential
// (clusterauth.go) of every client API request and Raft stream, over
// plaintext or TLS alike: an HMAC-SHA256 under the shared secret of the
// request (or of the stream's opening), with a timestamp and a nonce
// accepted once, so the secret never crosses the wire and a captured
// request cannot be replayed. Clients carry it as
// ClientOptions.ClusterSecret; a request without it, or with another
// secret's, is answered 401 with ErrUnauthenticated naming why, and a
// Raft stream is closed unread. The proof runs back too: a controller
// with the secret proves it in every answer (ClusterProofHeader) and to
// every Raft dialer, and a client or voter holding the secret refuses a
// controller that does not (ErrUnauthenticated, naming it), so a
// controller started without the secret, which takes anyone's calls, is
// not used by the secured nodes in front of it. The package leaves the
// secret optional;
// the processes (tools/cli) make it mandatory once security is on,
// loopback included, since whoever else shares the host or its network
// namespace reaches a loopback port too: serve makes one in its data_dir
// when none is configured, and a separate controller, store or gateway
// refuses to start without auth.controller_secret_file.
//
// Writes and heartbeats are served by the leader; a follower answers HTTP
// 421 with the NOT_LEADER code and the leader's id and address, and Client
// retries there. CreateTopics carries a request id that the FSM records
// with each topic, so Client can retry a create whose answer was lost and
// recognise the topics it created. Reads are answered from the local state, unless the query
// has leader=1 (Client always sets it).
//
// Controller.Wait reports the death of a loop serving the port (its accept
// loop or the client API server), so that the process running the voter
// stops instead of running half-alive.
//
// A new cluster starts from one node with Bootstrap set; the others start
// with Join set to any existing controller and ask it to add them as
// voters. Both only act when the node has no Raft state yet; with neither,
// a node without state refuses to start. AddVoter and RemoveVoter change
// membership later. A new controller must answer at its address as the id
// it is added under; it joins as a non-voter and is promoted once it has
// caught up, so that adding one never costs the cluster its quorum. A
// single voter elects itself as soon as it starts. Raft state lives in <dir>/log (pebble, through
// catalog.OpenRaftStore) and <dir>/snapshots.
//
// # Errors
//
// Sentinels in errors.go, each with a wire name of its own for Client.
// Kafka's codes for them live in the Kafka gateway's error table, not here.
//
// # Imports
//
// controller imports catalog (for the Raft log store) and topicconfig
// (the topic configs it validates and describes), and no other aerostream
// package: not logstore (a store is reached through the
// PartitionManager interface that tools/ implements), not tierd, not any
// gateway and not tools. Gateways and tools import controller.
package controller
