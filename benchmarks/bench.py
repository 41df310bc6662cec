"""``make bench``: every benchmark, one table (measure, rlgen, its baseline in the same run,
the ratio and the goal it must meet), measured as a generated repository's CI runs rlgen: a
fresh environment with rlgen installed from a local wheel without extras, cold caches. Set
BENCH_RUNS for more or fewer runs per side."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import bench_cli
import bench_data
import bench_diff
import bench_install
import bench_validate
import timing


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    try:
        print("bench_install ...", file=sys.stderr)
        rows, timing.RLGEN_PYTHON = bench_install.rows(work)
        for module in (bench_validate, bench_diff, bench_cli, bench_data):
            print(f"{module.__name__} ...", file=sys.stderr)
            rows += module.rows()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\n{os.cpu_count()} cores, load average at the end {load} (1, 5, 15 min); whole processes, "
          f"interleaved, median of {timing.RUNS} runs a side (3 for installs, 5 for data prepare).\n")
    print(timing.table(rows))
    missed = [r for r in rows if not r.met]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} goals met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
