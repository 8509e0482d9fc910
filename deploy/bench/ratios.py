#!/usr/bin/env python3
"""Reads the result files compare.sh leaves in a directory and prints the
AeroStream/Kafka table; writes it to compare.json in the same directory.

    python3 deploy/bench/ratios.py DIR

A missing side (a broker that was not measured) leaves its column and the
ratios empty. Standard library only.
"""
import json
import os
import sys

BROKERS = ("aerostream", "kafka")
MIB = 1 << 20


def load(d, name):
    path = os.path.join(d, name)
    try:
        with open(path) as f:
            return json.load(f) if name.endswith(".json") else f.read().strip()
    except FileNotFoundError:
        return None


def dig(obj, *keys):
    for k in keys:
        if obj is None:
            return None
        obj = obj.get(k)
    return obj


# (label, run, path in the result, unit, target) — target is (op, value) on
# the AeroStream/Kafka ratio, from the issue.
ROWS = [
    ("max publish rate", "max", ("publish", "rate_msg_s"), "msg/s", (">=", 1.3)),
    ("max publish throughput", "max", ("publish", "rate_mb_s"), "MB/s", None),
    ("max consume rate", "max", ("consume", "rate_msg_s"), "msg/s", None),
    # At full load the two cores are shared by the broker, the producers
    # and the consumers, and how the client's share splits between
    # publishing and consuming varies from run to run (consumers that keep
    # up take CPU the producers would have had): the sum shows the work
    # done whatever the split.
    ("max publish + consume rate", "max", (("publish", "rate_msg_s"), ("consume", "rate_msg_s")), "msg/s", None),
    ("fixed: publish rate achieved", "fixed", ("publish", "rate_msg_s"), "msg/s", None),
    ("fixed: publish p50", "fixed", ("publish_latency_ms", "p50"), "ms", None),
    ("fixed: publish p99", "fixed", ("publish_latency_ms", "p99"), "ms", ("<=", 0.5)),
    ("fixed: publish p99.9", "fixed", ("publish_latency_ms", "p99_9"), "ms", None),
    ("fixed: end-to-end p50", "fixed", ("end_to_end_latency_ms", "p50"), "ms", None),
    ("fixed: end-to-end p99", "fixed", ("end_to_end_latency_ms", "p99"), "ms", ("<=", 0.5)),
    ("fixed: end-to-end p99.9", "fixed", ("end_to_end_latency_ms", "p99_9"), "ms", None),
    ("fixed: broker CPU avg", "fixed", ("broker", "cpu_avg_percent"), "% core", None),
    ("fixed: broker RSS peak", "fixed", ("broker", "rss_peak_bytes"), "MiB", None),
    ("max: broker CPU avg", "max", ("broker", "cpu_avg_percent"), "% core", None),
    ("max: broker RSS peak", "max", ("broker", "rss_peak_bytes"), "MiB", None),
    ("max: bench (client) CPU avg", "max", ("client", "cpu_avg_percent"), "% core", None),
    # The client's requests: on a shared machine a broker that answers
    # sooner gets more, smaller produce requests for the same messages,
    # and the client pays CPU per request.
    ("max: produce requests", "max", ("requests", "produce_requests_s"), "/s", None),
    ("max: messages per produce request", "max", ("requests", "msgs_per_produce_request"), "msgs", None),
    ("max: messages per fetch response", "max", ("requests", "msgs_per_fetch_response"), "msgs", None),
    ("fixed: messages per produce request", "fixed", ("requests", "msgs_per_produce_request"), "msgs", None),
    # Noise: CPU that neither the broker nor the bench used, and the share
    # of time a runnable task waited for a CPU. High values mean another
    # workload on the machine disturbed that run.
    ("fixed: other processes' CPU", "fixed", ("machine", "other_cpu_percent"), "% core", None),
    ("fixed: CPU pressure (PSI some)", "fixed", ("machine", "cpu_pressure_percent"), "%", None),
    ("max: other processes' CPU", "max", ("machine", "other_cpu_percent"), "% core", None),
    ("max: CPU pressure (PSI some)", "max", ("machine", "cpu_pressure_percent"), "%", None),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    results = {b: {run: load(d, f"{b}-{run}.json") for run in ("fixed", "max")} for b in BROKERS}
    rows = []
    for label, run, path, unit, target in ROWS:
        vals = {}
        for b in BROKERS:
            if isinstance(path[0], tuple):  # a sum of several figures
                parts = [dig(results[b][run], *p) for p in path]
                v = None if None in parts else sum(parts)
            else:
                v = dig(results[b][run], *path)
            if v is not None and unit == "MiB":
                v = v / MIB
            vals[b] = v
        ratio = None
        noise = path[0] == "machine"  # a condition of the run, not a figure to compare
        if not noise and vals["aerostream"] is not None and vals["kafka"]:
            ratio = vals["aerostream"] / vals["kafka"]
        met = None
        if target and ratio is not None:
            op, want = target
            met = ratio >= want if op == ">=" else ratio <= want
        rows.append({
            "metric": label, "unit": unit,
            "aerostream": vals["aerostream"], "kafka": vals["kafka"],
            "ratio": ratio,
            "target": f"{target[0]} {target[1]}" if target else None,
            "target_met": met,
        })

    loads = {b: {k: load(d, f"{b}-load-{k}.txt") for k in ("before", "after")} for b in BROKERS}
    wl = next((dig(results[b][r], "workload") for b in BROKERS for r in ("fixed", "max")
               if results[b][r]), None)
    summary = {
        "workload": wl and {k: wl.get(k) for k in (
            "partitions_per_topic", "producers_per_topic", "consumers_per_subscription",
            "message_size", "acks", "consume_mode", "warmup_ms", "duration_ms")},
        "fixed_rate": dig(results["kafka"]["fixed"], "workload", "target_rate")
        or dig(results["aerostream"]["fixed"], "workload", "target_rate"),
        "load_average": loads,
        "versions": {b: load(d, f"{b}-version.txt") for b in BROKERS},
        "rows": rows,
    }
    with open(os.path.join(d, "compare.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    def fmt(v, unit):
        if v is None:
            return "-"
        if unit in ("msg/s",):
            return f"{v:,.0f}"
        return f"{v:,.2f}"

    print(f"\nAeroStream vs Apache Kafka — {d}")
    if wl:
        print(f"workload: {wl['partitions_per_topic']} partitions, {wl['producers_per_topic']} producers, "
              f"{wl['consumers_per_subscription']} consumers, {wl['message_size']} B, acks={wl['acks']}, "
              f"warmup {wl['warmup_ms'] / 1000:g} s, measured {wl['duration_ms'] / 1000:g} s per run; "
              f"fixed rate {summary['fixed_rate'] or '-'} msg/s")
    vers = [v for v in summary["versions"].values() if v]
    if vers:
        print("brokers: " + "; ".join(vers))
    w = max(len(r["metric"]) for r in rows) + 2
    print(f"{'metric':<{w}}{'unit':<8}{'AeroStream':>14}{'Kafka':>14}{'ratio':>9}  target")
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        tgt = ""
        if r["target"]:
            tgt = r["target"] + ("" if r["target_met"] is None else (" met" if r["target_met"] else " MISSED"))
        print(f"{r['metric']:<{w}}{r['unit']:<8}{fmt(r['aerostream'], r['unit']):>14}"
              f"{fmt(r['kafka'], r['unit']):>14}{ratio:>9}  {tgt}")
    for b in BROKERS:
        if loads[b]["before"]:
            print(f"load average during {b}: before {loads[b]['before']}, after {loads[b]['after']}")
    if not all(results["aerostream"].values()):
        print("AeroStream was not (fully) measured: ratios are empty.")
    print(f"written: {os.path.join(d, 'compare.json')}")


if __name__ == "__main__":
    main()
