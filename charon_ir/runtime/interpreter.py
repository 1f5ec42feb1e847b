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

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from charon_ir.errors import CharonError
from charon_ir.engines.compute_efficiency import overlap_slowdown
from charon_ir.runtime.program import KIND_COMM, KIND_COMPUTE, KIND_COPY, KIND_HOST, FlatProgram
from charon_ir.runtime.timeline import Timeline

_EPS = 1e-15


@dataclass(frozen=True)
class OverlapModel:
    compute_slowdown: float = 0.0
    comm_slowdown: float = 0.0


def calibrated_overlap(gpu, compute_slowdown: float | None = None,
                       comm_slowdown: float | None = None) -> OverlapModel:
    """The overlap model of a GpuSpec: each slowdown as given, or where None the
    GPU type's calibrated one (`compute_efficiency.OVERLAP_SLOWDOWN`)."""
    calibrated = overlap_slowdown(gpu)
    return OverlapModel(calibrated if compute_slowdown is None else compute_slowdown,
                        calibrated if comm_slowdown is None else comm_slowdown)


@dataclass(frozen=True)
class EventTables:
    """What the interpreter derives from a program's structure (its events'
    streams, kinds, programs and dependencies), not from their durations:
    programs that differ only in durations (the sweep's step programs of one
    shape, `sweep.screen.step_program`) share one (`run`'s `tables`)."""

    deps: list[list[int]]
    stream: np.ndarray
    kind: np.ndarray
    event_program: np.ndarray
    stream_of: list[int]
    kind_of: list[int]
    program_of: list[int]
    pending: list[int]
    """Per event, the events it waits for (a run counts them down on a copy)."""
    dependents: list[list[int]]
    queued: list[list[int]]
    """Per stream, its events in program order."""
    ready: list[int]
    """The joins that wait for nothing."""

    @classmethod
    def of(cls, program: FlatProgram) -> EventTables:
        n = program.num_events
        stream_of = program.stream.tolist()
        deps = program.deps
        pending = [len(d) for d in deps]
        dependents: list[list[int]] = [[] for _ in range(n)]
        for i, ds in enumerate(deps):
            for d in ds:
                dependents[d].append(i)
        queued: list[list[int]] = [[] for _ in program.streams]
        for i in range(n):
            if stream_of[i] >= 0:
                queued[stream_of[i]].append(i)
        assert program.event_program is not None
        return cls(deps, program.stream, program.kind, program.event_program, stream_of, program.kind.tolist(),
                   program.event_program.tolist(), pending, dependents, queued,
                   [i for i in range(n) if stream_of[i] < 0 and pending[i] == 0])

    def describe(self, program: FlatProgram) -> bool:
        """Whether these are `program`'s tables: derived from its very arrays."""
        return (self.deps is program.deps and self.stream is program.stream and self.kind is program.kind
                and self.event_program is program.event_program and len(self.queued) == len(program.streams))


