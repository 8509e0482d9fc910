// Package protosrc turns a Protobuf schema as Confluent's registry stores
// it (.proto text, or a base64 FileDescriptorProto) into a source for
// protocompile. The registry and Iceberg's value codec both compile such
// schemas and must read them the same way.
package protosrc
