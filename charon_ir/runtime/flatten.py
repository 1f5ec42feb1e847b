"""Flatten a module's `event.program`s into arrays, once, for the interpreter.

Loops are expanded here, in plain arrays, never in the IR. Event i of the flat
program has a stream (-1 for a zero-time join), a duration, a kind, the program it
belongs to and the indices of the events it waits for. Point-to-point events
between programs (pipeline stages) are matched here: the k-th receive on a channel
(`channel`, `src`, `dst` attributes) waits for the k-th send on it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.runtime.interpreter import run
from charon_ir.runtime.program import (
    KIND_COMM,
    KIND_COMPUTE,
    KIND_JOIN,
    LINKS,
    MAX_EVENTS,
    FlatProgram,
    ProgramInfo,
)
from charon_ir.runtime.timeline import exposed_by_axis, stream_work

__all__ = ["KIND_COMM", "KIND_COMPUTE", "KIND_JOIN", "MAX_EVENTS", "FlatProgram", "ProgramInfo",
           "flatten_all", "folds_microbatches"]

_EVENT, _JOIN, _BARRIER, _LOOP = "event", "join", "barrier", "loop"


class _Builder:
    def __init__(self, fold: bool = False, overlap=None):
        self.fold = fold
        self.overlap = overlap
        self.busy: dict[int, float] = {}
        self.link: dict[int, int] = {}
        self.folded_exposed: dict[int, dict[str, float]] = {}
        self.loop_summaries: dict[tuple, _LoopSummary] = {}
        self.keys: dict[int, tuple[tuple, tuple]] = {}
        self.unrolled: dict[int, tuple[list[tuple], int]] = {}
        self.streams: list[str] = []
        self.stream_kinds: list[int] = []
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

    # The event IR is compiled once into tuples (one per op, SSA values turned into
    # slots of one flat environment), then executed: a loop body runs its tuple list
    # `count` times, overwriting its slots, so unrolling costs a list append per
    # event instead of an IR walk.

    def compile_block(self, block: Block, slots: dict[SSAValue, int]) -> list[tuple]:
        def slot(v: SSAValue) -> int:
            if v not in slots:
                slots[v] = len(slots)
            return slots[v]

        code: list[tuple] = []
        for op in block.ops:
            if isinstance(op, event.StreamOp | event.YieldOp):
                continue
            if isinstance(op, event.EventOpBase):
                attrs = op.attributes
                channel = attrs.get("channel")
                p2p = None
                if isinstance(channel, StringAttr):
                    key = (channel.data, int(_int(attrs.get("src"))), int(_int(attrs.get("dst"))))
                    p2p = (op.label.data == "send", key)
                link = attrs.get("link")
                code.append((
                    _EVENT,
                    self.stream_index[op.stream.string_value()] | (LINKS.get(link.data, 0) << 20 if isinstance(link, StringAttr) else 0),
                    KIND_COMPUTE if isinstance(op, event.ComputeOp) else KIND_COMM,
                    op.duration_s.value.data,
                    tuple(slot(d) for d in op.deps),
                    op.label.data,
                    _int(attrs.get("flops")),
                    _int(attrs.get("bytes")),
                    p2p,
                    slot(op.token),
                ))
            elif isinstance(op, event.WaitOp):
                item = op.attributes.get("item")
                label = f"end {item.data}" if isinstance(item, StringAttr) else "wait"
                code.append((_JOIN, tuple(slot(d) for d in op.deps), label, slot(op.token)))
            elif isinstance(op, event.BarrierOp):
                code.append((_BARRIER, slot(op.token)))
            elif isinstance(op, event.LoopOp):
                term = op.body.block.last_op
                assert isinstance(term, event.YieldOp)
                arg = slot(op.body.block.args[0])
                body = self.compile_block(op.body.block, slots)
                label = op.attributes.get("label")
                foldable = isinstance(label, StringAttr) and _foldable(body)
                code.append((_LOOP, op.count.value.data, slot(op.init), arg, body, slot(term.token),
                             slot(op.token), foldable, len(slots), op.body.block))
            else:
                raise CharonError(f"interpreter: unexpected op '{op.name}' in an event program")
        return code

    def execute(self, code: list[tuple], env: list[int]) -> None:
        for ins in code:
            tag = ins[0]
            if tag is _EVENT:
                _, packed, kind, duration, deps, label, flops, nbytes, p2p, out = ins
                stream, link = packed & 0xFFFFF, packed >> 20
                i = self.add(stream, kind, duration, [env[d] for d in deps], label, flops, nbytes)
                if link:
                    self.link[i] = link
                env[out] = i
                if p2p is not None:
                    (self.sends if p2p[0] else self.recvs)[p2p[1]].append(i)
            elif tag is _JOIN:
                env[ins[3]] = self.add(-1, KIND_JOIN, 0.0, [env[d] for d in ins[1]], ins[2])
            elif tag is _BARRIER:
                # streams run in order, so the last event of each stream so far
                # completes after every earlier one of that stream
                env[ins[1]] = self.add(-1, KIND_JOIN, 0.0, list(self.last_on_stream.values()), "barrier")
            else:
                _, count, init, arg, body, yielded, out, foldable, _, _ = ins
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

    def unrolled_events(self, code: list[tuple]) -> int:
        """Events one run of `code` adds with every loop in it unrolled, an
        iteration counting one at least (an upper bound: the fast tier folds some
        loops); a body run many times is counted once."""
        found = self.unrolled.get(id(code))
        if found is not None and found[0] is code:
            return found[1]
        n = sum(ins[1] * max(1, self.unrolled_events(ins[4])) if ins[0] is _LOOP else 1 for ins in code)
        self.unrolled[id(code)] = (code, n)
        return n

    def loop_summary(self, ins: tuple) -> _LoopSummary:
        """Simulate two and three iterations of a loop body on their own
        (everything outside the body ready at t=0) and keep what extrapolates: the
        span of two iterations and the steady period after them (the third
        iteration: the first two may still be filling the overlap of one layer's
        communication with the next layer's compute), per stream and per axis the
        busy and exposed times likewise. A body with work that does not wait for
        its input is simulated once more, the input arriving late (heads)."""
        # keyed by the body's content, its streams counted from the program's
        # first: identical layers of every stage, and a step lowered once and
        # re-counted, share one summary
        base = min(self.stream_index.values())
        key = self.loop_key(ins, base)
        if key in self.loop_summaries:
            return self.loop_summaries[key].moved(base)
        _, _, _, arg, body, yielded, _, _, n_slots, _ = ins

        def mini(iterations: int, late: float = 0.0):
            # everything outside the body ready at t=0; with `late`, the loop's
            # input (the previous item's result) arrives only at t=late
            sub = _Builder(fold=self.fold, overlap=self.overlap)
            sub.stream_index = self.stream_index
            sub.streams, sub.stream_kinds = self.streams, self.stream_kinds
            sub.loop_summaries, sub.keys = self.loop_summaries, self.keys
            start = sub.add(-1, KIND_JOIN, 0.0, [], "start")
            env = [start] * n_slots
            prev = sub.add(-1, KIND_JOIN, late, [start], "late") if late else start
            for _ in range(iterations):
                env[arg] = prev
                sub.execute(body, env)
                prev = env[yielded]
            flat = sub.to_flat([ProgramInfo("loop", 1)], self.streams, self.stream_kinds,
                               [0] * len(self.streams))
            tl = run(flat, self.overlap) if self.overlap else run(flat)
            return sub, flat, tl, env

        results = []
        for iterations in (2, 3):
            sub, flat, tl, env = mini(iterations)
            used = {s: float(b) for s, b in enumerate(stream_work(tl)) if b or s in set(sub.stream)}
            last_end, first_start = {}, {}
            for i, st in enumerate(sub.stream):
                if st >= 0:
                    last_end[st] = max(last_end.get(st, 0.0), float(tl.end[i]))
                    first_start[st] = min(first_start.get(st, float("inf")), float(tl.start[i]))
            if iterations == 2:
                # the first iteration's events come first on every stream
                offsets = first_start
            ready = float(tl.end[env[yielded]])
            results.append((tl.makespan, used, exposed_by_axis(tl, 0), flat.flops, flat.stream, last_end, ready))
        # base: two iterations; steady: what the third adds
        (t2, busy2, exp2, _, _, end2, ready2), (t3, busy3, exp3, flops3, streams3, end3, ready3) = results
        flops = {}
        for f, st in zip(flops3, streams3):
            if st >= 0:
                flops[int(st)] = flops.get(int(st), 0.0) + f / 3
        # Work that does not wait for the loop's input: with full recomputation a
        # backward layer first recomputes its forward from the saved checkpoint,
        # which runs while the gradient from the next stage is still in flight.
        # Two iterations again, the input arriving long after everything else:
        # per stream, what ran before it (the head) and how long after it the
        # stream ends (the tail).
        heads: dict[int, tuple[float, float, float, float]] = {}
        if _independent_work(body, arg):
            late = 4.0 * t2 + 1.0
            sub, flat, tl, env = mini(2, late)
            # per stream: head start, head work, tail start, tail end
            seen: dict[int, list[float]] = {}
            for i, st in enumerate(sub.stream):
                if st < 0:
                    continue
                acc = seen.setdefault(st, [float("inf"), 0.0, float("inf"), late])
                t0, t1 = float(tl.start[i]), float(tl.end[i])
                if t0 < late / 2:
                    work = flat.busy[i] if flat.busy[i] != flat.duration[i] else t1 - t0  # pyright: ignore[reportOptionalSubscript]
                    acc[0], acc[1] = min(acc[0], t0), acc[1] + float(work)
                else:
                    acc[2], acc[3] = min(acc[2], t0), max(acc[3], t1)
            for st, (head_start, head_work, tail_start, tail_end) in seen.items():
                gain = end2.get(st, 0.0) - (tail_end - late)
                if head_start < late / 2 and gain > 1e-12:
                    heads[st] = (head_start, gain, max(tail_start - late, 0.0) if tail_start < float("inf") else 0.0, head_work)
        summary = _LoopSummary(
            first=t2, period=t3 - t2, first_end=end2, first_start=offsets,
            stream_period={st: end3[st] - end2.get(st, 0.0) for st in end3},
            ready=(ready2, ready3 - ready2),
            busy={s: (busy2.get(s, 0.0), busy3.get(s, 0.0) - busy2.get(s, 0.0)) for s in busy3},
            exposed={a: (exp2.get(a, 0.0), exp3.get(a, 0.0) - exp2.get(a, 0.0)) for a in exp3},
            flops=flops,
            heads=heads,
        )
        self.loop_summaries[key] = summary.moved(-base)
        return summary

    def loop_key(self, ins: tuple, base: int) -> tuple:
        """A loop as a value: its count aside, equal for equal bodies wherever
        they lie (slots renamed, streams counted from `base`)."""
        found = self.keys.get(id(ins))
        if found is not None and found[0] is ins:
            return found[1]
        names: dict[int, tuple] = {}

        def name(slot: int) -> tuple:
            if slot not in names:
                names[slot] = ("x", len(names))
            return names[slot]

        def define(slot: int) -> None:
            names[slot] = ("d", len(names))

        def walk(code: list[tuple]) -> tuple:
            out = []
            for op in code:
                if op[0] is _EVENT:
                    stream, link = (op[1] & 0xFFFFF) - base, op[1] >> 20
                    out.append((stream, link, *op[2:4], tuple(map(name, op[4])), *op[5:9]))
                    define(op[9])
                elif op[0] is _JOIN:
                    out.append((tuple(map(name, op[1])), op[2]))
                    define(op[3])
                elif op[0] is _LOOP:
                    init = name(op[2])
                    define(op[3])
                    body = walk(op[4])
                    out.append((op[1], init, body, name(op[5]), op[7]))
                    define(op[6])
                else:
                    out.append(("barrier",))
                    define(op[1])
            return tuple(out)

        define(ins[3])
        body = walk(ins[4])
        key = (body, name(ins[5]), tuple(self.streams[base:]), tuple(self.stream_kinds[base:]))
        self.keys[id(ins)] = (ins, key)
        return key

    def fold_loop(self, ins: tuple, env: list[int]) -> int:
        """The fast tier: a loop of identical layers becomes one event per stream
        spanning first + (count - 2) x period, working its extrapolated busy time."""
        count, init = ins[1], ins[2]
        summary = self.loop_summary(ins)
        # Each folded event waits for its own stream only (streams run in order).
        # The extrapolation assumes the loop's lanes start free; a communication
        # tail left by the previous loop shifts one layer, an error that shrinks
        # as 1/count (tests: within 1% from 8 layers on).
        external = sorted({env[s] for s in _external_slots(ins[4], ins[3])})
        deps = sorted({env[init], *external})
        marker = -1
        if summary.heads:
            # Work that does not wait for the loop's input (a backward layer's
            # recomputed forward) starts once what the loop reads from outside is
            # ready and the stream that starts it first is free: a zero-time
            # marker on that stream is the reference of every stream's head.
            lead = min(summary.heads, key=lambda st: (summary.heads[st][0], self.stream_kinds[st] != KIND_COMPUTE))
            marker = self.add(lead, self.stream_kinds[lead], 0.0, list(external), "repeat start")
        ready = summary.ready[0] + (count - 2) * summary.ready[1]
        ends = {
            stream: summary.first_end.get(stream, summary.first)
            + (count - 2) * summary.stream_period.get(stream, summary.period)
            for stream in summary.busy
        }
        cut = -1
        early = [e for e in ends.values() if e <= ready * (1 + 1e-9) + 1e-15]
        late = [st for st, e in ends.items() if e > ready * (1 + 1e-9) + 1e-15]
        if late and (not early or max(early) < ready * (1 - 1e-9) - 1e-15):
            # the streams done by then end before the results are ready, the
            # others after (a compute stream still bucketing the last layer's
            # gradients while the next stage already reads the loop's output):
            # the first of those to end is split where the results are ready
            cut = min(late, key=lambda st: ends[st])
        macros, on_path = [], []
        for stream, (first, steady) in sorted(summary.busy.items()):
            kind = self.stream_kinds[stream]
            # each stream is held until its own last event: a compute stream frees
            # up while the last layer's communication still drains
            end = ends[stream]
            work = first + (count - 2) * steady
            flops = summary.flops.get(stream, 0.0) * count
            exposed = {a: f + (count - 2) * st for a, (f, st) in summary.exposed.items()}
            head = summary.heads.get(stream)
            if head is not None and head[1] + head[2] - head[0] <= 1e-15:
                head = None  # the input is there before the head could start
            if head is not None:
                # a head event, after the marker, and a tail event, after the input:
                # the stream ends at max(head start + span, input + span - gain)
                head_start, gain, offset, head_work = head
                length = gain + offset - head_start
                after = [self.add(-1, KIND_JOIN, head_start, [marker], "delay")]
                h = self.add(stream, kind, length, after, f"repeat x{count} (head)")
                self._folded(h, min(head_work, work), kind, {a: 0.0 for a in exposed})
                work -= min(head_work, work)
                begin = gain + offset
            else:
                offset = summary.first_start.get(stream, 0.0)
                begin = offset
            after = list(deps)
            if offset > 0:
                # the stream's first event starts `offset` into the loop
                after = [self.add(-1, KIND_JOIN, offset, list(deps), "delay")]
            span = max(end - begin, 0.0)
            if stream == cut and begin < ready < end:
                share = (ready - begin) / span
                i = self.add(stream, kind, ready - begin, after, f"repeat x{count}", flops * share, 0.0)
                self._folded(i, work * share, kind, {a: t * share for a, t in exposed.items()})
                on_path.append(i)
                flops, work, span = flops * (1 - share), work * (1 - share), end - ready
                exposed = {a: t * (1 - share) for a, t in exposed.items()}
                after = []
            i = self.add(stream, kind, span, after, f"repeat x{count}", flops, 0.0)
            self._folded(i, work, kind, exposed)
            macros.append((end, i))
        on_path += [i for end, i in macros if end <= ready * (1 + 1e-9) + 1e-15]
        return self.add(-1, KIND_JOIN, 0.0, on_path or [i for _, i in macros] or list(deps), "repeat")

    def _folded(self, i: int, work: float, kind: int, exposed: dict[str, float]) -> None:
        """Event i is (part of) a folded loop working `work` seconds of its span."""
        if work == self.duration[i]:
            # the interpreter tells folded events by busy != duration
            work = float(np.nextafter(work, 0.0))
        self.busy[i] = work
        if kind == KIND_COMPUTE:
            self.folded_exposed[i] = exposed

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
            duration=np.asarray(self.duration, dtype=np.float64),
            stream=np.asarray(self.stream, dtype=np.int64),
            kind=np.asarray(self.kind, dtype=np.int8),
            flops=np.asarray(self.flops, dtype=np.float64),
            bytes=np.asarray(self.bytes, dtype=np.float64),
            labels=self.labels,
            deps=self.deps,
            engines=engines or {},
            attributes=first.attributes,
            programs=infos,
            stream_program=list(stream_program),
            event_program=np.asarray(self.program, dtype=np.int64),
            busy=busy,
            folded_exposed=dict(self.folded_exposed),
            link=dict(self.link),
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


@dataclass(frozen=True)
class _LoopSummary:
    first: float
    """Span of the first two iterations (fields named first_* are likewise)."""
    period: float
    first_end: dict[int, float]
    """Per stream, when its last event of the first two iterations ends."""
    first_start: dict[int, float]
    """Per stream, when its first event starts: a lane still busy with what came
    before the loop delays the loop only if it is busy past that."""
    ready: tuple[float, float]
    """When the loop's results are ready: first iteration, then per iteration.
    Streams still busy after that (a gradient reduction draining) do not delay
    what reads the results."""
    stream_period: dict[int, float]
    """Per stream, how much later its last event ends for each further layer: a
    lane that cannot keep up (gradient all_reduce slower than a layer's backward)
    falls behind at its own pace."""
    busy: dict[int, tuple[float, float]]
    exposed: dict[str, tuple[float, float]]
    flops: dict[int, float]
    heads: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)
    """Per stream with work that does not wait for the loop's input: when that
    work starts (after the loop's external inputs), how much earlier the stream
    ends than with the input ready at once (its gain), when its first event
    after the input starts, and the head's busy seconds."""

    def moved(self, by: int) -> _LoopSummary:
        """The same summary, every stream index moved by `by`."""
        if by == 0:
            return self

        def move(d: dict) -> dict:
            return {k + by: v for k, v in d.items()}

        return replace(self, first_end=move(self.first_end), first_start=move(self.first_start),
                       stream_period=move(self.stream_period), busy=move(self.busy),
                       flops=move(self.flops), heads=move(self.heads))


def _foldable(code: list[tuple]) -> bool:
    """Only plain events, joins and loops of them, none talking to another stage
    and none on the NICs: scale-out collectives inside a loop (gradient
    reductions, ZeRO-3 gathers) share the NICs with what runs beside the loop
    (pipeline sends), which a loop simulated on its own cannot see, so those
    loops run event by event. A micro-batch loop of a single-stage schedule holds
    the layer loops and folds like them."""
    return not _lanes_drift(code) and all(
        ins[0] is _JOIN
        or (ins[0] is _EVENT and ins[8] is None and ins[1] >> 20 != LINKS["scale-out"])
        or (ins[0] is _LOOP and _foldable(ins[4]))
        for ins in code
    )


def _lanes_drift(code: list[tuple]) -> bool:
    """Whether two communication lanes share a link in this body while one of
    them waits on no compute of the iteration: that lane runs ahead of the loop
    (ZeRO-1's parameter gathers of the next step, chained only to each other),
    so how much the two lanes overlap changes from one iteration to the next and
    two or three simulated iterations do not tell the rest (the first layers'
    tensor-parallel all-reduces share the link with the gathers, the later ones
    do not)."""
    gated: set[int] = set()  # slots that wait, directly or not, on this iteration's compute
    free = False
    lanes: dict[int, set[int]] = {}
    for ins in code:
        if ins[0] is _JOIN and gated.intersection(ins[1]):
            gated.add(ins[3])
        elif ins[0] is _EVENT and ins[2] == KIND_COMPUTE:
            gated.add(ins[9])
        elif ins[0] is _EVENT:
            lanes.setdefault(ins[1] >> 20, set()).add(ins[1] & ((1 << 20) - 1))
            if gated.intersection(ins[4]):
                gated.add(ins[9])
            else:
                free = True
    return free and any(link and len(streams) > 1 for link, streams in lanes.items())


def _reads_writes(ins: tuple) -> tuple[tuple[int, ...], int]:
    """The slots an instruction of a foldable body reads, and the one it writes."""
    if ins[0] is _EVENT:
        return ins[4], ins[9]
    if ins[0] is _JOIN:
        return ins[1], ins[3]
    return (ins[2], *_external_slots(ins[4], ins[3])), ins[6]


def _independent_work(code: list[tuple], arg: int) -> bool:
    """Whether some event of a loop body does not wait (even indirectly) for the
    body's input."""
    waits = {arg}
    for ins in code:
        reads, writes = _reads_writes(ins)
        if any(d in waits for d in reads):
            waits.add(writes)
        elif ins[0] is not _JOIN:
            return True
    return False


def _external_slots(code: list[tuple], arg: int) -> tuple[int, ...]:
    defined = {arg}
    used = set()
    for ins in code:
        reads, writes = _reads_writes(ins)
        used.update(reads)
        defined.add(writes)
    return tuple(sorted(used - defined))


def _int(attr) -> float:
    return float(attr.value.data) if isinstance(attr, IntegerAttr) else 0.0


def _program_attributes(program: event.ProgramOp) -> dict[str, float]:
    return {
        k: v.value.data for k, v in program.attributes.items() if isinstance(v, (IntegerAttr, FloatAttr))
    }


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
                if isinstance(op, event.EventOpBase):
                    link = op.attributes.get("link")
                    if "channel" in op.attributes or (isinstance(link, StringAttr) and link.data == "scale-out"):
                        return False
    return True


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
                builder.stream_kinds.append(KIND_COMPUTE if op.kind.data == "compute" else KIND_COMM)
                stream_program.append(index)
        builder.run_block(program.body.block)
        infos.append(
            ProgramInfo(program.sym_name.data, program.ranks.value.data, _program_attributes(program))
        )
        for op in program.walk():
            eng = op.attributes.get("engine")
            if isinstance(eng, StringAttr):
                engines[eng.data] = engines.get(eng.data, 0) + 1
    builder.match_point_to_point()
    return builder.to_flat(infos, builder.streams, builder.stream_kinds, stream_program, engines)
