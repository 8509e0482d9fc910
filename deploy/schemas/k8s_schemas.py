"""Unpacks Kubernetes JSON schemas for kubeconform (make test-deploy).

kubeconform downloads its schemas from GitHub by default, which this
machine cannot reach. The PyPI package kubernetes-validate carries the same
schemas for each Kubernetes minor version; this script takes the strict
ones for the versions asked, from the wheel `pip download` fetched, into
DEST/<version>-standalone-strict/, the layout kubeconform's
-schema-location template names. The package's files point at their shared
definitions as /api/_definitions.json under an $id on kubernetes.io (its
own loader maps that); the copies drop the $id and point at the sibling
_definitions.json, so that kubeconform resolves them from the disk.

    python3 k8s_schemas.py WHEEL DEST 1.30.0 1.37.0
"""

import json
import os
import sys
import zipfile


def main(wheel, dest, versions):
    prefix = "kubernetes_validate/kubernetes-json-schema/"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        for version in versions:
            src = f"{prefix}v{version}-local-strict/"
            members = [n for n in names if n.startswith(src) and n.endswith(".json")]
            if not members:
                sys.exit(f"k8s_schemas: {wheel} has no schemas for Kubernetes {version}")
            out = os.path.join(dest, f"v{version}-standalone-strict")
            os.makedirs(out, exist_ok=True)
            for name in members:
                text = z.read(name).decode().replace('"/api/_definitions.json#', '"_definitions.json#')
                schema = json.loads(text)
                schema.pop("$id", None)
                with open(os.path.join(out, name[len(src):]), "w") as f:
                    json.dump(schema, f)
            print(f"k8s_schemas: {len(members)} schemas for Kubernetes {version} in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
