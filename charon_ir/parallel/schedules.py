"""Pipeline schedules: the exact order in which one stage runs the forward (F) and
backward (B) passes of its micro-batches and model chunks.

`stage_order(...)` returns `(kind, chunk, microbatch)` items for one physical stage.
No closed-form bubble anywhere: the interpreter runs these orders against each other
and the bubble is whatever waiting they imply.

- gpipe: every forward, then every backward (Huang et al. 2019).
- 1f1b: `pp - stage - 1` warm-up forwards, then one forward / one backward, then the
  remaining backwards (PipeDream-Flush, Narayanan et al. 2021).
- interleaved: 1f1b over `vpp` model chunks per stage, with Megatron-LM's chunk
  order (forward step k runs chunk (k // pp) % vpp; backward chunks in reverse) and
  its warm-up of (pp - stage - 1) * 2 + (vpp - 1) * pp steps.
- zb-h1: 1f1b with the backward split into B (gradients of the inputs, on the
  critical path) and W (gradients of the weights, deferrable) (Qi et al. 2023,
  "Zero Bubble Pipeline Parallelism", handcrafted schedule ZB-H1). Stage s runs
  1f1b's forwards and B's and lets its W's trail its B's by s micro-batches: a
  stage then holds at most pp micro-batches, as stage 0 does under 1f1b, and the
  trailing W's fill the cool-down the B-only critical path leaves. With uniform
  stages the bubble is (pp - 1)(T_F + T_B - T_W) instead of (pp - 1)(T_F + T_B + T_W).
"""

from __future__ import annotations

from typing import Literal

from charon_ir.dialects.sim import PIPELINE_SCHEDULES, PipelineSchedule
from charon_ir.errors import CharonError

Kind = Literal["F", "F+", "B", "B+", "W", "W+"]
"""F: a forward; B: a backward (under zb-h1 only its input gradients); W: the
weight gradients of a backward (zb-h1 only); B+ and W+: the last B or W of a chunk
in the step, the one that also reduces the gradients over data-parallel replicas;
F+: the first F of a chunk in the step, the one that also gathers the parameters
the last step updated (`data-parallel{overlap-param-gather}`)."""
Item = tuple[Kind, int, int]
SCHEDULES = PIPELINE_SCHEDULES
SPLIT_BACKWARD = (PipelineSchedule.ZB_H1,)
"""Schedules that run a backward as two items, B then W."""


