"""The serving simulator's own speed (`python bench/bench_serve.py`).

Cases (llama-3.1-70b, H100-SXM5-80GB, TP8, Poisson at 4 requests/s, 1024 input
and 256 output tokens):
- cold: a new process, `charon serve ... --num-requests 10000 --json`, with the
  replica's latency table already on disk (a first run in a fresh cache also
  imports and prices the sample steps, ~10-20 s more, once);
- warm: in-process `serve(...)`, split into the latency model and the
  scheduler loop, for 1,000 and 10,000 requests, and the iterations per second
  the scheduler sustains.

Numbers are wall seconds of the machine that runs it (median of `--runs`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from rows import print_rows


CASE = dict(hardware="H100-SXM5-80GB", tp=8, rate=4.0, input_len=1024, output_len=256)
MODEL = "llama-3.1-70b"


def cold(num_requests: int, runs: int) -> float:
    args = [sys.executable, "-m", "charon_ir.cli", "serve", "--model", MODEL, "--json",
            "--num-requests", str(num_requests)]
    for key, value in CASE.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(args, capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - start)
        if out.returncode:
            raise SystemExit(f"cold run failed: {out.stderr.strip()}")
        json.loads(out.stdout)
    return statistics.median(times)


def warm(num_requests: int, runs: int) -> tuple[float, dict]:
    from charon_ir.serving import serve

    serve(MODEL, num_requests=num_requests, **CASE)  # builds or loads the table
    times, report = [], {}
    for _ in range(runs):
        start = time.perf_counter()
        report = serve(MODEL, num_requests=num_requests, timings=True, **CASE)
        times.append(time.perf_counter() - start)
    return statistics.median(times), report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    for n in (1_000, 10_000):
        t, report = warm(n, args.runs)
        iterations = sum(r["iterations"] for r in report["replicas"])
        sched = report["simulator_wall_s"]["scheduler"]
        rows.append((f"{n} requests, warm (in-process)", f"{t:.2f} s",
                     f"{iterations} iterations, scheduler {sched:.2f} s "
                     f"({iterations / sched / 1e3:.0f}k iterations/s)"))
    t_cold = cold(10_000, args.runs)
    rows.append(("10000 requests, cold (new process, table on disk)", f"{t_cold:.2f} s",
                 "charon serve ... --json"))
    print_rows(f"charon serve: {MODEL} TP8 on H100, Poisson 4 req/s, 1024 in / 256 out",
               ("case", "wall", "notes"), rows, args.json)

if __name__ == "__main__":
    main()
