#!/usr/bin/env bash
# Kafka's own ProducerPerformance and ConsumerPerformance against either
# broker, one step at a time, for the consume comparison of deploy/bench/README.md:
#   deploy/bench/kafka-tools.sh BROKER(aero|kafka) STEP(start|fill|consume|stop)
#   start   : start the broker (aero: $BIN serve on private ports; kafka: a private peer)
#   fill    : create topic $T ($P partitions) and write $N x 1 KiB records
#   consume : ConsumerPerformance over $T with --print-metrics; per-response figures and broker CPU
#   stop    : stop the broker
# Issue 24's cluster comparison, on aero3 (1 controller, 3 stores, 2 gateways)
# or kafka3 (deploy/kafka-peer/cluster.sh, 3 KRaft brokers):
#   deploy/bench/kafka-tools.sh BROKER(aero3|kafka3) STEP(start|perf|stop)
#   perf    : topic $T (6 partitions, RF $RF=3, min.insync.replicas 2 or 1 at
#             RF 1), ProducerPerformance acks=all 1 KiB: $RATE msg/s for $SECS s,
#             then $NMAX records at full speed; last lines, and for each run
#             the brokers' CPU (% of one core) and RSS (MiB), summed over processes
# Publish latency at a fixed rate on one node (aero: serve; kafka: the peer):
#   deploy/bench/kafka-tools.sh BROKER(aero|kafka) p99
#   p99     : topic $T ($P partitions, RF 1), ProducerPerformance acks=1 1 KiB,
#             linger.ms=$LINGER (1) and 1 MiB batches: $P99_RATE (50000) msg/s for
#             $SECS s after a 10 s warmup at the same rate; the summary line,
#             its steady state (after its own first 10 s) and the broker's CPU. With PROF=DIR and aero (started with
#             PPROF=1), a 2 s execution trace then a CPU profile over half
#             the measured run go to DIR, once its produces flow. For aero, the broker's own
#             produce time over the run (its request histogram, histq.py).
# Private ports and homes so other engineers' brokers are not touched.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
which=$1; step=$2
N=${N:-3000000}; P=${P:-32}; T=${T:-cons}
BIN=${BIN:-$root/bin/aerostream}
LIB=/tmp/aerostream-kafka-peer/lib-4.4.0
J="java -Xmx1g -cp $LIB/*"; set -f
# PFX moves the single-node ports (2: 29092, 29192, ...; 4: 49092, ...),
# so two engineers can measure at once.
PFX=${PFX:-2}
export KAFKA_PEER_HOME=${KAFKA_PEER_HOME:-/tmp/cons-kpeer} KAFKA_PORT=${PFX}9192 KAFKA_CONTROLLER_PORT=${PFX}9193
AERO_DIR=${AERO_DIR:-/tmp/aero-cons}
if [ "$which" = kafka ]; then BS=127.0.0.1:$KAFKA_PORT; else BS=127.0.0.1:${PFX}9092; fi
RF=${RF:-3}; RATE=${RATE:-20000}; SECS=${SECS:-30}; NMAX=${NMAX:-1000000}; A3=${A3:-/tmp/aero3}
case $which in
kafka3) BS=127.0.0.1:19201,127.0.0.1:19202,127.0.0.1:19203 ;;
aero3) BS=127.0.0.1:39092,127.0.0.1:39093 ;;
esac
bpid() {
	case $which in
	kafka) cat $KAFKA_PEER_HOME/kafka.pid ;;
	kafka3) $root/deploy/kafka-peer/cluster.sh pids ;;
	aero3) for p in c1 s1 s2 s3 g1 g2; do cat $A3/$p.pid; done ;;
	*) cat $AERO_DIR.pid ;;
	esac
}
ticks() { for p in $(bpid); do awk '{print $14+$15}' /proc/$p/stat; done | paste -sd+ | bc; }
rss() { for p in $(bpid); do awk '/VmRSS/{print $2}' /proc/$p/status; done | paste -sd+ | bc; }
pp() { # pp NAME ARGS...: ProducerPerformance, its summary line and the brokers' CPU and RSS
	local name=$1 t0 s0 t1 s1
	shift
	t0=$(ticks); s0=$(date +%s.%N)
	$J org.apache.kafka.tools.ProducerPerformance --topic $T --record-size 1024 "$@" \
		--producer-props bootstrap.servers=$BS acks=${ACKS:-all} linger.ms=${LINGER:-5} batch.size=1048576 | grep '50th' >/tmp/pp-$which.out
	t1=$(ticks); s1=$(date +%s.%N)
	sed "s/^/$which $name: /" /tmp/pp-$which.out
	echo "$which $name: broker cpu% $(echo "100*($t1-$t0)/100/($s1-$s0)" | bc -l | cut -c1-6) rss MiB $(($(rss) / 1024))"
}
case $step in
start)
	if [ "$which" = kafka3 ]; then
		$root/deploy/kafka-peer/cluster.sh start
	elif [ "$which" = aero3 ]; then
		rm -rf $A3 && mkdir -p $A3 # a fresh cluster, the issue's commands on private ports
		export AEROSTREAM_TIERED_STORAGE_ENABLED=false
		$BIN controller --controller.node_id 1 --controller.bootstrap --controller-listen 127.0.0.1:38001 --data-dir $A3/c1 --http-listen 127.0.0.1:38101 >>$A3/c1.log 2>&1 &
		echo $! >$A3/c1.pid
		for i in 1 2 3; do
			$BIN store --controller.node_id 1$i --controller.join 127.0.0.1:38001 --ring-listen 127.0.0.1:3701$i --data-dir $A3/s$i --http-listen 127.0.0.1:3811$i >>$A3/s$i.log 2>&1 &
			echo $! >$A3/s$i.pid
		done
		for i in 1 2; do
			$BIN gateway kafka --gateway.node_id 100$i --controller.join 127.0.0.1:38001 --kafka-listen 127.0.0.1:3909$((i + 1)) \
				--native-listen 127.0.0.1:3919$i --http-listen 127.0.0.1:3812$i --data-dir $A3/g$i >>$A3/g$i.log 2>&1 &
			echo $! >$A3/g$i.pid
		done
		for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/39093) 2>/dev/null && break; sleep 0.2; done
		bpid
	elif [ "$which" = kafka ]; then
		mkdir -p $KAFKA_PEER_HOME; ln -sfn $LIB $KAFKA_PEER_HOME/lib-4.4.0
		$root/deploy/kafka-peer/setup.sh ${FRESH:+--fresh} >/dev/null
		$root/deploy/kafka-peer/start.sh
	else
		mkdir -p $AERO_DIR
		env ${PPROF:+AEROSTREAM_ADMIN_PPROF=true} AEROSTREAM_TIERED_STORAGE_ENABLED=false $BIN serve --data-dir $AERO_DIR \
			--kafka-listen $BS --native-listen 127.0.0.1:${PFX}9091 --http-listen 127.0.0.1:${PFX}9001 \
			--controller-listen 127.0.0.1:${PFX}8001 --ring-listen 127.0.0.1:${PFX}7001 >>$AERO_DIR.log 2>&1 &
		echo $! >$AERO_DIR.pid
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/${PFX}9092) 2>/dev/null && break; sleep 0.2; done
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
perf)
	misr=2; [ "$RF" = 1 ] && misr=1
	if [ "$which" = aero3 ]; then
		$BIN topic create $T -p 6 -r $RF --config min.insync.replicas=$misr --controller 127.0.0.1:38001 >/dev/null
	else
		$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $T --partitions 6 \
			--replication-factor $RF --config min.insync.replicas=$misr >/dev/null
	fi
	pp warmup --num-records 100000 --throughput -1 >/dev/null
	# The fixed rate first: after the max run the brokers' disks are
	# still writing back gigabytes, which would land in its latencies.
	pp "rate $RATE" --num-records $((RATE * SECS)) --throughput $RATE
	pp max --num-records $NMAX --throughput -1
	;;
