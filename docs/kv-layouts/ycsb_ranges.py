#!/usr/bin/env python3
"""Ranges over the runs of `ycsb --json` (ycsb-run*.json here) for ycsb.gp and the
table in docs/kv-layouts.md: one CSV row per layout and workload, with the minimum,
median and maximum over the runs of throughput and READ p99, and the ranges of READ
p50 and UPDATE p50 and p99.

  python3 ycsb_ranges.py ycsb-run1.json ycsb-run2.json ycsb-run3.json > ycsb.csv
"""
import json
import statistics
import sys

LAYOUTS = ["hopscotch", "linear", "chained", "cuckoo"]


def main(paths):
    rows = {}
    for path in paths:
        for run in json.load(open(path))["runs"]:
            layout = run["backend"].split(":", 1)[1]
            workload = run["workload"].split("+")[0].upper()
            per_op = run["per_op"]
            rows.setdefault((workload, layout), []).append({
                "ops": run["throughput"],
                "read_p50": per_op["READ"]["latency"]["p50_us"],
                "read_p99": per_op["READ"]["latency"]["p99_us"],
                "update_p50": per_op.get("UPDATE", {}).get("latency", {}).get("p50_us", float("nan")),
                "update_p99": per_op.get("UPDATE", {}).get("latency", {}).get("p99_us", float("nan")),
            })
    print("# workload,layout,runs,ops_min,ops_median,ops_max,read_p99_min,read_p99_median,read_p99_max,"
          "read_p50_min,read_p50_max,update_p50_min,update_p50_max,update_p99_min,update_p99_max")
    for workload in ("C", "A"):
        for layout in LAYOUTS:
            runs = rows.get((workload, layout), [])
            if not runs:
                continue
            cols = [workload, layout, str(len(runs))]
            for key, stats in (("ops", (min, statistics.median, max)),
                               ("read_p99", (min, statistics.median, max)),
                               ("read_p50", (min, max)), ("update_p50", (min, max)),
                               ("update_p99", (min, max))):
                cols += ["%.4g" % f([r[key] for r in runs]) for f in stats]
            print(",".join(cols))


if __name__ == "__main__":
    main(sys.argv[1:])
