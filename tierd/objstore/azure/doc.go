// Package azure is the Azure Blob Storage provider
// ([tiered_storage.azure]), on azblob. Objects are block blobs; its
// acceptance test runs against Azurite.
//
// Requests map to Azure as follows:
//
//   - Put of up to 8 MiB is one Put Blob; larger objects, and every
//     MultipartWriter, are staged blocks (Put Block, which is the multipart
//     part) committed by Put Block List. Block IDs carry a random upload ID,
//     so concurrent uploads of one key never commit each other's blocks.
//   - PutIfAbsent and MultipartOptions.IfAbsent send If-None-Match: * (on
//     Put Blob, or on Put Block List, where the blob comes into being).
//     Azure answers an existing blob with 409 BlobAlreadyExists rather than
//     412 ConditionNotMet; both map to objstore.ErrPreconditionFailed.
//   - Abort has nothing to delete: blocks never committed are not part of
//     any blob, and the service discards them after 7 days (their storage is
//     billed until then). Deleting the blob instead would destroy a previous
//     committed version.
//   - Every block and single Put carries a Content-MD5 that the service
//     checks.
//   - List pages 1000 blobs a page; DeleteMany deletes 16 at a time.
//
// Credentials: account_name plus the shared key access_key, or
// AZURE_STORAGE_KEY when access_key is empty. Entra ID (workload identity,
// managed identity) is not supported yet: Azurite, the server this package
// is tested against, accepts it only over HTTPS with its own certificates.
// endpoint defaults to https://<account_name>.blob.core.windows.net; for
// Azurite it is http://127.0.0.1:10000/devstoreaccount1.
//
// It imports no aerostream package but tierd/objstore.
package azure