class ScheduleError(CharonError):
    """A schedule that cannot run; `rule` names which of `check_schedule`'s rules
    it breaks, so a caller can say it in its own words (the CLI's flags)."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


def check_schedule(schedule: str, pp: int, vpp: int, microbatches: int) -> None:
    """One line naming the pass and the option that makes a schedule impossible."""
    if schedule not in SCHEDULES:
        raise ScheduleError(
            "unknown",
            f"pipeline: option 'schedule': unknown schedule '{schedule}' (known: {', '.join(SCHEDULES)})",
        )
    if microbatches < 1:
        raise ScheduleError("microbatches", f"pipeline: option 'microbatches' must be >= 1, got {microbatches}")
    if schedule == PipelineSchedule.INTERLEAVED:
        if vpp < 2:
            raise ScheduleError("interleaved-vpp", "pipeline: schedule 'interleaved' needs option 'vpp' >= 2")
        if microbatches % pp:
            raise ScheduleError(
                "interleaved-divisible",
                f"pipeline: schedule 'interleaved' needs 'microbatches' ({microbatches}) "
                f"divisible by 'pp' ({pp})",
            )
    elif vpp != 1:
        raise ScheduleError("vpp-needs-interleaved", f"pipeline: option 'vpp' ({vpp}) needs schedule=interleaved")
    if schedule in (PipelineSchedule.ONE_F_ONE_B, PipelineSchedule.ZB_H1) and microbatches < pp:
        raise ScheduleError(
            "too-few",
            f"pipeline: schedule '{schedule}' needs at least as many micro-batches as stages: "
            f"'microbatches' is {microbatches}, 'pp' is {pp}",
        )


def _chunk_step(k: int, pp: int, vpp: int, forward: bool) -> tuple[int, int]:
    """Megatron-LM's (chunk, micro-batch) of the k-th forward or backward step."""
    group = pp * vpp
    chunk = (k % group) // pp
    if not forward:
        chunk = vpp - 1 - chunk
    microbatch = (k // group) * pp + k % pp
    return chunk, microbatch


def stage_order(schedule: str, pp: int, vpp: int, microbatches: int, stage: int) -> list[Item]:
    m = microbatches
    if schedule == PipelineSchedule.GPIPE:
        return [("F", 0, i) for i in range(m)] + [("B", 0, i) for i in range(m)]
    if schedule == PipelineSchedule.ONE_F_ONE_B:
        warmup = min(pp - stage - 1, m)
        order: list[Item] = [("F", 0, i) for i in range(warmup)]
        for i in range(m - warmup):
            order += [("F", 0, warmup + i), ("B", 0, i)]
        order += [("B", 0, i) for i in range(m - warmup, m)]
        return order
    if schedule == PipelineSchedule.ZB_H1:
        warmup = min(pp - stage - 1, m)
        lag = stage
        order = [("F", 0, i) for i in range(warmup)]
        weights = 0
        for b in range(m):
            if warmup + b < m:
                order.append(("F", 0, warmup + b))
            order.append(("B", 0, b))
            if b - lag >= 0:
                order.append(("W", 0, b - lag))
                weights += 1
        order += [("W", 0, i) for i in range(weights, m)]
        return order
    if schedule == PipelineSchedule.INTERLEAVED:
        total = m * vpp
        warmup = min((pp - stage - 1) * 2 + (vpp - 1) * pp, total)
        order = [("F", *_chunk_step(k, pp, vpp, True)) for k in range(warmup)]
        for i in range(total - warmup):
            order.append(("F", *_chunk_step(warmup + i, pp, vpp, True)))
            order.append(("B", *_chunk_step(i, pp, vpp, False)))
        order += [("B", *_chunk_step(k, pp, vpp, False)) for k in range(total - warmup, total)]
        return order
    raise CharonError(f"pipeline: unknown schedule '{schedule}'")


def mark_gradient_sync(order: list[Item]) -> list[Item]:
    """Mark each chunk's last B (and last W) of the step as B+ (W+): gradients
    accumulate over micro-batches and are reduced once, overlapping the item that
    produces the last of them."""
    last: dict[tuple[str, int], int] = {}
    for i, (kind, chunk, _) in enumerate(order):
        if kind in ("B", "W"):
            last[(kind, chunk)] = i
    marked = list(order)
    for (kind, chunk), i in last.items():
        marked[i] = (f"{kind}+", chunk, order[i][2])  # type: ignore[assignment]
    return marked


def mark_param_gather(order: list[Item]) -> list[Item]:
    """Mark each chunk's first F of the step as F+: parameters updated in shards
    by the last step are gathered once, overlapping the first forward that reads
    them (Megatron-Core's `--overlap-param-gather`)."""
    first: dict[int, int] = {}
    for i, (kind, chunk, _) in enumerate(order):
        if kind == "F":
            first.setdefault(chunk, i)
    marked = list(order)
    for chunk, i in first.items():
        marked[i] = ("F+", chunk, order[i][2])
    return marked


def mark_data_parallel(order: list[Item], gradients: bool, parameters: bool) -> list[Item]:
    """An order with the items that synchronise over data-parallel replicas
    marked: the gradients' reduction (B+/W+) and the parameters' gather (F+)."""
    if gradients:
        order = mark_gradient_sync(order)
    if parameters:
        order = mark_param_gather(order)
    return order


def run_lengths(order: list[Item]) -> list[tuple[tuple[tuple[Kind, int], ...], int]]:
    """Compress an order into (pattern, count) runs of one item or of a cycle of two
    or three distinct items (F/B pairs; F/B/W triples under zb-h1), ignoring
    micro-batch numbers (every micro-batch of a chunk runs the same body): the loops
    the event program keeps structured. A run of one item that ends where a longer
    cycle starts gives that cycle its first item (1F1B reads as warm-up, steady
    pairs, cool-down)."""
    keys = [(k, c) for k, c, _ in order]

    def single_run(i: int) -> int:
        j = i
        while j < len(keys) and keys[j] == keys[i]:
            j += 1
        return j - i

    def cycle_run(i: int, length: int) -> int:
        pattern = keys[i : i + length]
        if len(pattern) < length or len(set(pattern)) < length:
            return 0
        n = 0
        while keys[i + length * n : i + length * (n + 1)] == pattern:
            n += 1
        return n

    def best_cycle(i: int) -> tuple[int, int]:
        """(length, count) of the cycle covering most items from i (count >= 2)."""
        best = (0, 0)
        for length in (2, 3):
            n = cycle_run(i, length)
            if n >= 2 and length * n > best[0] * best[1]:
                best = (length, n)
        return best

    runs: list[tuple[tuple[tuple[Kind, int], ...], int]] = []
    i = 0
    while i < len(keys):
        single = single_run(i)
        length, n = best_cycle(i)
        if length * n > single:
            runs.append((tuple(keys[i : i + length]), n))
            i += length * n
            continue
        if single > 1:
            after_length, after_n = best_cycle(i + single - 1)
            if after_length * after_n > single:
                single -= 1
        runs.append(((keys[i],), single))
        i += single
    return runs
