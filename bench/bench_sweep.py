"""Benchmark of `charon sweep`: a training space of llama-3.1-70b on 1,024 H100s
(examples/sweeps/training.yaml, 1,260 distinct configurations), evaluated from
an empty results file, in-process unless --jobs says otherwise.

    .venv/bin/python bench/bench_sweep.py [--space FILE] [--jobs N] [--limit N | --sample N]
        [--tier screen|fast] [--db FILE] [--json] [--records FILE] [--expect FILE]
    .venv/bin/python bench/bench_sweep.py --compare FAST.sqlite [--beyond PERCENT]   # FAST: a --tier fast --db run
    .venv/bin/python bench/bench_sweep.py --jobs 2 --expect bench/expected/training-sweep.json

Targets on a 2-core machine: 1,000 configurations in <= 60 s in-process (issue
9); 10,000 legal configurations a minute (issue 29: 918 legal points in 5.5 s).
It prints the legal configurations per minute of wall time and of CPU time
(this process and its finished workers). `--compare` screens every point
(nothing re-timed), prints its rate, and the
screening tier's error against a results file of the fast tier: step time,
peak memory, fit decisions and ranking, then every point whose step time is
off by more than `--beyond` percent (default 1, the issue's bound) with the
settings the space varies, both tiers' step times and the parts of the
step that differ (compute, exposed communication per axis, bubble, the stage
reported). The report splits the time by what happened to each point (pruned
by rule, pruned by the memory model, timed, failed), because a timed point costs
orders of magnitude more than a pruned one, and gives CPU seconds beside wall
seconds: on a shared machine the wall clock also counts the neighbours.

`--expect FILE` checks that the sweep's output is the one a reference version
gave, record by record: every point's status, error and metrics (everything a
record holds but the seconds it cost), as a digest per point (`--records FILE`
writes them). bench/expected/training-sweep.json is the full run's and
training-sweep-screened.json the `--retime -1` run's (every point screened,
nothing re-timed), both of the simulator at 0327f42 (e1df768, memory-analysis
freeing a stage's unread forward output as Megatron-LM does, moved 688 points'
memory; 8a6bb3b..e1df768~1 gave the files before), but for the screened points
whose step time the screen's backward head and per-link sends (3105cf3) moved:
259 of the --retime -1 file, 257 of the full run's (-2.5 .. +0.4 %; no status,
memory, re-timed set or fast-tier record moved), and but for the pipeline
points whose sends the megatron-core preset now waits for (`pp_send_overlap`
false with pp > 1 and no vpp, 22728a5): 504 of 1,260 points in each file take
a new key (the setting is hashed once it differs from its default), 202 ok
points' step time +0.00 .. +2.89 % (median +0.12 %), no status moved. A
speed-up must leave both byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
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
    parser.add_argument("--tier", default="screen", choices=("screen", "fast"),
                        help="screen (default): composed points, the best re-timed; fast: every point timed")
    parser.add_argument("--compare", default="",
                        help="a results file of the same space run with --tier fast: screen every point "
                             "(nothing re-timed) and print the screening tier's error against it")
    parser.add_argument("--beyond", type=float, default=1.0,
                        help="with --compare: list every point whose step time is off by more than this percent")
    parser.add_argument("--retime", type=int, default=0,
                        help="screened points re-timed by the fast tier (0: the sweep's default; -1: none)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--records", default="", help="write each point's output digest to FILE (JSON)")
    parser.add_argument("--expect", default="",
                        help="a --records FILE of a reference run: exit 1 unless every point's output is the same")
    args = parser.parse_args()

    from charon_ir.sweep import summarise
    from charon_ir.sweep.runner import run_sweep

    db = args.db or os.path.join(tempfile.mkdtemp(prefix="charon-bench-sweep-"), "bench.sqlite")
    load = os.getloadavg()[0]
    start, cpu_start, workers_start = time.perf_counter(), _cpu_seconds(), _cpu_seconds(resource.RUSAGE_CHILDREN)
    result = run_sweep(args.space, db=db, jobs=args.jobs, limit=args.limit, sample=args.sample,
                       seed=args.seed, progress=sys.stderr.isatty(),
                       tier="screen" if args.compare else args.tier, retime=-1 if args.compare else args.retime)
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    workers = _cpu_seconds(resource.RUSAGE_CHILDREN) - workers_start
    digests = {r["key"]: _digest(r) for r in result.records}
    if args.records:
        Path(args.records).write_text(json.dumps(digests, indent=0, sort_keys=True) + "\n")
    if args.expect:
        _expect(digests, args.expect)
    legal = sum(r["status"] != "illegal" for r in result.records)
    rates = (f"{legal} legal configurations: {legal / wall * 60:,.0f} per minute of wall time, "
             f"{legal / cpu * 60:,.0f} per CPU minute ({wall:.2f} s wall, {cpu:.2f} s CPU, "
             f"{args.jobs} job(s){f', {workers:.2f} s of it in the workers' if args.jobs > 1 else ''}, "
             f"load average {load:.1f} before the run)")
    if args.compare:
        print(f"screened, nothing re-timed: {rates}")
        _compare(result.records, args.compare, args.beyond / 100)
        return
    summary = summarise(result)
    by_status: dict[str, list[float]] = {}
    for r in result.records:
        by_status.setdefault(r["status"], []).append(r["cpu_seconds"])
    out = {
        "space": result.space.name,
        "points": len(result.records),
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_s_workers": workers,
        "jobs": args.jobs,
        "cpus": os.cpu_count(),
        "load_average": load,
        "legal": legal,
        "legal_per_minute_wall": legal / wall * 60,
        "legal_per_minute_cpu": legal / cpu * 60,
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
    print(rates)
    for status, n in sorted(out["counts"].items()):
        print(f"  {status:8s} {n:5d}  {out['cpu_s_by_status'][status]:8.1f} s CPU"
              f"  (median {out['median_cpu_s_by_status'][status] * 1e3:.1f} ms)")
    print(f"best: {out['best']}")


def _compare(screened: list[dict], fast_db: str, beyond: float = 0.01) -> None:
    """The screening tier's error against the fast tier, point by point; every
    point off by more than `beyond` listed with the parts of its step."""
    from charon_ir.sweep.store import ResultStore

    store = ResultStore(fast_db)
    fast = {r["key"]: r for r in store.get()}
    store.close()
    errors, memory, decisions = [], [], {"agree": 0, "screen fits, fast OOM": 0, "screen OOM, fast fits": 0}
    times, worst = [], []
    for r in screened:
        f = fast.get(r["key"])
        if f is None or r["status"] not in ("ok", "oom") or f["status"] not in ("ok", "oom"):
            continue
        if r["status"] != f["status"]:
            decisions["screen fits, fast OOM" if r["status"] == "ok" else "screen OOM, fast fits"] += 1
            continue
        decisions["agree"] += 1
        if r["status"] == "ok":
            rm, fm = r["metrics"], f["metrics"]
            if rm.get("tier") != "screen":
                continue
            errors.append(rm["iteration_time_s"] / fm["iteration_time_s"] - 1)
            memory.append(rm["max_peak_memory_bytes"] / fm["max_peak_memory_bytes"] - 1)
            times.append((fm["iteration_time_s"], rm["iteration_time_s"], r["key"]))
            worst.append((abs(errors[-1]), errors[-1], r.get("config") or {}, rm, fm))
    if not errors:
        print("no screened point to compare")
        return
    absolute = sorted(abs(e) for e in errors)
    print(f"{len(errors)} screened points timed by both tiers: step time error "
          f"median {statistics.median(absolute) * 100:.2f}%, p90 {absolute[int(0.9 * (len(absolute) - 1))] * 100:.2f}%, "
          f"range {min(errors) * 100:+.1f}% .. {max(errors) * 100:+.1f}%")
    varied = [k for k in ("tp", "pp", "vpp", "dp", "zero", "micro_batch", "sequence_parallel", "recompute",
                          "schedule", "dp_bucket_mb") if len({str(w[2].get(k)) for w in worst}) > 1]
    off = sorted((w for w in worst if w[0] > beyond), key=lambda w: -w[0])
    print(f"{len(off)} point(s) off by more than {beyond * 100:g}%" + (":" if off else ""))
    for _, error, config, rm, fm in off:  # where the tail is, and what part of the step
        print(f"  {error * 100:+.2f}%  " + ", ".join(f"{k} {config.get(k)}" for k in varied))
        print(f"      step {rm['iteration_time_s'] * 1e3:.3f} ms (screen) vs {fm['iteration_time_s'] * 1e3:.3f} ms (fast): "
              + (", ".join(_parts(rm["breakdown"], fm["breakdown"])) or "no part differs by 0.1 ms"))
    print(f"composed peak memory vs memory-analysis: {min(memory) * 100:+.1f}% .. {max(memory) * 100:+.1f}%")
    print("fit decisions: " + ", ".join(f"{k} {v}" for k, v in decisions.items()))
    by_fast = sorted(times)
    by_screen = sorted(times, key=lambda t: (t[1], t[2]))
    print(f"the fast tier's best is the screen's #{by_screen.index(by_fast[0]) + 1}; "
          f"its top 10 within the screen's top 10: {len({t[2] for t in by_fast[:10]} & {t[2] for t in by_screen[:10]})}")


def _parts(screen: dict, fast: dict) -> list[str]:
    """The parts of a step's breakdown two tiers give differently (by 0.1 ms or
    more): compute, exposed communication per axis, bubble, and the stage
    reported. Waiting for a pipeline send is exposed pp in the fast tier and
    bubble in the screen."""
    out = []

    def part(name: str, a: float, b: float) -> None:
        if abs(a - b) >= 1e-4:
            out.append(f"{name} {a * 1e3:.1f} vs {b * 1e3:.1f} ms ({(a - b) * 1e3:+.1f})")

    part("compute", screen["compute_s"], fast["compute_s"])
    exposed_screen, exposed_fast = screen["exposed_comm_s"], fast["exposed_comm_s"]
    for axis in sorted(exposed_screen.keys() | exposed_fast.keys()):
        part(f"exposed {axis}", exposed_screen.get(axis, 0.0), exposed_fast.get(axis, 0.0))
    part("bubble", screen["bubble_s"], fast["bubble_s"])
    if screen["stage"] != fast["stage"]:
        out.append(f"stage {screen['stage']} vs {fast['stage']}")
    return out


def _digest(record: dict) -> str:
    """A record's output (not the seconds it cost) as a short hash: floats as
    JSON writes them (their repr: every digit)."""
    output = {k: record[k] for k in ("status", "error", "metrics")}
    return hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:24]


def _expect(digests: dict[str, str], path: str) -> None:
    """Exit 1 (naming the first points that differ) unless `digests` are those of `path`."""
    try:
        expected = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"--expect {path}: cannot read it as a --records file ({e})")
    differ = sorted(k for k in expected.keys() | digests.keys() if expected.get(k) != digests.get(k))
    if differ:
        sys.exit(f"--expect {path}: {len(differ)} of {len(expected)} points differ "
                 f"(first: {', '.join(differ[:3])})")
    print(f"--expect {path}: all {len(expected)} points' outputs identical")


def _cpu_seconds(*whose: int) -> float:
    """User + system CPU of this process and its finished workers (`whose`:
    only those): on a shared machine the wall clock measures the neighbours too."""
    total = 0.0
    for who in whose or (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


if __name__ == "__main__":
    main()
