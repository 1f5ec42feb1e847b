"""The JSON report read off an interpreted timeline (keys: DESIGN.md section 7).

Times per program (pipeline stage): `compute_s` is the union of its compute events;
`exposed_comm_s[axis]` the time that axis's communication runs with no compute
beside it; `bubble_s` the rest of the iteration, when the stage waits. The
top-level breakdown is that of the busiest stage (the one that bounds the step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from charon_ir.report.energy import add_training_energy
from charon_ir.runtime.program import KIND_COMPUTE
from charon_ir.runtime.timeline import ANY_AXIS, Timeline, exposed_by_axis, measure
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target


def stage_breakdown(timeline: Timeline, index: int) -> dict[str, Any]:
    """The stage's iteration as compute, exposed communication and bubble: the
    time nothing of it runs, makespan - compute - exposed (of all axes at once)."""
    program = timeline.program
    compute = timeline.intervals(KIND_COMPUTE, program=index)
    exposed = exposed_by_axis(timeline, index)
    exposed_any = exposed.pop(ANY_AXIS)
    # a folded loop spans its window on the compute stream but computes only part
    # of it: the rest is exposed communication (in its folded_exposed) and waits
    folded_gap = sum(
        float(program.duration[i] - program.busy[i])  # pyright: ignore[reportOptionalSubscript]
        for i in program.folded_exposed
        if program.event_program[i] == index  # pyright: ignore[reportOptionalSubscript]
    )
    compute_s = measure(compute) - folded_gap
    return {
        "compute_s": compute_s,
        "exposed_comm_s": dict(sorted(exposed.items())),
        "bubble_s": max(0.0, timeline.makespan - compute_s - exposed_any),
    }


def utilization(flops_per_gpu: float, seconds: float, peak_tflops: float) -> float:
    """A share of the GPU's dense bf16 peak: MFU of the model FLOPs, HFU of all."""
    return flops_per_gpu / seconds / 1e12 / peak_tflops if seconds > 0 and peak_tflops else 0.0


def summarize(timeline: Timeline, target: Target) -> dict[str, Any]:
    program = timeline.program
    makespan = timeline.makespan
    stages = [stage_breakdown(timeline, i) for i in range(len(program.programs))]
    critical = max(range(len(stages)), key=lambda i: stages[i]["compute_s"])
    ranks = np.array([program.programs[p].ranks for p in program.event_program], dtype=np.float64)
    job_flops = float((program.flops * ranks).sum()) if program.num_events else 0.0
    flops_per_gpu = job_flops / target.gpus
    # recompute re-runs forward work: hardware FLOPs count it, model FLOPs do not
    recomputed = sum(p.recompute_flops * p.ranks for p in program.programs)
    model_flops_per_gpu = (job_flops - recomputed) / target.gpus
    tflops = flops_per_gpu / makespan / 1e12 if makespan > 0 else 0.0
    # a pipeline over several kinds of GPU: each stage on its own, MFU and HFU
    # shares of the job's mean peak
    stage_gpus = [load_gpu(p.hardware) if p.hardware else target.gpu for p in program.programs]
    mixed = any(p.hardware for p in program.programs)
    peak = (sum(g.peak("bf16") * p.ranks for g, p in zip(stage_gpus, program.programs))
            / sum(p.ranks for p in program.programs) if mixed else target.gpu.peak("bf16")) / 1e12
    if mixed:
        for stage, gpu in zip(stages, stage_gpus):
            stage["hardware"] = gpu.name
    tokens = sum(p.tokens for p in program.programs)
    streams = {
        name: {"busy_s": busy, "utilization": busy / makespan if makespan else 0.0}
        for name, busy in timeline.stream_busy().items()
    }
    report: dict[str, Any] = {
        "iteration_time_s": makespan,
        "tokens_per_s": tokens / makespan if makespan > 0 and tokens else None,
        "tflops_per_gpu": tflops,
        "mfu": utilization(model_flops_per_gpu, makespan, peak),
        "hfu": utilization(flops_per_gpu, makespan, peak),
        "flops_per_gpu": flops_per_gpu,
        "model_flops_per_gpu": model_flops_per_gpu,
        "breakdown": stages[critical] | {"stage": critical},
        "stages": stages,
        "streams": streams,
        "engines": dict(sorted(program.engines.items())),
        "events": program.num_events,
        "hardware": "+".join(dict.fromkeys(g.name for g in stage_gpus)) if mixed else target.gpu.name,
        "gpus": target.gpus,
    }
    return add_training_energy(report, target, stage_gpus if mixed else None)
