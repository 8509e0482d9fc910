#!/usr/bin/env bash
# Issue 27's compaction figures for both brokers in one run (aero: $BIN
# serve; kafka: the 4.4.0 peer of deploy/kafka-peer), one broker after the
# other, each on fresh data, on private ports and homes:
#   deploy/bench/compaction.sh BROKER...   (default: aero aero-nobound kafka)
# aero runs the cleaner at its default I/O bound (logstore.cleaner_bytes_per_sec,
# 32 MiB/s), aero-nobound with none (-1), as Kafka's default
# log.cleaner.io.max.bytes.per.second; kafka is the peer at its defaults.
# For each broker:
#   1. topic $CT: 1 partition, cleanup.policy=compact, 16 MiB segments,
#      min.cleanable.dirty.ratio 0.01, its cleaning held off by
#      min.compaction.lag.ms=1h while CompactFill.java writes $FILL_MB MiB
#      of 1 KiB records over $KEYS keys (acks=1);
#   2. idle: HotPerf.java on topic $HT (1 partition, acks=1, 1 KiB,
#      linger.ms=1) at $RATE records/s for $SECS s, after its 3 s warmup;
#      its send-to-ack latency percentiles in us;
#   3. min.compaction.lag.ms=0, and once the cleaner has begun on $CT the
#      same run again (its JVM started and connected beforehand): cleaning;
#   4. the cleaner's own line once it is done (aero: "log cleaner cleaned a
#      partition", log_mib_per_sec; kafka: "MB of log processed in ...
#      seconds (... MB/sec)": both the log gone through, in MiB, per second
#      of the whole cleaning), and how much of the cleaning run it covered.
# Output lines start with the broker.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${BIN:-$root/bin/aerostream}
FILL_MB=${FILL_MB:-2048}; KEYS=${KEYS:-2000}; RATE=${RATE:-5000}; SECS=${SECS:-10}
CT=${CT:-hcompact}; HT=${HT:-hhot}
AERO_DIR=${AERO_DIR:-/tmp/h-clean-aero}; AP=${AP:-460} # aero's ports: ${AP}92 Kafka, ${AP}01 HTTP, ...
export KAFKA_PEER_HOME=${KAFKA_PEER_HOME:-/tmp/h-clean-kpeer} KAFKA_PORT=${KAFKA_PORT:-46192} KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-46193}
LIB=${LIB:-/tmp/aerostream-kafka-peer/lib-4.4.0}
J="java -Xmx1g -cp $LIB/*"
set -f
OUT=${OUT:-/tmp/h-clean-out}
mkdir -p "$OUT"

bs() { if [ "$1" = kafka ]; then echo 127.0.0.1:$KAFKA_PORT; else echo 127.0.0.1:${AP}92; fi; }
blog() { if [ "$1" = kafka ]; then echo $KAFKA_PEER_HOME/logs/server.log; else echo $AERO_DIR.log; fi; }

start() {
	if [ "$1" = kafka ]; then
		mkdir -p $KAFKA_PEER_HOME && ln -sfn $LIB $KAFKA_PEER_HOME/lib-4.4.0
		rm -rf $KAFKA_PEER_HOME/logs # the cleaner's lines of an earlier run
		$root/deploy/kafka-peer/setup.sh --fresh >/dev/null
		$root/deploy/kafka-peer/start.sh >/dev/null
	else
		rm -rf $AERO_DIR $AERO_DIR.log && mkdir -p $AERO_DIR
		local bps=33554432
		[ "$1" = aero-nobound ] && bps=-1
		env AEROSTREAM_TIERED_STORAGE_ENABLED=false AEROSTREAM_LOGSTORE_CLEANER_BYTES_PER_SEC=$bps \
			$BIN serve --data-dir $AERO_DIR --kafka-listen 127.0.0.1:${AP}92 --native-listen 127.0.0.1:${AP}91 \
			--http-listen 127.0.0.1:${AP}01 --controller-listen 127.0.0.1:${AP}81 --ring-listen 127.0.0.1:${AP}71 >>$AERO_DIR.log 2>&1 &
		echo $! >$AERO_DIR.pid
		for _ in $(seq 150); do (exec 3<>/dev/tcp/127.0.0.1/${AP}92) 2>/dev/null && break; sleep 0.2; done
	fi
}

stop() {
	if [ "$1" = kafka ]; then
		$root/deploy/kafka-peer/stop.sh
		rm -rf $KAFKA_PEER_HOME/data
	else
		pid=$(cat $AERO_DIR.pid)
		kill "$pid"
		for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		rm -rf $AERO_DIR
	fi
}

