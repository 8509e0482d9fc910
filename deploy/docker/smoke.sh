#!/bin/sh
# The compose file's smoke test (docker compose run --rm smoke): it runs in
# the aerostream image, beside a healthy `serve` whose cold tier is MinIO.
# It writes records through the native port, uploads them to the bucket,
# drops the local copies, and reads them back from the cold tier, then
# checks that the uploads show in /metrics. Exits non-zero, naming the
# step, at the first thing that is wrong.
set -eu

admin=${SMOKE_ADMIN:-127.0.0.1:9001}
topic=smoke-$(date +%s)
records=2000

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: $*"; }

step "readiness"
aerostream health --url "http://$admin/healthz" || fail "/healthz is not ready"

step "create $topic (local copies dropped once uploaded)"
aerostream create-topic "$topic" 1 1 --config local.retention.bytes=0 || fail "create-topic"

step "produce $records records"
seq 1 "$records" | aerostream produce "$topic" 0 || fail "produce"

step "upload to the bucket"
aerostream tier offload --admin "$admin" --now --topic "$topic" || fail "tier offload"
aerostream tier verify --admin "$admin" --topic "$topic" || fail "tier verify: the bucket does not hold what the catalog says"
aerostream tier ls --admin "$admin" --topic "$topic"

step "read back from offset 0"
got=$(aerostream consume "$topic" 0 0 -n "$records" | wc -l)
[ "$got" -eq "$records" ] || fail "read $got records back, want $records"
first=$(aerostream consume "$topic" 0 0 -n 1)
[ "$first" = "1" ] || fail "the record at offset 0 is \"$first\", want \"1\""

step "metrics"
curl -fsS "http://$admin/metrics" | grep -q '^aerostream_tier_segments_uploaded_total{topic="'"$topic"'"}' \
  || fail "/metrics shows no upload for $topic"

echo "smoke: PASS ($records records through MinIO and back)"
