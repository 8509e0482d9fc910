// Package recbatch cuts Kafka RecordBatch v2 bytes into batches and
// decodes their records (decompressing them), for the Iceberg committer.
// It is a package of its own so that its fuzz target builds without the
// Iceberg and Arrow libraries.
package recbatch
