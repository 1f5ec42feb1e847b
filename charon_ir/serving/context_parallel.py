"""Long-context serving with context parallelism chosen per request.

A replica is a pool of `ranks` cp ranks, each `tp x pp` GPUs holding the whole
model. A request's prompt is prefilled by a group of `d` ranks (its degree),
the sequence split across them as `shard-context` splits it in training:

- `ring`: zigzag load-balanced ring attention (each rank keeps chunks r and
  2d-1-r of 2d, so every rank computes 1/d of the causal work); the kv blocks'
  send/recv overlap the attention steps, so a layer costs max(attention, ring).
- `ulysses`: all_to_alls turn the sequence split into a head split around
  attention; they are on the critical path.

The prefill time of a prompt of n tokens on d ranks is priced through the
training passes (import prefill IR -> fuse -> shard-tensor{tp} ->
shard-context{cp=d mode} -> set-target -> cost-annotate) at a few lengths and
interpolated: the token-local ops (GEMMs, norms, tp collectives) linearly in n,
attention in n^2, the cp collectives in n.

After the prefill the KV cache stays where it was computed (`distributed`):
each rank of the group holds its share, new tokens append to the group's
first rank (the leader), and every decode step each rank attends its share and
the partial outputs are combined by an all-reduce over the group (priced by the
collective planner). Or it is gathered onto the leader (`gather`), a transfer
of the other shares over the group's link, and decodes there alone.

Ranks form and release groups per request: a policy picks the degree
(`fixed:D`, `by-length:LEN=DEG,...`, `adaptive[:D]`, see CPPolicy), the group
is `d` neighbouring ranks of the pool (`--cp-ranks`, by default the policy's
largest degree), as the prefill was priced on, and is gang-scheduled: it
starts when every member has finished its current decode iteration, and no
member starts another meanwhile. Requests are served first come, first served.

Decode runs per rank in segments: between two events that change a rank's batch
(a sequence finishing, a prefill taking the rank) every iteration decodes the
same sequences with contexts growing by one token, so the segment's iteration
times are a line in the iteration index (chord of the step model between its
first and last iteration) and the segment is one event, cut at an iteration
boundary when a prefill needs the rank. A follower rank decodes its share of a
sequence at its own pace (its iterations are priced with that share's context
and the token's layer work, which every rank of a cp group computes).

KV capacity: each rank's cache (HBM x utilisation - weights - the workspace of a
`max_batch_tokens` chunk, as vLLM's chunked prefill bounds it) holds its shares;
a request's shares and the leader's output tokens are reserved when its group
forms, so no sequence is preempted. A request whose shares cannot fit an empty
pool at its degree is refused before the run, naming it.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from charon_ir.api import load_model_module, make_pass
from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import COST_ATTR
from charon_ir.engines.collectives import cached_plan
from charon_ir.errors import CharonError
from charon_ir.frontend import load_config
from charon_ir.passes import shard_context
from charon_ir.serving import metrics as m
from charon_ir.serving.latency import (
    Curve,
    ReplicaShape,
    StepTimeModel,
    parse_curve,
    serving_cache_dir,
    table_key,
    write_atomically,
)
from charon_ir.serving.requests import Request
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target

CP_MODES = ("ring", "ulysses")
KV_LAYOUTS = ("distributed", "gather")
POLICY_KINDS = ("fixed", "by-length", "adaptive")
MAX_DEGREE = 64
"""Largest cp degree a policy may name (a 64-rank group of 8-GPU ranks is 512 GPUs)."""
DEFAULT_ADAPTIVE_DEGREE = 8
CP_PREFILL_LENGTHS = (1024, 4096, 16384, 65536, 262144, 1048576)
"""Prompt lengths the prefill of each degree is priced at (only those within the
model's context, and the context itself): 4x apart; the linear and n^2 families
are each exact between samples up to the kernels' efficiency curves."""
CP_TABLE_VERSION = "cp-prefill-1"
ADAPTIVE_SLACK = 0.1
"""adaptive: a narrower group is taken when it finishes the prefill within this
share of the fastest option's time (fewer GPU-seconds for a small delay)."""
BACKFILL_DEPTH = 16
"""Queued requests behind a waiting head that backfilling looks at."""


# --- policies ------------------------------------------------------------------


@dataclass(frozen=True)
class CPPolicy:
    """How a request's cp degree is chosen.

    - `fixed:D`: every request on D ranks.
    - `by-length:LEN=DEG,LEN=DEG,...`: the degree of the largest LEN at most the
      prompt's length (degree 1 below the first LEN); `by-length:L1,L2,...`
      doubles the degree at each threshold (1, 2, 4, ...).
    - `adaptive[:D]`: the degree (a divisor of D, default 8) and group that
      finish the prefill first given the ranks' current work (prefills under
      way, decode iterations), the fewest ranks within ADAPTIVE_SLACK of it: a
      long prompt on an idle pool takes every rank, a prompt arriving while
      other groups prefill takes the ranks that are free.
    """

    text: str
    kind: str
    degrees: tuple[int, ...]
    """Allowed degrees, increasing."""
    thresholds: tuple[int, ...] = ()
    """by-length: the prompt length from which degrees[i] applies."""

    @property
    def largest(self) -> int:
        return self.degrees[-1]

    def degree_for(self, prompt: int) -> int:
        if self.kind == "fixed":
            return self.degrees[0]
        d = 1
        for length, degree in zip(self.thresholds, self.degrees):
            if prompt >= length:
                d = degree
        return d

    @staticmethod
    def parse(text: str, ranks: int = 0) -> CPPolicy:
        """The policy `text` names; `ranks` (0: the policy's largest degree) is
        the pool each degree must divide."""
        shown = text if len(text) <= 60 else f"{text[:57]}..."
        kind, _, arg = text.partition(":")
        usage = ("expected fixed:D, by-length:LEN=DEG,... (or by-length:L1,L2,... doubling the "
                 "degree at each length) or adaptive[:D]")
        if kind not in POLICY_KINDS:
            raise CharonError(f"--cp-policy '{shown}': {usage}")

        def count(word: str, what: str, low: int = 1, high: int = MAX_DEGREE) -> int:
            if not (word.isascii() and word.isdigit()) or len(word) > 9 or not low <= int(word) <= high:
                raise CharonError(f"--cp-policy '{shown}': {what} must be an integer in {low}..{high}, "
                                  f"got '{word}'")
            return int(word)

        thresholds: tuple[int, ...] = ()
        if kind == "fixed":
            degrees: tuple[int, ...] = (count(arg, "the degree"),)
        elif kind == "adaptive":
            top = count(arg, "the largest degree") if arg else DEFAULT_ADAPTIVE_DEGREE
            degrees = tuple(d for d in range(1, top + 1) if top % d == 0)
        else:
            if not arg:
                raise CharonError(f"--cp-policy '{shown}': {usage}")
            items = arg.split(",")
            pairs = []
            for i, item in enumerate(items):
                length, eq, degree = item.partition("=")
                pairs.append((count(length, "a length", 0, 2**31),
                              count(degree, "a degree") if eq else 2 ** (i + 1)))
            if any(b[0] <= a[0] for a, b in zip(pairs, pairs[1:])):
                raise CharonError(f"--cp-policy '{shown}': the lengths must increase")
            thresholds = tuple(p[0] for p in pairs)
            degrees = tuple(p[1] for p in pairs)
        policy = CPPolicy(text, kind, degrees, thresholds)
        pool = ranks or policy.largest
        if policy.largest > pool:
            raise CharonError(f"--cp-policy '{shown}': cp degree {policy.largest} exceeds the replica's "
                              f"{pool} cp ranks (--cp-ranks)")
        return policy

    def all_degrees(self) -> tuple[int, ...]:
        extra = {1} if self.kind == "by-length" and self.thresholds[0] > 0 else set()
        return tuple(sorted(set(self.degrees) | extra))


# --- prefill pricing through the training passes --------------------------------


@dataclass(frozen=True)
class PrefillTable:
    """Seconds of one prompt's prefill on a group of `degree` ranks."""

    degree: int
    mode: str
    local: Curve
    """Token-local ops (GEMMs, norms, tp collectives, embedding, LM head) by prompt tokens."""
    attention: Curve
    """Attention by prompt tokens squared."""
    comm: Curve
    """The cp collectives (ring send/recv, Ulysses all_to_all) by prompt tokens."""
    p2p_s: float = 0.0
    """Pipeline hand-offs of the rank's share, per prompt token."""

    def time_s(self, tokens: int) -> float:
        attention = self.attention(float(tokens) * tokens)
        comm = self.comm(tokens) if self.degree > 1 else 0.0
        both = max(attention, comm) if self.mode == "ring" else attention + comm
        return self.local(tokens) + both + self.p2p_s * tokens

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> PrefillTable:
        return PrefillTable(int(d["degree"]), str(d["mode"]), parse_curve("local", d["local"]),
                            parse_curve("attention", d["attention"]), parse_curve("comm", d["comm"]),
                            float(d["p2p_s"]))


def _priced_parts(module) -> tuple[float, float, float]:
    """(token-local, attention, cp collectives) seconds of a priced prefill step."""

    parts = [0.0, 0.0, 0.0]

    def cost(op) -> float:
        attr = op.attributes.get(COST_ATTR)
        return attr.time_s.data if isinstance(attr, sim.CostAttr) else 0.0

    phase = next(op for op in module.body.block.ops if isinstance(op, sim.PhaseOp))
    for op in phase.body.block.ops:
        count, ops = (op.count.value.data, list(op.body.block.ops)) if isinstance(op, sim.RepeatOp) \
            else (1, [op])
        for inner in ops:
            if isinstance(inner, sim.AttentionOp):
                parts[1] += count * cost(inner)
            elif isinstance(inner, coll.CollectiveOp) and "cp" in inner.axis_names():
                parts[2] += count * cost(inner)
            else:
                parts[0] += count * cost(inner)
    return parts[0], parts[1], parts[2]


def _price_prefill(shape: ReplicaShape, degree: int, mode: str, tokens: int) -> tuple[float, float, float]:
    ctx, module = load_model_module(shape.model, seq_len=tokens, batch=1, mode="prefill")
    make_pass("fuse").apply(ctx, module)
    if shape.tp > 1:
        make_pass("shard-tensor", tp=shape.tp).apply(ctx, module)
    if degree > 1:
        try:
            make_pass("shard-context", cp=degree, mode=mode).apply(ctx, module)
        except CharonError as e:
            raise CharonError(f"--cp-mode {mode} with cp degree {degree}: {e}") from None
    make_pass("set-target", hardware=shape.hardware, gpus=shape.tp * degree).apply(ctx, module)
    # fp8 serving runs its GEMMs in fp8, as the replica's step model prices them
    # (latency.price_module); attention and the collectives stay 16-bit
    make_pass("cost-annotate", engines=("analytic",), fp8_gemms=shape.precision == "fp8").apply(ctx, module)
    return _priced_parts(module)


def _lengths(context: int) -> tuple[int, ...]:
    lengths = [n for n in CP_PREFILL_LENGTHS if n < context]
    return tuple(lengths + [context]) if context else CP_PREFILL_LENGTHS


def _prefill_key(shape: ReplicaShape, degree: int, mode: str, lengths: tuple[int, ...]) -> str:
    digest = hashlib.sha256(Path(shard_context.__file__).read_bytes() + Path(__file__).read_bytes())
    payload = json.dumps([CP_TABLE_VERSION, table_key(shape), degree, mode, lengths, digest.hexdigest()])
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


_TABLES: dict[tuple[ReplicaShape, int, str, int], PrefillTable] = {}


def prefill_table(shape: ReplicaShape, degree: int, mode: str, context: int, p2p_s: float,
                  use_cache: bool = True) -> PrefillTable:
    """The prefill table of `degree` ranks: from memory, the disk cache, or priced."""
    key = (shape, degree, mode, context)
    if key in _TABLES:
        return _TABLES[key]
    lengths = _lengths(context)
    path = serving_cache_dir() / f"cp-{_prefill_key(shape, degree, mode, lengths)}.json" if use_cache else None
    table = None
    if path is not None and path.is_file():
        try:
            table = PrefillTable.from_json(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError, OSError):
            table = None  # a damaged entry is priced again
    if table is None:
        local, attention, comm = {}, {}, {}
        for n in lengths:
            # the zigzag ring cuts the sequence into 2 x degree chunks
            n = -(-n // (2 * degree)) * (2 * degree)
            local[n], attention[float(n) * n], comm[n] = _price_prefill(shape, degree, mode, n)
        table = PrefillTable(degree, mode, Curve.through(local), Curve.through(attention),
                             Curve.through(comm), p2p_s)
        if path is not None:
            write_atomically(path, json.dumps(table.to_json()))
    # the pipeline hand-off is the rank's step model's, not part of the cached pricing
    table = PrefillTable(table.degree, table.mode, table.local, table.attention, table.comm, p2p_s)
    _TABLES[key] = table
    return table


# --- the decode combine and the KV gather --------------------------------------


@dataclass(frozen=True)
class GroupComms:
    """Priced by the collective planner on the pool's GPUs (rank k's first GPU
    is k x tp x pp)."""

    hardware: str
    gpus_per_rank: int
    ranks: int
    combine_bytes_per_sequence: float
    """Per layer: the partial attention output of one token and its softmax
    statistics, bf16 and fp32."""
    layers: int

    @cache  # noqa: B019 (frozen dataclass: hashable, lives as long as the run)
    def combine_s(self, degree: int, sequences: int) -> float:
        """One decode step's combine of `sequences` sequences over a group of `degree` ranks."""
        if degree <= 1 or sequences <= 0:
            return 0.0

        plan = cached_plan("all_reduce", self.combine_bytes_per_sequence * sequences,
                           tuple(r * self.gpus_per_rank for r in range(degree)), self._topology())
        return self.layers * plan.time_s

    @cache  # noqa: B019
    def gather_bandwidth(self, degree: int) -> float:
        """Bytes/s into the leader of a group of `degree` ranks (its link)."""

        gpu = load_gpu(self.hardware)
        target = Target(gpu, self.gpus_per_rank * self.ranks, gpu.gpus_per_node)
        link = target.link_for_group({"cp": degree, "tp": self.gpus_per_rank}, ["cp"])
        return link.bandwidth

    def _topology(self):
        gpu = load_gpu(self.hardware)
        return Target(gpu, self.gpus_per_rank * self.ranks, gpu.gpus_per_node).topology


# --- the pool's event simulation -------------------------------------------------


@dataclass(eq=False)
class CPSequence:
    request: Request
    degree: int = 0
    ranks: tuple[int, ...] = ()
    shares: tuple[int, ...] = ()
    """KV tokens each rank of the group holds during decode (gather: the leader all)."""
    prefill_start_s: float = -1.0
    first_token_s: float = -1.0
    finish_s: float = -1.0
    c0: float = 0.0
    j0: int = 0
    j_end: int = 0
    reserved: tuple[int, ...] = ()
    """KV tokens reserved on each rank of the group while it prefills."""
    priced: dict[int, tuple[tuple[int, ...], float]] = field(default_factory=dict)
    """By degree: (KV tokens to reserve per rank, prefill seconds)."""


@dataclass(eq=False)
class CPRank:
    index: int
    capacity: int
    kv_used: int = 0
    peak_kv: int = 0
    reserved_until: float = -1.0
    """End of the prefill holding this rank; < 0 when none does."""
    busy_until: float = 0.0
    leaders: dict[int, CPSequence] = field(default_factory=dict)
    lead_base: float = 0.0
    """Sum over leader sequences of (c0 - j0): their context at iteration j sums to
    lead_base + len(leaders) x j."""
    finish_heap: list[tuple[int, int]] = field(default_factory=list)
    guests: int = 0
    guest_context: float = 0.0
    distributed: Counter = field(default_factory=Counter)
    """Degrees of the distributed sequences on this rank (leader or follower)."""
    j: int = 0
    segment: tuple[float, int, float, float, int] | None = None
    """(start, first iteration, a, b, iterations): iteration i of the segment takes a + b i."""
    version: int = 0
    iterations: int = 0
    decode_busy_s: float = 0.0
    prefill_busy_s: float = 0.0

    @property
    def reserved(self) -> bool:
        return self.reserved_until >= 0.0

    @property
    def has_decode(self) -> bool:
        return bool(self.leaders) or self.guests > 0


class ContextParallelPool:
    def __init__(self, policy: CPPolicy, ranks: int, step: StepTimeModel,
                 tables: dict[int, PrefillTable], comms: GroupComms, kv_layout: str, capacity_tokens: int):
        self.policy = policy
        self.step = step
        self.tables = tables
        self.comms = comms
        self.layout = kv_layout
        self.ranks = [CPRank(i, capacity_tokens) for i in range(ranks)]
        self.queue: deque[CPSequence] = deque()
        self.events: list[tuple[float, int, int, Any]] = []
        self.counter = 0
        self.leads = 0
        """Sequences that ever led a decode: their order keys a leader's finish heap (not id(),
        whose order follows memory addresses and made ties finish in a run-dependent order)."""
        self.finished: list[CPSequence] = []
        self.degree_counts: Counter = Counter()
        self.prefill_gpu_s = 0.0

    # --- shares and capacity -------------------------------------------------------

    def _shares(self, seq: CPSequence, d: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(held during prefill, held during decode) per rank of a group of d."""
        prompt, output = seq.request.input_tokens, seq.request.output_tokens
        base = prompt // d
        prefill = (prompt - base * (d - 1),) + (base,) * (d - 1)
        if self.layout == "gather":
            decode = (prompt,) + (0,) * (d - 1)
        else:
            decode = prefill
        reserve = tuple(max(p, q) for p, q in zip(prefill, decode))
        reserve = (reserve[0] + output,) + reserve[1:]
        return reserve, decode

    def check_fits(self, requests: list[Request]) -> None:
        capacity = self.ranks[0].capacity
        for r in requests:
            seq = CPSequence(r)
            degrees = self.policy.degrees if self.policy.kind == "adaptive" \
                else (self.policy.degree_for(r.input_tokens),)
            if all(self._shares(seq, d)[0][0] > capacity for d in degrees):
                d = max(degrees)
                need = self._shares(seq, d)[0][0]
                where = r.source or f"request {r.id}"
                raise CharonError(
                    f"{where}: {r.input_tokens} prompt + {r.output_tokens} output tokens need {need:,} "
                    f"KV tokens on a rank at cp degree {d} ({self.layout} KV), more than a rank's "
                    f"{capacity:,}: raise the policy's degree or --tp")

    # --- events ----------------------------------------------------------------------

    def _push(self, t: float, kind: int, payload: Any) -> None:
        self.counter += 1
        heapq.heappush(self.events, (t, kind, self.counter, payload))

    def run(self, requests: list[Request]) -> None:
        for r in requests:
            self._push(r.arrival_s, 0, CPSequence(r))
        while self.events:
            t, kind, _, payload = heapq.heappop(self.events)
            if kind == 0:
                self.queue.append(payload)
                self._dispatch(t)
            elif kind == 1:
                self._prefill_done(payload, t)
            else:
                rank, version = payload
                if rank.version == version:
                    self._segment_done(rank, t)
        if self.queue or len(self.finished) != len(requests):  # a bug, not an input error
            raise AssertionError(f"context-parallel pool stalled with {len(self.queue)} requests queued")

    # --- prefill groups -----------------------------------------------------------------

    def _blocks(self, d: int):
        """The groups of d neighbouring ranks."""
        for start in range(len(self.ranks) - d + 1):
            yield self.ranks[start:start + d]

    @staticmethod
    def _ready(r: CPRank, now: float) -> float:
        """When `r` could join a group formed at `now`: after its prefill, or the
        decode iteration under way (a segment is cut there)."""
        if r.reserved:
            return r.reserved_until
        if r.segment is not None:
            start, _, a, b, k = r.segment
            return min(r.busy_until, max(now, start) + a + b * k)
        return max(now, r.busy_until)

    def _fits(self, block: list[CPRank], reserve: tuple[int, ...]) -> bool:
        return all(r.kv_used + need <= r.capacity for r, need in zip(block, reserve))

    def _plan(self, seq: CPSequence, now: float) -> tuple[int, list[CPRank], float, float] | None:
        """(degree, group, start, prefill seconds) the policy would give `seq` at
        `now`, the group possibly still held by a prefill; None when no group has
        room for its KV. fixed and by-length: the group of the degree that starts
        first. adaptive: for each degree the group that finishes first; then the
        fewest ranks finishing within ADAPTIVE_SLACK of the fastest (from now)."""
        prompt = seq.request.input_tokens
        degrees = self.policy.degrees if self.policy.kind == "adaptive" \
            else (self.policy.degree_for(prompt),)
        options = []
        for d in degrees:
            if d not in seq.priced:
                seq.priced[d] = (self._shares(seq, d)[0], self._prefill_s(seq, d))
            reserve, length = seq.priced[d]
            best = None
            for block in self._blocks(d):
                if not self._fits(block, reserve):
                    continue
                start = max(self._ready(r, now) for r in block)
                if best is None or start < best[2]:
                    best = (d, block, start, length)
            if best is not None:
                options.append(best)
        if not options:
            return None
        if self.policy.kind != "adaptive":
            return options[0]
        fastest = min(o[2] + o[3] for o in options) - now
        return next(o for o in options if o[2] + o[3] - now <= fastest * (1 + ADAPTIVE_SLACK) + 1e-12)

    def _prefill_s(self, seq: CPSequence, d: int) -> float:
        length = self.tables[d].time_s(seq.request.input_tokens)
        if self.layout == "gather" and d > 1:
            moved = (seq.request.input_tokens // d) * (d - 1)  # the followers' shares
            length += moved * self.step.kv_bytes_per_token_per_gpu / self.comms.gather_bandwidth(d)
        return length

    def _dispatch(self, now: float) -> None:
        """Start what can start: the queue's head when its group is free of
        prefills, else (EASY backfilling) a later request whose group the head
        does not wait for, or which ends before the head could start."""
        while self.queue:
            head = self.queue[0]
            plan = self._plan(head, now)
            if plan is not None and not any(r.reserved for r in plan[1]):
                self.queue.popleft()
                self._start(head, plan, now)
                continue
            if plan is None or all(r.reserved for r in self.ranks):
                return  # the head waits for KV room: nothing overtakes it, or it could starve
            held = {r.index for r in plan[1]}
            head_start = plan[2]
            for i in range(1, min(len(self.queue), 1 + BACKFILL_DEPTH)):
                seq = self.queue[i]
                other = self._plan(seq, now)
                if other is None or any(r.reserved for r in other[1]):
                    continue
                if other[2] + other[3] <= head_start or not held & {r.index for r in other[1]}:
                    del self.queue[i]
                    self._start(seq, other, now)
                    break
            else:
                return

    def _start(self, seq: CPSequence, plan: tuple[int, list[CPRank], float, float], now: float) -> None:
        d, block, _, length = plan
        for r in block:
            self._cut(r, now)
        start = max(now, max(r.busy_until for r in block))
        reserve, decode = self._shares(seq, d)
        end = start + length
        seq.degree, seq.ranks, seq.shares, seq.reserved = d, tuple(r.index for r in block), decode, reserve
        seq.prefill_start_s = start
        for r, need in zip(block, reserve):
            r.kv_used += need
            r.peak_kv = max(r.peak_kv, r.kv_used)
            r.reserved_until = end
            r.busy_until = end
            r.prefill_busy_s += length
        self.degree_counts[d] += 1
        self.prefill_gpu_s += length * d * self.comms.gpus_per_rank
        self._push(end, 1, seq)

    def _prefill_done(self, seq: CPSequence, t: float) -> None:
        seq.first_token_s = t
        block = [self.ranks[i] for i in seq.ranks]
        for r, held, keep in zip(block, seq.reserved, seq.shares):
            r.reserved_until = -1.0
            r.busy_until = t
            if r is not block[0]:
                r.kv_used -= held - keep  # gathered shares leave the followers
        if seq.request.output_tokens <= 1:
            self._release(seq, t)
        else:
            leader = block[0]
            seq.j0, seq.c0 = leader.j, float(seq.shares[0])
            seq.j_end = leader.j + seq.request.output_tokens - 2  # its last decode iteration
            self.leads += 1
            leader.leaders[self.leads] = seq
            leader.lead_base += seq.c0 - seq.j0
            heapq.heappush(leader.finish_heap, (seq.j_end, self.leads))
            distributed = self.layout == "distributed" and seq.degree > 1
            if distributed:
                leader.distributed[seq.degree] += 1
            for r, share in zip(block[1:], seq.shares[1:]):
                if distributed:
                    r.guests += 1
                    r.guest_context += share
                    r.distributed[seq.degree] += 1
        self._dispatch(t)
        for r in block:
            if not r.reserved:
                self._start_segment(r, t)

    def _release(self, seq: CPSequence, t: float) -> None:
        seq.finish_s = t
        self.finished.append(seq)
        block = [self.ranks[i] for i in seq.ranks]
        distributed = self.layout == "distributed" and seq.degree > 1 and seq.request.output_tokens > 1
        block[0].kv_used -= seq.reserved[0]
        for r, share in zip(block[1:], seq.shares[1:]):
            r.kv_used -= share
            if distributed:
                # the follower's batch changes: its segment ends at the iteration under way
                self._cut(r, t)
                r.guests -= 1
                r.guest_context -= share
                r.distributed[seq.degree] -= 1
                if not r.reserved and r.segment is None:
                    self._start_segment(r, max(t, r.busy_until))
        if distributed:
            block[0].distributed[seq.degree] -= 1

    # --- decode segments ----------------------------------------------------------------

    def _iteration_s(self, rank: CPRank, j: int) -> float:
        n = len(rank.leaders)
        context = rank.lead_base + n * j + rank.guest_context
        t = self.step.iteration_time(n + rank.guests, max(n, 1), int(context))
        if rank.distributed:
            top = max((d for d, c in rank.distributed.items() if c > 0), default=0)
            if top:
                t += self.comms.combine_s(top, sum(rank.distributed.values()))
        return t

    def _start_segment(self, rank: CPRank, now: float) -> None:
        if rank.segment is not None or rank.reserved or not rank.has_decode:
            return
        if rank.leaders:
            k = rank.finish_heap[0][0] - rank.j + 1
        else:  # a follower only: until its leaders' sequences end or a prefill cuts it
            k = 1 << 20
        a = self._iteration_s(rank, rank.j)
        b = (self._iteration_s(rank, rank.j + k - 1) - a) / (k - 1) if k > 1 else 0.0
        now = max(now, rank.busy_until)
        rank.segment = (now, rank.j, a, b, k)
        rank.version += 1
        end = now + k * a + b * k * (k - 1) / 2
        rank.busy_until = end
        self._push(end, 2, (rank, rank.version))

    def _cut(self, rank: CPRank, t: float) -> None:
        """End the rank's segment with the iteration under way at `t`."""
        if rank.segment is None:
            return
        start, _, a, b, k = rank.segment
        elapsed = t - start
        # iterations finished by t: the largest m with m a + b m (m - 1) / 2 <= elapsed
        if b > 1e-15:
            m = int((-(a - b / 2) + math.sqrt((a - b / 2) ** 2 + 2 * b * elapsed)) / b)
        else:
            m = int(elapsed / a) if a > 0 else k
        m = max(0, min(k, m))
        while m < k and m * a + b * m * (m - 1) / 2 < elapsed - 1e-12:
            m += 1
        done = max(1, m)
        end = start + done * a + b * done * (done - 1) / 2
        rank.segment = (start, rank.j, a, b, done)
        rank.version += 1
        rank.busy_until = end
        self._push(end, 2, (rank, rank.version))

    def _segment_done(self, rank: CPRank, t: float) -> None:
        start, _, _, _, k = rank.segment  # pyright: ignore[reportGeneralTypeIssues]
        rank.segment = None
        rank.j += k
        rank.iterations += k
        rank.decode_busy_s += t - start
        finished = False
        while rank.finish_heap and rank.finish_heap[0][0] < rank.j:
            _, key = heapq.heappop(rank.finish_heap)
            seq = rank.leaders.pop(key)
            rank.lead_base -= seq.c0 - seq.j0
            self._release(seq, t)
            finished = True
        if finished:
            self._dispatch(t)
        self._start_segment(rank, t)


# --- the run -----------------------------------------------------------------------


def check_options(mode: str, kv_layout: str) -> None:
    if mode not in CP_MODES:
        raise CharonError(f"--cp-mode must be one of {', '.join(CP_MODES)}, got '{mode}'")
    if kv_layout not in KV_LAYOUTS:
        raise CharonError(f"--cp-kv must be one of {', '.join(KV_LAYOUTS)}, got '{kv_layout}'")


def simulate_policy(policy: CPPolicy, requests: list[Request], step: StepTimeModel, ranks: int,
                    capacity_tokens: int, mode: str, kv_layout: str, context: int) -> dict[str, Any]:
    """One policy's run: metrics, GPU-seconds and the ranks' busy time."""


    shape = step.shape
    ranks = ranks or policy.largest
    per_rank = shape.tp * shape.pp
    tables = {d: prefill_table(shape, d, mode, context, step.p2p_s_per_token * (shape.pp - 1) / d)
              for d in policy.all_degrees()}
    _, model = load_config(shape.model)
    heads = int(model["num_attention_heads"])
    head_dim = int(model.get("head_dim") or int(model["hidden_size"]) // heads)
    comms = GroupComms(shape.hardware, per_rank, ranks,
                       combine_bytes_per_sequence=math.ceil(heads / shape.tp) * (head_dim * 2 + 4),
                       layers=math.ceil(int(model["num_hidden_layers"]) / shape.pp))
    pool = ContextParallelPool(policy, ranks, step, tables, comms, kv_layout, capacity_tokens)
    pool.check_fits(requests)
    pool.run(requests)
    seqs = sorted(pool.finished, key=lambda s: s.request.id)
    arrival = np.array([s.request.arrival_s for s in seqs])
    first = np.array([s.first_token_s for s in seqs])
    finish = np.array([s.finish_s for s in seqs])
    outputs = np.array([s.request.output_tokens for s in seqs])
    multi = outputs > 1
    duration = float(finish.max() - arrival.min()) if seqs else 0.0
    busy = sum(r.decode_busy_s + r.prefill_busy_s for r in pool.ranks) * per_rank
    return {
        "policy": policy.text,
        "ranks": ranks,
        "gpus": ranks * per_rank,
        "degrees": {str(d): c for d, c in sorted(pool.degree_counts.items())},
        "ttft_s": m.summary(first - arrival),
        "tpot_s": m.summary((finish[multi] - first[multi]) / (outputs[multi] - 1)),
        "e2e_s": m.summary(finish - arrival),
        "duration_s": duration,
        "gpu_seconds": {
            "prefill": pool.prefill_gpu_s,
            "busy": busy,
            "held": duration * ranks * per_rank,
        },
        "_pool": pool,
        "_metrics": {"ttft": first - arrival,
                     "tpot_per_request": np.where(multi, (finish - first) / np.maximum(outputs - 1, 1), 0.0)},
    }
