"""Benchmark of `charon sweep`: a training space of llama-3.1-70b on 1,024 H100s
(examples/sweeps/training.yaml, 1,260 distinct configurations), evaluated from
an empty results file, in-process unless --jobs says otherwise.

    .venv/bin/python bench/bench_sweep.py [--space FILE] [--jobs N] [--limit N | --sample N] [--json]

Target (issue 9, on a 2-core machine): 1,000 configurations in <= 60 s
in-process. The report splits the time by what happened to each point (pruned
by rule, pruned by the memory model, timed, failed), because a timed point costs
orders of magnitude more than a pruned one, and gives CPU seconds beside wall
seconds: on a shared machine the wall clock also counts the neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default=str(ROOT / "examples" / "sweeps" / "training.yaml"))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="evaluate at most N legal points")
    parser.add_argument("--sample", type=int, default=0,
                        help="evaluate N legal points drawn at random (a cross-section of the space)")
    parser.add_argument("--seed", type=int, default=0, help="of --sample")
    parser.add_argument("--db", default="", help="results file (default: a fresh temporary one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from charon_ir.sweep import summarise
    from charon_ir.sweep.runner import run_sweep

    db = args.db or os.path.join(tempfile.mkdtemp(prefix="charon-bench-sweep-"), "bench.sqlite")
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    result = run_sweep(args.space, db=db, jobs=args.jobs, limit=args.limit, sample=args.sample,
                       seed=args.seed, progress=sys.stderr.isatty())
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    summary = summarise(result)
    by_status: dict[str, list[float]] = {}
    for r in result.records:
        by_status.setdefault(r["status"], []).append(r["cpu_seconds"])
    out = {
        "space": result.space.name,
        "points": len(result.records),
        "wall_s": wall,
        "cpu_s": cpu,
        "jobs": args.jobs,
        "cpus": os.cpu_count(),
        "counts": {k: len(v) for k, v in by_status.items()},
        "cpu_s_by_status": {k: sum(v) for k, v in by_status.items()},
        "median_cpu_s_by_status": {k: statistics.median(v) for k, v in by_status.items()},
        "best": summary["best"]["why"] if summary["best"] else None,
        "db": db,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['points']} points in {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"({args.jobs} job(s), {out['cpus']} CPUs)")
    for status, n in sorted(out["counts"].items()):
        print(f"  {status:8s} {n:5d}  {out['cpu_s_by_status'][status]:8.1f} s CPU"
              f"  (median {out['median_cpu_s_by_status'][status] * 1e3:.1f} ms)")
    print(f"best: {out['best']}")


def _cpu_seconds() -> float:
    """User + system CPU of this process and its finished workers: on a shared
    machine the wall clock measures the neighbours too."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


if __name__ == "__main__":
    main()
