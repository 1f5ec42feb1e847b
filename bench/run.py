"""The simulator's own speed, as a table (`make bench`).

Cases (on H100-SXM5-80GB, seq 8192, micro-batch 1, TP8 + SP, full recompute so
that the models fit in 80 GB):
- simulate, cold: a new process (`charon simulate --json`), the model already
  imported once (its IR cached on disk);
- simulate, warm: in-process, everything imported, fast and fine tiers;
- the issue's 405B command as written (no SP, no recompute): it does not fit,
  and `--json` still prints the whole report ("fits": false) before exiting 1;
- scaling (llama-3.1-70b): the simulator's time must not grow with the
  data-parallel degree nor with the gradient-accumulation steps (ratios printed).

Every case runs under `--framework none` (the flags as given).
Numbers are wall seconds on the machine that runs it, with the CPU seconds of
the in-process cases beside them; on a shared 2-core machine wall seconds move
with its load, so each case is the median of `--runs` runs (in-process runs
start after a garbage collection, as the previous run's IR is cyclic garbage).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

from rows import print_rows

BASE = dict(
    # the settings as written, no framework's defaults: the cases keep their
    # meaning (the issue's command does not fit) whatever the default becomes
    framework="none",
    hardware="H100-SXM5-80GB",
    tp=8,
    seq_len=8192,
    micro_batch=1,
    sequence_parallel=True,
    recompute="full",
)


def warm(model: str, runs: int, base: dict | None = None, **options) -> tuple[float, float, dict]:
    """Median wall and CPU seconds of `simulate` in-process, and its report."""
    from charon_ir.api import simulate

    base = BASE if base is None else base
    simulate(model, **base, **options)  # imports and caches
    walls, cpus, report = [], [], {}
    for _ in range(runs):
        gc.collect()  # the previous run's IR is cyclic garbage: each run starts clean
        start, cpu = time.perf_counter(), time.process_time()
        report = simulate(model, **base, **options)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), report


def cold(model: str, runs: int, base: dict | None = None, **options) -> float:
    """Median wall seconds of `charon simulate --json` in a new process. A
    configuration that does not fit exits 1 after printing its whole report."""
    args = [sys.executable, "-m", "charon_ir.cli", "simulate", "--model", model, "--json"]
    for key, value in {**(BASE if base is None else base), **options}.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is not False:
            args += [flag, str(value)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(args, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - start)
        report = json.loads(out.stdout) if out.stdout.strip() else {}
        if out.returncode and report.get("fits") is not False:
            raise SystemExit(f"cold run failed: {out.stderr.strip()}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-405b")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []

    big = dict(gpus=16384, pp=16, dp=128, global_batch=2048)
    t_fast, c_fast, report = warm(args.model, args.runs, **big)
    rows.append(("405B 16384 GPUs tp8 pp16 dp128, SP, full recompute: warm, fast tier", f"{t_fast:.2f} s",
                 f"CPU {c_fast:.2f} s; {report['events']} events, step {report['iteration_time_s']:.3f} s"))
    t_fine, c_fine, report_fine = warm(args.model, 1, tier="fine", **big)
    rows.append(("same, warm, fine tier", f"{t_fine:.2f} s",
                 f"CPU {c_fine:.2f} s; {report_fine['events']} events, step {report_fine['iteration_time_s']:.3f} s "
                 f"({100 * (report['iteration_time_s'] / report_fine['iteration_time_s'] - 1):+.3f}% fast vs fine)"))
    t_cold = cold(args.model, args.runs, **big)
    rows.append(("same, cold (new process, IR cached)", f"{t_cold:.2f} s", "charon simulate --json"))

    # the issue's command as written: no SP, no recompute, ZeRO-0 does not fit
    # in 80 GB; --json still reports the step ("fits": false) and exits 1
    issue = {k: v for k, v in BASE.items() if k not in ("sequence_parallel", "recompute")}
    t_issue, c_issue, r_issue = warm(args.model, args.runs, base=issue, allow_oom=True, **big)
    rows.append(("405B as the issue's command (no SP, no recompute; OOM), warm, fast", f"{t_issue:.2f} s",
                 f"CPU {c_issue:.2f} s; fits {r_issue['fits']}, step {r_issue['iteration_time_s']:.3f} s"))
    t_issue_fine, c_issue_fine, r_issue_fine = warm(args.model, 1, base=issue, allow_oom=True, tier="fine", **big)
    rows.append(("same, warm, fine tier", f"{t_issue_fine:.2f} s",
                 f"CPU {c_issue_fine:.2f} s; step {r_issue_fine['iteration_time_s']:.3f} s "
                 f"({100 * (r_issue['iteration_time_s'] / r_issue_fine['iteration_time_s'] - 1):+.3f}% fast vs fine)"))
    t_issue_cold = cold(args.model, args.runs, base=issue, **big)
    rows.append(("same, cold (new process, IR cached)", f"{t_issue_cold:.2f} s",
                 "charon simulate --json: report, then the OOM line, exit 1"))

    # scaling on llama-3.1-70b, tp8 pp1 with ZeRO-1 (so that dp=8 fits): one
    # pipeline stage, so gradient accumulation runs 1..512 micro-batches
    mid = "llama-3.1-70b"
    small_dp, c_small_dp, _ = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8 * 4)
    large_dp, c_large_dp, _ = warm(mid, args.runs, gpus=8 * 1024, pp=1, dp=1024, zero=1, global_batch=1024 * 4)
    rows.append(("70B tp8 zero1, dp=8 vs dp=1024 (4 micro-batches)", f"{small_dp:.2f} / {large_dp:.2f} s",
                 f"ratio {large_dp / small_dp:.2f} (CPU {c_small_dp:.2f} / {c_large_dp:.2f} s, "
                 f"ratio {c_large_dp / c_small_dp:.2f})"))
    gas1, c_gas1, _ = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8)
    gas512, c_gas512, r512 = warm(mid, args.runs, gpus=8 * 8, pp=1, dp=8, zero=1, global_batch=8 * 512)
    rows.append(("70B tp8 zero1 dp8, gas=1 vs gas=512", f"{gas1:.2f} / {gas512:.2f} s",
                 f"ratio {gas512 / gas1:.2f} (CPU {c_gas1:.2f} / {c_gas512:.2f} s, ratio {c_gas512 / c_gas1:.2f}; "
                 f"512: simulated {r512.get('microbatches_simulated')})"))

    print_rows(f"Charon-IR speed ({os.cpu_count()} CPUs, median of {args.runs})",
               ("case", "wall", "detail"), rows, args.json)

if __name__ == "__main__":
    main()
