#!/usr/bin/env bash
# Starts the Kafka peer that setup.sh prepared (running setup.sh first if it
# has not been), in the background, and waits until it serves clients.
# Prints the broker's pid on stdout. The pid is kept in $KAFKA_PID_FILE.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/env.sh
source "$here/env.sh"

if pid=$(kafka_pid); then
	echo "start.sh: kafka already running (pid $pid) on $KAFKA_BOOTSTRAP" >&2
	echo "$pid"
	exit 0
fi
if [[ ! -f $KAFKA_LIB/.complete || ! -f $KAFKA_DATA/meta.properties || ! -f $KAFKA_CONF/server.properties ]]; then
	"$here/setup.sh" >&2
fi

# Refuse a taken port now, rather than waiting for the JVM to say so.
for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
	if (exec 3<>"/dev/tcp/$KAFKA_HOST/$port") 2>/dev/null; then
		echo "start.sh: $KAFKA_HOST:$port is already in use" >&2
		exit 1
	fi
done

mkdir -p "$KAFKA_LOGS"
: >"$KAFKA_LOGS/stdout.log"
# shellcheck disable=SC2086 # the option variables are word lists
nohup "$JAVA" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS \
	-Dlog4j2.configurationFile="$KAFKA_CONF/log4j2.properties" \
	-Dkafka.logs.dir="$KAFKA_LOGS" \
	-cp "$KAFKA_LIB/*" kafka.Kafka "$KAFKA_CONF/server.properties" \
	>>"$KAFKA_LOGS/stdout.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$KAFKA_PID_FILE"

# Ready when the client port accepts and the server logged its start.
deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-90}))
until grep -q 'Kafka Server started' "$KAFKA_LOGS/server.log" 2>/dev/null &&
	(exec 3<>"/dev/tcp/$KAFKA_HOST/$KAFKA_PORT") 2>/dev/null; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start.sh: kafka exited during start; last lines of $KAFKA_LOGS:" >&2
		tail -n 20 "$KAFKA_LOGS/stdout.log" "$KAFKA_LOGS/server.log" >&2 2>/dev/null || true
		rm -f "$KAFKA_PID_FILE"
		exit 1
	fi
	if ((SECONDS > deadline)); then
		echo "start.sh: kafka (pid $pid) not ready after ${KAFKA_START_TIMEOUT:-90}s; see $KAFKA_LOGS" >&2
		exit 1
	fi
	sleep 0.5
done
echo "start.sh: kafka $KAFKA_VERSION running (pid $pid) on $KAFKA_BOOTSTRAP, logs in $KAFKA_LOGS" >&2
echo "$pid"
