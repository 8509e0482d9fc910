#!/usr/bin/env bash
# Stops the Kafka peer started by start.sh: SIGTERM (a controlled shutdown),
# then SIGKILL if it has not exited within KAFKA_STOP_TIMEOUT seconds (30).
# Only the pid in $KAFKA_PID_FILE is signalled, and only if it is a java
# running kafka.Kafka.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/env.sh
source "$here/env.sh"

if ! pid=$(kafka_pid); then
	echo "stop.sh: kafka is not running" >&2
	rm -f "$KAFKA_PID_FILE"
	exit 0
fi
kill -TERM "$pid"
deadline=$((SECONDS + ${KAFKA_STOP_TIMEOUT:-30}))
while kill -0 "$pid" 2>/dev/null; do
	if ((SECONDS > deadline)); then
		echo "stop.sh: kafka (pid $pid) still running after SIGTERM; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.2
done
rm -f "$KAFKA_PID_FILE"
echo "stop.sh: kafka (pid $pid) stopped" >&2
