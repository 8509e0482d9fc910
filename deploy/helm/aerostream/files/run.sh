#!/bin/sh
# Starts one AeroStream role in a pod. A pod template cannot write the keys
# that differ per pod (node ids from the StatefulSet ordinal or the pod IP,
# the first controller's bootstrap, the advertised Kafka address), so they
# are set here from the downward API, and aerostream then replaces the
# shell (it gets SIGTERM directly).
set -eu
role=$1
ord=${POD_NAME##*-}

# A gateway of a Deployment has no ordinal: its id comes from its pod IP,
# unique among the live pods of the cluster (the low 24 bits of an IPv4
# address within the pod network), else a checksum of the pod name.
ip_id() {
  case ${POD_IP:-} in
  *.*.*.*)
    old_ifs=$IFS; IFS=.; set -- $POD_IP; IFS=$old_ifs
    echo $(( ($2 << 16) + ($3 << 8) + $4 )) ;;
  *) printf %s "$POD_NAME" | cksum | awk '{ print $1 % 16777216 }' ;;
  esac
}

advertised_host() {
  dashed=$(printf %s "${POD_IP:-}" | tr .: --)
  printf %s "$ADVERTISED_HOST" | sed -e "s/{pod-ip}/${POD_IP:-}/g" -e "s/{pod-ip-dashed}/$dashed/g" -e "s/{pod-name}/$POD_NAME/g"
}

case $role in
controller)
  export AEROSTREAM_CONTROLLER_NODE_ID=$((ord + 1))
  # The first controller forms the cluster on its first start (an empty
  # raft directory); the others ask it to add them as voters. Both are
  # ignored once a node has Raft state.
  if [ "$ord" = 0 ]; then
    export AEROSTREAM_CONTROLLER_BOOTSTRAP=true AEROSTREAM_CONTROLLER_JOIN=
  else
    export AEROSTREAM_CONTROLLER_BOOTSTRAP=false AEROSTREAM_CONTROLLER_JOIN="$CONTROLLER_SEED"
  fi
  exec aerostream controller ;;
store)
  export AEROSTREAM_CONTROLLER_NODE_ID=$((ord + STORE_ID_BASE))
  exec aerostream store ;;
gateway-kafka)
  export AEROSTREAM_GATEWAY_NODE_ID=$(( $(ip_id) + GATEWAY_ID_BASE ))
  export AEROSTREAM_LISTENERS_ADVERTISED_KAFKA="$(advertised_host):$KAFKA_PORT"
  exec aerostream gateway kafka ;;
gateway-native)
  export AEROSTREAM_GATEWAY_NODE_ID=$(( $(ip_id) + GATEWAY_ID_BASE ))
  exec aerostream gateway native ;;
*)
  echo "run.sh: unknown role '$role' (want controller, store, gateway-kafka or gateway-native)" >&2
  exit 2 ;;
esac
