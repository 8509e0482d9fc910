#!/usr/bin/env bash
# Writes the plain Kubernetes manifests (deploy/k8s) from the Helm chart with
# ci/k8s-manifests-values.yaml, one file per template, so that the two
# cannot drift apart: make k8s-manifests runs it, and make test-deploy
# fails when deploy/k8s is not what it writes.
#
#   deploy/k8s-manifests.sh HELM DEST
set -euo pipefail
cd "$(dirname "$0")/.."
helm=$1 dest=$2
chart=deploy/helm/aerostream
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$helm" template aerostream "$chart" --namespace aerostream --kube-version 1.30.0 \
  -f "$chart/ci/k8s-manifests-values.yaml" --output-dir "$tmp" >/dev/null
mkdir -p "$dest"
rm -f "$dest"/*.yaml
for f in "$tmp"/aerostream/templates/*.yaml; do
  {
    echo "# Generated from deploy/helm/aerostream (ci/k8s-manifests-values.yaml) by"
    echo "# \`make k8s-manifests\`: edit the chart, not this file."
    cat "$f"
  } > "$dest/$(basename "$f")"
done
