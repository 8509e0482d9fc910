#!/usr/bin/env bash
# Installs, starts and stops the real object storage servers the provider
# acceptance tests run against (DESIGN §7: real parts at the edges):
#
#   MinIO            for s3/    (go install, pinned pseudo-version)
#   fake-gcs-server  for gcs/   (go install, pinned version)
#   Azurite          for azure/ (npm install into bin/, never global)
#
#   tierd/objstore/testservers.sh start   install if missing, start, wait until
#                                         healthy, write bin/testservers.env
#   tierd/objstore/testservers.sh stop    stop them and delete their data
#   tierd/objstore/testservers.sh env     print the env file's path
#
# Installs are cached in bin/ under versioned names, so a version bump here
# reinstalls and a second run starts in seconds. Servers listen on loopback
# only, on fixed ports from AEROSTREAM_TESTSERVERS_PORT (default 39100):
# +0 MinIO, +1 MinIO console, +2 fake-gcs-server, +3 Azurite blob. Data lives
# in a fresh temporary directory that stop removes.
#
# The env file sets AEROSTREAM_TEST_{S3,GCS,AZURE}_*; the provider tests skip
# unless those are set, and `make test-objstore` sets them from the file.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c  # github.com/minio/minio@latest on 2026-11-29
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$ROOT/bin
STATE=$BIN/testservers
ENV_FILE=$BIN/testservers.env
PORT=${AEROSTREAM_TESTSERVERS_PORT:-39100}
S3_PORT=$PORT
S3_CONSOLE_PORT=$((PORT + 1))
GCS_PORT=$((PORT + 2))
AZURE_PORT=$((PORT + 3))

# Test-only credentials for servers bound to loopback. The Azurite key is
# Azurite's published development key for devstoreaccount1.
S3_ACCESS_KEY=aerostream
S3_SECRET_KEY=aerostream-test-secret
AZURE_ACCOUNT=devstoreaccount1
AZURE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

MINIO=$BIN/minio-$MINIO_VERSION
FAKE_GCS=$BIN/fake-gcs-server-$FAKE_GCS_VERSION
AZURITE_DIR=$BIN/azurite-$AZURITE_VERSION
AZURITE=$AZURITE_DIR/node_modules/.bin/azurite-blob

log() { echo "testservers: $*" >&2; }
die() { log "$*"; exit 1; }

# go_install MODULE@VERSION BINARY TARGET: build into a scratch GOBIN and move
# the binary into place only when complete, so an interrupted install is
# redone rather than half-used.
go_install() {
	local pkg=$1 name=$2 target=$3 tmp
	[[ -x $target ]] && return 0
	log "installing $pkg into bin/ (first run only; a cold build of MinIO takes minutes)"
	tmp=$(mktemp -d "$BIN/.install.XXXXXX")
	if ! GOBIN=$tmp go install "$pkg"; then
		rm -rf "$tmp"
		die "go install $pkg failed"
	fi
	mv "$tmp/$name" "$target"
	rm -rf "$tmp"
}

install_azurite() {
	[[ -x $AZURITE ]] && return 0
	command -v npm >/dev/null || die "npm is needed to install Azurite (apt-get install npm)"
	log "installing azurite@$AZURITE_VERSION into $AZURITE_DIR"
	local tmp
	tmp=$(mktemp -d "$BIN/.install.XXXXXX")
	if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2; then
		rm -rf "$tmp"
		die "npm install azurite@$AZURITE_VERSION failed"
	fi
	chmod 755 "$tmp"
	rm -rf "$AZURITE_DIR"
	mv "$tmp" "$AZURITE_DIR"
}

install_all() {
	mkdir -p "$BIN"
	go_install "github.com/minio/minio@$MINIO_VERSION" minio "$MINIO"
	go_install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" fake-gcs-server "$FAKE_GCS"
	install_azurite
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_http NAME URL PIDFILE: poll until URL answers with any HTTP status
# (Azurite answers an anonymous request with an error status, which still
# means it is serving), failing fast if the process died.
wait_http() {
	local name=$1 url=$2 pid
	pid=$(cat "$STATE/$name.pid")
	for _ in $(seq 1 300); do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$DATA/$name.log" >&2 || true
			die "$name exited during startup (log above: $DATA/$name.log)"
		fi
		if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true) =~ ^[1-5][0-9][0-9]$ ]]; then
			return 0
		fi
		sleep 0.2
	done
	tail -n 30 "$DATA/$name.log" >&2 || true
	die "$name did not become healthy at $url within 60s"
}

