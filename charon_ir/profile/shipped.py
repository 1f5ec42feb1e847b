"""
The GPU kernel measurements shipped with Charon: `data/gpu_kernels.db`.

Every distinct compute op of the training steps in `SHIPPED_STEPS` (the bundled
Llama 3.1, GPT-3 and Mixtral models at the tensor-parallel shapes of README's
runs), and the sweep variants the `predict` engine fits on, measured with torch
2.11.0+cu130 on one H100-SXM5-80GB and one H200-SXM-141GB:

    charon profile --device cuda --shipped-steps --db gpu_kernels.db

The H100's timings under 100 us were taken again as CUDA graphs (`runner.graphed`)
after the first run had timed them eagerly, at PyTorch's launch rate (`charon
profile ... --refresh-below 1e-4`); the H200's were not: its small kernels read at
least 7.4 us, an upper bound, and the engines do not read its rows (`NOT_READ`).

The `db` and `predict` engines read these after the user's own database (a
measurement of the user's for the same op wins). `CHARON_PROFILE_SHIPPED=off`
leaves them out. Fused `sim.generic` kernels (`fused.rms_norm`, `fused.swiglu`,
...) have no torch runner and MoE dispatch/combine none either: those ops fall
through to the next engine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SHIPPED_DB = Path(__file__).with_name("data") / "gpu_kernels.db"
SHIPPED_ENV = "CHARON_PROFILE_SHIPPED"

SHIPPED_STEPS: dict[str, dict[str, Any]] = {
    "llama-3.1-8b tp8 pp2 sp seq 4096": dict(
        model="llama-3.1-8b", gpus=64, tp=8, pp=2, sequence_parallel=True, seq_len=4096, global_batch=256
    ),
    "llama-3.1-70b tp8 pp4 sp seq 4096": dict(
        model="llama-3.1-70b", gpus=256, tp=8, pp=4, sequence_parallel=True, seq_len=4096, global_batch=256
    ),
    "llama-3.1-405b tp8 pp16 sp seq 8192": dict(
        model="llama-3.1-405b", gpus=16384, tp=8, pp=16, dp=128, sequence_parallel=True, seq_len=8192,
        global_batch=2048,
    ),
    "llama-3.1-8b tp1 seq 4096": dict(model="llama-3.1-8b", gpus=8, tp=1, seq_len=4096, global_batch=64, zero=1),
    "gpt3-175b tp8 pp8 sp seq 2048": dict(
        model="gpt3-175b", gpus=1024, tp=8, pp=8, sequence_parallel=True, seq_len=2048, global_batch=1024
    ),
    "mixtral-8x7b tp2 ep4 sp seq 4096": dict(
        model="mixtral-8x7b", gpus=64, tp=2, ep=4, sequence_parallel=True, seq_len=4096, global_batch=256, zero=1
    ),
}
"""The training steps whose kernels were measured: `TrainingConfig` fields."""

NOT_READ = frozenset({"H200-SXM-141GB"})
"""Devices whose shipped rows stay in the file but the engines do not read (their
ops are priced by the next engine). The H200's were timed eagerly, on the first
run on its machine, and not re-timed as CUDA graphs: against the same ops' CUDA-graph
timings on the H100 (H200 / H100, median and quartiles, by the H200 time) 7-9 us
3.52 (2.30-4.27), 9-11 us 2.54, 11-13 us 1.56, 13-15 us 1.23, 15-20 us 1.35
(0.93-7.71): PyTorch's launch interval, not the kernel; its flash-attention
backward rows read 0.9-2.35 times the H100's with spreads up to 1.96. Read, they
priced README's llama-3.1-8b step (64 GPUs, tp 8, pp 2) at 3.176 s on the H200
against 2.784 s on the H100 (`--engines db,predict,analytic`), a faster GPU 14 %
slower; without the rows under 20 us, 3.210 s (the `predict` engine, before
`fit.Bounded`, extrapolated them from the larger ones) and 2.883 s with `db,analytic`. Re-timing on an H200
(`charon profile --device cuda --shipped-steps --refresh-below 1` refreshes every
row, as CUDA graphs) removes the entry."""

SHIPPED_GPUS = ("H100-SXM5-80GB", "H200-SXM-141GB")
"""The GPUs the shipped kernels were measured on, each for every step."""


def shipped_db_path() -> Path | None:
    """The shipped database, unless `CHARON_PROFILE_SHIPPED` turns it off."""
    if os.environ.get(SHIPPED_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return None
    return SHIPPED_DB if SHIPPED_DB.is_file() else None
