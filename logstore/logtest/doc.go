// Package logtest builds valid Kafka RecordBatch v2 bytes for tests,
// benchmarks and load generators that need real batches without a Kafka
// client: uncompressed records with correct varints and a correct CRC32C.
//
// It imports nothing from AeroStream, so any package's tests may use it.
package logtest
