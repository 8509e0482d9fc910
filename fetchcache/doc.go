// Package fetchcache serves byte ranges of tiered (remote) segments: it is
// the logstore.ColdTier that tools/ wires into the store, so a consumer
// reading an offset that lives only in the bucket receives exactly the bytes
// it would have read from the local segment file.
//
// # What it owns
//
//   - Aligned chunks of remote segment objects (Options.ChunkSize, 4 MiB by
//     default), fetched by range GET and kept in memory under one byte
//     budget (Options.MaxBytes), split in three segments:
//     the main segment, a ristretto cache (TinyLFU admission, sampled-LFU
//     eviction) for chunks that earned their place; the scan segment, a
//     small LRU that every freshly fetched chunk enters first; and an index
//     segment, an LRU of remote offset indexes. A segment object is a
//     bundle (tierd/segobj: the log, then its indexes and a trailer), whose
//     index is read from the object's tail in one GET, or a legacy .log
//     object with an .index object beside it. Reads stop at the log's end
//     (the record's Bytes for a bundle); a chunk's bytes run to the
//     object's end, so all readers of an object cut the same chunks.
//   - The admission rule between the first two (a 2Q variant, see
//     cache.go): a chunk moves to the main segment only when it is
//     referenced again (a read starting at or before a position already
//     read in it, or a miss on a chunk recently dropped from the scan
//     segment), or while the main segment still has free room. A backfill
//     that reads a long range once therefore cycles through the scan
//     segment and can never evict the working set held in the main one.
//   - Coalescing: concurrent misses on one chunk (or one index object)
//     share one GET. A waiter that gives up (its ctx ends) leaves; the GET
//     is cancelled when the last waiter has left.
//   - Readahead: a sequential reader (one that moved from chunk k-1 to
//     chunk k of an object, or started at its first byte) has the
//     Options.Readahead chunks beyond the end of each read fetched in the
//     background, started before the read waits for anything. A prefetch
//     runs only if an I/O slot of readahead's share is free at once, so it
//     never delays the caller or queues ahead of demand reads; each
//     prefetch that completes tops the window up again (from the reader's
//     latest position), so slots freed while the consumer is busy do not
//     sit idle until its next fetch; a top-up whose reader has read on
//     before its GETs start drops them, as they would fetch chunks already
//     read. A window that runs past the object's end continues into the
//     object of the next segment (its index, then its first chunks), found
//     by one List of the key prefix that names the next base offset
//     (next.go). Readahead waits until half its
//     window is missing and fetches that half with one ranged GET (span.go),
//     so a replay makes half as many requests (or fewer, with a larger
//     window) as it reads chunks.
//   - The cold I/O budget: at most Options.MaxConcurrentGets GETs at a time
//     and, optionally, Options.MaxBytesPerSec. These are separate from
//     whatever tierd uses for uploads, so cold readers cannot starve
//     producers or the tiering pipeline.
//   - Integrity of what it serves: a read returns whole batches only (no
//     trailing partial batch), each checked (logstore.ValidateStoredBatch: CRC32C
//     and header; offsets rising inside the segment), and chunks under a
//     bad batch are dropped from memory, so corrupted bytes are never
//     served and a corruption that happened in transit heals on the next
//     read. A chunk readahead brought in has its whole batches checked as
//     it lands, off any fetch's path, and so has the batch over its
//     boundary with the chunk before when that one is at hand; reads skip
//     the CRC pass for those (verify.go).
//   - Reads that never wait: ReadCached serves a read from memory or
//     reports that it would need a GET (logstore.ColdCache), so a fetch
//     over many cold partitions reads those in memory on its own goroutine.
//   - Zero copy: a read is served from the cached chunks' own memory (read
//     only to the caller), one part per chunk, up to the end of the chunk
//     its first batch ends in; a batch that straddles chunks is sent as a
//     slice of each (parts.go), checked in place, never copied together.
//   - The reserve (reserve.go, Options.Prealloc): the budget's chunk
//     memory, allocated and touched from when the cache starts (in the
//     background, so that New does not wait for it), which the first
//     chunks fetched fill, so a fresh node's first cold reads do not pay a
//     page fault per 4 KiB as their bytes land.
//   - Its metrics: Stats and Collectors (Prometheus).
//
// # What it must not import
//
// No AeroStream package but logstore (for the ColdTier contract, the batch
// header parser and its sentinel errors), catalog (the segment record) and
// tierd/objstore (the Bucket contract). In particular not tierd itself, not
// logstore/ring, no gateway and nothing under tools/: tools/ wires this
// package to the store and to a provider. logstore must never import this
// package (layout_test.go checks both directions).
package fetchcache
