#!/bin/sh
# preStop of a store pod. Every stop first moves the store's leaderships to
# other in-sync replicas (`aerostream store drain --leadership-only`, a
# controlled shutdown: replicas stay, and the store leads again once it
# registers anew), so clients switch leaders at once rather than after the
# session timeout. A stop that cannot move some leadership in time goes on.
#
# The full `aerostream store drain` moves every replica too, and the
# controller keeps the store marked draining after a restart, so draining
# on every stop would empty each store in turn during a rolling update
# (and be refused on the last ones). It therefore runs only when this pod
# is being removed: its ordinal is at or beyond the StatefulSet's desired
# replica count, read from the Kubernetes API (the chart's Role allows get
# on statefulsets/scale). STATEFULSET is unset when the chart's drain is
# off.
set -u
exec >/proc/1/fd/1 2>&1 # into the container's log, where kubectl logs shows it

ord=${POD_NAME##*-}
id=$((ord + STORE_ID_BASE))
echo "store-prestop: store $id: moving its leaderships to other in-sync replicas"
aerostream store drain "$id" --leadership-only --controller "$CONTROLLERS" --wait "${SHUTDOWN_TIMEOUT_SECONDS}s" ||
  echo "store-prestop: store $id: leadership not all moved; stopping anyway"
if [ -z "${STATEFULSET:-}" ]; then
  exit 0
fi
sa=/var/run/secrets/kubernetes.io/serviceaccount
want=$(curl -fsS --max-time 10 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
  "https://kubernetes.default.svc/apis/apps/v1/namespaces/$(cat "$sa/namespace")/statefulsets/$STATEFULSET/scale" |
  grep -o '"replicas":[0-9]*' | head -n 1 | cut -d: -f2)
if [ -z "$want" ]; then
  echo "store-prestop: store $id: could not read the scale of statefulset $STATEFULSET; stopping without a drain"
  exit 0
fi
if [ "$ord" -lt "$want" ]; then
  echo "store-prestop: store $id: pod $ord of $want stays in the StatefulSet (a restart); stopping without a drain"
  exit 0
fi
echo "store-prestop: store $id: scaled away ($want replicas wanted); draining it"
exec aerostream store drain "$id" --controller "$CONTROLLERS" --wait "${DRAIN_TIMEOUT_SECONDS}s"
