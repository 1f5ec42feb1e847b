"""The fast tier's folding of a whole step, above the interpreter: a step of
many micro-batches is simulated at two small counts in steady state and
extrapolated linearly, or (one pipeline stage) lowered once and its loop counts
changed so the interpreter folds the micro-batch loop like a layer loop; a trace
or a plot always comes from the fine tier.

    program  <-  timeline  <-  interpreter  <-  fold  <-  flatten  <-  tiers

`api.simulate` and the sweep time a built module through `time_module`.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp

from charon_ir.dialects import event
from charon_ir.dialects.sim import PIPELINE_ATTR, PipelineAttr, PipelineSchedule
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.parallel.mesh import schedule_marks
from charon_ir.parallel.schedules import mark_data_parallel, run_lengths, stage_order
from charon_ir.report.memory_timeline import memory_over_time
from charon_ir.report.plots import write_plots
from charon_ir.report.summary import summarize, utilization
from charon_ir.report.trace import write_trace
from charon_ir.runtime.flatten import folds_microbatches
from charon_ir.runtime.interpreter import OverlapModel
from charon_ir.runtime.simulate_target import run_module
from charon_ir.runtime.timeline import Timeline


def with_microbatches(module, microbatches: int, copy: bool = True):
    """A priced, staged module (a copy, or the module itself) whose schedule runs
    `microbatches`."""
    copy = module.clone() if copy else module
    attr = copy.attributes[PIPELINE_ATTR]
    assert isinstance(attr, PipelineAttr)
    copy.attributes[PIPELINE_ATTR] = attr.with_microbatches(microbatches)
    return copy


def same_runs(module, schedule: str, pp: int, vpp: int, m_a: int, m_b: int) -> bool:
    """Whether every stage's schedule has the same runs of items for m_a and m_b
    micro-batches (only their counts differ)."""
    marks = schedule_marks(module)
    for stage in range(pp):
        patterns = []
        for m in (m_a, m_b):
            order = stage_order(schedule, pp, vpp, m, stage)
            patterns.append([r for r, _ in run_lengths(mark_data_parallel(order, *marks))])
        if patterns[0] != patterns[1]:
            return False
    return True


def recount_schedule(lowered, schedule: str, pp: int, vpp: int, m_a: int, m_b: int):
    """Turn the lowered step of `m_a` micro-batches into that of `m_b` in place, by
    changing loop counts only: every stage's schedule has the same runs for both
    once in steady state (the steady state just runs longer). False (and nothing
    changed) when the runs differ."""
    marks = schedule_marks(lowered)
    programs = [op for op in lowered.body.block.ops if isinstance(op, event.ProgramOp)]
    plan = []
    for stage, program in enumerate(programs):
        runs = []
        for m in (m_a, m_b):
            order = stage_order(schedule, pp, vpp, m, stage)
            runs.append(run_lengths(mark_data_parallel(order, *marks)))
        loops = [op for op in program.body.block.ops if isinstance(op, event.LoopOp)]
        if [r for r, _ in runs[0]] != [r for r, _ in runs[1]] or len(loops) != len(runs[1]):
            return False
        plan.append((program, loops, runs[1]))
    for program, loops, runs in plan:
        for loop, (_, count) in zip(loops, runs):
            loop.count = IntegerAttr(count, 64)
        if program.tokens is not None:
            program.tokens = IntegerAttr(program.token_count() * m_b // m_a, 64)
        if program.recompute_flops is not None:
            program.recompute_flops = FloatAttr(program.recomputed_flops() * m_b / m_a, 64)
    attr = lowered.attributes[PIPELINE_ATTR]
    assert isinstance(attr, PipelineAttr)
    lowered.attributes[PIPELINE_ATTR] = attr.with_microbatches(m_b)
    return True


def programs(lowered) -> list:
    return [op for op in lowered.body.block.ops if isinstance(op, event.ProgramOp)]


def fold_points(schedule: str, pp: int, microbatches: int) -> tuple[int, int] | None:
    """Two small micro-batch counts whose schedules are already in steady state,
    or None when the step is too short to be worth folding: simulating both costs
    about as much as simulating the whole step once it is no longer than both
    together (a 16-stage interleaved schedule settles only from 32)."""
    step = pp if schedule == PipelineSchedule.INTERLEAVED else 1
    # one stage: 1F1B's runs settle from 3 micro-batches on (F B F B+ at 2)
    first = max(2 * pp, 3)
    first += -first % step
    if microbatches <= 2 * first + step:
        return None
    return first, first + step


def extrapolate(a: dict, b: dict, m_a: int, m_b: int, m: int) -> dict:
    """Every additive time in the report grows linearly with micro-batches once the
    schedule is in steady state: a + (m - m_a) x (b - a) / (m_b - m_a)."""
    k = (m - m_a) / (m_b - m_a)

    def lin(x, y):
        if isinstance(x, dict):
            return {key: lin(x[key], y[key]) for key in x}
        if isinstance(x, list):
            return [lin(u, v) for u, v in zip(x, y)]
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return x + k * (y - x)
        return x

    out = dict(a)
    for key in ("iteration_time_s", "flops_per_gpu", "model_flops_per_gpu", "breakdown", "stages", "streams"):
        out[key] = lin(a[key], b[key])
    out["breakdown"]["stage"] = a["breakdown"]["stage"]
    t = out["iteration_time_s"]
    for name, stream in out["streams"].items():
        stream["utilization"] = stream["busy_s"] / t if t else 0.0
    tokens_a = a["tokens_per_s"] * a["iteration_time_s"] if a["tokens_per_s"] else 0.0
    out["tokens_per_s"] = tokens_a * m / m_a / t if tokens_a and t else None
    out["tflops_per_gpu"] = out["flops_per_gpu"] / t / 1e12 if t else 0.0
    peak = a["tflops_per_gpu"] / a["hfu"] if a["hfu"] else 0.0
    out["hfu"] = utilization(out["flops_per_gpu"], t, peak)
    out["mfu"] = utilization(out["model_flops_per_gpu"], t, peak)
    out["microbatches_simulated"] = [m_a, m_b]
    return out


def time_module(
    ctx: Context,
    module: ModuleOp,
    memory: list,
    overlap: OverlapModel,
    *,
    pp: int,
    vpp: int,
    lowering: Mapping[str, Any] | None = None,
    tier: str = "fast",
    trace: str | Path | None = None,
    plot: str | Path | None = None,
) -> dict[str, Any]:
    """The report of a built (priced, memory-checked) training module of `pp`
    stages of `vpp` chunks, which it lowers in place (`lowering`: lower-to-events'
    options, as `api.lowering_options` gives them); `memory` is its per-stage
    StageMemory."""
    if tier not in ("fast", "fine"):
        raise CharonError(f"--tier must be fast or fine, got '{tier}'")
    lowering = dict(lowering or {})
    if lowering.get("host_launch", 0.0) > 0:
        # the host runs ahead of the GPU across loop boundaries, which a folded
        # loop (simulated on its own, its lanes starting free) does not keep:
        # folded, make demo's step at 30 us a launch read 6 % over every event's
        tier = "fine"
    pipeline = module.attributes[PIPELINE_ATTR]
    assert isinstance(pipeline, PipelineAttr)
    m = pipeline.microbatches.data
    schedule = pipeline.schedule.data
    detailed = bool(trace or plot)
    points = fold_points(schedule, pp, m) if tier == "fast" and not detailed else None

    def lowered(microbatches: int | None, copy: bool = True):
        if microbatches is not None:
            target = with_microbatches(module, microbatches, copy=copy)
        else:
            target = module
        LowerToEventsPass(**lowering).apply(ctx, target)
        return target

    loop_cache: dict = {}

    def run(copy) -> tuple[dict, Timeline]:
        # a trace or a plot shows every event: the fine tier
        timelines, target = run_module(ctx, copy, overlap, "fine" if detailed else tier, loop_cache)
        return summarize(timelines[0], target), timelines[0]

    def timed() -> dict[str, Any]:
        if points is None:
            report, timeline = run(lowered(None))
            if detailed:
                curves = memory_over_time(timeline, memory, vpp)
                if trace:
                    write_trace(trace, [timeline], curves)
                if plot:
                    write_plots(plot, timeline, {**report, "peak_memory_bytes": [s.peak for s in memory]}, curves)
            return report
        m_a, m_b = points

        def whole(steps, base: int) -> dict | None:
            # when every micro-batch loop of the step folds in the interpreter
            # like a layer loop (one stage: nothing crosses to another program),
            # one run of all m micro-batches: the step lowered at `base`
            # micro-batches, its loop counts changed to those of m
            if not recount_schedule(steps, schedule, pp, vpp, base, m):
                return None
            if folds_microbatches(programs(steps)):
                report = run(steps)[0]
                report["microbatches_simulated"] = [m]
                return report
            recount_schedule(steps, schedule, pp, vpp, m, base)
            return None

        # when the longer schedule is the same loops running longer, lower once
        # (in place: the staged module is not needed after) and change counts
        if same_runs(module, schedule, pp, vpp, m_a, m_b):
            steps = lowered(m_a, copy=False)
            if (report := whole(steps, m_a)) is not None:
                return report
            report_a = run(steps)[0]
            recount_schedule(steps, schedule, pp, vpp, m_a, m_b)
        else:
            steps = lowered(m_b, copy=True)
            if (report := whole(steps, m_b)) is not None:
                return report
            report_a = run(lowered(m_a, copy=False))[0]
        return extrapolate(report_a, run(steps)[0], m_a, m_b, m)

    # Timing allocates many small, short-lived lists beside the large IR: the
    # cyclic collector would walk that IR again and again (half of the time),
    # and nothing here makes cycles worth collecting.
    collecting = gc.isenabled()
    gc.disable()
    try:
        report = timed()
    finally:
        if collecting:
            gc.enable()
    report["peak_memory_bytes"] = [stage.peak for stage in memory]
    if memory and all(stage.reserved is not None for stage in memory):
        # what PyTorch's caching allocator would reserve for those tensors
        report["peak_reserved_bytes"] = [stage.reserved for stage in memory]
        # False where the replay ran past the GPU's memory (PyTorch: out of memory)
        report["reserved_fits"] = [stage.reserved_fits is not False for stage in memory]
    return report
