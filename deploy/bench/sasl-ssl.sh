#!/usr/bin/env bash
# Issue 28's closing figures: produce maximum and p99 over SASL_SSL
# (SCRAM-SHA-256) with the authorizer on, against PLAINTEXT, for AeroStream
# and for Kafka 4.4.0 (StandardAuthorizer), in one run, with Kafka's own
# ProducerPerformance, and the maximum again with kcat (librdkafka, whose
# TLS is OpenSSL's rather than the JVM's; see RDK below):
#   deploy/bench/sasl-ssl.sh      # both rounds; results in $D/results
# Each step: topic $T (8 partitions, RF 1), 1 KiB records, acks=all,
# linger.ms=5, 1 MiB batches; p99 = $RATE msg/s for $SECS s, then max =
# $NMAX records at full speed (the fixed rate first, so the max run's disk
# writeback does not land in its latencies). The max run also reports its
# steady state, the records after the first $WARM (ProducerPerformance's
# --warmup-records): each run is a new JVM, and on SASL_SSL most of the
# client's extra CPU in its first few hundred thousand records is the JIT
# and C1-compiled GHASH before C2's intrinsics, not TLS (bench README).
# One broker at a time, two rounds, the second in the swapped order (broker
# and listener), so neither side always runs on the warmer or the busier
# machine. Kafka serves both listeners from one process. AeroStream has one
# Kafka listener per process, so it restarts on the same data directory to
# change it; its config is otherwise the same.
# The producer is alice, who is no super user: she holds WRITE and DESCRIBE
# on $T only, so every produce goes through ACL matching, not the super-user
# shortcut. PLAINTEXT's principal, User:ANONYMOUS, is a super user on both
# brokers (Kafka's controller listener needs it anyway): the baseline runs
# with the authorizer loaded but not matching.
# Private ports ($PFX: 46 = 46092, 46192...) and a private home, removed at the end.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=${D:-/tmp/sasl-bench}
BIN=${BIN:-$D/aerostream}
T=${T:-sasl}; RATE=${RATE:-20000}; SECS=${SECS:-15}; NMAX=${NMAX:-500000} WARM=${WARM:-250000}
LIB=/tmp/aerostream-kafka-peer/lib-4.4.0
J="java -Xmx1g -cp $LIB/*"; set -f
PFX=${PFX:-46}
A_PLAIN=127.0.0.1:${PFX}092 A_SASL=127.0.0.1:${PFX}093
K_PLAIN=127.0.0.1:${PFX}192 K_SASL=127.0.0.1:${PFX}194
export KAFKA_PEER_HOME=$D/kpeer KAFKA_PORT=${PFX}192 KAFKA_CONTROLLER_PORT=${PFX}193
PW=changeit TLS=$D/tls
# kcat runs on the librdkafka of confluent-kafka's wheel (make kafka-clients),
# not Debian's 2.0.2: before 2.6.1 librdkafka repeats its own nonce in
# SCRAM's client-final message, which Kafka 4.x refuses as invalid
# credentials (AeroStream, like Kafka 3.8.1 to 3.9, accepts a final nonce
# that ends with the server's). Both brokers get the same kcat.
KAFKA_VENV=${KAFKA_VENV:-$root/bin/kafka-venv}
RDK=$(find $KAFKA_VENV/lib -path '*/confluent_kafka.libs/librdkafka-*.so.1' 2>/dev/null | head -1 || true)
[ -n "$RDK" ] || { echo "no librdkafka of confluent-kafka in $KAFKA_VENV: run make kafka-clients" >&2; exit 1; }
JAAS='org.apache.kafka.common.security.scram.ScramLoginModule required'

certs() { # a CA and a server certificate for 127.0.0.1; PKCS12 stores for Kafka
	mkdir -p $TLS && cd $TLS
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca -keyout ca-key.pem -out ca.pem 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile san.ext -out server.pem 2>/dev/null
	openssl pkcs12 -export -in server.pem -inkey server-key.pem -name server -passout pass:$PW -out keystore.p12
	keytool -importcert -noprompt -alias ca -file ca.pem -storetype PKCS12 -keystore truststore.p12 -storepass $PW >/dev/null
	cat >client-sasl.properties <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=$JAAS username="alice" password="alice-secret";
ssl.truststore.location=$TLS/truststore.p12
ssl.truststore.type=PKCS12
ssl.truststore.password=$PW
EOF
	: >client-plain.properties
	cd - >/dev/null
}

aero_conf() { # aero_conf LISTENER: serve's config, with only listeners.kafka differing
	cat >$D/aero-$1.toml <<EOF
data_dir = "$D/aero"
[listeners]
kafka = "$1://$([ $1 = PLAINTEXT ] && echo $A_PLAIN || echo $A_SASL)"
native = "127.0.0.1:${PFX}091"
http = "127.0.0.1:${PFX}001"
controller = "127.0.0.1:${PFX}801"
ring = "127.0.0.1:${PFX}701"
[tiered_storage]
enabled = false
[tls]
cert_file = "$TLS/server.pem"
key_file = "$TLS/server-key.pem"
ca_file = "$TLS/ca.pem"
[auth]
sasl_mechanisms = ["SCRAM-SHA-256"]
authorizer = true
super_users = ["User:admin", "User:ANONYMOUS"]
bootstrap_user = "admin"
EOF
}

