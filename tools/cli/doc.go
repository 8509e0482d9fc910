// Package cli holds the aerostream command tree: the daemon subcommands
// (serve, store, controller), version, topic (admin through the
// controller), and bench (the load generator, whose engine is
// tools/bench). It is where packages are wired together: it
// opens the catalog, hands it to logstore, puts the shard ring in front of
// the store and runs listeners, in the order that lets a bad start fail fast
// (config, then listeners, then the data directory, then heavy state). It
// also runs serve's single-voter controller and adapts logstore to the
// controller's PartitionManager (controller.go), so that placement creates
// and deletes partitions in the store. On a tiering node it tunes the
// garbage collector so that the fetch cache's memory does not multiply the
// heap's growth target (gctune.go).
//
// Only tools/ may import other aerostream packages for wiring, and nothing
// outside tools/ may import cli.
package cli
