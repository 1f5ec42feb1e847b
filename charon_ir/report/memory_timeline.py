"""Device memory over the step, per pipeline stage, read off the timeline.

Model states (parameters, gradients, optimizer states, communication buffers) are
held all step; each forward a stage finishes keeps its saved activations until the
matching backward finishes (the `end F` / `end B` markers the lowering puts after
each schedule item); under zb-h1 a B keeps what the W item reads until `end W`. The working set of the running micro-batch is not drawn: the
peak the memory analysis reports includes it.
"""

from __future__ import annotations

from charon_ir.dialects.event import ScheduleItem
from charon_ir.runtime.timeline import Timeline


def memory_over_time(timeline: Timeline, stages: list, vpp: int = 1) -> dict[int, list[tuple[float, int]]]:
    """Per program (stage): [(t, bytes)] steps, from the analysis' StageMemory."""
    program = timeline.program
    curves: dict[int, list[tuple[float, int]]] = {}
    for index in range(len(program.programs)):
        if index >= len(stages):
            continue
        s = stages[index]
        static = s.params + s.grads + s.optimizer + s.comm_buffers
        per_item = s.saved_per_microbatch // max(1, vpp)
        residual = s.weight_grad_residual_per_microbatch // max(1, vpp)
        deltas = {ScheduleItem.F: per_item, ScheduleItem.B: residual - per_item, ScheduleItem.W: -residual}
        marks = sorted(
            (float(timeline.end[i]), deltas[item])
            for i, item in program.item_ends.items()
            if program.event_program[i] == index  # pyright: ignore[reportOptionalSubscript]
        )
        held, points = 0, [(0.0, static)]
        for t, delta in marks:
            held = max(0, held + delta)
            points.append((t, static + held))
        curves[index] = points
    return curves
