"""Reads an AeroStream Iceberg table with pyiceberg through the built-in
REST catalog and prints it for icebergtest to compare with the log.

usage: read_table.py URI NAMESPACE TABLE OUT

OUT gets one line per row, "partition offset key-hex value-hex", and
stdout one JSON object: rows, snapshot id, the aerostream.offsets summary
and the data files with their sizes. The catalog is given nothing but its
URI (and the noop auth manager): the FileIO properties (S3 endpoint and
keys for MinIO) must come from the catalog's LoadTableResult.
"""

import json
import sys

from pyiceberg.catalog.rest import RestCatalog


def main():
    uri, namespace, name, out = sys.argv[1:5]
    # Without credentials pyiceberg 0.12 still sends "Authorization: Bearer
    # None", which a listener that checks the credentials it is sent
    # (auth.http_authentication = auto or optional) refuses; the noop auth
    # manager sends no header.
    cat = RestCatalog("aerostream", uri=uri, auth={"type": "noop"})
    tbl = cat.load_table((namespace, name))
    snap = tbl.current_snapshot()
    arrow = tbl.scan().to_arrow()
    meta = arrow.column("aerostream").combine_chunks()
    parts = meta.field("partition").to_pylist()
    offsets = meta.field("offset").to_pylist()
    keys = meta.field("key").to_pylist()
    values = arrow.column("value").to_pylist()
    with open(out, "w") as f:
        for p, o, k, v in zip(parts, offsets, keys, values):
            f.write("%d %d %s %s\n" % (p, o, "-" if k is None else k.hex(), "-" if v is None else v.hex()))
    files = [
        {"path": t.file.file_path, "bytes": t.file.file_size_in_bytes, "rows": t.file.record_count}
        for t in tbl.scan().plan_files()
    ]
    json.dump(
        {
            "rows": arrow.num_rows,
            "snapshot": None if snap is None else snap.snapshot_id,
            "offsets": None if snap is None else snap.summary["aerostream.offsets"],
            "files": files,
            "namespaces": [list(ns) for ns in cat.list_namespaces()],
            "tables": [list(t) for t in cat.list_tables(namespace)],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
