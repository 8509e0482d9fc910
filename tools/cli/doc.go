// Package cli holds the aerostream command tree: the daemon subcommands
// (serve, store, controller, gateway kafka), version, topic (admin through
// the controller), tier (through a store's HTTP tier API), and bench (the
// load generator, whose engine is tools/bench). It holds commands and
// wiring, not servers: the HTTP server is gateways/http, the Kafka one
// gateways/kafka.
//
// A daemon runs in four steps (daemon.go): bind the listeners and lock the
// data directory, so that a bad start fails fast; open the state (catalog,
// cold tier, logstore, controller), giving way to a signal; start the
// parts that serve under a supervisor (supervise.go), which stops the
// daemon with an error when one dies; and wait. The adapters that let one
// package drive another live here too: logstore as the controller's
// PartitionManager (controller.go), the store, catalog and tierd as the
// HTTP tier API's TierOps (tierops.go). On a tiering node it tunes the
// garbage collector so that the fetch cache's memory does not multiply the
// heap's growth target (gctune.go).
//
// Only tools/ may import other aerostream packages for wiring, and nothing
// outside tools/ may import cli.
package cli
