// Package filesystem is the `local` object storage provider: objects are
// files under a root directory on a local disk or an NFS mount
// ([tiered_storage.local] root_path). It is the cold tier of the embedded
// default (`aerostream serve` stores it under ./data/cold) and needs no
// server, so its acceptance test runs with the plain unit tests.
//
// An object key is a relative path below the root. Writes are atomic: bytes
// go to a temporary file under <root>/.aerostream-tmp (the same filesystem,
// so the final step is a rename, never a copy), are fsynced, and then
// appear under their key at once by rename(2) (Put) or link(2) (PutIfAbsent:
// link fails with EEXIST if the key exists, which is atomic on local
// filesystems and on NFS, where O_EXCL historically was not). A reader never
// sees a partial object, and a crash leaves only temporary files, which a
// later New removes once they are a day old. Multipart uploads keep their parts as files in a
// per-upload folder under the temporary directory and concatenate them on
// completion (copy_file_range where the kernel offers it).
//
// The ETag is derived from the file's inode, size and modification time, so
// it changes whenever the object is replaced without hashing the content.
//
// It imports no aerostream package but tierd/objstore.
package filesystem
