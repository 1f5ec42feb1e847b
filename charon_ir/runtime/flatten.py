"""Flatten a module's `event.program`s into arrays, once, for the interpreter.

Loops are expanded here, in plain arrays, never in the IR. Event i of the flat
program has a stream (-1 for a zero-time join), a duration, a kind, the program it
belongs to and the indices of the events it waits for. Point-to-point events
between programs (pipeline stages) are matched here: the k-th receive on a channel
(`channel`, `src`, `dst` attributes) waits for the k-th send on it.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.runtime.fold import LoopFolding, LoopSummary, is_foldable
from charon_ir.runtime.program import (
    KIND_COMM,
    KIND_COMPUTE,
    KIND_COPY,
    KIND_HOST,
    KIND_JOIN,
    LINK_SCALE_OUT,
    LINK_SCALE_UP,
    MAX_EVENTS,
    NO_LINK,
    BarrierIns,
    EventIns,
    FlatProgram,
    Instruction,
    JoinIns,
    LoopIns,
    ProgramInfo,
)

__all__ = ["KIND_COMM", "KIND_COMPUTE", "KIND_HOST", "KIND_JOIN", "MAX_EVENTS", "FlatProgram", "ProgramInfo",
           "flatten_all", "folds_microbatches"]

_KIND_OF_EVENT = {event.ComputeOp: KIND_COMPUTE, event.CommOp: KIND_COMM, event.LaunchOp: KIND_HOST}
_KIND_OF_STREAM = {
    event.StreamKind.COMPUTE: KIND_COMPUTE, event.StreamKind.COMM: KIND_COMM, event.StreamKind.HOST: KIND_HOST,
    event.StreamKind.COPY: KIND_COPY,
}
LINKS = {event.Link.SCALE_UP: LINK_SCALE_UP, event.Link.SCALE_OUT: LINK_SCALE_OUT}
"""An `event.comm`'s link as the interpreter numbers it (program.py)."""


