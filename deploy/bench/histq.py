#!/usr/bin/env python3
"""histq.py BEFORE AFTER SERIES: quantiles of a Prometheus histogram's
buckets between two scrapes (upper bucket bounds, as Prometheus reports)."""
import re, sys
def load(path, series):
    out = {}
    for line in open(path):
        if line.startswith("#") or "_bucket{" not in line or series not in line:
            continue
        m = re.search(r'le="([^"]+)"\}\s+(\S+)', line)
        if m:
            out[float(m.group(1))] = float(m.group(2))
    return out
b, a = load(sys.argv[1], sys.argv[3]), load(sys.argv[2], sys.argv[3])
les = sorted(a)
d = [(le, a[le] - b.get(le, 0)) for le in les]
total = d[-1][1]
res = [f"requests {int(total)}"]
for q in (0.5, 0.9, 0.99, 0.999):
    for le, c in d:
        if c >= q * total:
            res.append(f"p{q*100:g} <= {le*1e3:.3g} ms")
            break
print(", ".join(res))
