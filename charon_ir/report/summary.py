"""The JSON report read off an interpreted timeline (keys: DESIGN.md section 7)."""

from __future__ import annotations

from typing import Any

from charon_ir.runtime.flatten import KIND_COMM, KIND_COMPUTE
from charon_ir.runtime.interpreter import Timeline, measure, subtract
from charon_ir.target.target import Target


def summarize(timeline: Timeline, target: Target) -> dict[str, Any]:
    program = timeline.program
    makespan = timeline.makespan
    compute = timeline.intervals(KIND_COMPUTE)
    comm = timeline.intervals(KIND_COMM)
    compute_s = measure(compute)
    exposed_comm_s = subtract(comm, compute)
    flops = float(program.flops.sum())
    tflops = flops / makespan / 1e12 if makespan > 0 else 0.0
    peak = target.gpu.peak("bf16") / 1e12
    tokens = program.attributes.get("tokens", 0)
    report: dict[str, Any] = {
        "iteration_time_s": makespan,
        "tokens_per_s": tokens / makespan if makespan > 0 and tokens else None,
        "tflops_per_gpu": tflops,
        "mfu": tflops / peak if peak else 0.0,
        "flops_per_gpu": flops,
        "breakdown": {
            "compute_s": compute_s,
            "exposed_comm_s": exposed_comm_s,
            "idle_s": max(0.0, makespan - compute_s - exposed_comm_s),
        },
        "streams": {
            name: {"busy_s": busy, "utilization": busy / makespan if makespan else 0.0}
            for name, busy in timeline.stream_busy().items()
        },
        "engines": dict(sorted(program.engines.items())),
        "events": program.num_events,
        "hardware": target.gpu.name,
        "gpus": target.gpus,
    }
    return report
