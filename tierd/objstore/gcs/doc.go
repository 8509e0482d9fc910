// Package gcs is the Google Cloud Storage provider ([tiered_storage.gcs]),
// on cloud.google.com/go/storage over the JSON API. Its acceptance test runs
// against fake-gcs-server, selected the way every Google client library
// selects an emulator: STORAGE_EMULATOR_HOST (which also turns
// authentication off).
//
// Requests map to GCS as follows:
//
//   - PutIfAbsent and MultipartOptions.IfAbsent use the DoesNotExist
//     precondition (ifGenerationMatch=0): the server refuses with 412 if
//     any live generation of the object exists, atomically.
//   - GCS has no S3-style multipart upload. Its equivalent for large and
//     unknown-size objects is the resumable upload, which the storage
//     Writer performs: NewMultipartWriter streams into one, in chunks of
//     MultipartOptions.PartSize (rounded up by the client to its 256 KiB
//     granularity), retried chunk by chunk by the client. Chunks of one
//     resumable upload go in order, so MultipartOptions.Concurrency does not
//     apply; and the object appears only when the upload is finalized on
//     Close, so Abort (cancelling the upload's context) leaves nothing.
//   - Put of up to 8 MiB is one request (a multipart/related upload), larger
//     ones are resumable uploads too.
//   - The client computes a CRC32C of every upload and the server checks
//     it; Head and List return the server's CRC32C in ObjectInfo.Checksum,
//     so a stored object can be verified without reading it.
//   - DeleteMany deletes concurrently (16 at a time): the Go client has no
//     batch delete.
//
// Credentials: service_account_path when set (a service-account JSON key
// file), otherwise Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, GKE workload identity, the metadata
// server). endpoint overrides the API endpoint (e.g. a Private Service
// Connect address) and keeps authentication on.
//
// It imports no aerostream package but tierd/objstore.
package gcs
