// Package s3 is the S3 object storage provider ([tiered_storage.s3]), on
// minio-go. It serves AWS S3 and S3-compatible services; its acceptance
// test runs against MinIO.
//
// Requests map to S3 as follows:
//
//   - Put and PutIfAbsent are one PUT each (minio.Core.PutObject), never
//     minio-go's automatic multipart: PutObject above its part size switches
//     to multipart and silently drops If-None-Match, which would turn
//     PutIfAbsent into an overwrite. A single PUT also makes the ETag the MD5
//     of the content. Objects above 5 GiB, the single-PUT limit, go through
//     the multipart path.
//   - PutIfAbsent sends If-None-Match: * (412 PreconditionFailed when the key
//     exists).
//   - NewMultipartWriter drives CreateMultipartUpload / UploadPart /
//     CompleteMultipartUpload through minio.Core, so that IfAbsent can put
//     If-None-Match: * on the Complete request, where S3 evaluates it.
//   - List pages with ListObjectsV2, 1000 keys a page; DeleteMany uses
//     DeleteObjects, 1000 keys a request.
//   - Bodies: a PUT's body goes unsigned with a CRC32C trailer, a part's
//     with its Content-MD5; the server refuses a body that does not match
//     (BadDigest and the like, which are transient: nothing was stored).
//     With sign_payload, over http a body is signed instead (SigV4
//     streaming, a SHA-256 per 64 KiB on both sides). Over https minio-go
//     never signs bodies.
//
// Credentials: access_key_id and secret_access_key when both are set;
// otherwise the standard AWS chain, in order: AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, AWS_PROFILE), then
// minio-go's IAM provider, which covers web identity (IRSA:
// AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, with the STS endpoint from
// AWS_ENDPOINT_URL_STS when set, else the region's), ECS/EKS container
// credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI / _FULL_URI) and the
// EC2 instance profile. Secrets never reach logs: Config's String and
// LogValue redact them, and Name shows only the endpoint and bucket.
//
// It imports no aerostream package but tierd/objstore.
package s3
