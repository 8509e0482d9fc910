"""Reads a typed AeroStream Iceberg table (iceberg.mode
value_schema_id_prefix or value_schema_latest) with pyiceberg through the
built-in REST catalog and prints it for icebergtest to compare value by
value with what was produced.

usage: read_typed.py URI NAMESPACE TABLE OUT

OUT gets one JSON object: "schema", the table's top-level columns as
[name, Iceberg type] pairs, and "rows", each row's columns as pyarrow
gives them plus "_partition" and "_offset" from the aerostream metadata
column. Timestamps become microseconds since the epoch and bytes hex, so
that JSON carries them exactly.
"""

import datetime
import json
import sys

from pyiceberg.catalog.rest import RestCatalog

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def plain(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return (v - EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def main():
    uri, namespace, name, out = sys.argv[1:5]
    # The noop auth manager: see read_table.py.
    cat = RestCatalog("aerostream", uri=uri, auth={"type": "noop"})
    tbl = cat.load_table((namespace, name))
    rows = []
    for r in tbl.scan().to_arrow().to_pylist():
        meta = r.pop("aerostream")
        row = {k: plain(v) for k, v in r.items()}
        row["_partition"], row["_offset"] = meta["partition"], meta["offset"]
        rows.append(row)
    schema = [[f.name, str(f.field_type)] for f in tbl.schema().fields]
    with open(out, "w") as f:
        json.dump({"schema": schema, "rows": rows}, f)


if __name__ == "__main__":
    main()
