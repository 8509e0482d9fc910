// Package kmeta is the Kafka gateway's kafka.Cluster over the controller:
// the gateway's view of topics, configs and live gateways, kept as an
// immutable kafka.Metadata snapshot that is swapped whole when the
// controller's metadata moves, and the writes (topics, partitions,
// configs, reassignments) that go to the controller.
//
// It also owns the Router, the ring.Backend a gateway serves from in a
// cluster: one ring client per live store, each partition sent to the
// store that leads it in the same snapshot (router.go says how fetches
// over several stores are merged).
//
// # Imports
//
// kmeta imports the Kafka gateway (for the contract it implements), the
// controller's client API and the shard ring client (to route to the
// stores, and to create and await partitions on them). It must not import
// logstore or catalog, nor any other gateway, nor tools; tools/ wires it
// (its PartitionConfig comes from there). Its tests run clustertest over a real in-memory
// controller and store.
package kmeta
