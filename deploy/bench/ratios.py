#!/usr/bin/env python3
"""Reads the result files compare.sh leaves in a directory and prints the
AeroStream/Kafka table; writes it to compare.json in the same directory.

    python3 deploy/bench/ratios.py DIR

A DIR with round-N subdirectories (compare.sh --rounds N) gets one table of
the rounds' medians, with the range of each ratio; compare.json keeps every
round's rows as well.

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
    # The highest rate the consumers keep up with (bench --sustainable),
    # OpenMessaging Benchmark's meaning of a maximum: unlimited publishing
    # above measures the producers while the consumers fall behind.
    ("sustainable publish rate", "sustainable", ("publish", "rate_msg_s"), "msg/s", (">=", 1.3)),
    ("sustainable consume rate", "sustainable", ("consume", "rate_msg_s"), "msg/s", None),
    ("sustainable: rate found in trials", "sustainable", ("sustainable", "rate"), "msg/s", None),
    ("sustainable: held for the run (1 yes)", "sustainable", ("sustainable", "held"), "", None),
    ("sustainable: end-to-end p99", "sustainable", ("end_to_end_latency_ms", "p99"), "ms", None),
    ("sustainable: broker CPU avg", "sustainable", ("broker", "cpu_avg_percent"), "% core", None),
    ("fixed: publish rate achieved", "fixed", ("publish", "rate_msg_s"), "msg/s", None),
    ("fixed: publish p50", "fixed", ("publish_latency_ms", "p50"), "ms", None),
    ("fixed: publish p99", "fixed", ("publish_latency_ms", "p99"), "ms", ("<=", 0.5)),
    ("fixed: publish p99.9", "fixed", ("publish_latency_ms", "p99_9"), "ms", None),
    ("fixed: end-to-end p50", "fixed", ("end_to_end_latency_ms", "p50"), "ms", None),
    ("fixed: end-to-end p99", "fixed", ("end_to_end_latency_ms", "p99"), "ms", ("<=", 0.5)),
    ("fixed: end-to-end p99.9", "fixed", ("end_to_end_latency_ms", "p99_9"), "ms", None),
    # Each produce request's round trip, write start to response read, as
    # the client sees it: the broker's share of the publish latency. The
    # rest of a publish is the client's own (its 1 ms linger, its timers,
    # its scheduling), the same against either broker.
    ("fixed: produce round trip p50", "fixed", ("produce_round_trip_ms", "p50"), "ms", None),
    ("fixed: produce round trip p99", "fixed", ("produce_round_trip_ms", "p99"), "ms", None),
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
    # Consumers alone draining a backlog written before they start (bench
    # --backlog-bytes, OMB's consumer backlog): the maximum consume rate,
    # as ConsumerPerformance measures it over a filled topic.
    ("backlog drain: consume rate", "backlog", ("consume", "rate_msg_s"), "msg/s", (">=", 1.2)),
    ("backlog drain: broker CPU avg", "backlog", ("broker", "cpu_avg_percent"), "% core", None),
    ("backlog drain: messages per fetch response", "backlog", ("requests", "msgs_per_fetch_response"), "msgs", None),
    # Noise: CPU that neither the broker nor the bench used, and the share
    # of time a runnable task waited for a CPU. High values mean another
    # workload on the machine disturbed that run.
    ("fixed: other processes' CPU", "fixed", ("machine", "other_cpu_percent"), "% core", None),
    ("fixed: CPU pressure (PSI some)", "fixed", ("machine", "cpu_pressure_percent"), "%", None),
    ("max: other processes' CPU", "max", ("machine", "other_cpu_percent"), "% core", None),
    ("max: CPU pressure (PSI some)", "max", ("machine", "cpu_pressure_percent"), "%", None),
]


def table(d):
    """The rows of one round's directory."""
    results = {b: {run: load(d, f"{b}-{run}.json") for run in ("fixed", "max", "sustainable", "backlog")} for b in BROKERS}
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
            if isinstance(v, bool):
                v = int(v)
            vals[b] = v
        ratio = None
        # A condition of the run, not a figure to compare.
        noise = path[0] == "machine" or path == ("sustainable", "held")
        if not noise and vals["aerostream"] is not None and vals["kafka"]:
            ratio = vals["aerostream"] / vals["kafka"]
        rows.append({
            "metric": label, "unit": unit,
            "aerostream": vals["aerostream"], "kafka": vals["kafka"],
            "ratio": ratio,
            "target": f"{target[0]} {target[1]}" if target else None,
            "target_met": met(target, ratio),
        })
    return results, rows