class _Builder(LoopFolding):
    """Compiles event programs into instructions and runs them into a flat
    program (`LoopFolding` folds loops for the fast tier)."""

    def __init__(self, fold: bool = False, overlap=None):
        self.fold = fold
        self.overlap = overlap
        self.busy: dict[int, float] = {}
        self.link: dict[int, int] = {}
        self.item_ends: dict[int, event.ScheduleItem] = {}
        self.folded_exposed: dict[int, dict[str, float]] = {}
        self.folded_heads: dict[int, float] = {}
        self.loop_summaries: dict[tuple, LoopSummary] = {}
        self.keys: dict[int, tuple[LoopIns, tuple]] = {}
        self.unrolled: dict[int, tuple[list[Instruction], int]] = {}
        self.streams: list[str] = []
        self.stream_kinds: list[int] = []
        self.stream_axes: list[str] = []
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

    # The event IR is compiled once into instructions (program.Instruction, one
    # per op, SSA values turned into slots of one flat environment), then
    # executed: a loop body runs its list `count` times, overwriting its slots,
    # so unrolling costs a list append per event instead of an IR walk.

    def compile_block(self, block: Block, slots: dict[SSAValue, int]) -> list[Instruction]:
        def slot(v: SSAValue) -> int:
            if v not in slots:
                slots[v] = len(slots)
            return slots[v]

        code: list[Instruction] = []
        for op in block.ops:
            if isinstance(op, event.StreamOp | event.YieldOp):
                continue
            if isinstance(op, event.EventOpBase):
                p2p = None
                link = NO_LINK
                if isinstance(op, event.CommOp):
                    key = op.point_to_point()
                    if key is not None:
                        p2p = (op.label.data == "send", key)
                    kind = op.link_kind()
                    link = LINKS[kind] if kind is not None else NO_LINK
                stream = self.stream_index[op.stream.string_value()]
                kind_of = _KIND_OF_EVENT[type(op)]
                if self.stream_kinds[stream] == KIND_COPY:
                    kind_of = KIND_COPY  # a transfer of the copy engines
                code.append(EventIns(
                    stream,
                    link,
                    kind_of,
                    op.duration_s.value.data,
                    tuple(slot(d) for d in op.deps),
                    op.label.data,
                    op.flop_count(),
                    op.byte_count(),
                    p2p,
                    slot(op.token),
                ))
            elif isinstance(op, event.WaitOp):
                item = op.item.data if op.item is not None else None
                label = f"end {item}" if item is not None else "wait"
                code.append(JoinIns(tuple(slot(d) for d in op.deps), label, item, slot(op.token)))
            elif isinstance(op, event.BarrierOp):
                code.append(BarrierIns(slot(op.token)))
            elif isinstance(op, event.LoopOp):
                term = op.body.block.last_op
                assert isinstance(term, event.YieldOp)
                arg = slot(op.body.block.args[0])
                body = self.compile_block(op.body.block, slots)
                foldable = op.label is not None and is_foldable(body)
                code.append(LoopIns(op.count.value.data, slot(op.init), arg, body, slot(term.token),
                                    slot(op.token), foldable, len(slots), op.body.block))
            else:
                raise CharonError(f"interpreter: unexpected op '{op.name}' in an event program")
        return code

    def execute(self, code: list[Instruction], env: list[int]) -> None:
        for ins in code:
            tag = type(ins)
            if tag is EventIns:
                stream, link, kind, duration, deps, label, flops, nbytes, p2p, out = ins
                i = self.add(stream, kind, duration, [env[d] for d in deps], label, flops, nbytes)
                if link:
                    self.link[i] = link
                env[out] = i
                if p2p is not None:
                    (self.sends if p2p[0] else self.recvs)[p2p[1]].append(i)
            elif tag is JoinIns:
                deps, label, item, out = ins
                env[out] = self.add(-1, KIND_JOIN, 0.0, [env[d] for d in deps], label)
                if item is not None:
                    self.item_ends[env[out]] = item
            elif tag is BarrierIns:
                # streams run in order, so the last event of each stream so far
                # completes after every earlier one of that stream
                env[ins.out] = self.add(-1, KIND_JOIN, 0.0, list(self.last_on_stream.values()), "barrier")
            else:
                count, init, arg, body, yielded, out, foldable, _, _ = ins
                if foldable and self.fold and count >= 3:
                    env[out] = self.fold_loop(ins, env)
                    continue
                unrolled = len(self.labels) + count * self.unrolled_events(body)
                if unrolled > MAX_EVENTS:
                    raise CharonError(
                        f"interpreter: a loop of {count:,} iterations unrolls to {unrolled:.3g} events and "
                        f"iterations, over the {MAX_EVENTS:,} one simulation holds (nested or huge loop counts)")
                prev = env[init]
                for _ in range(count):
                    env[arg] = prev
                    self.execute(body, env)
                    prev = env[yielded]
                env[out] = prev

    def unrolled_events(self, code: list[Instruction]) -> int:
        """Events one run of `code` adds with every loop in it unrolled, an
        iteration counting one at least (an upper bound: the fast tier folds some
        loops); a body run many times is counted once."""
        found = self.unrolled.get(id(code))
        if found is not None and found[0] is code:
            return found[1]
        n = sum(ins.count * max(1, self.unrolled_events(ins.body)) if type(ins) is LoopIns else 1 for ins in code)
        self.unrolled[id(code)] = (code, n)
        return n
    def to_flat(self, infos, streams, stream_kinds, stream_program, engines=None) -> FlatProgram:
        busy = np.asarray(self.duration, dtype=np.float64).copy()
        for i, b in self.busy.items():
            busy[i] = b
        first = infos[0]
        return FlatProgram(
            name=first.name,
            ranks=first.ranks,
            streams=list(streams),
            stream_kinds=list(stream_kinds),
            stream_axes=list(self.stream_axes),
            duration=np.asarray(self.duration, dtype=np.float64),
            stream=np.asarray(self.stream, dtype=np.int64),
            kind=np.asarray(self.kind, dtype=np.int8),
            flops=np.asarray(self.flops, dtype=np.float64),
            bytes=np.asarray(self.bytes, dtype=np.float64),
            labels=self.labels,
            deps=self.deps,
            engines=engines or {},
            programs=infos,
            stream_program=list(stream_program),
            event_program=np.asarray(self.program, dtype=np.int64),
            busy=busy,
            folded_exposed=dict(self.folded_exposed),
            folded_heads=dict(self.folded_heads),
            link=dict(self.link),
            item_ends=dict(self.item_ends),
        )

    def run_block(self, block: Block) -> None:
        slots: dict[SSAValue, int] = {}
        code = self.compile_block(block, slots)
        self.execute(code, [0] * len(slots))

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


