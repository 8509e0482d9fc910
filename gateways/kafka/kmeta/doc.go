// Package kmeta is the Kafka gateway's kafka.Cluster over the controller:
// the gateway's view of topics, configs and live gateways, kept as an
// immutable kafka.Metadata snapshot that is swapped whole when the
// controller's metadata moves, and the writes (topics, partitions,
// configs) that go to the controller.
//
// # Imports
//
// kmeta imports the Kafka gateway (for the contract it implements), the
// controller's client API and the shard ring client (to create and await
// partitions on the store). It must not import logstore or catalog, nor
// any other gateway, nor tools; tools/ wires it (its PartitionConfig
// comes from there). Its tests run clustertest over a real in-memory
// controller and store.
package kmeta
