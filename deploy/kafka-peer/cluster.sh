#!/usr/bin/env bash
# Three Kafka peers on loopback as one cluster: three KRaft nodes (broker and
# controller each, a static three-voter quorum, internal topics at RF 3),
# each a peer of setup.sh/start.sh with a home and ports of its own. The
# jars are those of the single peer (setup.sh fetches them once).
#   cluster.sh start   # starts the three, waits until all serve, prints their pids
#   cluster.sh stop    # stop.sh on each
#   cluster.sh pids    # the running nodes' pids
# Bootstrap: 127.0.0.1:19201,127.0.0.1:19202,127.0.0.1:19203 (controllers
# on 19211..19213); KAFKA_CLUSTER_HOME (/tmp/aerostream-kafka-cluster) holds
# n1..n3. FRESH=1 wipes their data before start.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-300} # three JVMs starting at once on a small machine
base=${KAFKA_CLUSTER_HOME:-/tmp/aerostream-kafka-cluster}
version=${KAFKA_VERSION:-4.4.0}
lib=${KAFKA_LIB_DIR:-/tmp/aerostream-kafka-peer/lib-$version}
export KAFKA_VOTERS="1@127.0.0.1:19211,2@127.0.0.1:19212,3@127.0.0.1:19213" KAFKA_INTERNAL_RF=3

node() { # node ID CMD...: CMD with node ID's settings
	local id=$1
	shift
	KAFKA_PEER_HOME=$base/n$id KAFKA_NODE_ID=$id KAFKA_PORT=$((19200 + id)) KAFKA_CONTROLLER_PORT=$((19210 + id)) "$@"
}

case ${1:-} in
start)
	[[ -f $lib/.complete ]] || "$here/setup.sh" >&2 # the single peer's jars
	mkdir -p "$base"
	[[ -f $base/cluster.id ]] || java -cp "$lib/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1 >"$base/cluster.id"
	export KAFKA_CLUSTER_ID=$(<"$base/cluster.id")
	for id in 1 2 3; do
		mkdir -p "$base/n$id"
		ln -sfn "$lib" "$base/n$id/lib-$version"
		node "$id" "$here/setup.sh" ${FRESH:+--fresh} >/dev/null
	done
	# Together: a node is ready only once the quorum has a leader.
	starts=()
	for id in 1 2 3; do
		node "$id" "$here/start.sh" >"$base/n$id.start" &
		starts+=($!)
	done
	for p in "${starts[@]}"; do wait "$p"; done
	cat "$base"/n[123].start
	;;
stop)
	for id in 1 2 3; do node "$id" "$here/stop.sh" & done
	wait
	;;
pids)
	for id in 1 2 3; do cat "$base/n$id/kafka.pid" 2>/dev/null; done
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
