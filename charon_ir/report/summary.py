"""The JSON report read off an interpreted timeline (keys: DESIGN.md section 7).

Times per program (pipeline stage): `compute_s` is the union of its compute events;
`exposed_comm_s[axis]` the time that axis's communication runs with no compute
beside it; `bubble_s` the rest of the iteration, when the stage waits. The
top-level breakdown is that of the busiest stage (the one that bounds the step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from charon_ir.runtime.flatten import KIND_COMM, KIND_COMPUTE
from charon_ir.runtime.interpreter import Timeline, _union, measure, subtract
from charon_ir.target.target import Target


def _axis_of(stream: str) -> str:
    """comm_tp -> tp, comm_pp_send -> pp, comm_dp_tp -> dp_tp."""
    name = stream.removeprefix("comm_")
    for suffix in ("_send", "_recv"):
        name = name.removesuffix(suffix)
    return name


def exposed_by_axis(timeline: Timeline, index: int) -> dict[str, float]:
    """Per axis, the time program `index`'s communication runs with none of its
    compute beside it (folded loops add what they hid inside)."""
    program = timeline.program
    compute = timeline.intervals(KIND_COMPUTE, program=index)
    exposed: dict[str, float] = {}
    # folded loops report their inner exposure themselves (folded_exposed)
    not_folded = program.busy == program.duration
    for s, name in enumerate(program.streams):
        if program.stream_program[s] != index or program.stream_kinds[s] != KIND_COMM:
            continue
        mask = (program.stream == s) & not_folded
        intervals = _union(list(zip(timeline.start[mask], timeline.end[mask])))
        axis = _axis_of(name)
        exposed[axis] = exposed.get(axis, 0.0) + subtract(intervals, compute)
    for i, inner in program.folded_exposed.items():
        if program.event_program[i] == index:  # pyright: ignore[reportOptionalSubscript]
            for axis, t in inner.items():
                exposed[axis] = exposed.get(axis, 0.0) + t
    return exposed


def stage_breakdown(timeline: Timeline, index: int) -> dict[str, Any]:
    program = timeline.program
    makespan = timeline.makespan
    compute = timeline.intervals(KIND_COMPUTE, program=index)
    comm_all: list[tuple[float, float]] = []
    for s in range(len(program.streams)):
        if program.stream_program[s] == index and program.stream_kinds[s] == KIND_COMM:
            mask = program.stream == s
            comm_all += list(zip(timeline.start[mask], timeline.end[mask]))
    busy = measure(_union(compute + comm_all))
    exposed = exposed_by_axis(timeline, index)
    # a folded loop spans its window on the compute stream but computes only part
    # of it: the rest is its exposed communication and its waits
    folded_gap = sum(
        float(program.duration[i] - program.busy[i])  # pyright: ignore[reportOptionalSubscript]
        for i in program.folded_exposed
        if program.event_program[i] == index  # pyright: ignore[reportOptionalSubscript]
    )
    hidden = sum(sum(v.values()) for i, v in program.folded_exposed.items()
                 if program.event_program[i] == index)  # pyright: ignore[reportOptionalSubscript]
    return {
        "compute_s": measure(compute) - folded_gap,
        "exposed_comm_s": dict(sorted(exposed.items())),
        "bubble_s": max(0.0, makespan - busy + (folded_gap - hidden)),
    }


def summarize(timeline: Timeline, target: Target) -> dict[str, Any]:
    program = timeline.program
    makespan = timeline.makespan
    stages = [stage_breakdown(timeline, i) for i in range(len(program.programs))]
    critical = max(range(len(stages)), key=lambda i: stages[i]["compute_s"])
    ranks = np.array([program.programs[p].ranks for p in program.event_program], dtype=np.float64)
    job_flops = float((program.flops * ranks).sum()) if program.num_events else 0.0
    flops_per_gpu = job_flops / target.gpus
    # recompute re-runs forward work: hardware FLOPs count it, model FLOPs do not
    recomputed = sum(p.attributes.get("recompute_flops", 0.0) * p.ranks for p in program.programs)
    model_flops_per_gpu = (job_flops - recomputed) / target.gpus
    tflops = flops_per_gpu / makespan / 1e12 if makespan > 0 else 0.0
    peak = target.gpu.peak("bf16") / 1e12
    tokens = sum(p.attributes.get("tokens", 0) for p in program.programs)
    streams = {
        name: {"busy_s": busy, "utilization": busy / makespan if makespan else 0.0}
        for name, busy in timeline.stream_busy().items()
    }
    report: dict[str, Any] = {
        "iteration_time_s": makespan,
        "tokens_per_s": tokens / makespan if makespan > 0 and tokens else None,
        "tflops_per_gpu": tflops,
        "mfu": model_flops_per_gpu / makespan / 1e12 / peak if peak and makespan > 0 else 0.0,
        "hfu": tflops / peak if peak else 0.0,
        "flops_per_gpu": flops_per_gpu,
        "model_flops_per_gpu": model_flops_per_gpu,
        "breakdown": stages[critical] | {"stage": critical},
        "stages": stages,
        "streams": streams,
        "engines": dict(sorted(program.engines.items())),
        "events": program.num_events,
        "hardware": target.gpu.name,
        "gpus": target.gpus,
    }
    return report
