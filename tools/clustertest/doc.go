// Package clustertest holds the cluster acceptance tests: real aerostream
// processes on loopback (one `aerostream controller`, three `aerostream
// store`, two `aerostream gateway kafka`), driven by real Kafka clients
// (franz-go) while stores are killed with SIGKILL or paused with SIGSTOP.
//
//   - TestClusterJepsen: idempotent acks=all producers write unique values
//     through both gateways while a seeded nemesis injects at least 20
//     faults, a partition's leader among the targets; afterwards every
//     partition is read back from its start to its high watermark through
//     both gateways and the checker (checker.go) finds every acknowledged
//     write exactly once, at its acknowledged offset, in order, with no
//     gap. It also reports the failover time after each kill -9 of a
//     leader (p50 and max; reported, never asserted).
//   - TestClusterDrain: `aerostream store drain` while producers and a
//     consumer run; the drained store ends up holding nothing and is
//     stopped with no acknowledged write lost.
//   - TestClusterFencedLeaderServesNoStaleRead: a partition's leader is
//     paused with SIGSTOP, its successor takes writes, and reads queued at
//     the paused store's ring are served when it resumes: none may show
//     its old, shorter log as current (its leadership lease fences it
//     until the controller's view deposes it), and it rejoins the ISR.
//   - TestClusterAdminAPIOnAStore: a store's REST admin API shows every
//     store's disk bytes (reported with their heartbeats) and serves the
//     groups routes through the Kafka gateways.
//   - TestClusterAdminAPIMessagesOnAStore: a store's message inspector
//     reads a partition another store holds, through the Kafka gateways.
//   - TestClusterIcebergRESTCatalog: an Iceberg topic whose stores commit
//     through an external Iceberg REST catalog (Apache Iceberg's own Java
//     server, from Maven); the committing store is killed with SIGKILL
//     mid-translation, pyiceberg reads exactly the log's records through
//     that catalog, and the table's snapshots show one committer per
//     leader epoch of partition 0. It also needs ICEBERG_PYTHON and
//     ICEBERG_REST_LIB (`make test-cluster-iceberg`), else it skips.
//   - TestClusterFranzGo: franz-go's kgo integration suite with
//     KGO_TEST_RF=3 against the cluster, compared with its run against a
//     single `aerostream serve`.
//
// The process tests spawn many processes and take minutes, so they run
// only with CLUSTER_TESTS=1 (`make test-cluster` sets it); without it they
// skip and say so. The checker's own tests, on synthetic histories, always
// run. AEROSTREAM_BIN names a prebuilt binary to use instead of building
// one. A failed test keeps its processes' logs and prints where.
//
// Nothing imports this package, and it imports no gateway: it reaches the
// cluster as a user would, through the binary, the Kafka protocol and the
// controller's HTTP API, except that the fenced-leader test dials one
// store's ring (logstore/ring) to read from that store and no other.
package clustertest
