#!/usr/bin/env bash
# Kafka's own ProducerPerformance and ConsumerPerformance against either
# broker, one step at a time, for the consume comparison of deploy/bench/README.md:
#   deploy/bench/kafka-tools.sh BROKER(aero|kafka) STEP(start|fill|consume|stop)
#   start   : start the broker (aero: $BIN serve on private ports; kafka: a private peer)
#   fill    : create topic $T ($P partitions) and write $N x 1 KiB records
#   consume : ConsumerPerformance over $T with --print-metrics; per-response figures and broker CPU
#   stop    : stop the broker
# Private ports and homes so other engineers' brokers are not touched.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
which=$1; step=$2
N=${N:-3000000}; P=${P:-32}; T=${T:-cons}
BIN=${BIN:-$root/bin/aerostream}
LIB=/tmp/aerostream-kafka-peer/lib-4.4.0
J="java -Xmx1g -cp $LIB/*"; set -f
export KAFKA_PEER_HOME=/tmp/cons-kpeer KAFKA_PORT=29192 KAFKA_CONTROLLER_PORT=29193
AERO_DIR=${AERO_DIR:-/tmp/aero-cons}
if [ "$which" = kafka ]; then BS=127.0.0.1:$KAFKA_PORT; else BS=127.0.0.1:29092; fi
bpid() {
	if [ "$which" = kafka ]; then cat $KAFKA_PEER_HOME/kafka.pid; else cat $AERO_DIR.pid; fi
}
case $step in
start)
	if [ "$which" = kafka ]; then
		mkdir -p $KAFKA_PEER_HOME; ln -sfn $LIB $KAFKA_PEER_HOME/lib-4.4.0
		$root/deploy/kafka-peer/setup.sh ${FRESH:+--fresh} >/dev/null
		$root/deploy/kafka-peer/start.sh
	else
		mkdir -p $AERO_DIR
		AEROSTREAM_TIERED_STORAGE_ENABLED=false $BIN serve --data-dir $AERO_DIR \
			--kafka-listen $BS --native-listen 127.0.0.1:29091 --http-listen 127.0.0.1:29001 \
			--controller-listen 127.0.0.1:28001 --ring-listen 127.0.0.1:27001 >>$AERO_DIR.log 2>&1 &
		echo $! >$AERO_DIR.pid
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/29092) 2>/dev/null && break; sleep 0.2; done
		cat $AERO_DIR.pid
	fi
	;;
fill)
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $T --partitions $P --replication-factor 1 >/dev/null
	$J org.apache.kafka.tools.ProducerPerformance --topic $T --num-records $N --record-size 1024 --throughput -1 \
		--producer-props bootstrap.servers=$BS acks=1 linger.ms=5 batch.size=1048576 | tail -1
	;;
consume)
	pid=$(bpid)
	t0=$(awk '{print $14+$15}' /proc/$pid/stat); s0=$(date +%s.%N)
	$J org.apache.kafka.tools.ConsumerPerformance --bootstrap-server $BS --topic $T --messages $N --timeout 60000 \
		--print-metrics ${CPROPS:+--command-property $CPROPS} >/tmp/cons-$which.out 2>&1 || true
	t1=$(awk '{print $14+$15}' /proc/$pid/stat); s1=$(date +%s.%N)
	grep -A1 '^start.time' /tmp/cons-$which.out | tail -1 | awk -F, '{print "MB/s", $4, "rec/s", $6, "fetch.time.ms", $8}'
	grep 'consumer-fetch-manager-metrics' /tmp/cons-$which.out | grep -v topic= |
		grep -E ':(fetch-size-avg|fetch-size-max|records-per-request-avg|fetch-rate|fetch-latency-avg|fetch-total|bytes-consumed-total)' |
		sed 's/.*metrics://; s/{client-id=[^}]*}//' | tr -s ' ' | tr '\n' ';'
	echo
	echo "broker cpu% $(echo "100*($t1-$t0)/100/($s1-$s0)" | bc -l | cut -c1-5)"
	;;
stop)
	if [ "$which" = kafka ]; then $root/deploy/kafka-peer/stop.sh; else kill "$(bpid)"; fi
	;;
esac
