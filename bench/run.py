"""The simulator's own speed, as a table (`make bench`).

Cases (on H100-SXM5-80GB, seq 8192, micro-batch 1, TP8 + SP, full recompute so
that the models fit in 80 GB):
- simulate, cold: a new process (`charon simulate --json`), the model already
  imported once (its IR cached on disk);
- simulate, warm: in-process, everything imported, fast and fine tiers;
- scaling (llama-3.1-70b): the simulator's time must not grow with the
  data-parallel degree nor with the gradient-accumulation steps (ratios printed).

Numbers are wall seconds on the machine that runs it; on a shared 2-core machine
they move with its load, so each case is the median of `--runs` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from rows import print_rows

BASE = dict(
    hardware="H100-SXM5-80GB",
    tp=8,
    seq_len=8192,
    micro_batch=1,
    sequence_parallel=True,
    recompute="full",
)


def warm(model: str, runs: int, **options) -> tuple[float, dict]:
    from charon_ir.api import simulate

    simulate(model, **BASE, **options)  # imports and caches
    times, report = [], {}
    for _ in range(runs):
        start = time.perf_counter()
        report = simulate(model, **BASE, **options)
        times.append(time.perf_counter() - start)
    return statistics.median(times), report


def cold(model: str, runs: int, **options) -> float:
    args = [sys.executable, "-m", "charon_ir.cli", "simulate", "--model", model, "--json"]
    for key, value in {**BASE, **options}.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        else:
            args += [flag, str(value)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(args, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - start)
        if out.returncode:
            raise SystemExit(f"cold run failed: {out.stderr.strip()}")
        json.loads(out.stdout)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-405b")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []

    big = dict(gpus=16384, pp=16, dp=128, global_batch=2048)
    t_fast, report = warm(args.model, args.runs, **big)
    rows.append(("405B 16384 GPUs tp8 pp16 dp128, warm, fast tier", f"{t_fast:.2f} s",
                 f"{report['events']} events, step {report['iteration_time_s']:.3f} s"))
    t_fine, report_fine = warm(args.model, 1, tier="fine", **big)
    rows.append(("same, warm, fine tier", f"{t_fine:.2f} s",
                 f"{report_fine['events']} events, step {report_fine['iteration_time_s']:.3f} s "
                 f"({100 * (report['iteration_time_s'] / report_fine['iteration_time_s'] - 1):+.2f}% fast vs fine)"))
    t_cold = cold(args.model, args.runs, **big)
    rows.append(("same, cold (new process, IR cached)", f"{t_cold:.2f} s", "charon simulate --json"))

    # scaling on llama-3.1-70b, tp8 pp1 with ZeRO-1 (so that dp=8 fits): one
    # pipeline stage, so gradient accumulation runs 1..512 micro-batches
    mid = "llama-3.1-70b"
    small_dp, _ = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8 * 4)
    large_dp, _ = warm(mid, args.runs, gpus=8 * 1024, pp=1, dp=1024, zero=1, global_batch=1024 * 4)
    rows.append(("70B tp8 zero1, dp=8 vs dp=1024 (4 micro-batches)", f"{small_dp:.2f} / {large_dp:.2f} s",
                 f"ratio {large_dp / small_dp:.2f}"))
    gas1, _ = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8)
    gas512, r512 = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8 * 512)
    rows.append(("70B tp8 zero1 dp8, gas=1 vs gas=512", f"{gas1:.2f} / {gas512:.2f} s",
                 f"ratio {gas512 / gas1:.2f} (512: simulated {r512.get('microbatches_simulated')})"))

    print_rows(f"Charon-IR speed ({os.cpu_count()} CPUs, median of {args.runs})",
               ("case", "wall", "detail"), rows, args.json)

if __name__ == "__main__":
    main()
