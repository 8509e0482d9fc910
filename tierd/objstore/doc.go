// Package objstore is AeroStream's contract with object storage: the Bucket
// interface the tiering pipeline (tierd), the cold-read cache (fetchcache)
// and the tier CLI program against, and everything that is provider-neutral
// around it:
//
//   - Bucket, ObjectInfo, MultipartWriter and the sentinel errors callers
//     branch on (IsNotFound, IsPreconditionFailed, IsTransient, ...);
//   - NewPartWriter, the engine every part-based provider (S3 multipart,
//     Azure block blobs, the filesystem's part files, the memory bucket) uses
//     to coalesce small writes into legal parts and upload them concurrently;
//   - NewMemBucket, an in-memory Bucket for unit tests of the layers above;
//   - NewFaultBucket, a wrapper that injects transient errors, latency,
//     stalls, cut or corrupted reads, so tierd and fetchcache can be tested
//     against an unreliable bucket;
//   - Instrumented and Observer, the hook through which metrics (per
//     operation, bytes, latency, errors) are counted without touching any
//     provider;
//   - Retry and RetryPolicy: exponential backoff with full jitter over
//     errors IsTransient classifies as worth retrying;
//   - AcceptanceTest, the conformance suite every provider runs against a
//     real server (MinIO, fake-gcs-server, Azurite, a local directory);
//   - the pieces the cloud providers share rather than each write again:
//     CheckPut (Put's argument check), PutMultipart (a large Put through a
//     MultipartWriter), RangeAtEnd (the empty read at an object's end that
//     the services refuse with a 416) and DeleteEach (DeleteMany without a
//     batch API).
//
// The providers live below, one per folder (filesystem, s3, gcs, azure), and
// each owns its SDK: this package imports no cloud SDK, so a program that
// uses only the filesystem provider does not link the others, and the
// contract cannot drift toward one vendor's semantics.
//
// # Semantics every provider implements
//
// Keys are '/'-separated relative paths (see ValidateKey); a provider's
// configured prefix is prepended below this interface and never shows in a
// key. List is by plain string prefix, recursive, in ascending byte order,
// and hides pagination. GetRange with length -1 reads to the end; a range
// past the end is cut short, a start exactly at the end yields no bytes and a
// start beyond it is ErrInvalidRange. Delete of a missing key succeeds, so
// retention and garbage collection can be retried blindly. Uploads compute a
// CRC32C of the bytes sent and return it in ObjectInfo.Checksum, which tierd
// stores in the catalog and `tier verify` checks on re-read. They also say
// whether the service itself verified the body it stored
// (ObjectInfo.Verified), which spares tierd a Head per upload.
//
// This package must not import any other aerostream package: it sits at the
// bottom of the graph beside catalog, and tierd, fetchcache and tools import
// it.
package objstore
