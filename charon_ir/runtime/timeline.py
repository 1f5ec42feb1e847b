"""A timeline (when each event of a flat program ran) and the interval maths
read off it: unions, exposed communication per axis, busy time per stream.

The interpreter produces a Timeline; the fast tier's loop folding and the report
read it. Nothing here runs a program.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from charon_ir.runtime.program import KIND_COMM, KIND_COMPUTE, KIND_COPY, FlatProgram


@dataclass
class Timeline:
    program: FlatProgram
    start: np.ndarray
    end: np.ndarray

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0

    def stream_names(self) -> list[str]:
        """Stream names, qualified by their program when there are several."""
        p = self.program
        if len(p.programs) == 1:
            return list(p.streams)
        return [f"{p.programs[o].name}/{n}" for n, o in zip(p.streams, p.stream_program)]

    def stream_busy(self) -> dict[str, float]:
        # an event keeps its stream busy from start to end (longer than its
        # duration when slowed by overlap); a folded loop only for its work
        spans = self.end - self.start
        folded = self.program.busy != self.program.duration
        spans[folded] = self.program.busy[folded]  # pyright: ignore[reportOptionalSubscript]
        busy = {}
        for i, name in enumerate(self.stream_names()):
            busy[name] = float(spans[self.program.stream == i].sum())
        return busy

    def intervals(self, kind: int, program: int | None = None) -> list[tuple[float, float]]:
        mask = self.program.kind == kind
        if program is not None:
            mask &= self.program.event_program == program
        return union(list(zip(self.start[mask], self.end[mask])))


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((float(s), float(e)))
    return out


def measure(intervals: list[tuple[float, float]]) -> float:
    return sum(e - s for s, e in intervals)


def subtract(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of the union a minus the union b (both sorted, disjoint)."""
    total, j = 0.0, 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                total += b[k][0] - cur
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            total += e - cur
    return total


ANY_AXIS = "*"
"""The time any axis's communication runs with no compute beside it; the axes'
exposures are exclusive (EXPOSURE_PRIORITY), so they add up to it."""

EXPOSURE_PRIORITY = ("tp", "cp", "cpa", "ep", "pp", "dp")
"""Whose a moment of exposed communication is when several axes' collectives
run at once with no compute beside them: first the axes whose collectives sit
inside a layer between two kernels (tp, cp, ep: the next kernel waits for them),
then the pipeline's hand-offs, then the gradient reduction. One owner per
moment, so that per-axis exposure, compute and bubble add up to the step, and a
pipeline send that runs while a layer waits for its tensor-parallel all-reduce
is counted once (the tiers agree: a folded layer loop's window hides it too)."""


def _exposure_rank(axis: str) -> tuple[int, str]:
    head = axis.split("_")[0]
    order = EXPOSURE_PRIORITY.index(head) if head in EXPOSURE_PRIORITY else len(EXPOSURE_PRIORITY)
    return order, axis


def exposed_by_axis(timeline: Timeline, index: int) -> dict[str, float]:
    """Per axis, the time program `index`'s communication runs with none of its
    compute beside it and no axis before it in EXPOSURE_PRIORITY exposed at that
    moment (folded loops add what they hid inside), and under ANY_AXIS that of
    all axes together: their sum."""
    program = timeline.program
    compute = timeline.intervals(KIND_COMPUTE, program=index)
    by_axis: dict[str, list[tuple[float, float]]] = {}
    # folded loops report their inner exposure themselves (folded_exposed)
    not_folded = program.busy == program.duration
    for s in range(len(program.streams)):
        if program.stream_program[s] != index or program.stream_kinds[s] not in (KIND_COMM, KIND_COPY):
            continue
        mask = (program.stream == s) & not_folded
        by_axis.setdefault(program.stream_axes[s], []).extend(zip(timeline.start[mask], timeline.end[mask]))
    exposed: dict[str, float] = {}
    covered = union(list(compute))
    for axis in sorted(by_axis, key=_exposure_rank):
        intervals = union(by_axis[axis])
        exposed[axis] = subtract(intervals, covered)
        covered = union(covered + intervals)
    exposed[ANY_AXIS] = sum(exposed.values())
    for i, inner in program.folded_exposed.items():
        if program.event_program[i] == index:  # pyright: ignore[reportOptionalSubscript]
            for axis, t in inner.items():
                exposed[axis] = exposed.get(axis, 0.0) + t
    return exposed


def stream_work(tl: Timeline) -> list[float]:
    """Seconds each stream works (by index), a folded loop counting its work only."""
    p = tl.program
    # a folded loop works only part of its span
    work = np.where(p.busy != p.duration, p.busy, tl.end - tl.start)
    on_stream = p.stream >= 0
    # bincount adds each stream's events in event order, as a loop would
    return np.bincount(p.stream[on_stream], weights=work[on_stream], minlength=len(p.streams)).tolist()
