#!/usr/bin/env bash
# make test-deploy: the Helm chart and the Kubernetes manifests, checked
# without a cluster. The Makefile installs the tools and the schemas and
# passes them in HELM, KUBECONFORM and K8S_SCHEMAS; K8S_VERSIONS lists the
# Kubernetes versions to validate against.
#
#   1. helm lint --strict with every value set (the defaults and ci/*-values.yaml);
#   2. helm template with each, and kubeconform -strict on every manifest it
#      renders, for each Kubernetes version (the ServiceMonitor against the
#      schema in deploy/schemas);
#   3. kubeconform -strict on deploy/k8s, and a check that deploy/k8s is what
#      the chart renders (make k8s-manifests writes it);
#   4. values that cannot work are refused with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${HELM:?}" "${KUBECONFORM:?}" "${K8S_SCHEMAS:?}" "${K8S_VERSIONS:?}"
chart=deploy/helm/aerostream
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
schemas=$(cd "$K8S_SCHEMAS" && pwd)
crds=$(cd deploy/schemas && pwd)

kubeconform() {
  local v
  for v in $K8S_VERSIONS; do
    "$KUBECONFORM" -strict -summary -kubernetes-version "$v" \
      -schema-location "$schemas/{{.NormalizedKubernetesVersion}}-standalone{{.StrictSuffix}}/{{.ResourceKind}}{{.KindSuffix}}.json" \
      -schema-location "$crds/{{.ResourceKind}}-{{.Group}}-{{.ResourceAPIVersion}}.json" \
      "$@"
  done
}

sets=(default)
for f in "$chart"/ci/*-values.yaml; do sets+=("$f"); done
for s in "${sets[@]}"; do
  args=()
  name=default
  if [ "$s" != default ]; then args=(-f "$s"); name=$(basename "$s" -values.yaml); fi
  echo "== $name"
  "$HELM" lint --strict "$chart" "${args[@]}"
  "$HELM" template aerostream "$chart" --namespace aerostream --kube-version 1.30.0 "${args[@]}" > "$out/$name.yaml"
  kinds=$(grep -E '^kind: ' "$out/$name.yaml" | sort | uniq -c | awk '{printf "%s %s, ", $1, $3}')
  echo "rendered: ${kinds%, }"
  kubeconform "$out/$name.yaml"
done

# What each value set must render, beyond being valid.
expect() { # file, what, grep -E pattern
  grep -qE -- "$3" "$out/$1.yaml" || { echo "test-deploy: $1: $2 (no match for /$3/)" >&2; exit 1; }
}
expect default "3 controllers" '^  replicas: 3$'
expect default "the store preStop drain" 'store-prestop.sh'
expect default "the leadership move on every store stop" 'store drain "\$id" --leadership-only'
expect default "a PodDisruptionBudget" '^kind: PodDisruptionBudget$'
expect default "S3 tiering" 'provider = "s3"'
expect s3-tls-sasl "SASL_SSL on the Kafka listener" 'kafka = "SASL_SSL://0.0.0.0:9092"'
expect s3-tls-sasl "the ServiceMonitor" '^kind: ServiceMonitor$'
expect s3-tls-sasl "HTTPS probes" 'scheme: HTTPS'
expect s3-tls-sasl "the certificate mapping rules" 'principal_mapping_rules = "RULE:\^CN=\(\[\^,\]\+\),OU=apps,\.\*\$/\$1/L,DEFAULT"'
expect gcs "the key file path" 'service_account_path = "/etc/aerostream/gcs/service-account.json"'
expect azure "the shared key from the Secret" 'AEROSTREAM_TIERED_STORAGE_AZURE_ACCESS_KEY'
expect iceberg "the [iceberg] section" '^    \[iceberg\]$'
# With SASL the controllers require the cluster secret on port 8001
# (auth.controller_secret_file), which every pod mounts from a Secret the
# chart makes, and a NetworkPolicy admits only the chart's pods; without
# SASL neither renders.
expect s3-tls-sasl "the cluster secret's file for every role" 'AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE'
expect s3-tls-sasl "the cluster secret mounted" 'mountPath: /etc/aerostream/cluster,'
expect s3-tls-sasl "the cluster Secret" '^  name: aerostream-cluster$'
expect s3-tls-sasl "the controller NetworkPolicy" '^kind: NetworkPolicy$'
expect s3-tls-sasl "port 8001 admitted from the stores" '^              app.kubernetes.io/component: store$'
absent() { # file, what, grep -E pattern
  if grep -qE -- "$3" "$out/$1.yaml"; then echo "test-deploy: $1: $2 (matches /$3/)" >&2; exit 1; fi
}
absent s3-tls-sasl "no network trust stated: the secret guards the port" 'controller_network_trusted'
absent default "no cluster secret without SASL" 'AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE'
absent default "no NetworkPolicy without SASL" '^kind: NetworkPolicy$'

echo "== deploy/k8s"
kubeconform deploy/k8s/*.yaml
mkdir "$out/k8s"
deploy/k8s-manifests.sh "$HELM" "$out/k8s"
if ! diff -ru deploy/k8s "$out/k8s"; then
  echo "test-deploy: deploy/k8s differs from what the chart renders: run make k8s-manifests" >&2
  exit 1
fi

echo "== values refused"
refuse() { # reason, helm args...
  local want=$1; shift
  if msg=$("$HELM" template aerostream "$chart" --kube-version 1.30.0 "$@" 2>&1); then
    echo "test-deploy: helm template $* rendered; want it refused with \"$want\"" >&2
    exit 1
  fi
  grep -qF -- "$want" <<<"$msg" || { echo "test-deploy: helm template $*: $msg; want \"$want\"" >&2; exit 1; }
  echo "refused as expected: $*"
}
refuse 'tiering.provider "local"' --set tiering.provider=local
refuse 'tiering.gcs.bucket is empty' --set tiering.provider=gcs
refuse 'tls.enabled needs' --set tls.enabled=true
refuse 'sasl.enabled needs' --set sasl.enabled=true
refuse 'go together' --set tiering.s3.accessKeyId=x
refuse 'the chart writes [tiered_storage] itself' --set config.tiered_storage.uploaders=4
refuse 'iceberg.catalog rest needs' --set iceberg.enabled=true --set iceberg.catalog=rest

echo "== sasl without the NetworkPolicy, the cluster secret from the user's Secret"
own=(--set sasl.enabled=true --set sasl.password=x --set controller.networkPolicy.enabled=false --set controller.clusterSecret.existingSecret=my-cluster-secret)
"$HELM" template aerostream "$chart" --namespace aerostream --kube-version 1.30.0 "${own[@]}" > "$out/own.yaml"
kubeconform "$out/own.yaml"
expect own "the user's Secret mounted" 'secretName: my-cluster-secret'
absent own "no cluster Secret of the chart's" '^  name: aerostream-cluster$'
absent own "no NetworkPolicy once disabled" '^kind: NetworkPolicy$'
echo "test-deploy: PASS"
