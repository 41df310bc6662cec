"""``make bench``: every benchmark, one table (measure, rlgen, its baseline in the same run,
the ratio and the goal it must meet). Set BENCH_RUNS for more or fewer runs per side."""
from __future__ import annotations

import os
import sys

import bench_cli
import bench_data
import bench_diff
import bench_validate
import timing


def main() -> int:
    rows = []
    for module in (bench_cli, bench_validate, bench_diff, bench_data):
        print(f"{module.__name__} ...", file=sys.stderr)
        rows += module.rows()
    print(f"\n{os.cpu_count()} cores; whole processes, interleaved, median of {timing.RUNS} runs a side "
          "(5 for data prepare).\n")
    print(timing.table(rows))
    missed = [r for r in rows if not r.met]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} goals met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
