#!/usr/bin/env bash
# Cold replay against hot, with Kafka's own ConsumerPerformance (issue 23):
# a topic whose sealed segments live only in an S3 bucket (MinIO, tiered
# with local.retention.ms=1) read by the same client, in the same run, as a
# same-sized topic read from local segments.
#   deploy/bench/cold-replay.sh STEP
#   start   : $BIN serve tiering to bucket $BUCKET of the MinIO in
#             bin/testservers.env (tierd/objstore/testservers.sh start), on
#             private ports, pprof on
#   fill    : topics $T-hot (local only) and $T-cold (tiered), $P partitions,
#             64 MiB segments, $N x 1 KiB records each; waits for the cold
#             topic's sealed segments to leave the disk
#   restart : restart the broker (an empty fetch cache)
#   replay  : ConsumerPerformance over hot then cold ($ROUNDS rounds, the
#             order swapped each round), MB/s, the ratio, per-response
#             figures, CPU of broker, MinIO, client (ConsumerPerformance)
#             and the whole machine; PROF=SECS takes a CPU profile of the
#             first cold read (of the one read with ONLY),
#             starting $PROFDELAY (6) s in (after the JVM's start and the group's join);
#             ONLY=cold (or hot) reads one topic only
#   stop    : stop the broker
# AERO_DIR (/tmp/aero-cold) and PORT (29290: Kafka +2, native +1, HTTP
# -89, controller -1089, ring -2089) let two engineers run it side by side.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
step=$1
N=${N:-1500000}; P=${P:-4}; T=${T:-replay}; ROUNDS=${ROUNDS:-1}
BIN=${BIN:-$root/bin/aerostream}
BUCKET=${BUCKET:-coldbench}
LIB=/tmp/aerostream-kafka-peer/lib-4.4.0
J="java -Xmx1g -cp $LIB/*"; set -f
DIR=${AERO_DIR:-/tmp/aero-cold}
PORT=${PORT:-29290}
BS=127.0.0.1:$((PORT + 2))
HTTP=127.0.0.1:$((PORT - 89))
set -a; . "$root/bin/testservers.env"; set +a

start() {
	mkdir -p $DIR
	cd $DIR # the embedded defaults, not a checkout's aerostream.toml
	curl -s -o /dev/null -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$AEROSTREAM_TEST_S3_ACCESS_KEY:$AEROSTREAM_TEST_S3_SECRET_KEY" "$AEROSTREAM_TEST_S3_ENDPOINT/$BUCKET"
	AEROSTREAM_TIERED_STORAGE_PROVIDER=s3 AEROSTREAM_TIERED_STORAGE_S3_BUCKET=$BUCKET \
		AEROSTREAM_TIERED_STORAGE_S3_ENDPOINT_URL=$AEROSTREAM_TEST_S3_ENDPOINT AEROSTREAM_TIERED_STORAGE_S3_REGION=us-east-1 \
		AEROSTREAM_TIERED_STORAGE_S3_ACCESS_KEY_ID=$AEROSTREAM_TEST_S3_ACCESS_KEY \
		AEROSTREAM_TIERED_STORAGE_S3_SECRET_ACCESS_KEY=$AEROSTREAM_TEST_S3_SECRET_KEY \
		AEROSTREAM_TIERED_STORAGE_S3_FORCE_PATH_STYLE=true AEROSTREAM_ADMIN_PPROF=true \
		$BIN serve --data-dir $DIR --kafka-listen $BS --native-listen 127.0.0.1:$((PORT + 1)) --http-listen $HTTP \
		--controller-listen 127.0.0.1:$((PORT - 1089)) --ring-listen 127.0.0.1:$((PORT - 2089)) >>$DIR.log 2>&1 &
	echo $! >$DIR.pid
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$((PORT + 2))) 2>/dev/null && break; sleep 0.2; done
	(exec 3<>/dev/tcp/127.0.0.1/$((PORT + 2))) 2>/dev/null || { tail -3 $DIR.log; exit 1; }
	cat $DIR.pid
}

