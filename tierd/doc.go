// Package tierd is the tiering daemon: it moves sealed segments from local
// disk to object storage and back, and keeps the bucket's manifests.
//
// Pipeline, per sealed segment (DESIGN §3):
//
//  1. stage: Store.Settle first (the store finishes a seal off its produce
//     path: index files shrunk, catalog record synced), then hard-link the
//     segment's files into the store's staging folder (no byte copy; the
//     link keeps the bytes alive even if retention deletes the segment
//     meanwhile);
//  2. upload: the segment as one object, <...>-<segment id>.seg: the log,
//     then its two indexes and a trailer (tierd/segobj). PutIfAbsent, or a
//     conditional multipart upload for large ones, retried with
//     exponential backoff and jitter;
//  3. verify: the CRC32C of the bytes sent (computed as they are read from
//     the staged files, in the same pass as the upload) must match the
//     provider's; and unless the provider reports the upload Verified (the
//     service checked the body against a checksum or signature sent with
//     it, as S3, GCS and Azure do here), Head must report the expected
//     size. Skipping that Head saves a billed request per segment;
//  4. record: Store.SetRemote writes the cloud pointer into the catalog
//     (through the partition's shard, the only writer of its records);
//  5. manifest: the partition is marked, and <topic>/<partition>/manifest.json
//     is rewritten from the catalog at most once per
//     Options.ManifestInterval (10 s), at Drain, at shutdown and, for every
//     partition, at start (which repairs a crash between 4 and 5). It lags
//     the last interval's uploads, so `tier restore` (ReadManifests) takes
//     the manifest plus the finished uploads beyond it, reading each of
//     those once. Remote deletions rewrite it at once.
//
// One object per segment is a change from DESIGN §4, which names three
// (.log, .index, .timeindex). Two small PUTs per segment were about half of
// what tiering cost producers' p99 on a host shared with the object store,
// and two thirds of the billed upload requests. Buckets written in the
// three-object layout stay readable: restore, verify, gc, rehydrate,
// retention and fetchcache take both, told apart by the key's extension.
//
// Eviction of local copies and remote retention are decided by the store
// (logstore) under local.retention.* and retention.*; tierd performs the
// remote deletions it is asked for and reports back with
// Store.RemoteDeleted.
//
// Compacted topics (compact.go): a segment the store's log cleaner
// rewrote is sealed again under a new segment id and uploaded as any
// other; the objects it replaced reach Replaced and are deleted after
// Options.ReplacedGrace, so the bucket holds the compacted log.
//
// Replicas (issue 24): every replica of a partition runs its own tierd on
// its own store, and only the leader's touches the bucket (uploads,
// manifest, remote deletions); the role comes from the store (Replicas,
// replica.go). The manifest is how the others learn the cloud pointers:
//   - a follower reads the manifests of the partitions it follows every
//     FollowerSyncInterval and hands them to Store.AdoptRemote. Replicas
//     roll on their own, so segment boundaries may differ: a local segment
//     with the same offsets and bytes as a cold one takes its pointer and
//     is evicted under local.retention.* exactly as on the leader; one the
//     cold tier covers on other boundaries is evicted under the same rules
//     at a sync, the cold segments that cover it taking its place in the
//     catalog. Either way a follower evicts only what the cold tier holds.
//     Its remote retention, a sync that finds the cold tier starting later
//     (the leader's retention), and the removal of the replica drop its
//     records, never the leader's objects;
//   - a store that becomes leader takes over the cold tier once per leader
//     epoch, before its first upload or manifest write: it reads the
//     manifest and the uploads it does not list yet, and AdoptRemote
//     records them, evicting at once any local segment they cover on other
//     boundaries (a leader's catalog must name every cold segment for the
//     manifest it rewrites, and a record may not overlap local files). It
//     then uploads only segments the cold tier does not cover whole, so
//     nothing is uploaded twice and the manifest it writes keeps every
//     earlier leader's segment. A segment the cold tier covers in part is
//     uploaded whole: a manifest segment may start inside the previous one;
//   - a leader uploads a segment only once its end is at or below the high
//     watermark, so the cold tier holds only records every later leader
//     holds too (a segment sealed above it waits for the next sync tick).
//
// A cluster store's partition with no role yet (logstore RequireRole) is
// left alone: before the controller's view arrives a follower would
// otherwise upload as a single copy. An old leader that has not yet heard
// it was deposed may still write the manifest once after the new leader
// took over; the new leader's next manifest write (every upload marks it)
// restores the full list, and restore's listing finds the objects anyway.
//
// Idempotence: a segment's object name includes the segment id fixed when it
// was sealed, so a crash at any step resumes under the same name. A periodic
// rescan of the catalog finds sealed segments without a cloud pointer (a
// notification lost to a crash or to a full queue) and remote deletions that
// never finished.
//
// Produce is never blocked: Sealed and DeleteRemote only enqueue; uploads run
// on a bounded worker pool and the backlog is reported as a metric. Workers
// beyond the first join in only as the backlog grows (4 jobs per worker),
// so a trickle of small segments is uploaded one at a time, evenly, rather
// than in bursts that compete with producers for CPU and disk.
//
// tierd imports catalog and tierd/objstore, never logstore: the store side
// is the small Store interface below, which tools/ satisfies with
// *logstore.Store.
package tierd
