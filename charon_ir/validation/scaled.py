"""How well the `scaled` engine carries a measured kernel to another GPU, on the
data shipped with Charon:

- the shipped kernels (`charon_ir/profile/data/gpu_kernels.db`): every op measured
  on both the H100 and the H200, predicted on one from the other, per op family;
  the rows the engines do not read (samples spread over
  `profile.shipped.SHIPPED_MAX_SPREAD`) are left out;
- the published maximum-achievable-matmul records (`mamf_*` in
  validation/published.json: A100, H100, GH200, B200, GB200): each GPU's best GEMM
  predicted from every other's.

`python -m charon_ir.validation.scaled` prints the table README quotes.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from importlib import resources
from statistics import median
from typing import Any

from charon_ir.engines.db import shipped_table
from charon_ir.engines.scaled import scale_time
from charon_ir.profile.key import kind_of_family
from charon_ir.profile.shipped import SHIPPED_DB
from charon_ir.target.hardware import load_gpu
from charon_ir.validation import record_gpu

PAIR = ("H100-SXM5-80GB", "H200-SXM-141GB")


def kernel_errors(min_time_s: float = 0.0) -> dict[str, dict[str, list[float]]]:
    """direction ("H100->H200", ...) -> op kind -> relative errors (predicted /
    measured - 1) of the ops measured on both GPUs (and timed at least
    `min_time_s` on both)."""
    rows = {d: shipped_table(SHIPPED_DB, d) for d in PAIR}
    out: dict[str, dict[str, list[float]]] = {}
    for a, b in (PAIR, PAIR[::-1]):
        gpu_a, gpu_b = load_gpu(a), load_gpu(b)
        errors: dict[str, list[float]] = defaultdict(list)
        for key, ma in rows[a].items():
            mb = rows[b].get(key)
            if mb is None or min(ma.time_s, mb.time_s) < min_time_s:
                continue
            dtypes = key.dtype_list()
            predicted = scale_time(ma.time_s, gpu_a, gpu_b, key.kind, dtypes[-1] if dtypes else "bf16",
                                   ma.flops, ma.bytes)
            errors[kind_of_family(key.family)].append(predicted / mb.time_s - 1)
        out[f"{a.split('-')[0]}->{b.split('-')[0]}"] = dict(errors)
    return out


def _mamf_records() -> list[dict[str, Any]]:
    text = resources.files("charon_ir.validation").joinpath("published.json").read_text()
    records = json.loads(text)
    records = records.get("records", records) if isinstance(records, dict) else records
    return [r for r in records if str(r.get("id", "")).startswith("mamf_")]


def gemm_errors() -> list[tuple[str, str, float]]:
    """(from, to, error) of each published best GEMM (TFLOP/s) predicted from
    another GPU's: compute-bound, so the peaks' ratio with the source's efficiency."""
    best: dict[str, float] = {}
    for r in _mamf_records():
        gpu = record_gpu(r)
        best[gpu] = max(best.get(gpu, 0.0), float(r["value"]))
    out = []
    for a, tflops_a in sorted(best.items()):
        for b, tflops_b in sorted(best.items()):
            if a == b:
                continue
            gpu_a, gpu_b = load_gpu(a), load_gpu(b)
            flops = 2 * 8192.0**3  # a large square GEMM: compute-bound on every GPU
            t_a = flops / (tflops_a * 1e12)
            t_b = scale_time(t_a, gpu_a, gpu_b, "matmul", "bf16", flops, 3 * 2 * 8192.0**2)
            out.append((a, b, (flops / t_b / 1e12) / tflops_b - 1))
    return out


def table() -> list[dict[str, Any]]:
    """Rows of README's table: per direction and op kind, the count, the mean
    absolute and median signed error."""
    rows = []
    for direction, kinds in kernel_errors().items():
        everything = [e for errs in kinds.values() for e in errs]
        for kind, errs in sorted(kinds.items()) + [("all", everything)]:
            rows.append({"set": f"shipped kernels {direction}", "family": kind, "n": len(errs),
                         "mape": sum(abs(e) for e in errs) / len(errs), "median": median(errs)})
    gemm = gemm_errors()
    rows.append({"set": "published best GEMM (mamf), every pair", "family": "matmul", "n": len(gemm),
                 "mape": sum(abs(e) for _, _, e in gemm) / len(gemm), "median": median(e for _, _, e in gemm)})
    return rows


def main() -> None:
    print("| set | op family | ops | mean abs. error | median error |")
    print("|---|---|---|---|---|")
    for r in table():
        print(f"| {r['set']} | {r['family']} | {r['n']} | {100 * r['mape']:.1f} % | {100 * r['median']:+.1f} % |")
    if "--pairs" in sys.argv:
        for a, b, e in gemm_errors():
            print(f"{a} -> {b}: {100 * e:+.1f} %")


if __name__ == "__main__":
    main()
