"""
The GPU kernel measurements shipped with Charon: `data/gpu_kernels.db`.

Every distinct compute op of the training steps in `SHIPPED_STEPS` (the bundled
Llama 3.1, GPT-3 and Mixtral models at the tensor-parallel shapes of README's
runs), and the sweep variants the `predict` engine fits on, measured with torch
2.11.0+cu130 on one H100-SXM5-80GB and one H200-SXM-141GB:

    charon profile --device cuda --shipped-steps --db gpu_kernels.db

The H100's timings under 100 us were taken again as CUDA graphs (`runner.graphed`)
after the first run had timed them eagerly, at PyTorch's launch rate (`charon
profile ... --refresh-below 1e-4`); the H200's were all taken again on
2026-11-27 at 21:34 UTC as `runner.graphed` times them now (`bench/gpu_session.sh`:
the steps' ops written by `bench/shipped_step_ops.py` with the pinned torch,
measured with `--ops-from ... --refresh-below 1 --repeats 4`), and its rows that
the plan no longer holds were dropped. Rows whose samples spread too far are not read
(`SHIPPED_MAX_SPREAD`).

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

SHIPPED_MAX_SPREAD = 0.25
"""Shipped rows whose samples' interquartile range exceeds this fraction of their
median stay in the file but are not read (the next engine prices the op). On the
H200, 1 of 3,818 rows is over it (timed as `runner.graphed` does: samples of 0.5 ms
of GPU time behind a host-ahead sleep); the earlier H200 rows, each sample one
replay of a graph sized from the op's eager time, had 1,029 of 3,923 over it:
small kernels whose samples held the graph's submission. On the H100, whose rows
are of that earlier method, 66 of 3,817 rows are over it."""

SHIPPED_GPUS = ("H100-SXM5-80GB", "H200-SXM-141GB")
"""The GPUs the shipped kernels were measured on, each for every step."""


def shipped_db_path() -> Path | None:
    """The shipped database, unless `CHARON_PROFILE_SHIPPED` turns it off."""
    if os.environ.get(SHIPPED_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return None
    return SHIPPED_DB if SHIPPED_DB.is_file() else None
