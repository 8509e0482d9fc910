#!/usr/bin/env bash
# Issue 26's produce p99 with an Iceberg topic against a plain topic, in one
# run of one broker, with `aerostream bench`:
#   deploy/bench/iceberg-p99.sh        # $ROUNDS rounds; results in $D/results
# Each step: a fresh topic ($P partitions, RF 1; iceberg.enabled=true for
# the Iceberg step), $RATE msg/s of $SIZE B records (acks=all, idempotent,
# linger 1 ms), $WARM s warmup then $SECS s measured, no consumers; the
# topic is deleted after its step, so its committer stops. The broker
# commits every $COMMIT_MS ms (1 s by default, the hardest case; the
# product's default 60 s needs SECS >= 120 to hold commits) to the
# embedded SQL catalog and a local warehouse. Rounds alternate the order
# (plain first, then Iceberg first), so neither side always runs on the
# warmer or the busier machine.
# Per step it prints publish p99/p50, the broker's CPU (bench's /proc
# sampling) and the load average; per Iceberg step also the MB translated
# (aerostream_iceberg_translated_bytes_total) and the broker's CPU seconds per MB
# translated beyond the plain step of the same round.
# PROF=SECS takes a CPU profile of serve during the first Iceberg step
# ($D/results/iceberg.pprof), starting $WARM s in.
# Private ports 43xxx ($PFX) and directory $D, removed at the start.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=${D:-/tmp/h-icep99}
BIN=${BIN:-$D/aerostream}
ROUNDS=${ROUNDS:-3}; RATE=${RATE:-20000}; SIZE=${SIZE:-100}; P=${P:-8}
WARM=${WARM:-5}; SECS=${SECS:-20}; COMMIT_MS=${COMMIT_MS:-1000}; PROF=${PROF:-0}
PFX=${PFX:-43}
BS=127.0.0.1:${PFX}092 HTTP=127.0.0.1:${PFX}001

rm -rf $D/aero $D/results && mkdir -p $D/results
[ -x "$BIN" ] || (cd $root && go build -o $BIN ./tools/aerostream)

cd $D # the embedded defaults, not a checkout's aerostream.toml
AEROSTREAM_ADMIN_PPROF=true AEROSTREAM_TIERED_STORAGE_ENABLED=false \
	$BIN serve --data-dir $D/aero --kafka-listen $BS --native-listen 127.0.0.1:${PFX}091 --http-listen $HTTP \
	--controller-listen 127.0.0.1:${PFX}801 --ring-listen 127.0.0.1:${PFX}701 \
	--iceberg.commit_interval_ms $COMMIT_MS >$D/aero.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null' EXIT
for _ in $(seq 150); do (exec 3<>/dev/tcp/127.0.0.1/${PFX}092) 2>/dev/null && break; sleep 0.2; done
(exec 3<>/dev/tcp/127.0.0.1/${PFX}092) 2>/dev/null || { tail -5 $D/aero.log; exit 1; }

translated() { # bytes translated so far, over all Iceberg topics
	curl -s http://$HTTP/metrics | awk '/^aerostream_iceberg_translated_bytes_total/{s+=$2} END{printf "%.0f", s}'
}
field() { # field JSON EXPR
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" $1
}
declare -A cpu p99
profiled=0
step() { # step ROUND KIND
	local r=$1 kind=$2 cfg=() out=$D/results/r$1-$2 b0 b1 mb
	[ $kind = iceberg ] && cfg=(--topic-config iceberg.enabled=true)
	b0=$(translated)
	if [ $kind = iceberg ] && [ "$PROF" != 0 ] && [ $profiled = 0 ]; then
		profiled=1
		(sleep $WARM; curl -s -o $D/results/iceberg.pprof "http://$HTTP/debug/pprof/profile?seconds=$PROF") &
		PROFPID=$!
	fi
	$BIN bench --brokers $BS --topic-prefix icep99-$kind --partitions $P --subscriptions 0 \
		--message-size $SIZE --rate $RATE --warmup ${WARM}s --duration ${SECS}s \
		--broker-pid $PID "${cfg[@]}" --json $out.json >$out.txt 2>$out.err
	b1=$(translated)
	cpu[$r$kind]=$(field $out.json 'r["broker"]["cpu_avg_percent"]')
	p99[$r$kind]=$(field $out.json 'r["publish_latency_ms"]["p99"]')
	mb=$(python3 -c "print(f'{($b1-$b0)/2**20:.1f}')")
	printf 'round %d %-7s publish p99 %7.2f ms  p50 %6.2f ms  %6.0f msg/s  broker cpu %5.1f%%  translated %s MiB  load %s\n' \
		$r $kind ${p99[$r$kind]} "$(field $out.json 'r["publish_latency_ms"]["p50"]')" \
		"$(field $out.json 'r["publish"]["rate_msg_s"]')" ${cpu[$r$kind]} $mb "$(cut -d' ' -f1-3 /proc/loadavg)"
	sleep 3 # the deleted topic's committer stops (controller poll: 2 s)
}

for r in $(seq $ROUNDS); do
	if [ $((r % 2)) = 1 ]; then step $r plain; step $r iceberg; else step $r iceberg; step $r plain; fi
	python3 - "${p99[${r}iceberg]}" "${p99[${r}plain]}" "${cpu[${r}iceberg]}" "${cpu[${r}plain]}" $RATE $SIZE <<'EOF'
import sys
pi, pp, ci, cp, rate, size = map(float, sys.argv[1:])
mib = rate * size / 2**20  # record bytes per second, what the committer translates
print(f"round ratio iceberg/plain p99 {pi/pp:.2f}x; broker cpu +{ci-cp:.1f}% of a core "
      f"= {(ci-cp)/100/mib:.2f} core-s per MiB translated ({mib:.2f} MiB/s)")
EOF
done
# The profile only: a bare wait would wait for serve too.
[ -z "${PROFPID:-}" ] || wait $PROFPID