# readbytes: what aero's cleaner has read so far.
readbytes() { curl -s http://127.0.0.1:${AP}01/metrics | awk '/^aerostream_cleaner_read_bytes_total/ {print $2}'; }

# began B: has the cleaner begun on $CT (aero: read more than $R0)?
began() {
	if [ "$1" = kafka ]; then
		grep -q "Beginning cleaning of log $CT-0" "$(blog kafka)"
	else
		awk -v r=$(readbytes) -v r0=$R0 'BEGIN {exit !(r > r0)}'
	fi
}

# cleaned B: the cleaner's line for $CT, once it is done.
cleaned() {
	if [ "$1" = kafka ]; then
		grep -A1 "cleaned log $CT-0" "$(blog kafka)" | grep -o '[0-9,.]* MB of log processed in .*' | head -1
	else
		grep 'log cleaner cleaned a partition' "$(blog aero)" | grep "$CT" | head -1 |
			grep -oE '(log_bytes|read_bytes|written_bytes|seconds|log_mib_per_sec)[=":]+[0-9.e+]+' | tr -d '"' | tr '\n' ' '
	fi
}

hot() { # hot B NAME SECS [GO]: HotPerf.java's line
	$J $root/deploy/bench/HotPerf.java $(bs $1) $HT $RATE $3 ${4:-} 2>$OUT/hot.err | tail -1 | sed "s/^/$1 $2: /"
}

run() {
	local b=$1 BS
	BS=$(bs $b)
	rm -f $OUT/$b.cleaned-at
	start $b
	echo "$b: load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $CT --partitions 1 --replication-factor 1 \
		--config cleanup.policy=compact --config segment.bytes=16777216 --config min.cleanable.dirty.ratio=0.01 \
		--config min.compaction.lag.ms=3600000 >/dev/null
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $HT --partitions 1 --replication-factor 1 >/dev/null
	echo "$b fill: $($J $root/deploy/bench/CompactFill.java $BS $CT $FILL_MB $KEYS 2>/dev/null | tail -1)"
	sync # the fill's dirty pages written back before either run, not during one
	hot $b idle $SECS
	echo "$b: load average $(cut -d' ' -f1-3 /proc/loadavg) after idle"
	# The cleaning run's JVM starts now and waits, connected, for $go.
	local go=$OUT/go
	rm -f $go $OUT/hot.err
	hot $b cleaning $SECS $go >$OUT/$b.cleaning &
	local hotpid=$!
	until grep -q ready $OUT/hot.err 2>/dev/null; do sleep 0.1; done
	[ $b = kafka ] || R0=$(readbytes)
	$J org.apache.kafka.tools.ConfigCommand --bootstrap-server $BS --alter --entity-type topics --entity-name $CT \
		--add-config min.compaction.lag.ms=0 >/dev/null
	local t0=$SECONDS
	until began $b; do
		if ((SECONDS - t0 > 120)); then echo "$b: the cleaner did not begin within 120 s" >&2; touch $go; stop $b; return 1; fi
		sleep 0.1
	done
	local c0 h0 h1 c1
	c0=$(date +%s.%N)
	# The end of the cleaning, within a second of its line: one grep a
	# second, as a pipeline every 0.1 s here raised the run's p99 by 1 ms.
	local done_at="cleaned log $CT-0"
	[ $b = kafka ] || done_at="log cleaner cleaned a partition.* topic=$CT "
	(until grep -q "$done_at" "$(blog $b)"; do sleep 1; done; date +%s.%N >$OUT/$b.cleaned-at) &
	local watcher=$!
	h0=$(date +%s.%N)
	touch $go
	wait $hotpid
	h1=$(date +%s.%N)
	cat $OUT/$b.cleaning
	echo "$b: load average $(cut -d' ' -f1-3 /proc/loadavg) after cleaning"
	for _ in $(seq 3000); do kill -0 $watcher 2>/dev/null || break; sleep 0.1; done
	kill $watcher 2>/dev/null || true
	c1=$(cat $OUT/$b.cleaned-at 2>/dev/null || echo "$h1")
	echo "$b cleaner: $(cleaned $b)"
	# The cleaning's share of the measured run.
	awk -v b=$b -v c0=$c0 -v c1=$c1 -v h0=$h0 -v h1=$h1 'BEGIN {
		e = c1 < h1 ? c1 : h1
		printf "%s: cleaning seen from +0 to +%.1f s; the cleaning run from +%.1f to +%.1f s, %.0f%% of it while cleaning\n",
			b, c1 - c0, h0 - c0, h1 - c0, (e > h0 ? 100 * (e - h0) / (h1 - h0) : 0) }'
	stop $b
}

brokers=("$@")
[ ${#brokers[@]} -gt 0 ] || brokers=(aero aero-nobound kafka)
for b in "${brokers[@]}"; do run $b; done
