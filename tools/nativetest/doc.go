// Package nativetest is the native protocol's acceptance suite, run by
// `make test-native` (NATIVE_TESTS=1): real `aerostream` processes on
// loopback (serve, and controller + store + `gateway native`), the Go SDK
// against each, the CLI commands exactly as the README and issue write
// them, and cross-protocol checks with kcat and franz-go on the Kafka
// port: the same batches, byte for byte, through either door.
package nativetest
