#!/usr/bin/env bash
# Measures AeroStream and Apache Kafka in one run with `aerostream bench`,
# on the workload of the Kafka-gateway issue: 1 KiB messages, one topic of
# 32 partitions, 4 producers, 4 consumers (one consumer group), acks=1.
#
# For each broker, one at a time (this machine has 2 cores; the other
# broker is stopped meanwhile), on a fresh data directory:
#   (b) publish and end-to-end latency at a fixed 50,000 msg/s;
#   (a) maximum throughput, twice: with the rate unlimited, and at the
#       highest rate the consumers keep up with (`bench --sustainable`:
#       found in short trials, then measured like a fixed rate);
#   (d) maximum consume: the consumers alone draining a backlog of
#       $BENCH_BACKLOG (3,000,000,000) bytes written before they start
#       (`bench --backlog-bytes`), as ConsumerPerformance reads a filled topic;
#   (c) broker CPU (average, % of one core) and peak RSS, sampled from
#       /proc/<pid>/stat and /proc/<pid>/status by the bench during each
#       measured phase.
# Then it prints AeroStream/Kafka ratios and writes them to compare.json.
#
#   deploy/bench/compare.sh                       # both brokers
#   deploy/bench/compare.sh --only kafka          # one of them
#   deploy/bench/compare.sh --duration 60s --warmup 15s --out /tmp/cmp
#   deploy/bench/compare.sh --wait-quiet 300   # on a shared machine: before
#       each run, wait up to 300 s for CPU pressure (PSI some avg10) < 10%
#   deploy/bench/compare.sh --aero-tiering     # AeroStream with its default
#       tiered storage on (uploads to a directory on the same disk)
#   deploy/bench/compare.sh --rounds 3    # three rounds, the brokers'
#       order alternating; the table gives each round's ratios and their
#       median and range
#   deploy/bench/compare.sh --linger 0    # the producers' linger (default
#       1 ms, OpenMessaging Benchmark's linger.ms); 0 sends as soon as a
#       request can be built
#
# Kafka comes from deploy/kafka-peer (Maven Central jars; set up on first
# use) and keeps its defaults, so without tiered storage. AeroStream is
# `aerostream serve`, built from this tree, with its Kafka listener and the
# controller it needs, and, like for like, without tiered storage unless
# --aero-tiering is given: serve's default tiers to a local directory on the
# same disk, which writes every byte twice. When AeroStream's Kafka
# listener does not answer, its side is reported as missing and Kafka is
# still measured.
#
# Defaults: 10 s warmup + 30 s measured per run (after a search of a
# minute or two for the sustainable rate), about 10 minutes a round.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

duration=${BENCH_DURATION:-30s}
warmup=${BENCH_WARMUP:-10s}
rate=${BENCH_RATE:-50000}
backlog=${BENCH_BACKLOG:-3000000000}
runs=${BENCH_RUNS:-fixed max sustainable backlog} # a subset, e.g. BENCH_RUNS=backlog
out=""
only=""
quiet_wait=0
rounds=1
linger=1ms
aero_tiering=false
aero_addr=${AEROSTREAM_KAFKA_ADDR:-127.0.0.1:9092}
# serve's Kafka gateway takes its metadata from serve's own controller.
aero_ctl_addr=${AEROSTREAM_CONTROLLER_ADDR:-127.0.0.1:8001}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
	case $1 in
	--duration) duration=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--wait-quiet) quiet_wait=$2; shift 2 ;;
	--aero-tiering) aero_tiering=true; shift ;;
	--rounds) rounds=$2; shift 2 ;;
	--linger) linger=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "compare.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
