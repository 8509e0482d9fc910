#!/usr/bin/env bash
# Sets up Apache Kafka 4.x as a single KRaft node (broker and controller in
# one process) on this machine, from Maven Central jars only: a throwaway pom
# names kafka_2.13 and Maven copies it and every runtime dependency into
# lib-<version>/. Then it writes server.properties and a log4j2 config and
# formats the storage directory. start.sh runs the broker, stop.sh stops it.
#
#   deploy/kafka-peer/setup.sh           # idempotent; keeps existing data
#   deploy/kafka-peer/setup.sh --fresh   # wipe data and format again
#
# Needs java (17+) and mvn. Settings: env.sh.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/env.sh
source "$here/env.sh"

fresh=0
for arg in "$@"; do
	case $arg in
	--fresh) fresh=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
	esac
done

for tool in "$JAVA" mvn; do
	command -v "$tool" >/dev/null || { echo "setup.sh: $tool not found (apt-get install openjdk-17-jre-headless maven)" >&2; exit 1; }
done

mkdir -p "$KAFKA_PEER_HOME" "$KAFKA_CONF" "$KAFKA_LOGS"

# 1. Jars. The .complete marker is written last, so an interrupted copy is
# redone rather than half-used.
if [[ ! -f $KAFKA_LIB/.complete ]]; then
	echo "setup.sh: resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION from Maven Central into $KAFKA_LIB"
	rm -rf "$KAFKA_LIB"
	if ! mvn -B -Dstyle.color=never -f "$here/pom.xml" \
		-Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies \
		-DincludeScope=runtime \
		-DoutputDirectory="$KAFKA_LIB" >"$KAFKA_LOGS/mvn.log" 2>&1; then
		tail -n 30 "$KAFKA_LOGS/mvn.log" >&2
		echo "setup.sh: mvn failed; full log in $KAFKA_LOGS/mvn.log" >&2
		exit 1
	fi
	[[ -f $KAFKA_LIB/kafka_2.13-$KAFKA_VERSION.jar ]] || { echo "setup.sh: kafka_2.13-$KAFKA_VERSION.jar missing after resolution" >&2; exit 1; }
	touch "$KAFKA_LIB/.complete"
fi
echo "setup.sh: $(find "$KAFKA_LIB" -name '*.jar' | wc -l) jars in $KAFKA_LIB"

# 2. Config. A KRaft node in combined mode with a static quorum: one voter
# and internal topics at replication factor 1, unless cluster.sh runs it as
# one of three.
cat >"$KAFKA_CONF/server.properties" <<PROPS
# Written by deploy/kafka-peer/setup.sh; edits are overwritten.
process.roles=broker,controller
node.id=$KAFKA_NODE_ID
controller.quorum.voters=$KAFKA_VOTERS
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=$KAFKA_NUM_PARTITIONS
default.replication.factor=$KAFKA_INTERNAL_RF
min.insync.replicas=1
offsets.topic.replication.factor=$KAFKA_INTERNAL_RF
offsets.topic.num.partitions=50
transaction.state.log.replication.factor=$KAFKA_INTERNAL_RF
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$KAFKA_INTERNAL_RF
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
# Kafka's shipped defaults for the rest (page cache, no fsync per message).
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.segment.bytes=1073741824
log.retention.hours=168
# Kafka's defaults are 300000 (5 minutes) and 60000. compare.sh's runs
# bound their topics with retention.bytes, which only a check inside the
# run enforces, and a deleted segment (or topic) holds its disk space until
# the delete delay is over: at 500 MB/s a minute of it is 30 GB. A
# sustainable-rate run writes more than this machine's disk holds.
log.retention.check.interval.ms=10000
log.segment.delete.delay.ms=1000
PROPS

cat >"$KAFKA_CONF/log4j2.properties" <<PROPS
# Written by deploy/kafka-peer/setup.sh. Broker log to a file, warnings to
# the console (start.sh sends the console to the same directory).
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = $KAFKA_LOGS/server.log
appender.file.filePattern = $KAFKA_LOGS/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 100MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = info
PROPS

# 3. Storage. Formatting twice is refused by Kafka, and a running broker
# holds the directory, so --fresh first checks that none is running.
if [[ $fresh == 1 ]]; then
	if pid=$(kafka_pid); then
		echo "setup.sh: kafka is running (pid $pid); run stop.sh before --fresh" >&2
		exit 1
	fi
	rm -rf "$KAFKA_DATA"
fi
if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
	cluster_id=${KAFKA_CLUSTER_ID:-$("$JAVA" -cp "$KAFKA_LIB/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)}
	"$JAVA" -cp "$KAFKA_LIB/*" -Dlog4j2.configurationFile="$KAFKA_CONF/log4j2.properties" \
		kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_CONF/server.properties"
fi
echo "setup.sh: ready; start with $here/start.sh (bootstrap $KAFKA_BOOTSTRAP)"
