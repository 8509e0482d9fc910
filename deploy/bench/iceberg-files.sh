#!/usr/bin/env bash
# Issue 26's Parquet file-size figure: an hour at 5 MB/s into an Iceberg
# topic, scaled down by $SCALE (default 6: ten minutes, a 10 s commit
# interval, and the commit size, compaction sizes and snapshot age
# divided by 6), in one process (iceberg.TestMeasureIcebergFiles:
# logstore, committer, SQL catalog and a local warehouse, no Kafka port).
# Prints the data files' count and size distribution at the end and after
# one more maintenance pass, the visibility lag against the commit
# interval, and the translation throughput of a backlog caught up.
#   deploy/bench/iceberg-files.sh            # results in $D/result.txt
#   SCALE=12 BACKLOG_MB=64 deploy/bench/iceberg-files.sh   # deploy/bench/README.md's run
#   SCALE=60 deploy/bench/iceberg-files.sh   # one minute, for a quick look
# Knobs: SCALE, MBPS (5), VALUE (1000 B), BACKLOG_MB (128); D (/tmp/h-icerest-bench,
# removed at the start) holds the log, the warehouse and the result.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=${D:-/tmp/h-icerest-bench}
SCALE=${SCALE:-6}
rm -rf "$D" && mkdir -p "$D/tmp"
cd "$root"
TMPDIR=$D/tmp ICEBERG_MEASURE_SCALE=$SCALE ICEBERG_MEASURE_MBPS=${MBPS:-5} \
	ICEBERG_MEASURE_VALUE=${VALUE:-1000} ICEBERG_MEASURE_BACKLOG_MB=${BACKLOG_MB:-128} \
	go test -tags measure -count=1 -v -timeout 90m -run '^TestMeasureIcebergFiles$' ./iceberg/ 2>&1 | tee "$D/result.txt"