case $only in "" | kafka | aerostream) ;; *) echo "compare.sh: --only kafka or aerostream" >&2; exit 2 ;; esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --rounds takes a positive count" >&2; exit 2; }
out=${out:-/tmp/aerostream-compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
command -v python3 >/dev/null || { echo "compare.sh: python3 is needed for the table" >&2; exit 1; }

# The issue's workload. --delete-topics leaves each broker as it found it.
# The topic keeps at most 512 MiB a partition, in 128 MiB segments, on both
# brokers, each checking retention every 10 s (and Kafka deleting at once,
# see deploy/kafka-peer): a sustainable-rate run writes about 50 GB, more
# than this machine's disk has free (unbounded, a run filled it, and Kafka
# took its log directory offline).
workload=(--partitions 32 --producers 4 --consumers 4 --subscriptions 1
	--topic-config retention.bytes=536870912 --topic-config segment.bytes=134217728
	--message-size 1024 --acks 1 --linger "$linger" --consume-mode group
	--warmup "$warmup" --duration "$duration" --drain 15s)

# Built into the output directory: the binary measured is the one recorded
# there, and a bin/aerostream someone is running is left alone.
echo "compare: building aerostream into $out" >&2
(cd "$repo" && go build -o "$out/aerostream" ./tools/aerostream)
bench=$out/aerostream

# Cleanup on any exit: stop whatever this script started.
aero_pid=""
aero_dir=""
kafka_started=0
cleanup() {
	if [[ -n $aero_pid ]] && kill -0 "$aero_pid" 2>/dev/null; then
		kill -TERM "$aero_pid" 2>/dev/null || true
		wait "$aero_pid" 2>/dev/null || true
	fi
	[[ -n $aero_dir ]] && rm -rf "$aero_dir"
	if ((kafka_started)); then "$repo/deploy/kafka-peer/stop.sh" || true; fi
}
trap cleanup EXIT

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# settle lets the previous broker's writeback finish before the next one
# is measured, so neither pays for the other's dirty pages.
settle() {
	sync
	sleep 3
}

# wait_quiet waits, up to --wait-quiet seconds, until no other workload
# keeps the CPUs busy: PSI's "some avg10" for CPU below 10%.
wait_quiet() {
	((quiet_wait > 0)) && [[ -r /proc/pressure/cpu ]] || return 0
	local deadline=$((SECONDS + quiet_wait)) p
	while :; do
		p=$(sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu)
		if awk -v p="$p" 'BEGIN { exit !(p < 10) }'; then
			return 0
		fi
		if ((SECONDS >= deadline)); then
			echo "compare: CPU pressure still ${p}% after ${quiet_wait}s; measuring anyway" >&2
			return 0
		fi
		echo "compare: waiting for a quiet machine (CPU pressure ${p}%)" >&2
		sleep 10
	done
}

# measure NAME BOOTSTRAP PID: the two runs against one broker. Progress
# lines go to the terminal and to NAME-*.log; summaries to NAME-*.txt.
measure() {
	local name=$1 bootstrap=$2 pid=$3 kind r label extra
	loadavg >"$rd/$name-load-before.txt"
	for kind in $runs; do
		r=$rate label="fixed rate $rate msg/s" extra=()
		[[ $kind == max ]] && r=0 label="maximum throughput"
		[[ $kind == sustainable ]] && r=0 label="highest sustainable rate" extra=(--sustainable)
		[[ $kind == backlog ]] && r=0 label="consumers draining a $backlog B backlog" extra=(--backlog-bytes "$backlog")
		wait_quiet
		echo "compare: $name: $label (load average $(loadavg))" >&2
		"$bench" bench --brokers "$bootstrap" "${workload[@]}" --rate "$r" "${extra[@]}" \
			--broker-pid "$pid" --json "$rd/$name-$kind.json" \
			>"$rd/$name-$kind.txt" 2> >(tee "$rd/$name-$kind.log" >&2) || {
			echo "compare: $name: the $kind run failed" >&2
			return 1
		}
		cat "$rd/$name-$kind.txt" >&2
	done
	loadavg >"$rd/$name-load-after.txt"
}

# wait_port HOST:PORT SECONDS PID: until the port accepts, the process dies,
# or time runs out.
wait_port() {
	local host=${1%:*} port=${1##*:} deadline=$((SECONDS + $2)) pid=$3
	until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || return 1
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# --- Apache Kafka -----------------------------------------------------------
run_kafka() {
	"$repo/deploy/kafka-peer/stop.sh" 2>/dev/null || true
	"$repo/deploy/kafka-peer/setup.sh" --fresh >&2
	kafka_pid=$("$repo/deploy/kafka-peer/start.sh")
	kafka_started=1
	# shellcheck source=SCRIPTDIR/../kafka-peer/env.sh
	source "$repo/deploy/kafka-peer/env.sh"
	measure kafka "$KAFKA_BOOTSTRAP" "$kafka_pid" || echo "compare: kafka figures incomplete" >&2
	"$repo/deploy/kafka-peer/stop.sh"
	kafka_started=0
	rm -rf "$KAFKA_DATA" # a fresh format next time; the jars stay
	echo "kafka $KAFKA_VERSION" >"$rd/kafka-version.txt"
	settle
}

# --- AeroStream ---------------------------------------------------------------
run_aerostream() {
	aero_dir=$(mktemp -d /tmp/aerostream-compare-data.XXXXXX)
	# From an empty directory, so no aerostream.toml is picked up; only the
	# Kafka listener and the controller it needs are open (on loopback), so
	# little else on this machine can collide. Otherwise the embedded
	# defaults, as `make run` has them.
	(cd "$aero_dir" && exec env -u AEROSTREAM_CONFIG "$bench" serve --data-dir "$aero_dir/data" \
		--kafka-listen "$aero_addr" --controller-listen "$aero_ctl_addr" \
		--native-listen '' --http-listen '' --ring-listen '' \
		--tiered_storage.enabled="$aero_tiering" --logstore.retention_check_interval_ms=10000 \
		>"$rd/aerostream-serve.log" 2>&1) &
	aero_pid=$!
	if wait_port "$aero_addr" 30 "$aero_pid" &&
		timeout 90 "$bench" bench --brokers "$aero_addr" --partitions 1 --rate 100 \
			--warmup 0s --duration 1s --drain 5s >"$rd/aerostream-probe.txt" 2>&1; then
		measure aerostream "$aero_addr" "$aero_pid" || echo "compare: aerostream figures incomplete" >&2
	else
		echo "compare: AeroStream's Kafka listener on $aero_addr is not serving; skipped (see $rd/aerostream-serve.log, $rd/aerostream-probe.txt)" >&2
		tail -n 5 "$rd/aerostream-serve.log" "$rd/aerostream-probe.txt" >&2 2>/dev/null || true
	fi
	kill -TERM "$aero_pid" 2>/dev/null || true
	wait "$aero_pid" 2>/dev/null || true
	aero_pid=""
	rm -rf "$aero_dir"
	aero_dir=""
	echo "$("$bench" version) tiered_storage.enabled=$aero_tiering" >"$rd/aerostream-version.txt"
	settle
}

# --- Rounds ------------------------------------------------------------------
# One round measures each broker once, in the output directory itself; with
# --rounds N, round i goes to round-i/, and the order alternates (Kafka
# first in odd rounds) so that drift on the machine falls on both alike.
for ((i = 1; i <= rounds; i++)); do
	rd=$out
	((rounds > 1)) && rd=$out/round-$i && mkdir -p "$rd" && echo "compare: round $i of $rounds" >&2
	order=(kafka aerostream)
	((i % 2 == 0)) && order=(aerostream kafka)
	for b in "${order[@]}"; do
		[[ -n $only && $only != "$b" ]] && continue
		"run_$b"
	done
done

# --- Table -------------------------------------------------------------------
python3 "$here/ratios.py" "$out"