# spawn NAME CMD...: start a server in its own session so stop can end its
# whole process group (Azurite is node plus children).
spawn() {
	local name=$1
	shift
	setsid "$@" >"$DATA/$name.log" 2>&1 </dev/null &
	echo $! >"$STATE/$name.pid"
}

start() {
	command -v curl >/dev/null || die "curl is needed for health checks"
	install_all
	stop quiet
	for p in $S3_PORT $S3_CONSOLE_PORT $GCS_PORT $AZURE_PORT; do
		port_free "$p" || die "port $p is taken; set AEROSTREAM_TESTSERVERS_PORT to another base"
	done
	mkdir -p "$STATE"
	DATA=$(mktemp -d "${TMPDIR:-/tmp}/aerostream-testservers.XXXXXX")
	echo "$DATA" >"$STATE/data-dir"

	MINIO_ROOT_USER=$S3_ACCESS_KEY MINIO_ROOT_PASSWORD=$S3_SECRET_KEY \
		MINIO_BROWSER=off MINIO_UPDATE=off \
		spawn minio "$MINIO" server --quiet --address "127.0.0.1:$S3_PORT" \
		--console-address "127.0.0.1:$S3_CONSOLE_PORT" "$DATA/minio"
	spawn fake-gcs-server "$FAKE_GCS" -scheme http -host 127.0.0.1 -port "$GCS_PORT" \
		-external-url "http://127.0.0.1:$GCS_PORT" -public-host "127.0.0.1:$GCS_PORT" \
		-backend filesystem -filesystem-root "$DATA/gcs" -log-level warn
	spawn azurite "$AZURITE" --blobHost 127.0.0.1 --blobPort "$AZURE_PORT" \
		--location "$DATA/azurite" --silent --skipApiVersionCheck --disableProductStyleUrl --disableTelemetry

	wait_http minio "http://127.0.0.1:$S3_PORT/minio/health/live"
	wait_http fake-gcs-server "http://127.0.0.1:$GCS_PORT/storage/v1/b"
	wait_http azurite "http://127.0.0.1:$AZURE_PORT/$AZURE_ACCOUNT?comp=list"

	cat >"$ENV_FILE.tmp" <<ENV
# Written by tierd/objstore/testservers.sh start; removed by stop.
AEROSTREAM_TEST_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
AEROSTREAM_TEST_S3_ACCESS_KEY=$S3_ACCESS_KEY
AEROSTREAM_TEST_S3_SECRET_KEY=$S3_SECRET_KEY
AEROSTREAM_TEST_S3_PID=$(cat "$STATE/minio.pid")
AEROSTREAM_TEST_GCS_ENDPOINT=http://127.0.0.1:$GCS_PORT
AEROSTREAM_TEST_AZURE_ENDPOINT=http://127.0.0.1:$AZURE_PORT/$AZURE_ACCOUNT
AEROSTREAM_TEST_AZURE_ACCOUNT=$AZURE_ACCOUNT
AEROSTREAM_TEST_AZURE_KEY=$AZURE_KEY
ENV
	mv "$ENV_FILE.tmp" "$ENV_FILE"
	log "MinIO :$S3_PORT, fake-gcs-server :$GCS_PORT, Azurite :$AZURE_PORT up; env in $ENV_FILE"
}

stop() {
	local quiet=${1:-}
	rm -f "$ENV_FILE"
	[[ -d $STATE ]] || return 0
	for name in minio fake-gcs-server azurite; do
		local f=$STATE/$name.pid pid
		[[ -f $f ]] || continue
		pid=$(cat "$f")
		# Only a process we started: the pid leads its own session (setsid).
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
		rm -f "$f"
	done
	if [[ -f $STATE/data-dir ]]; then
		rm -rf "$(cat "$STATE/data-dir")"
		rm -f "$STATE/data-dir"
	fi
	[[ -n $quiet ]] || log "stopped"
}

case ${1:-} in
start) start ;;
stop) stop ;;
install) install_all ;;
env) echo "$ENV_FILE" ;;
*) die "usage: $0 start|stop|install|env" ;;
esac