ticks() { awk '{print $14+$15}' /proc/$1/stat; }
kids() { # CPU ticks of this shell's children so far: times must run in this shell, not a subshell
	times >$DIR.times
	tail -1 $DIR.times | tr 'ms' '  ' | awk '{print 100*($1*60+$2+$3*60+$4)}'
}
machine() { head -1 /proc/stat | awk '{print $2+$3+$4+$7+$8+$9, $5+$6}'; } # busy and idle ticks, all cores
fetchsum() { # the broker's Fetch handling time (s) and count so far
	curl -s http://$HTTP/metrics | awk '/^aerostream_kafka_request_duration_seconds_(sum|count)\{api="Fetch"\}/{printf "%s ", $2}'
}
consume() { # consume TOPIC: one ConsumerPerformance read; prints MB/s, the rest on stderr
	local t=$1 out=/tmp/cold-replay-$1.out b0 m0 b1 m1 f0 f1 s0 s1 k0 k1 w0 w1
	b0=$(ticks $(cat $DIR.pid)); m0=$(ticks $AEROSTREAM_TEST_S3_PID); f0=$(fetchsum); s0=$(date +%s.%N)
	kids >$DIR.k0; w0=$(machine)
	$J org.apache.kafka.tools.ConsumerPerformance --bootstrap-server $BS --topic $t --messages $N --timeout 60000 \
		--print-metrics ${CPROPS:+--command-property $CPROPS} >$out 2>&1 || true
	b1=$(ticks $(cat $DIR.pid)); m1=$(ticks $AEROSTREAM_TEST_S3_PID); f1=$(fetchsum); s1=$(date +%s.%N)
	kids >$DIR.k1; w1=$(machine); k0=$(cat $DIR.k0); k1=$(cat $DIR.k1)
	echo "$t: cpu% broker $(echo "($b1-$b0)/($s1-$s0)" | bc -l | cut -c1-5) minio $(echo "($m1-$m0)/($s1-$s0)" | bc -l | cut -c1-5)" \
		"client $(echo "($k1-$k0)/($s1-$s0)" | bc -l | cut -c1-5)" \
		"machine busy $(echo "$w0 $w1" | awk '{printf "%.0f%%", 100*($3-$1)/($3-$1+$4-$2)}')" \
		"load $(cut -d' ' -f1 /proc/loadavg); broker fetch handling ms avg" \
		"$(echo "$f0 $f1" | awk '{if ($4 > $2) printf "%.2f over %d", 1000*($3-$1)/($4-$2), $4-$2}')" >&2
	grep -A1 '^start.time' $out | tail -1 | awk -F, '{print $9, $4}' # fetch.MB.sec (after the join), MB.sec
	grep 'consumer-fetch-manager-metrics' $out | grep -v topic= |
		grep -E ':(fetch-size-avg|records-per-request-avg|fetch-rate|fetch-latency-avg|fetch-total)' |
		sed 's/.*metrics://; s/{client-id=[^}]*}//' | tr -s ' ' | tr '\n' ';' >&2
	echo >&2
}

case $step in
start) start ;;
fill)
	for kind in hot cold; do
		cfg="--config segment.bytes=67108864"
		if [ $kind = cold ]; then cfg="$cfg --config local.retention.ms=1"; else cfg="$cfg --config remote.storage.enable=false"; fi
		$J org.apache.kafka.tools.TopicCommand --bootstrap-server $BS --create --topic $T-$kind --partitions $P \
			--replication-factor 1 $cfg >/dev/null
		$J org.apache.kafka.tools.ProducerPerformance --topic $T-$kind --num-records $N --record-size 1024 --throughput -1 \
			--producer-props bootstrap.servers=$BS acks=1 linger.ms=5 batch.size=1048576 | tail -1
	done
	# Sealed cold segments leave the disk once uploaded; the active one stays.
	for _ in $(seq 300); do
		n=$(find $DIR -path "*$T-cold*" -name '*.log' | wc -l)
		[ "$n" -le "$P" ] && break
		sleep 1
	done
	echo "local cold .log files: $(find $DIR -path "*$T-cold*" -name '*.log' | wc -l) (the active segments)"
	;;
restart)
	kill $(cat $DIR.pid); while kill -0 $(cat $DIR.pid) 2>/dev/null; do sleep 0.2; done
	start
	;;
replay)
	for r in $(seq $ROUNDS); do
		order="hot cold"; [ $((r % 2)) = 0 ] && order="cold hot"
		[ -n "${ONLY:-}" ] && order=$ONLY
		declare -A mb
		for kind in $order; do
			if { [ $kind = cold ] || [ -n "${ONLY:-}" ]; } && [ -n "${PROF:-}" ] && [ $r = 1 ]; then
				(sleep ${PROFDELAY:-6}; curl -s -o /tmp/cold-replay.pprof "http://$HTTP/debug/pprof/profile?seconds=$PROF") &
				cp=$!
			fi
			read -r mb[$kind] whole < <(consume $T-$kind)
			echo "round $r $kind MB/s after the join ${mb[$kind]}, with it $whole"
			[ -n "${cp:-}" ] && wait $cp && unset cp && echo "profile in /tmp/cold-replay.pprof"
		done
		[ -z "${ONLY:-}" ] && echo "round $r cold/hot $(echo "${mb[cold]} / ${mb[hot]}" | bc -l | cut -c1-5)"
	done
	;;
stop) kill $(cat $DIR.pid) ;;
esac