def met(target, ratio):
    if not target or ratio is None:
        return None
    op, want = target
    return ratio >= want if op == ">=" else ratio <= want


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def combine(tables):
    """Rounds' rows into one: medians of each side and of the ratios, the
    ratios' range, and in how many rounds the target was met."""
    rows = []
    targets = {label: target for label, _, _, _, target in ROWS}
    for i, first in enumerate(tables[0]):
        col = [t[i] for t in tables]
        r = dict(first)
        for b in BROKERS:
            vs = [c[b] for c in col if c[b] is not None]
            r[b] = median(vs) if vs else None
        ratios = [c["ratio"] for c in col if c["ratio"] is not None]
        r["ratio"] = median(ratios) if ratios else None
        r["ratios"] = ratios
        r["target_met"] = met(targets[first["metric"]], r["ratio"])
        r["rounds_met"] = sum(1 for c in col if c["target_met"])
        rows.append(r)
    return rows


def fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("msg/s",):
        return f"{v:,.0f}"
    return f"{v:,.2f}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    rounds = sorted((x for x in os.listdir(d) if x.startswith("round-")), key=lambda x: int(x.split("-")[1]))
    dirs = [os.path.join(d, x) for x in rounds] or [d]
    tabled = [table(x) for x in dirs]
    results = tabled[0][0]
    rows = tabled[0][1] if len(dirs) == 1 else combine([t for _, t in tabled])

    loads = {os.path.basename(x): {b: {k: load(x, f"{b}-load-{k}.txt") for k in ("before", "after")} for b in BROKERS}
             for x in dirs}
    wl = next((dig(res[b][r], "workload") for res, _ in tabled for b in BROKERS for r in ("fixed", "max")
               if res[b][r]), None)
    summary = {
        "workload": wl and {k: wl.get(k) for k in (
            "partitions_per_topic", "producers_per_topic", "consumers_per_subscription",
            "message_size", "acks", "consume_mode", "warmup_ms", "duration_ms")},
        "fixed_rate": dig(results["kafka"]["fixed"], "workload", "target_rate")
        or dig(results["aerostream"]["fixed"], "workload", "target_rate"),
        "rounds": len(dirs),
        "load_average": loads,
        "versions": {b: load(dirs[0], f"{b}-version.txt") for b in BROKERS},
        "rows": rows,
    }
    if len(dirs) > 1:
        summary["round_rows"] = {os.path.basename(x): t for x, (_, t) in zip(dirs, tabled)}
    with open(os.path.join(d, "compare.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    print(f"\nAeroStream vs Apache Kafka — {d}")
    if wl:
        print(f"workload: {wl['partitions_per_topic']} partitions, {wl['producers_per_topic']} producers, "
              f"{wl['consumers_per_subscription']} consumers, {wl['message_size']} B, acks={wl['acks']}, "
              f"warmup {wl['warmup_ms'] / 1000:g} s, measured {wl['duration_ms'] / 1000:g} s per run; "
              f"fixed rate {summary['fixed_rate'] or '-'} msg/s")
    vers = [v for v in summary["versions"].values() if v]
    if vers:
        print("brokers: " + "; ".join(vers))
    if len(dirs) > 1:
        print(f"{len(dirs)} rounds: each side's median, the median of the rounds' ratios and their range; "
              "a target is judged on the median ratio")
    w = max(len(r["metric"]) for r in rows) + 2
    multi = len(dirs) > 1
    print(f"{'metric':<{w}}{'unit':<8}{'AeroStream':>14}{'Kafka':>14}{'ratio':>9}"
          + ("  range        " if multi else "") + "  target")
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        spread = ""
        if multi:
            spread = f"  {min(r['ratios']):.2f}-{max(r['ratios']):.2f}x".ljust(15) if r["ratios"] else "  -".ljust(15)
        tgt = ""
        if r["target"]:
            tgt = r["target"] + ("" if r["target_met"] is None else (" met" if r["target_met"] else " MISSED"))
            if multi:
                tgt += f" (met in {r['rounds_met']} of {len(dirs)} rounds)"
        print(f"{r['metric']:<{w}}{r['unit']:<8}{fmt(r['aerostream'], r['unit']):>14}"
              f"{fmt(r['kafka'], r['unit']):>14}{ratio:>9}{spread}  {tgt}")
    for rd, byb in loads.items():
        for b in BROKERS:
            if byb[b]["before"]:
                where = f" ({rd})" if multi else ""
                print(f"load average during {b}{where}: before {byb[b]['before']}, after {byb[b]['after']}")
    if not all(all(res["aerostream"].values()) for res, _ in tabled):
        print("AeroStream was not (fully) measured: ratios are empty.")
    print(f"written: {os.path.join(d, 'compare.json')}")


if __name__ == "__main__":
    main()
