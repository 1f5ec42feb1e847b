"""The flags that say which step a measured trace is of (`charon validate
--profile`, `charon calibrate --profile`), declared once for both commands."""

from __future__ import annotations

from typing import Annotated, Any

import typer

Opt = typer.Option

Profile = Annotated[str, Opt("--profile", help="a PyTorch profiler (Kineto) Chrome trace of one step (.json or .json.gz)")]
Model = Annotated[str, Opt("--model", help="with --profile: the traced model (bundled name or config.json)")]
SeqLen = Annotated[int, Opt("--seq-len", help="with --profile: tokens per sequence of the traced step")]
MicroBatch = Annotated[int, Opt("--micro-batch", help="with --profile: sequences per micro-batch")]
Hardware = Annotated[str, Opt("--hardware", help="with --profile: the GPU simulated (a CPU trace: any; its calibration is the CPU's)")]
Gpus = Annotated[int, Opt("--gpus", help="with --profile: GPUs in the traced job")]
Tp = Annotated[int, Opt("--tp", help="with --profile: tensor parallel")]
Pp = Annotated[int, Opt("--pp", help="with --profile: pipeline stages")]
Fuse = Annotated[bool, Opt("--fuse/--no-fuse", help="with --profile: fused kernels (an eager PyTorch step: no)")]
Engines = Annotated[str, Opt("--engines", help="with --profile: cost engine chain (calibrated: the stored calibration)")]
HostLaunch = Annotated[float, Opt("--host-launch-us", min=0.0, help="microseconds the host takes per launch (0: not modelled): with --profile the traced step's (the trace's own is printed), else the training records' (a what-if: no GPU type has a measured value)")]


def run_options(seq_len: int, micro_batch: int, hardware: str, gpus: int, tp: int, pp: int,
                fuse: bool, engines: str, host_launch_us: float = 0.0) -> dict[str, Any]:
    """TrainingConfig options of the traced step (TrainingConfig's own defaults
    for the rest: an eager PyTorch step follows no framework's presets)."""
    return dict(framework="none", seq_len=seq_len, micro_batch=micro_batch, hardware=hardware, gpus=gpus,
                tp=tp, pp=pp, fuse=fuse, engines=tuple(engines.split(",")), host_launch_s=host_launch_us * 1e-6)