aero_start() { # aero_start LISTENER
	local port=${PFX}092
	[ $1 = SASL_SSL ] && port=${PFX}093
	AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret $BIN serve --config $D/aero-$1.toml >>$D/aero.log 2>&1 &
	echo $! >$D/aero.pid
	for _ in $(seq 150); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && return; sleep 0.2; done
	echo "aero did not start; see $D/aero.log" >&2; exit 1
}
aero_stop() { local p; p=$(cat $D/aero.pid); kill $p; while kill -0 $p 2>/dev/null; do sleep 0.2; done; }

aero_setup() { # first start: alice, her ACLs and the topic, through the controller
	aero_conf PLAINTEXT; aero_conf SASL_SSL; aero_start PLAINTEXT
	printf 'alice-secret' | $BIN user create alice --mechanism SCRAM-SHA-256 --password-stdin --controller 127.0.0.1:${PFX}801 --data-dir $D/aero
	$BIN acl add --allow User:alice --operation WRITE,DESCRIBE --topic $T --controller 127.0.0.1:${PFX}801 --data-dir $D/aero
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $A_PLAIN --create --topic $T --partitions 8 --replication-factor 1 >/dev/null
	aero_stop
}

kafka_setup() { # the peer's config (setup.sh), plus a SASL_SSL listener and the authorizer
	mkdir -p $KAFKA_PEER_HOME; ln -sfn $LIB $KAFKA_PEER_HOME/lib-4.4.0
	$root/deploy/kafka-peer/setup.sh --fresh >/dev/null
	local c=$KAFKA_PEER_HOME/config/server.properties
	sed -i "/^listeners=\|^advertised.listeners=\|^listener.security.protocol.map=/d" $c
	cat >>$c <<EOF
listeners=PLAINTEXT://$K_PLAIN,SASL_SSL://$K_SASL,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$K_PLAIN,SASL_SSL://$K_SASL
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-256
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$JAAS;
ssl.keystore.type=PKCS12
ssl.keystore.location=$TLS/keystore.p12
ssl.keystore.password=$PW
ssl.key.password=$PW
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
EOF
	# SCRAM users exist from the first start when added at format time.
	rm -rf $KAFKA_PEER_HOME/data
	$J kafka.tools.StorageTool format -t "$($J kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)" -c $c \
		--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]' \
		--add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]' >/dev/null
	$root/deploy/kafka-peer/start.sh >/dev/null
	$J org.apache.kafka.tools.TopicCommand --bootstrap-server $K_PLAIN --create --topic $T --partitions 8 --replication-factor 1 >/dev/null
	$J org.apache.kafka.tools.AclCommand --bootstrap-server $K_PLAIN --add --allow-principal User:alice \
		--operation Write --operation Describe --topic $T >/dev/null
	$root/deploy/kafka-peer/stop.sh >/dev/null
}

pp() { # pp BROKER LISTENER NAME ARGS...: one ProducerPerformance run, its summary line
	local b=$1 l=$2 name=$3 bs cfg=$TLS/client-plain.properties pid t0 t1 out st
	shift 3
	case $b-$l in
	aero-PLAINTEXT) bs=$A_PLAIN ;; aero-SASL_SSL) bs=$A_SASL ;;
	kafka-PLAINTEXT) bs=$K_PLAIN ;; kafka-SASL_SSL) bs=$K_SASL ;;
	esac
	[ $l = SASL_SSL ] && cfg=$TLS/client-sasl.properties
	# CPU seconds of broker and client per run: client and broker share the
	# two cores, so either one's cost of TLS slows the other.
	[ $b = aero ] && pid=$(cat $D/aero.pid) || pid=$(cat $KAFKA_PEER_HOME/kafka.pid)
	t0=$(awk '{print $14+$15}' /proc/$pid/stat)
	out=$(/usr/bin/time -o $D/time.out -f '%U %S' $J org.apache.kafka.tools.ProducerPerformance --topic $T --record-size 1024 "$@" \
		--producer.config $cfg --producer-props bootstrap.servers=$bs acks=all linger.ms=5 batch.size=1048576 | grep "records sent")
	t1=$(awk '{print $14+$15}' /proc/$pid/stat)
	st=$(echo "$out" | grep "steady state" || true)
	out=$(echo "$out" | grep -v "steady state" | tail -1)
	echo "$b $l $name $out broker-cpu-s $(echo $t0 $t1 | awk '{printf "%.1f", ($2 - $1) / 100}') client-cpu-s $(awk '{printf "%.1f", $1 + $2}' $D/time.out)" | tee -a $D/results
	[ -z "$st" ] || echo "$b $l steady $st" | tee -a $D/results
}

