// Package replica is a store's replica manager: it makes the store's local
// partitions play the roles the controller's metadata gives them.
//
// It owns, for one store:
//
//   - roles: for each partition whose replicas include the store, the
//     leader or follower state (epoch, leader, ISR, min.insync.replicas)
//     handed to the log with Store.SetReplicaState when the view changes;
//   - followers: one fetcher goroutine per leader store, which truncates a
//     newly followed partition by leader epoch and then long-polls the
//     leader's ring for every partition it follows there, appending what
//     it gets with Store.AppendReplica;
//   - the ISR of the partitions the store leads: a caught-up follower is
//     added (locally first, the maximal ISR of KIP-497, then through the
//     controller's AlterPartition), a lagging one is proposed out and
//     dropped locally only once the controller has committed it;
//   - the leadership lease: every heartbeat the controller answers extends
//     Store.SetLease, so a store the controller has fenced stops serving as
//     leader before a successor is elected.
//
// The controller alone decides leadership and the ISR; this package only
// proposes ISR changes and follows what the metadata says.
//
// Imports: logstore, logstore/ring (to reach leaders), controller (its
// view and AlterPartition), topicconfig and internal/. It must not import a
// gateway, tierd, fetchcache, catalog or tools; only tools/ wires it.
package replica
