// Package segobj owns the layout of a tiered segment in the bucket: the
// object keys and the bundled segment object. tierd writes it; tierd's
// restore, verify and rehydrate and fetchcache's reads parse it.
//
// Since this version a segment is one object (DESIGN §4 lists three; the
// change is recorded in tierd/doc.go):
//
//	<topic>/<partition>/<base offset, 20 digits>-<segment id>.seg
//
//	[ .log bytes | .index bytes | .timeindex bytes | trailer, 32 bytes ]
//
// The log comes first and unchanged, so a byte position in the segment
// file is the same position in the object, and a reader's chunk and range
// arithmetic is that of the plain log. The indexes follow it, byte for
// byte as logstore wrote them, and the trailer says where each part ends
// (Trailer). The catalog record's Bytes is the log's length, so a reader
// with the record GETs [Bytes, ObjectSize) once to get both indexes and
// the trailer that checks them.
//
// Why one object: a segment used to be three PUTs (the log and its two
// small indexes). On a node that shares its host with the object store,
// the two small PUTs were about half of what tiering cost producers' p99
// (measure-tiered), and they are two thirds of the requests a provider
// bills for uploads.
//
// Buckets written before keep the three-object layout (<...>.log beside
// <...>.index and <...>.timeindex), and every reader still takes it: the
// key's extension tells the two apart (IsBundle).
package segobj