p99)
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --if-not-exists --topic $T --partitions $P \
		--replication-factor 1 >/dev/null
	export ACKS=1 LINGER=${LINGER:-1}
	RATE=${P99_RATE:-50000}
	pp warmup --num-records $((RATE * 10)) --throughput $RATE >/dev/null
	m=http://127.0.0.1:${PFX}9001/metrics
	[ "$which" = aero ] && curl -s $m >/tmp/p99-metrics-before
	if [ -n "${PROF:-}" ] && [ "$which" = aero ]; then
		# Profiles start once the measured run's produces flow: the JVM
		# takes seconds to start on a loaded machine.
		mkdir -p $PROF
		(
			n0=$(grep -s '_count{api="Produce"}' /tmp/p99-metrics-before | awk '{print $2}')
			for _ in $(seq 600); do
				n=$(curl -s $m | grep '_count{api="Produce"}' | awk '{print $2}')
				[ "${n%.*}" -gt "$((${n0%.*} + 200))" ] && break
				sleep 0.1
			done
			curl -s "http://127.0.0.1:${PFX}9001/debug/pprof/trace?seconds=2" -o $PROF/trace.out
			curl -s "http://127.0.0.1:${PFX}9001/debug/pprof/profile?seconds=$((SECS / 2))" -o $PROF/cpu.pprof
		) &
	fi
	# The measured JVM also reports its steady state, after its first 10 s:
	# the warmup run above warms the broker, not the new JVM's JIT.
	pp "rate $RATE acks=1 linger.ms=$LINGER" --num-records $((RATE * SECS)) --throughput $RATE --warmup-records $((RATE * 10))
	if [ "$which" = aero ]; then
		curl -s $m >/tmp/p99-metrics-after
		echo "$which broker's share (Produce, parsed frame to built response): $(python3 $root/deploy/bench/histq.py \
			/tmp/p99-metrics-before /tmp/p99-metrics-after 'api="Produce"')"
	fi
	wait
	;;
stop)
	case $which in
	kafka) $root/deploy/kafka-peer/stop.sh ;;
	kafka3) $root/deploy/kafka-peer/cluster.sh stop ;;
	*) kill $(bpid) ;;
	esac
	;;
esac
