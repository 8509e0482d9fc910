# shellcheck shell=bash disable=SC2034 # sourced: the variables are used by its sourcers
# Shared settings for setup.sh, start.sh and stop.sh; sourced, not run.
# Every value can be overridden from the environment.

# Apache Kafka release, from Maven Central (org.apache.kafka:kafka_2.13).
KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
# Everything the peer writes: jars, config, data, logs, pid file. Outside
# the work tree so that nothing here is ever committed by accident.
KAFKA_PEER_HOME=${KAFKA_PEER_HOME:-/tmp/aerostream-kafka-peer}
# Client and controller listeners, loopback only. 19092 keeps clear of
# AeroStream's own :9092.
KAFKA_HOST=${KAFKA_HOST:-127.0.0.1}
KAFKA_PORT=${KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
# KRaft identity: this node's id and the static voter set. cluster.sh sets
# them for its three nodes (and KAFKA_CLUSTER_ID, one for all, and
# KAFKA_INTERNAL_RF, the replication factor of internal topics).
KAFKA_NODE_ID=${KAFKA_NODE_ID:-1}
KAFKA_VOTERS=${KAFKA_VOTERS:-$KAFKA_NODE_ID@$KAFKA_HOST:$KAFKA_CONTROLLER_PORT}
KAFKA_INTERNAL_RF=${KAFKA_INTERNAL_RF:-1}
# Broker defaults for new topics.
KAFKA_NUM_PARTITIONS=${KAFKA_NUM_PARTITIONS:-1}
# JVM heap: kafka-server-start.sh's default.
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g}
# kafka-run-class.sh's default GC and JVM flags, so the peer runs as the
# shipped scripts would run it.
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
JAVA=${JAVA:-java}

KAFKA_LIB=$KAFKA_PEER_HOME/lib-$KAFKA_VERSION
KAFKA_CONF=$KAFKA_PEER_HOME/config
KAFKA_DATA=$KAFKA_PEER_HOME/data
KAFKA_LOGS=$KAFKA_PEER_HOME/logs
KAFKA_PID_FILE=$KAFKA_PEER_HOME/kafka.pid
KAFKA_BOOTSTRAP=$KAFKA_HOST:$KAFKA_PORT

# kafka_pid prints the pid of the running peer, or fails.
kafka_pid() {
	local pid
	[[ -f $KAFKA_PID_FILE ]] || return 1
	pid=$(<"$KAFKA_PID_FILE")
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	# A recycled pid is not ours: it must be a java running kafka.Kafka.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka ' || return 1
	echo "$pid"
}
