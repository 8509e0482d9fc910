"""Writes servicemonitor-monitoring.coreos.com-v1.json, the JSON schema kubeconform
checks the chart's ServiceMonitor against (make test-deploy).

kubeconform finds no schema for a custom resource on its own, and this
machine cannot reach the places that publish them. The schema comes from
the PyPI package cloudcoil-models-prometheus-operator, which carries the
prometheus-operator CRDs as pydantic models; pydantic writes their JSON
schema, and this script closes it the way kubeconform's strict schemas for
built-in kinds are closed (no unknown field), keeps the CRD's enums and
patterns, and drops pydantic's titles, defaults and "or null" branches.

Run it again to refresh the file:

    python3 -m venv /tmp/cc && /tmp/cc/bin/pip install cloudcoil-models-prometheus-operator==0.80.1.0
    /tmp/cc/bin/python deploy/schemas/servicemonitor.py > deploy/schemas/servicemonitor-monitoring.coreos.com-v1.json
"""

import json

import cloudcoil.models.prometheus_operator.v1 as m


def tidy(node):
    if isinstance(node, list):
        return [tidy(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: tidy(v) for k, v in node.items() if k not in ("title", "default")}
    branches = node.get("anyOf")
    if branches is not None:
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1:
            del node["anyOf"]
            node.update(kept[0])
        else:
            node["anyOf"] = kept
    if "properties" in node and "additionalProperties" not in node:
        node["additionalProperties"] = False
    return node


schema = tidy(m.ServiceMonitor.model_json_schema(by_alias=True))
schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
print(json.dumps(schema, indent=1, sort_keys=True))
