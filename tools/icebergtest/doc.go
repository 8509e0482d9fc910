// Package icebergtest holds the end-to-end tests of Iceberg topics with
// real readers: a real `aerostream serve` process, keyed records produced
// by kcat, and the table read back through the built-in REST catalog (at
// /iceberg on the HTTP listener) by pyiceberg and by Spark, then compared
// row by row with the log as a Kafka consumer reads it: the count, the
// (partition, offset) set, keys and values. serve is killed with SIGKILL
// mid-translation and restarted; the table must still hold every record
// exactly once. The same runs with the warehouse on MinIO. An Avro topic
// in iceberg.mode=value_schema_id_prefix, its schemas registered through
// serve's registry and its values produced by franz-go, is read back by
// pyiceberg (read_typed.py) as typed columns equal value by value to what
// was produced, and a second schema version adds a column; a flat Avro
// record (valuecodec's direct path) is read back the same way.
//
// The tests are gated one visible way each: ICEBERG_PYTHON (a Python
// with pyiceberg 0.12, which `make test-iceberg` installs into
// bin/iceberg-venv) for the pyiceberg tests, AEROSTREAM_TEST_S3_* (from
// tierd/objstore/testservers.sh) for the MinIO run, and ICEBERG_SPARK_PYTHON
// with ICEBERG_SPARK_JARS for `make test-iceberg-spark`. Without them the
// tests skip and say so. The Python scripts beside this file are what the
// tests run. Nothing imports this package.
package icebergtest
