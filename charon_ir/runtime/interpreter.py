"""The discrete-event interpreter.

Semantics of a flat program: each stream runs its events in program order, one at
a time; an event starts when its stream is free and every event it depends on has
finished; joins (stream -1) finish as soon as their dependencies do.

Overlap: while a compute event runs beside a communication event, the compute
event progresses at 1 / (1 + compute_slowdown) of its rate and the communication
at 1 / (1 + comm_slowdown) (they contend for SMs and memory bandwidth). Progress
is fluid: between two instants where the running set changes, every running event
advances at a constant rate, so the loop jumps from change to change.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from charon_ir.errors import CharonError
from charon_ir.runtime.flatten import KIND_COMM, KIND_COMPUTE, FlatProgram

_EPS = 1e-15


@dataclass(frozen=True)
class OverlapModel:
    compute_slowdown: float = 0.0
    comm_slowdown: float = 0.0


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
        busy = {}
        for i, name in enumerate(self.stream_names()):
            mask = self.program.stream == i
            busy[name] = float((self.end[mask] - self.start[mask]).sum())
        return busy

    def intervals(self, kind: int, program: int | None = None) -> list[tuple[float, float]]:
        mask = self.program.kind == kind
        if program is not None:
            mask &= self.program.event_program == program
        return _union(list(zip(self.start[mask], self.end[mask])))


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
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


def run(program: FlatProgram, overlap: OverlapModel = OverlapModel()) -> Timeline:
    n = program.num_events
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    remaining = program.duration.astype(np.float64).copy()
    pending = np.zeros(n, dtype=np.int64)
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, deps in enumerate(program.deps):
        pending[i] = len(deps)
        for d in deps:
            dependents[d].append(i)

    queues: list[deque[int]] = [deque() for _ in program.streams]
    joins: list[int] = []
    stream_of = program.stream.tolist()
    kind_of = program.kind.tolist()
    program_of = program.event_program.tolist()  # pyright: ignore[reportOptionalMemberAccess]
    compute_rate = 1.0 / (1.0 + overlap.compute_slowdown)
    comm_rate = 1.0 / (1.0 + overlap.comm_slowdown)
    for i in range(n):
        if stream_of[i] < 0:
            joins.append(i)
        else:
            queues[stream_of[i]].append(i)
    ready_joins = deque(i for i in joins if pending[i] == 0)
    busy: list[int | None] = [None] * len(queues)
    running: set[int] = set()
    t = 0.0
    done = 0

    def finish(i: int) -> None:
        nonlocal done
        end[i] = t
        done += 1
        for j in dependents[i]:
            pending[j] -= 1
            if pending[j] == 0 and stream_of[j] < 0:
                ready_joins.append(j)

    while done < n:
        progressed = True
        while progressed:
            progressed = False
            while ready_joins:
                j = ready_joins.popleft()
                start[j] = t
                finish(j)
                progressed = True
            for s, q in enumerate(queues):
                if busy[s] is None and q and pending[q[0]] == 0:
                    i = q.popleft()
                    start[i] = t
                    if remaining[i] <= _EPS:
                        finish(i)
                    else:
                        busy[s] = i
                        running.add(i)
                    progressed = True
        if done >= n:
            break
        if not running:
            stuck = [program.labels[q[0]] for q in queues if q][:3]
            raise CharonError(
                f"interpreter: deadlock at t={t:.6g}s in program '{program.name}' "
                f"(waiting: {', '.join(stuck) or 'joins'})"
            )
        # contention is within one program's GPUs: compute beside that program's comm
        compute_on = {program_of[i] for i in running if kind_of[i] == KIND_COMPUTE}
        comm_on = {program_of[i] for i in running if kind_of[i] == KIND_COMM}
        rates = {}
        for i in running:
            if kind_of[i] == KIND_COMPUTE and program_of[i] in comm_on:
                rates[i] = compute_rate
            elif kind_of[i] == KIND_COMM and program_of[i] in compute_on:
                rates[i] = comm_rate
            else:
                rates[i] = 1.0
        dt = min(remaining[i] / rates[i] for i in running)
        t += dt
        for i in list(running):
            remaining[i] -= rates[i] * dt
            if remaining[i] <= _EPS * max(1.0, program.duration[i]) * 1e3:
                remaining[i] = 0.0
                running.discard(i)
                busy[stream_of[i]] = None
                finish(i)
    return Timeline(program, start, end)
