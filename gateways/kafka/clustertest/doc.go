// Package clustertest is the conformance suite of kafka.Cluster: every
// implementation (kmeta over the controller, the gateway tests' in-memory
// fake) runs Run, so that the gateway can rely on the same behaviour from
// each, in the manner of objstore's AcceptanceTest.
//
// # Imports
//
// clustertest imports the Kafka gateway and the standard library's testing
// only; it is imported by tests alone.
package clustertest
