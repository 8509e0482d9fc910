// Package iceberg materializes topics into Apache Iceberg tables: a topic
// with iceberg.enabled=true is also the table <namespace>.<topic>, written
// by AeroStream alone, exactly once.
//
// # Offsets
//
// Every snapshot AeroStream commits carries, in its summary property
// aerostream.offsets (SummaryOffsets), a JSON object mapping every
// partition of the topic to the next offset to translate. A committer
// reads it from the table's current snapshot at start and after any
// failed commit, and translates from there: the table, not local state,
// says what is in it. A commit is an optimistic swap of the table's
// metadata (the catalog refuses it when the table moved since the
// committer loaded it; iceberg-go's own retry is left at 0 so a conflict
// is never replayed on top of another writer's rows). After any error,
// the committer drops what it had built, reloads the table and starts
// again from its offsets, so a row is never written twice and none is
// skipped. A kill -9 at any point leaves at worst data files that no
// snapshot references (orphans, which maintenance may delete), never rows.
//
// Table maintenance (maintain*.go) copies the offsets forward
// (CarryOffsets) on the snapshots it commits.
//
// # One committer per topic
//
// The store that leads a topic's partition 0 runs its committer; it reads
// every partition through the ring backend it is given (in a cluster, a
// router to each partition's leader store). Other nodes only read the
// table's offsets to guard retention. While leadership moves, a deposed
// store may commit until it learns it lost partition 0, but only until
// the new leader's first commit: every snapshot records the leader epoch
// of partition 0 it was committed under and the node (fence.go), and a
// committer refuses a table committed under a newer epoch. The table's
// history so has one committer per epoch, epochs in order; the
// optimistic commit above keeps it exact meanwhile.
//
// # Parquet writer
//
// Data files are written by iceberg-go's own writer (table.WriteRecords
// over arrow-go's pqarrow, zstd), fed a translation step at a time while
// the commit interval runs (stream.go), so a commit only closes the
// files and adds them; encoding everything at the commit was a burst
// that stalled produce on a small machine. The writer takes field ids
// from the table's schema, fans rows out to the partition spec's
// partitions (hour of aerostream.timestamp by default) and computes the
// column statistics readers prune with. parquet-go would have needed all three by hand,
// plus building each DataFile for AddDataFiles; the measured speed of
// this path (BenchmarkTranslate, one core: decode, rows, Parquet, commit)
// is well above the few MiB/s per core a topic needs, so the simpler,
// library-maintained path was chosen. Figures are in the commit that
// added the benchmark.
//
// # Retention guard
//
// Manager.Floor is logstore's RetentionFloor: retention, local eviction
// and compaction keep every segment of an Iceberg topic that ends above
// the table's committed offset (and everything, for a node that has not
// yet learned which topics are Iceberg topics). A table that falls behind
// shows in aerostream_iceberg_lag_records and _lag_seconds and in a
// warning log line.
package iceberg
