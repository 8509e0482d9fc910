// Package tiertest holds the end-to-end tests of tiered storage: a real
// `aerostream serve` process writing to a real object store (MinIO,
// fake-gcs-server, Azurite), a real Kafka client (franz-go) producing and
// reading back every record from offset 0, the tier CLI verifying the
// bucket, a kill -9 during uploads, and a bucket that fails or stalls
// while producers run.
//
// The tests need the servers that `make test-tiered` starts (through
// tierd/objstore/testservers.sh); without their AEROSTREAM_TEST_* variables
// they skip and say so. Nothing imports this package.
//
// Behind the measure build tag, measure_test.go prints the figures of
// `make measure-tiered` (cold fetch against plain range GETs, the warm
// cache, produce p99 with tiering on and off), with placement_test.go
// keeping MinIO on a CPU apart from the node for some of the rounds. It
// fails when a record is missing or wrong, never on a figure: figures are
// reported, not asserted.
package tiertest
