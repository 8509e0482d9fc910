#!/usr/bin/env bash
# Issue 27's closing figures, one broker at a time (aero: $BIN serve; kafka:
# the 4.4.0 peer), on kafka-tools.sh's private ports and homes:
#   deploy/bench/eos-share.sh BROKER(aero|kafka) STEP(start|txn|share|stop)
#   start : a fresh broker (wiped data), through kafka-tools.sh
#   txn   : topic $TT (8 partitions); TxnPerf.java (kafka-clients, acks=all,
#           1 KiB, round-robin) for $SECS s without transactions, then
#           committing every 100 records; one line each
#   share : topic $TS (4 partitions), $N x 1 KiB by ProducerPerformance, then
#           ShareConsumerPerformance with 4 members (--threads 4) in one
#           share group reading all of it; its summary line and broker CPU
#   stop  : stop the broker and delete its data
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
which=$1; step=$2
export PFX=${PFX:-4} KAFKA_PEER_HOME=${KAFKA_PEER_HOME:-/tmp/eos-bench/kpeer} AERO_DIR=${AERO_DIR:-/tmp/eos-bench/aero}
export BIN=${BIN:-/tmp/eos-bench/aerostream}
N=${N:-500000}; SECS=${SECS:-20}; TT=${TT:-txn}; TS=${TS:-share}
LIB=/tmp/aerostream-kafka-peer/lib-4.4.0
J="java -Xmx1g -cp $LIB/*"; set -f
if [ "$which" = kafka ]; then BS=127.0.0.1:${PFX}9192; else BS=127.0.0.1:${PFX}9092; fi
tools() { $root/deploy/bench/kafka-tools.sh $which "$@"; }
topic() { $J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $1 --partitions $2 --replication-factor 1 >/dev/null; }
case $step in
start)
	# Fresh each time, so a round does not read the last one's topics.
	if [ "$which" = kafka ]; then FRESH=1 tools start; else rm -rf $AERO_DIR $AERO_DIR.log && tools start; fi
	;;
txn)
	topic $TT 8
	# The Java client on both brokers: it is the one Kafka is tuned with.
	for txn in 0 100; do
		echo "$which txn=$txn: $($J $root/deploy/bench/TxnPerf.java $BS $TT $SECS $txn 2>/dev/null | tail -1)"
	done
	;;
share)
	topic $TS 4
	$J org.apache.kafka.tools.ProducerPerformance --topic $TS --num-records $N --record-size 1024 --throughput -1 \
		--producer-props bootstrap.servers=$BS acks=1 linger.ms=5 batch.size=1048576 | tail -1 | sed "s/^/$which fill: /"
	# A share group starts at the latest offset unless its config says
	# otherwise, and this one reads what is already there.
	$J org.apache.kafka.tools.ConfigCommand --bootstrap-server $BS --alter --entity-type groups --entity-name perf-$TS \
		--add-config share.auto.offset.reset=earliest >/dev/null
	pid=$(if [ "$which" = kafka ]; then cat $KAFKA_PEER_HOME/kafka.pid; else cat $AERO_DIR.pid; fi)
	t0=$(awk '{print $14+$15}' /proc/$pid/stat); s0=$(date +%s.%N)
	# --timeout is long: the 4.4.0 tool also bounds the whole run by it
	# (awaitTermination, then it interrupts its consumers and prints nothing).
	$J org.apache.kafka.tools.ShareConsumerPerformance --bootstrap-server $BS --topic $TS --group perf-$TS \
		--num-records $N --threads 4 --timeout 300000 >/tmp/share-$which.out 2>&1 || true
	t1=$(awk '{print $14+$15}' /proc/$pid/stat); s1=$(date +%s.%N)
	# The summary: start, end, MB, MB/s, records, records/s, ...
	grep -A1 '^start.time' /tmp/share-$which.out | tail -1 | sed "s/^/$which share4: /"
	echo "$which share4: broker cpu% $(echo "100*($t1-$t0)/100/($s1-$s0)" | bc -l | cut -c1-5)"
	;;
stop)
	tools stop
	if [ "$which" = kafka ]; then
		rm -rf $KAFKA_PEER_HOME/data
	else
		for _ in $(seq 100); do kill -0 "$(cat $AERO_DIR.pid)" 2>/dev/null || break; sleep 0.2; done
		rm -rf $AERO_DIR
	fi
	;;
esac
