"""Record a PyTorch profiler (Kineto) Chrome trace of one real training step.

The model is `charon validate --live`'s small Llama (4 layers, hidden 1024,
`charon_ir.validation.live.LIVE_MODEL`): forward, cross-entropy loss, backward
and a fused AdamW step, on this machine's CPU (float32, one thread) or a GPU
(bfloat16). Two warm-up steps, then one profiled step; the trace is written
gzipped, with the model's config.json beside it so `charon validate --profile`
can simulate the same step:

    .venv/bin/python bench/record_kineto_trace.py --seq-len 256 \
        --out test/data/kineto/llama4-cpu-s256.json.gz
    .venv/bin/charon validate --profile test/data/kineto/llama4-cpu-s256.json.gz \
        --model test/data/kineto/llama4-config.json --seq-len 256

The shipped traces under test/data/kineto were recorded so.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True, help="the trace file (.json.gz)")
    parser.add_argument("--execution-trace", default="",
                        help="also record the step's PyTorch execution trace (ExecutionTraceObserver) here (.json.gz)")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from charon_ir.validation.live import LIVE_MODEL, training_step

    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    step = training_step(LIVE_MODEL, args.batch, args.seq_len, device, dtype)

    for _ in range(2):
        step()
    if args.execution_trace:
        record_execution_trace(step, Path(args.execution_trace))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        with torch.profiler.record_function("ProfilerStep#0"):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        with open(raw, "rb") as src, gzip.open(out.with_suffix(out.suffix + ".tmp"), "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    os.replace(out.with_suffix(out.suffix + ".tmp"), out)
    config_file = out.parent / "llama4-config.json"
    config_file.write_text(json.dumps(LIVE_MODEL, indent=2) + "\n")
    print(f"{out}: {out.stat().st_size:,} bytes; model config {config_file}")


def record_execution_trace(step, out: Path) -> None:
    """One step under torch's ExecutionTraceObserver, written gzipped."""
    from torch.profiler import ExecutionTraceObserver

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "et.json"
        observer = ExecutionTraceObserver().register_callback(str(raw))
        observer.start()
        step()
        observer.stop()
        observer.unregister_callback()
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(raw, "rb") as src, gzip.open(out.with_suffix(out.suffix + ".tmp"), "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    os.replace(out.with_suffix(out.suffix + ".tmp"), out)
    print(f"{out}: {out.stat().st_size:,} bytes (execution trace)")


if __name__ == "__main__":
    main()