def folds_microbatches(programs: list[event.ProgramOp]) -> bool:
    """Whether the fast tier folds every micro-batch loop of these programs that
    runs three times or more (no point-to-point or scale-out traffic inside: a
    single pipeline stage; the last micro-batch, which reduces the gradients, is
    a loop of its own)."""
    for program in programs:
        for loop in program.body.block.ops:
            if not isinstance(loop, event.LoopOp) or loop.count.value.data < 3:
                continue
            for op in loop.body.walk():
                if isinstance(op, event.BarrierOp):
                    return False
                if isinstance(op, event.CommOp) and (op.channel is not None or op.link_kind() == event.Link.SCALE_OUT):
                    return False
    return True


def stream_axes(op: event.StreamOp) -> str:
    """The axes a comm stream serves, joined by "_" (what its exposed time is
    reported under); "" for a compute or host stream. A comm stream written
    without `axes` (hand-written IR) goes by its name: `comm_tp` serves tp."""
    if op.axes is not None:
        return "_".join(a.data for a in op.axes.data)
    if op.kind.data != event.StreamKind.COMM:
        return ""
    return op.sym_name.data.removeprefix("comm_").removesuffix("_send").removesuffix("_recv")


def flatten_all(programs: list[event.ProgramOp], fold: bool = False, overlap=None,
                loop_cache: dict | None = None) -> FlatProgram:
    """The fine tier expands every loop; with `fold`, the fast tier folds loops of
    three or more identical iterations whose bodies stay within their program
    and off the NICs (layers, `label = "repeat"`; the micro-batches of a single
    stage) into extrapolated events per stream."""
    builder = _Builder(fold=fold, overlap=overlap)
    if loop_cache is not None:
        # summaries of folded loops, shared by flattenings of the same event IR
        builder.loop_summaries = loop_cache
    stream_program: list[int] = []
    infos: list[ProgramInfo] = []
    engines: dict[str, int] = {}
    for index, program in enumerate(programs):
        builder.program_index = index
        builder.stream_index = {}
        builder.last_on_stream = {}
        for op in program.body.block.ops:
            if isinstance(op, event.StreamOp):
                builder.stream_index[op.sym_name.data] = len(builder.streams)
                builder.streams.append(op.sym_name.data)
                builder.stream_kinds.append(_KIND_OF_STREAM[op.kind.data])
                builder.stream_axes.append(stream_axes(op))
                stream_program.append(index)
        builder.run_block(program.body.block)
        infos.append(
            ProgramInfo(program.sym_name.data, program.ranks.value.data, program.token_count(),
                        program.recomputed_flops(), program.hardware_ref())
        )
        for op in program.walk():
            if isinstance(op, event.EventOpBase) and op.engine is not None:
                engines[op.engine.data] = engines.get(op.engine.data, 0) + 1
    builder.match_point_to_point()
    return builder.to_flat(infos, builder.streams, builder.stream_kinds, stream_program, engines)
