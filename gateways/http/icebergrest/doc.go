// Package icebergrest is AeroStream's built-in Iceberg REST catalog: the
// read side of the Iceberg REST OpenAPI spec (v1/config, namespaces, list
// and load table) served over any iceberg-go catalog.Catalog, so that
// Spark, Trino and pyiceberg reach the tables AeroStream maintains with
// nothing but a URI. tools/cli mounts it at /iceberg on listeners.http,
// over the catalog the translator commits through.
//
// Only AeroStream commits to these tables, because the exactly-once
// bookkeeping lives in their snapshot summaries: a foreign commit could
// drop or reorder it. So every write (create, commit, drop, rename,
// register, namespace changes, multi-table transactions) is refused with
// a 403 ErrorModel that says why. The write endpoints are nonetheless
// advertised in v1/config, because a client that finds an endpoint
// missing fails with a generic "endpoint not supported" before it ever
// asks; advertising them lets the reader see AeroStream's own reason.
// Scan metrics reports (POST .../metrics) change nothing and are accepted
// and discarded, since Java clients send one after every scan.
//
// With the authorizer on (Options.Authorizer, the HTTP Guard that knows
// the request's principal), a table is guarded by the ACLs of the topic
// it materializes, as the topic is on Kafka and the native protocol: a
// listing shows only the tables whose topic the principal may DESCRIBE
// (the others hidden, not refused), and loading one needs READ on the
// topic (403 ForbiddenException otherwise, audited, and answered before
// the table is looked up so that existence is not told). Namespaces are
// not topics and stay open.
//
// LoadTableResult.config carries the FileIO properties a reader needs to
// open the data files (the S3 endpoint, keys and path style for MinIO).
// Those are the warehouse's credentials handed to anyone allowed to load
// a table: the same trust as the rest of the admin API, which is why
// listeners.http defaults to loopback.
//
// Imports: iceberg-go's catalog and table packages only. It does not
// import AeroStream's iceberg package, storage packages or other
// gateways; tools/cli hands it the catalog, the FileIO properties and the
// Guard.
package icebergrest