def run(program: FlatProgram, overlap: OverlapModel = OverlapModel(), tables: EventTables | None = None) -> Timeline:
    """Run the flat program; O(events x log events), plus a rate update of a
    program's running events whenever its compute or communication starts or stops
    overlapping. `tables`: the program's `EventTables`, when a caller runs
    programs of one structure many times (derived here when they are not this
    program's)."""
    n = program.num_events
    if tables is None or not tables.describe(program):
        tables = EventTables.of(program)
    # plain lists while running (a numpy element costs several times a list's
    # to set), arrays in the timeline; functions and tables bound to locals
    # (the loop runs once per event: a sweep runs millions)
    start = [np.nan] * n
    end = [np.nan] * n
    duration = program.duration.tolist()
    stream_of = tables.stream_of
    kind_of = tables.kind_of
    program_of = tables.program_of
    folded = (program.busy != program.duration).tolist()  # pyright: ignore[reportOptionalMemberAccess]
    pending = list(tables.pending)
    dependents = tables.dependents
    queues = [deque(q) for q in tables.queued]
    busy = [False] * len(queues)
    # the host's launches run beside the GPU's work at full rate: what contends
    # is compute with communication on the same GPU (tables indexed by kind)
    # (and so do the copy engines' transfers to and from host memory)
    slow = [1.0] * (max(KIND_COMPUTE, KIND_COMM, KIND_HOST, KIND_COPY) + 1)
    slow[KIND_COMPUTE] = 1.0 / (1.0 + overlap.compute_slowdown)
    slow[KIND_COMM] = 1.0 / (1.0 + overlap.comm_slowdown)
    other = list(range(len(slow)))
    other[KIND_COMPUTE], other[KIND_COMM] = KIND_COMM, KIND_COMPUTE
    contends = bool(overlap.compute_slowdown or overlap.comm_slowdown)
    n_programs = len(program.programs)
    # running events per program and kind, and each one's progress bookkeeping
    running: list[list[set[int]]] = [[set() for _ in slow] for _ in range(n_programs)]
    left = [0.0] * n
    since = [0.0] * n
    rate = [1.0] * n
    version = [0] * n
    heap: list[tuple[float, int, int]] = []
    heappush, heappop = heapq.heappush, heapq.heappop
    t = 0.0
    done = 0
    check: deque[int] = deque(range(len(queues)))
    instant: deque[int] = deque(tables.ready)

    link_of = program.link
    # collectives of one program crossing the same link share it equally (the
    # max-min fair share when that link is what bounds each of them)
    on_link: dict[tuple[int, int], set[int]] = {}

    work = program.busy.tolist()  # pyright: ignore[reportOptionalMemberAccess]

    def weight(j: int) -> float:
        # a folded loop occupies its link only for the part of its span it works
        return work[j] / duration[j] if folded[j] and duration[j] > 0 else 1.0

    def rate_of(i: int) -> float:
        k = kind_of[i]
        r = slow[k] if running[program_of[i]][other[k]] else 1.0
        if link_of:
            link = link_of.get(i)
            if link:
                r /= 1.0 + sum(weight(j) for j in on_link.get((program_of[i], link), ()) if j != i)
        return r

    def link_changed(i: int) -> None:
        for j in on_link.get((program_of[i], link_of[i]), ()):
            if j != i and not folded[j]:
                reschedule(j)

    def reschedule(i: int) -> None:
        left[i] -= rate[i] * (t - since[i])
        since[i] = t
        rate[i] = rate_of(i)
        version[i] += 1
        heappush(heap, (t + max(left[i], 0.0) / rate[i], version[i], i))

    def finish(i: int) -> None:
        nonlocal done
        end[i] = t
        done += 1
        s = stream_of[i]
        if s >= 0:
            busy[s] = False
            check.append(s)
        for j in dependents[i]:
            pending[j] -= 1
            if pending[j] == 0:
                if stream_of[j] < 0:
                    instant.append(j)
                else:
                    check.append(stream_of[j])

    while done < n:
        while check or instant:
            while instant:
                j = instant.popleft()
                start[j] = t
                if duration[j] > 0.0:
                    # a delay (a folded loop's lane starting late): a timer
                    heappush(heap, (t + duration[j], version[j], j))
                    continue
                finish(j)
            while check:
                s = check.popleft()
                q = queues[s]
                if busy[s] or not q or pending[q[0]]:
                    continue
                i = q.popleft()
                start[i] = t
                d = duration[i]
                if d <= 0.0:
                    finish(i)
                    continue
                busy[s] = True
                p, k = program_of[i], kind_of[i]
                if folded[i]:
                    # a folded loop's span already includes its own contention;
                    # it still takes its share of a link from others
                    left[i], since[i], rate[i] = d, t, 1.0
                    heappush(heap, (t + d, version[i], i))
                    if i in link_of:
                        on_link.setdefault((p, link_of[i]), set()).add(i)
                        link_changed(i)
                    continue
                kinds = running[p]
                was_idle = not kinds[k]
                kinds[k].add(i)
                if i in link_of:
                    on_link.setdefault((p, link_of[i]), set()).add(i)
                    link_changed(i)
                r = rate_of(i) if link_of else (slow[k] if kinds[other[k]] else 1.0)
                left[i], since[i], rate[i] = d, t, r
                heappush(heap, (t + d / r, version[i], i))
                if was_idle and contends and k != KIND_HOST and k != KIND_COPY:
                    for j in kinds[other[k]]:
                        reschedule(j)
        if done >= n:
            break
        while heap and heap[0][1] != version[heap[0][2]]:
            heappop(heap)
        if not heap:
            stuck = [program.labels[q[0]] for q in queues if q][:3]
            raise CharonError(
                f"interpreter: deadlock at t={t:.6g}s in program '{program.name}' "
                f"(waiting: {', '.join(stuck) or 'joins'})"
            )
        t_fin, _, i = heappop(heap)
        if t_fin > t:
            t = t_fin
        version[i] += 1
        # finish(i), inline: most events end here, and a call per event was a
        # measurable share of a sweep's CPU (the sweep bench, #29)
        end[i] = t
        done += 1
        s = stream_of[i]
        if s >= 0:
            busy[s] = False
            check.append(s)
        for j in dependents[i]:
            pending[j] -= 1
            if pending[j] == 0:
                if stream_of[j] < 0:
                    instant.append(j)
                else:
                    check.append(stream_of[j])
        if s < 0:
            continue
        if folded[i]:
            if i in link_of:
                on_link[(program_of[i], link_of[i])].discard(i)
                link_changed(i)
            continue
        kinds = running[program_of[i]]
        k = kind_of[i]
        kinds[k].discard(i)
        if i in link_of:
            on_link[(program_of[i], link_of[i])].discard(i)
            link_changed(i)
        if contends and not kinds[k] and k != KIND_HOST and k != KIND_COPY:
            for j in kinds[other[k]]:
                reschedule(j)
    return Timeline(program, np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64))
