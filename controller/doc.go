// Package controller is AeroStream's control plane: a hashicorp/raft
// cluster of controller voters whose replicated state machine (FSM) owns
// the cluster's metadata:
//
//   - the cluster id;
//   - topics: name, topic id (a Kafka UUID), replication factor, partition
//     count and the configs set on them, under Kafka's names (the
//     topicconfig registry lists the ones known, with defaults and ranges);
//   - placement: the store node that leads each partition, and its leader
//     epoch;
//   - registered stores and gateways: id, kind, addresses, the store's shard
//     ring (shard count, ring address, and a ring version the controller
//     bumps when either changes), liveness and last heartbeat;
//   - the dynamic cluster-default (broker-level) configs.
//
// Every change goes through Raft as a command (command.go: a version byte,
// an op byte, a JSON payload) and bumps the metadata version. Apply
// validates every value itself, so a bad or undecodable entry yields an
// error, the same on every replica, never a panic (FuzzDecodeCommand).
//
// # Placement
//
// A new partition goes to the least-loaded live store (ties to the lowest
// id). With no live store it waits unplaced (leader -1) and is placed when
// one registers. With one copy of each partition (replication factor 1 is
// all that exists; anything else is refused with INVALID_REPLICATION_FACTOR)
// a partition stays with its store while that store is down, as in Kafka:
// moving it would serve an empty log. StoreAgent, run by each store, creates
// the partitions placed on it and deletes those of deleted topics.
//
// # Membership and heartbeats
//
// Stores and gateways register (RegisterNode), then heartbeat every
// HeartbeatInterval (2 s). A registration whose node id another node holds
// (one of another kind, or a live one at other addresses) is refused with
// ErrNodeIDInUse, naming the holder. A reply carries the changes since the version
// the node last saw (topics created or changed, with their configs and
// placement; topics deleted; nodes whose ring or liveness changed; the
// cluster defaults), from a change log of the last 4096 changes; a node
// further behind, or new, gets the full state. A heartbeat is a long poll
// (HeartbeatRequest.WaitMs, up to the interval): the leader answers as soon
// as the metadata moves, so a change reaches every member within a round
// trip, and the member heartbeats again at once. Each heartbeat also says
// which version the node has acted on; CreateTopics, CreatePartitions and
// DeleteTopics with WaitMs answer once the stores concerned have. Heartbeat
// times live in the leader's memory; the leader proposes "down" for a node
// silent for SessionTimeout (10 s) and "up" when it speaks again. A new
// leader gives every node a fresh session.
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
// Writes and heartbeats are served by the leader; a follower answers HTTP
// 421 with the NOT_LEADER code and the leader's id and address, and Client
// retries there. CreateTopics carries a request id that the FSM records
// with each topic, so Client can retry a create whose answer was lost and
// recognise the topics it created. Reads are answered from the local state, unless the query
// has leader=1 (Client always sets it).
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
