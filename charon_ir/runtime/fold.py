"""The fast tier's loop folding: a loop of identical iterations (a layer
repeat; the micro-batches of a single stage) simulated two and three times on
its own by the interpreter, and folded into one event per stream spanning the
extrapolated time (DESIGN.md section 6).

    program  <-  timeline  <-  interpreter  <-  fold  <-  flatten  <-  tiers

`LoopFolding` is the part of flatten's builder that folds: it simulates a
loop's body with a fresh builder of its own class.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from charon_ir.runtime.interpreter import run
from charon_ir.runtime.program import (
    KIND_COMPUTE,
    KIND_JOIN,
    LINK_SCALE_OUT,
    EventIns,
    Instruction,
    JoinIns,
    LoopIns,
    ProgramInfo,
)
from charon_ir.runtime.timeline import exposed_by_axis, stream_work


class LoopFolding:
    """Loop folding of a flatten builder (which supplies `add`, `execute`,
    `to_flat` and the stream tables)."""

    def loop_summary(self, ins: LoopIns) -> LoopSummary:
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
        arg, body, yielded, n_slots = ins.arg, ins.body, ins.yielded, ins.slots

        def mini(iterations: int, late: float = 0.0):
            # everything outside the body ready at t=0; with `late`, the loop's
            # input (the previous item's result) arrives only at t=late
            sub = type(self)(fold=self.fold, overlap=self.overlap)
            sub.stream_index = self.stream_index
            sub.streams, sub.stream_kinds, sub.stream_axes = self.streams, self.stream_kinds, self.stream_axes
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
        if independent_work(body, arg):
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
        summary = LoopSummary(
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

    def loop_key(self, ins: LoopIns, base: int) -> tuple:
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

        def walk(code: list[Instruction]) -> tuple:
            out = []
            for op in code:
                if type(op) is EventIns:
                    out.append((op.stream - base, op.link, op.kind, op.duration, tuple(map(name, op.deps)),
                                op.label, op.flops, op.nbytes, op.p2p))
                    define(op.out)
                elif type(op) is JoinIns:
                    out.append((tuple(map(name, op.deps)), op.label, op.item))
                    define(op.out)
                elif type(op) is LoopIns:
                    init = name(op.init)
                    define(op.arg)
                    body = walk(op.body)
                    out.append((op.count, init, body, name(op.yielded), op.foldable))
                    define(op.out)
                else:
                    out.append(("barrier",))
                    define(op.out)
            return tuple(out)

        define(ins.arg)
        body = walk(ins.body)
        key = (body, name(ins.yielded), tuple(self.streams[base:]), tuple(self.stream_kinds[base:]))
        self.keys[id(ins)] = (ins, key)
        return key

    def fold_loop(self, ins: LoopIns, env: list[int]) -> int:
        """The fast tier: a loop of identical layers becomes one event per stream
        spanning first + (count - 2) x period, working its extrapolated busy time."""
        count, init = ins.count, ins.init
        summary = self.loop_summary(ins)
        # Each folded event waits for its own stream only (streams run in order).
        # The extrapolation assumes the loop's lanes start free; a communication
        # tail left by the previous loop shifts one layer, an error that shrinks
        # as 1/count (tests: within 1% from 8 layers on).
        external = sorted({env[s] for s in external_slots(ins.body, ins.arg)})
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
                self.folded_heads[h] = gain
                self.folded(h, min(head_work, work), kind, {a: 0.0 for a in exposed})
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
                self.folded(i, work * share, kind, {a: t * share for a, t in exposed.items()})
                on_path.append(i)
                flops, work, span = flops * (1 - share), work * (1 - share), end - ready
                exposed = {a: t * (1 - share) for a, t in exposed.items()}
                after = []
            i = self.add(stream, kind, span, after, f"repeat x{count}", flops, 0.0)
            self.folded(i, work, kind, exposed)
            macros.append((end, i))
        on_path += [i for end, i in macros if end <= ready * (1 + 1e-9) + 1e-15]
        return self.add(-1, KIND_JOIN, 0.0, on_path or [i for _, i in macros] or list(deps), "repeat")

    def folded(self, i: int, work: float, kind: int, exposed: dict[str, float]) -> None:
        """Event i is (part of) a folded loop working `work` seconds of its span."""
        if work == self.duration[i]:
            # the interpreter tells folded events by busy != duration
            work = float(np.nextafter(work, 0.0))
        self.busy[i] = work
        if kind == KIND_COMPUTE:
            self.folded_exposed[i] = exposed


@dataclass(frozen=True)
class LoopSummary:
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

    def moved(self, by: int) -> LoopSummary:
        """The same summary, every stream index moved by `by`."""
        if by == 0:
            return self

        def move(d: dict) -> dict:
            return {k + by: v for k, v in d.items()}

        return replace(self, first_end=move(self.first_end), first_start=move(self.first_start),
                       stream_period=move(self.stream_period), busy=move(self.busy),
                       flops=move(self.flops), heads=move(self.heads))


def is_foldable(code: list[Instruction]) -> bool:
    """Only plain events, joins and loops of them, none talking to another stage
    and none on the NICs: scale-out collectives inside a loop (gradient
    reductions, ZeRO-3 gathers) share the NICs with what runs beside the loop
    (pipeline sends), which a loop simulated on its own cannot see, so those
    loops run event by event. A micro-batch loop of a single-stage schedule holds
    the layer loops and folds like them."""
    return not lanes_drift(code) and all(
        type(ins) is JoinIns
        or (type(ins) is EventIns and ins.p2p is None and ins.link != LINK_SCALE_OUT)
        or (type(ins) is LoopIns and is_foldable(ins.body))
        for ins in code
    )


def lanes_drift(code: list[Instruction]) -> bool:
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
        if type(ins) is JoinIns and gated.intersection(ins.deps):
            gated.add(ins.out)
        elif type(ins) is EventIns and ins.kind == KIND_COMPUTE:
            gated.add(ins.out)
        elif type(ins) is EventIns:
            lanes.setdefault(ins.link, set()).add(ins.stream)
            if gated.intersection(ins.deps):
                gated.add(ins.out)
            else:
                free = True
    return free and any(link and len(streams) > 1 for link, streams in lanes.items())


def reads_writes(ins: Instruction) -> tuple[tuple[int, ...], int]:
    """The slots an instruction of a foldable body reads, and the one it writes."""
    if type(ins) is EventIns or type(ins) is JoinIns:
        return ins.deps, ins.out
    assert type(ins) is LoopIns
    return (ins.init, *external_slots(ins.body, ins.arg)), ins.out


def independent_work(code: list[Instruction], arg: int) -> bool:
    """Whether some event of a loop body does not wait (even indirectly) for the
    body's input."""
    waits = {arg}
    for ins in code:
        reads, writes = reads_writes(ins)
        if any(d in waits for d in reads):
            waits.add(writes)
        elif type(ins) is not JoinIns:
            return True
    return False


def external_slots(code: list[Instruction], arg: int) -> tuple[int, ...]:
    defined = {arg}
    used = set()
    for ins in code:
        reads, writes = reads_writes(ins)
        used.update(reads)
        defined.add(writes)
    return tuple(sorted(used - defined))
