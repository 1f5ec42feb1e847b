"""The flat program the interpreter runs: every event of a module's
`event.program`s in arrays (`FlatProgram`), the bottom layer of the runtime.

    program  <-  timeline  <-  interpreter  <-  fold  <-  flatten  <-  tiers

Nothing here reads the IR; `flatten` builds these from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from charon_ir.dialects.event import ScheduleItem

KIND_JOIN, KIND_COMPUTE, KIND_COMM, KIND_HOST, KIND_COPY = 0, 1, 2, 3, 4
"""Event kinds: a join (no stream, no time), a kernel, a communication, the
host issuing a kernel (`event.launch`: a CPU thread's time, contending with
nothing on the GPU), and a copy engine's transfer to or from host memory (an
`event.comm` on a `copy` stream: beside the kernels, taking none of their SMs)."""
NO_LINK, LINK_SCALE_UP, LINK_SCALE_OUT = 0, 1, 2
"""The link a communication crosses (`EventIns.link`), numbered: none (a join,
a kernel, a send or receive), NVLink, the NICs; `flatten` numbers `event.comm`'s
`#event<link ...>` so. Concurrent collectives of one program on the same link
share its bandwidth."""

MAX_EVENTS = 20_000_000
"""Events (and loop iterations) one interpretation may run, a few GB and a minute:
the largest bundled training step takes under 300k events in the fine tier; a
program that unrolls to more (loops nested in loops, a count of 1e18) is refused
before it fills the memory or runs for hours."""


@dataclass
class ProgramInfo:
    """What an `event.program` states of its ranks (its declared properties)."""

    name: str
    ranks: int
    tokens: int = 0
    """Tokens the step feeds in through the program (for throughput)."""
    recompute_flops: float = 0.0
    """FLOPs per rank the step spends re-running the forward."""
    hardware: str = ""
    """The GPU (a ref) the program's ranks are, where it is not the target's (a
    pipeline over a cluster of several node kinds)."""


@dataclass
class FlatProgram:
    """Every event of every program of a module, in arrays."""

    name: str
    ranks: int
    streams: list[str]
    stream_kinds: list[int]
    duration: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    labels: list[str]
    deps: list[list[int]]
    engines: dict[str, int] = field(default_factory=dict)
    """Event ops in the IR priced by each engine (IR ops, not loop iterations)."""
    programs: list[ProgramInfo] = field(default_factory=list)
    stream_program: list[int] = field(default_factory=list)
    event_program: np.ndarray | None = None
    busy: np.ndarray | None = None
    """Seconds each event keeps its stream working: its duration, except for a
    folded loop, which spans the loop's window but works only part of it."""
    folded_exposed: dict[int, dict[str, float]] = field(default_factory=dict)
    """Folded compute events: the communication (per axis) exposed inside them."""
    folded_heads: dict[int, float] = field(default_factory=dict)
    """Head events of folded loops (work that does not wait for the loop's input,
    `fold.LoopSummary.heads`): how much earlier their stream ends for it when the
    input comes late (its gain)."""
    link: dict[int, int] = field(default_factory=dict)
    """Communication events and the link they cross (LINK_SCALE_UP, LINK_SCALE_OUT)."""
    stream_axes: list[str] = field(default_factory=list)
    """Per stream, the grid axes a comm stream serves joined by "_" (`event.stream`'s
    `axes`: "tp", "dp_tp"), what its exposed time is reported under; "" for a
    compute or host stream. A program built by hand names them (`flatten` reads
    them from the IR); left out, every stream counts as serving none."""
    item_ends: dict[int, ScheduleItem] = field(default_factory=dict)
    """Join events that mark where a schedule item (a micro-batch's F, B or W)
    ends on its stage (`event.wait`'s `item`): memory over time counts them."""

    def __post_init__(self) -> None:
        if not self.programs:
            self.programs = [ProgramInfo(self.name, self.ranks)]
        if not self.stream_program:
            self.stream_program = [0] * len(self.streams)
        if not self.stream_axes:
            self.stream_axes = [""] * len(self.streams)
        if self.event_program is None:
            self.event_program = np.zeros(len(self.labels), dtype=np.int64)
        if self.busy is None:
            self.busy = self.duration

    @property
    def num_events(self) -> int:
        return len(self.labels)


# -- the instructions flatten compiles an event program into -------------------
# SSA values become slots of one flat environment; a loop body runs its list
# `count` times, overwriting its slots, so unrolling costs a list append per
# event instead of an IR walk.


class EventIns(NamedTuple):
    """An `event.compute` / `event.comm`: its slot `out` gets the event's index."""

    stream: int
    link: int
    """NO_LINK, or the link a collective crosses (LINK_SCALE_UP, LINK_SCALE_OUT)."""
    kind: int
    duration: float
    deps: tuple[int, ...]
    label: str
    flops: float
    nbytes: float
    p2p: tuple[bool, tuple[str, int, int]] | None
    """(is a send, (channel, src, dst)) of a point-to-point event."""
    out: int


class JoinIns(NamedTuple):
    """An `event.wait`: zero time, after `deps`; `item` the schedule item whose
    end it marks, if any."""

    deps: tuple[int, ...]
    label: str
    item: ScheduleItem | None
    out: int


class BarrierIns(NamedTuple):
    """An `event.barrier`: after every event issued before it."""

    out: int


class LoopIns(NamedTuple):
    """An `event.loop`: `body` run `count` times, `arg` taking `init` first and
    then what the body yields (`yielded`); `out` the last iteration's result."""

    count: int
    init: int
    arg: int
    body: list[Instruction]
    yielded: int
    out: int
    foldable: bool
    slots: int
    """Slots in use once the body is compiled (a simulation of the body alone
    needs as many)."""
    block: Any


Instruction = EventIns | JoinIns | BarrierIns | LoopIns

