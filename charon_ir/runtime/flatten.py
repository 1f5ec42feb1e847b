"""Flatten a module's `event.program`s into arrays, once, for the interpreter.

Loops are expanded here, in plain arrays, never in the IR. Event i of the flat
program has a stream (-1 for a zero-time join), a duration, a kind, the program it
belongs to and the indices of the events it waits for. Point-to-point events
between programs (pipeline stages) are matched here: the k-th receive on a channel
(`channel`, `src`, `dst` attributes) waits for the k-th send on it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import event
from charon_ir.errors import CharonError

KIND_JOIN, KIND_COMPUTE, KIND_COMM = 0, 1, 2


@dataclass
class ProgramInfo:
    name: str
    ranks: int
    attributes: dict[str, int] = field(default_factory=dict)


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
    attributes: dict[str, int] = field(default_factory=dict)
    programs: list[ProgramInfo] = field(default_factory=list)
    stream_program: list[int] = field(default_factory=list)
    event_program: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not self.programs:
            self.programs = [ProgramInfo(self.name, self.ranks, self.attributes)]
        if not self.stream_program:
            self.stream_program = [0] * len(self.streams)
        if self.event_program is None:
            self.event_program = np.zeros(len(self.labels), dtype=np.int64)

    @property
    def num_events(self) -> int:
        return len(self.labels)


class _Builder:
    def __init__(self):
        self.duration: list[float] = []
        self.stream: list[int] = []
        self.kind: list[int] = []
        self.flops: list[float] = []
        self.bytes: list[float] = []
        self.labels: list[str] = []
        self.deps: list[list[int]] = []
        self.program: list[int] = []
        self.sends: dict[tuple[str, int, int], list[int]] = defaultdict(list)
        self.recvs: dict[tuple[str, int, int], list[int]] = defaultdict(list)
        self.stream_index: dict[str, int] = {}
        self.program_index = 0
        self.last_on_stream: dict[int, int] = {}

    def add(self, stream: int, kind: int, duration: float, deps: list[int],
            label: str, flops: float = 0.0, nbytes: float = 0.0) -> int:
        if stream >= 0:
            self.last_on_stream[stream] = len(self.labels)
        self.duration.append(duration)
        self.stream.append(stream)
        self.kind.append(kind)
        self.flops.append(flops)
        self.bytes.append(nbytes)
        self.labels.append(label)
        self.deps.append(deps)
        self.program.append(self.program_index)
        return len(self.labels) - 1

    def run_block(self, block: Block, env: dict[SSAValue, int]) -> None:
        for op in block.ops:
            if isinstance(op, event.StreamOp | event.YieldOp):
                continue
            if isinstance(op, event.EventOpBase):
                deps = [env[d] for d in op.deps]
                stream = self.stream_index[op.stream.string_value()]
                kind = KIND_COMPUTE if isinstance(op, event.ComputeOp) else KIND_COMM
                attrs = op.attributes
                i = self.add(
                    stream,
                    kind,
                    op.duration_s.value.data,
                    deps,
                    op.label.data,
                    _int(attrs.get("flops")),
                    _int(attrs.get("bytes")),
                )
                env[op.token] = i
                channel = attrs.get("channel")
                if isinstance(channel, StringAttr):
                    key = (channel.data, int(_int(attrs.get("src"))), int(_int(attrs.get("dst"))))
                    (self.sends if op.label.data == "send" else self.recvs)[key].append(i)
            elif isinstance(op, event.WaitOp):
                env[op.token] = self.add(-1, KIND_JOIN, 0.0, [env[d] for d in op.deps], "wait")
            elif isinstance(op, event.BarrierOp):
                # streams run in order, so the last event of each stream so far
                # completes after every earlier one of that stream
                deps = list(self.last_on_stream.values())
                env[op.token] = self.add(-1, KIND_JOIN, 0.0, deps, "barrier")
            elif isinstance(op, event.LoopOp):
                prev = env[op.init]
                body = op.body.block
                term = body.last_op
                assert isinstance(term, event.YieldOp)
                for _ in range(op.count.value.data):
                    inner = dict(env)
                    inner[body.args[0]] = prev
                    self.run_block(body, inner)
                    prev = inner[term.token]
                env[op.token] = prev
            else:
                raise CharonError(f"interpreter: unexpected op '{op.name}' in an event program")

    def match_point_to_point(self) -> None:
        for key in sorted(set(self.sends) | set(self.recvs)):
            sends, recvs = self.sends.get(key, []), self.recvs.get(key, [])
            if len(sends) != len(recvs):
                channel, src, dst = key
                raise CharonError(
                    f"interpreter: stage {src} sends {len(sends)} '{channel}' messages to "
                    f"stage {dst}, which receives {len(recvs)}"
                )
            for s, r in zip(sends, recvs):
                self.deps[r].append(s)


def _int(attr) -> float:
    return float(attr.value.data) if isinstance(attr, IntegerAttr) else 0.0


def _program_attributes(program: event.ProgramOp) -> dict[str, int]:
    return {
        k: v.value.data for k, v in program.attributes.items() if isinstance(v, IntegerAttr)
    }


def flatten_all(programs: list[event.ProgramOp]) -> FlatProgram:
    builder = _Builder()
    streams: list[str] = []
    kinds: list[int] = []
    stream_program: list[int] = []
    infos: list[ProgramInfo] = []
    engines: dict[str, int] = {}
    for index, program in enumerate(programs):
        builder.program_index = index
        builder.stream_index = {}
        builder.last_on_stream = {}
        for op in program.body.block.ops:
            if isinstance(op, event.StreamOp):
                builder.stream_index[op.sym_name.data] = len(streams)
                streams.append(op.sym_name.data)
                kinds.append(KIND_COMPUTE if op.kind.data == "compute" else KIND_COMM)
                stream_program.append(index)
        builder.run_block(program.body.block, {})
        infos.append(
            ProgramInfo(program.sym_name.data, program.ranks.value.data, _program_attributes(program))
        )
        for op in program.walk():
            eng = op.attributes.get("engine")
            if isinstance(eng, StringAttr):
                engines[eng.data] = engines.get(eng.data, 0) + 1
    builder.match_point_to_point()
    first = infos[0]
    return FlatProgram(
        name=first.name,
        ranks=first.ranks,
        streams=streams,
        stream_kinds=kinds,
        duration=np.asarray(builder.duration, dtype=np.float64),
        stream=np.asarray(builder.stream, dtype=np.int64),
        kind=np.asarray(builder.kind, dtype=np.int8),
        flops=np.asarray(builder.flops, dtype=np.float64),
        bytes=np.asarray(builder.bytes, dtype=np.float64),
        labels=builder.labels,
        deps=builder.deps,
        engines=engines,
        attributes=first.attributes,
        programs=infos,
        stream_program=stream_program,
        event_program=np.asarray(builder.program, dtype=np.int64),
    )


def flatten(program: event.ProgramOp) -> FlatProgram:
    return flatten_all([program])