kc() { # kc BROKER LISTENER: kcat (librdkafka, OpenSSL) sends $NMAX 1 KiB records at full speed
	local b=$1 l=$2 bs x=() pid t0 t1 s e
	case $b-$l in
	aero-PLAINTEXT) bs=$A_PLAIN ;; aero-SASL_SSL) bs=$A_SASL ;;
	kafka-PLAINTEXT) bs=$K_PLAIN ;; kafka-SASL_SSL) bs=$K_SASL ;;
	esac
	[ $l = SASL_SSL ] && x=(-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username=alice
		-X sasl.password=alice-secret -X ssl.ca.location=$TLS/ca.pem)
	[ $b = aero ] && pid=$(cat $D/aero.pid) || pid=$(cat $KAFKA_PEER_HOME/kafka.pid)
	t0=$(awk '{print $14+$15}' /proc/$pid/stat)
	s=$(date +%s.%N)
	if ! LD_LIBRARY_PATH=$D/rdkafka /usr/bin/time -o $D/time.out -f '%U %S' kcat -P -b $bs -t $T "${x[@]}" -X acks=all -X linger.ms=5 -X batch.size=1048576 -l $D/records; then
		echo "$b $l kcat-failed" | tee -a $D/results
		return 0
	fi
	e=$(date +%s.%N)
	t1=$(awk '{print $14+$15}' /proc/$pid/stat)
	echo "$b $l kcat $NMAX records $(echo $s $e | awk -v n=$NMAX '{printf "%.0f", n / ($2 - $1)}') records/sec" \
		"broker-cpu-s $(echo $t0 $t1 | awk '{printf "%.1f", ($2 - $1) / 100}') client-cpu-s $(awk '{printf "%.1f", $1 + $2}' $D/time.out)" | tee -a $D/results
}

measure() { # measure BROKER LISTENER
	pp $1 $2 warmup --num-records 100000 --throughput -1 >/dev/null
	pp $1 $2 p99 --num-records $((RATE * SECS)) --throughput $RATE
	# Each max run starts with the same page cache: Kafka keeps what it wrote
	# there and AeroStream drops it, and at millions of records the next run
	# on a full cache pays for the kernel's reclaim in its own writes.
	sync; echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || true
	pp $1 $2 max --num-records $NMAX --throughput -1 --warmup-records $WARM
	kc $1 $2
}

round() { # round BROKER LISTENER... : one broker process (aero: one per listener)
	local b=$1 l
	shift
	[ $b = kafka ] && $root/deploy/kafka-peer/start.sh >/dev/null
	for l in "$@"; do
		[ $b = aero ] && aero_start $l
		measure $b $l
		[ $b = aero ] && aero_stop
	done
	[ $b = kafka ] && $root/deploy/kafka-peer/stop.sh >/dev/null
	return 0
}

rm -rf $D/aero $D/kpeer $D/tls $D/results $D/rdkafka
mkdir -p $D/rdkafka && ln -s $RDK $D/rdkafka/librdkafka.so.1
certs; aero_setup; kafka_setup
# kcat's records: 1,023 bytes and its line delimiter each.
awk -v n=$NMAX 'BEGIN { s = sprintf("%1023s", ""); gsub(/ /, "x", s); for (i = 0; i < n; i++) print s }' >$D/records
round aero PLAINTEXT SASL_SSL; round kafka PLAINTEXT SASL_SSL
round kafka SASL_SSL PLAINTEXT; round aero SASL_SSL PLAINTEXT
# The table: means over both rounds of the max runs (records/s, CPU seconds)
# and of the rate runs (p99 ms).
awk '{k=$1" "$2} $3=="max"{r[k]+=$7; nr[k]++; bc[k]+=$(NF-2); cc[k]+=$NF}
	$3=="steady"{s[k]+=$9; ns[k]++}
	$3=="p99"{for(i=1;i<=NF;i++) if($i ~ /^99th/){p[k]+=$(i-2); np[k]++}}
	$3=="kcat"{kr[k]+=$6; nk[k]++; kb[k]+=$(NF-2); kc[k]+=$NF}
	END{for(k in r) printf "%-19s max %9.0f rec/s (steady %9.0f) (cpu-s broker %5.1f client %5.1f)  p99 at '$RATE'/s %7.1f ms  kcat max %9.0f rec/s (cpu-s broker %5.1f client %5.1f)\n",
		k, r[k]/nr[k], ns[k] ? s[k]/ns[k] : 0, bc[k]/nr[k], cc[k]/nr[k], p[k]/np[k], nk[k] ? kr[k]/nk[k] : 0, nk[k] ? kb[k]/nk[k] : 0, nk[k] ? kc[k]/nk[k] : 0}' $D/results | sort
[ -n "${KEEP:-}" ] || rm -rf $D/aero $D/kpeer $D/aero.log $D/records $D/rdkafka
