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
"""

from __future__ import annotations

from typing import Literal

from charon_ir.errors import CharonError

Kind = Literal["F", "B", "B+"]
"""F: a forward; B: a backward; B+: the last backward of a chunk in the step, the
one that also reduces the gradients over data-parallel replicas."""
Item = tuple[Kind, int, int]
SCHEDULES = ("gpipe", "1f1b", "interleaved")


def check_schedule(schedule: str, pp: int, vpp: int, microbatches: int) -> None:
    """One line naming the pass and the option that makes a schedule impossible."""
    if schedule not in SCHEDULES:
        raise CharonError(
            f"pipeline: option 'schedule': unknown schedule '{schedule}' (known: {', '.join(SCHEDULES)})"
        )
    if microbatches < 1:
        raise CharonError(f"pipeline: option 'microbatches' must be >= 1, got {microbatches}")
    if schedule == "interleaved":
        if vpp < 2:
            raise CharonError("pipeline: schedule 'interleaved' needs option 'vpp' >= 2")
        if microbatches % pp:
            raise CharonError(
                f"pipeline: schedule 'interleaved' needs 'microbatches' ({microbatches}) "
                f"divisible by 'pp' ({pp})"
            )
    elif vpp != 1:
        raise CharonError(f"pipeline: option 'vpp' ({vpp}) needs schedule=interleaved")
    if schedule == "1f1b" and microbatches < pp:
        raise CharonError(
            f"pipeline: schedule '1f1b' needs at least as many micro-batches as stages: "
            f"'microbatches' is {microbatches}, 'pp' is {pp}"
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
    if schedule == "gpipe":
        return [("F", 0, i) for i in range(m)] + [("B", 0, i) for i in range(m)]
    if schedule == "1f1b":
        warmup = min(pp - stage - 1, m)
        order: list[Item] = [("F", 0, i) for i in range(warmup)]
        for i in range(m - warmup):
            order += [("F", 0, warmup + i), ("B", 0, i)]
        order += [("B", 0, i) for i in range(m - warmup, m)]
        return order
    if schedule == "interleaved":
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
    """Mark each chunk's last backward of the step as B+: gradients accumulate over
    micro-batches and are reduced once, overlapping that last backward."""
    last: dict[int, int] = {}
    for i, (kind, chunk, _) in enumerate(order):
        if kind == "B":
            last[chunk] = i
    marked = list(order)
    for i in last.values():
        _, chunk, mb = order[i]
        marked[i] = ("B+", chunk, mb)
    return marked


def run_lengths(order: list[Item]) -> list[tuple[tuple[tuple[Kind, int], ...], int]]:
    """Compress an order into (pattern, count) runs of one item or of an F/B pair,
    ignoring micro-batch numbers (every micro-batch of a chunk runs the same body):
    the loops the event program keeps structured. A run of one item that ends where
    a longer run of pairs starts gives that pair its first item (1F1B reads as
    warm-up, steady pairs, cool-down)."""
    keys = [(k, c) for k, c, _ in order]

    def single_run(i: int) -> int:
        j = i
        while j < len(keys) and keys[j] == keys[i]:
            j += 1
        return j - i

    def pair_run(i: int) -> int:
        if i + 1 >= len(keys) or keys[i] == keys[i + 1]:
            return 0
        pair, n = (keys[i], keys[i + 1]), 0
        while i + 2 * n + 1 < len(keys) and (keys[i + 2 * n], keys[i + 2 * n + 1]) == pair:
            n += 1
        return n

    runs: list[tuple[tuple[tuple[Kind, int], ...], int]] = []
    i = 0
    while i < len(keys):
        single, pairs = single_run(i), pair_run(i)
        if pairs >= 2 and 2 * pairs > single:
            runs.append(((keys[i], keys[i + 1]), pairs))
            i += 2 * pairs
            continue
        if single > 1 and 2 * pair_run(i + single - 1) > single:
            single -= 1
        runs.append(((keys[i],), single))
        i += single
    return runs
