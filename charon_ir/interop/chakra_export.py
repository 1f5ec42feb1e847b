"""A lowered training step as Chakra execution traces, one `.et` file per rank.

The event IR holds one program per rank class (pipeline stage). Here, and only
here, it is expanded to ranks: each program's loops are unrolled once into a
flat node list (`RankClass`), then every rank of the class is written from it,
one file at a time, so memory holds the rank classes, never the ranks.

Node per event: an `event.compute` is a COMP_NODE (`duration_micros`, `num_ops`
= its FLOPs); an `event.comm` a COMM_COLL_NODE (`comm_type`, `pg_name`,
`comm_size` = the collective's buffer, ASTRA-sim's convention, and
`charon_bytes_per_rank` = the simulated traffic per rank it came from), or for
`send` / `recv` a COMM_SEND_NODE /
COMM_RECV_NODE (`comm_src`, `comm_dst`, `comm_tag`, `comm_size`). `data_deps`
are the event's dependencies (joins and barriers resolved to the events they
wait for); `ctrl_deps` the previous event of the same stream, since a stream
runs its events in order and Chakra has no streams. Durations are the cost
engines' (no overlap contention): each node's `duration_micros` is rounded so
that a stream's running total stays within half a microsecond of the exact
one, and the exact seconds are kept in the `charon_duration_s` attribute.

Process groups: `pg_name` is a number, and `comm_group.json` beside the traces
maps each to its ranks (ASTRA-sim's `--comm-group-configuration`).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import product
from math import prod
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects import event
from charon_ir.dialects.coll import GridOp
from charon_ir.errors import CharonError
from charon_ir.interop.chakra import VERSION, frame, schema
from charon_ir.report.output import atomic_output

COMP, COLL, SEND, RECV = 0, 1, 2, 3
COLLECTIVES = {
    "all_reduce": "ALL_REDUCE", "all_gather": "ALL_GATHER", "reduce_scatter": "REDUCE_SCATTER",
    "all_to_all": "ALL_TO_ALL", "broadcast": "BROADCAST", "reduce": "REDUCE",
}
"""Event labels of collectives and their Chakra CollectiveCommType."""
TRACE_NAME = "charon"
"""Files are DIR/charon.<rank>.et, the `<prefix>.<rank>.et` ASTRA-sim's workload path expects."""


@dataclass
class RankClass:
    """One event program unrolled: node i's fields at index i."""

    name: str
    stage: int
    ranks: int
    kind: list[int] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    duration_s: list[float] = field(default_factory=list)
    stream: list[int] = field(default_factory=list)
    data_deps: list[tuple[int, ...]] = field(default_factory=list)
    ctrl_dep: list[int] = field(default_factory=list)
    flops: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    """Bytes each rank moves (the simulated traffic: a ring all-reduce 2(n-1)/n of its buffer)."""
    group: list[int] = field(default_factory=list)
    axes: list[tuple[str, ...]] = field(default_factory=list)
    p2p: dict[int, tuple[str, int, int, int]] = field(default_factory=dict)
    """Send/recv nodes: (channel, src, dst virtual stage, k-th message of that channel)."""
    streams: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)


class _Unroller:
    """Unrolls one event program. A token's value is its frontier: per stream,
    the last event it waits for (a later event of a stream implies the earlier
    ones, so a join of joins never grows past one event per stream)."""

    def __init__(self, program: event.ProgramOp) -> None:
        self.rc = RankClass(program.sym_name.data, program.stage_index(), program.ranks.value.data)
        self.stream_index: dict[str, int] = {}
        self.stream_axes: dict[int, tuple[str, ...]] = {}
        self.last: dict[int, int] = {}
        self.messages: dict[tuple[int, tuple[str, int, int]], int] = {}
        self.compiled: dict[int, tuple] = {}

    def frontier(self, values: Iterable[dict[int, int]]) -> dict[int, int]:
        out: dict[int, int] = {}
        for v in values:
            for s, i in v.items():
                if out.get(s, -1) < i:
                    out[s] = i
        return out

    def event(self, op: event.EventOpBase) -> tuple:
        found = self.compiled.get(id(op))
        if found is not None:
            return found
        name = op.stream.string_value()
        if name not in self.stream_index:
            raise CharonError(f"chakra: {self.rc.name}: event '{op.label.data}' on undeclared stream @{name}")
        stream = self.stream_index[name]
        label = op.label.data
        p2p = None
        if isinstance(op, event.ComputeOp):
            kind = COMP
        elif label in ("send", "recv"):
            kind = SEND if label == "send" else RECV
            p2p = op.point_to_point() if isinstance(op, event.CommOp) else None
            if p2p is None:
                raise CharonError(f"chakra: {self.rc.name}: a '{label}' on @{name} names no channel "
                                  "(channel, src, dst properties pair it with its peer)")
        elif label in COLLECTIVES:
            kind = COLL
        else:
            raise CharonError(f"chakra: {self.rc.name}: communication '{label}' on @{name} has no Chakra "
                              f"node type (collectives: {', '.join(COLLECTIVES)}; send, recv)")
        if kind != COMP and not self.stream_axes.get(stream):
            raise CharonError(f"chakra: {self.rc.name}: stream @{name} names no mesh axes, so its "
                              f"'{label}' has no process group")
        group = op.group_size() if isinstance(op, event.CommOp) else 0
        found = (kind, label, op.duration_s.value.data, stream, int(op.flop_count()),
                 int(op.byte_count()), p2p, group)
        self.compiled[id(op)] = found
        return found

    def run(self, block, env: dict) -> None:
        rc = self.rc
        for op in block.ops:
            if isinstance(op, event.StreamOp):
                index = len(rc.streams)
                self.stream_index[op.sym_name.data] = index
                rc.streams.append(op.sym_name.data)
                self.stream_axes[index] = tuple(a.data for a in op.axes.data) if op.axes is not None else ()
            elif isinstance(op, event.EventOpBase):
                kind, label, duration, stream, flops, nbytes, p2p, group = self.event(op)
                i = len(rc.kind)
                deps = self.frontier(env[d] for d in op.deps)
                rc.kind.append(kind)
                rc.label.append(label)
                rc.duration_s.append(duration)
                rc.stream.append(stream)
                rc.data_deps.append(tuple(sorted(deps.values())))
                rc.ctrl_dep.append(self.last.get(stream, -1))
                rc.flops.append(flops)
                rc.nbytes.append(nbytes)
                rc.group.append(group)
                rc.axes.append(self.stream_axes[stream])
                if p2p is not None:
                    # the k-th send of a channel pairs with its k-th receive
                    k = self.messages.get((kind, p2p), 0)
                    self.messages[(kind, p2p)] = k + 1
                    rc.p2p[i] = (*p2p, k)
                self.last[stream] = i
                env[op.token] = {stream: i}
            elif isinstance(op, event.WaitOp):
                env[op.token] = self.frontier(env[d] for d in op.deps)
            elif isinstance(op, event.BarrierOp):
                env[op.token] = dict(self.last)
            elif isinstance(op, event.LoopOp):
                body = op.body.block
                term = body.last_op
                assert isinstance(term, event.YieldOp)
                prev = env[op.init]
                for _ in range(op.count.value.data):
                    env[body.args[0]] = prev
                    self.run(body, env)
                    prev = env[term.token]
                env[op.token] = prev
            elif isinstance(op, event.YieldOp):
                continue
            else:
                raise CharonError(f"chakra: {rc.name}: unexpected op '{op.name}' in an event program")


MAX_NODES = 50_000_000
"""Nodes one rank class may unroll to (a few GB): past it the export is refused."""


def _unrolled_size(block, seen: dict) -> int:
    """Events of `block` with every loop unrolled (a loop counting its iterations
    at least once), without unrolling them."""
    n = 0
    for op in block.ops:
        if isinstance(op, event.LoopOp):
            body = id(op.body.block)
            if body not in seen:
                seen[body] = _unrolled_size(op.body.block, seen)
            n += op.count.value.data * max(1, seen[body])
        else:
            n += 1
    return n


def unroll(program: event.ProgramOp) -> RankClass:
    """The program's events with every loop unrolled, in program order."""
    size = _unrolled_size(program.body.block, {})
    if size > MAX_NODES:
        raise CharonError(f"chakra: {program.sym_name.data} unrolls to {size:,} events, over the "
                          f"{MAX_NODES:,} one rank class may have")
    unroller = _Unroller(program)
    unroller.run(program.body.block, {})
    return unroller.rc


@dataclass(frozen=True)
class Mesh:
    """The device grid: axes outermost first, the last fastest (rank = row-major index)."""

    axes: tuple[str, ...]
    shape: tuple[int, ...]

    @staticmethod
    def of(module: ModuleOp) -> Mesh:
        for op in module.body.block.ops:
            if isinstance(op, GridOp):
                sizes = op.axis_sizes()
                return Mesh(tuple(sizes), tuple(sizes.values()))
        return Mesh((), ())

    @property
    def world(self) -> int:
        return prod(self.shape)

    def coords(self, rank: int) -> dict[str, int]:
        out = {}
        for axis, size in zip(reversed(self.axes), reversed(self.shape)):
            out[axis] = rank % size
            rank //= size
        return out

    def rank(self, coords: dict[str, int]) -> int:
        r = 0
        for axis, size in zip(self.axes, self.shape):
            r = r * size + coords[axis]
        return r

    def size(self, axis: str) -> int:
        return self.shape[self.axes.index(axis)] if axis in self.axes else 1


def parse_ranks(text: str, world: int, flag: str = "--ranks") -> list[int]:
    """`0-63`, `5`, `0-3,8,12-15` (inclusive ranges) as a sorted list; a rank
    outside the run's 0..world-1 is one error."""
    if not text:
        return list(range(world))
    ranks: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if m is None:
            raise CharonError(f"{flag} {text!r}: expected ranks and ranges such as 0-63 or 0-3,8")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if lo > hi:
            raise CharonError(f"{flag} {text!r}: range {lo}-{hi} is empty")
        if hi >= world:
            raise CharonError(f"{flag} {text!r}: rank {hi} is outside the run's {world} GPUs (0-{world - 1})")
        ranks.update(range(lo, hi + 1))
    return sorted(ranks)


class Groups:
    """Process groups by number. A group is the ranks that differ from a rank
    only along the collective's axes (restricted to `positions` along a single
    axis for a subgroup collective, Megatron's embedding group). Its number
    depends only on the group (which axes, whether a subgroup, its lowest rank),
    so exports of different rank subsets agree."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        self.ids: dict[int, tuple[int, ...]] = {}

    def members(self, rank: int, axes: tuple[str, ...], positions: tuple[int, ...] = ()) -> tuple[int, ...]:
        here = self.mesh.coords(rank)
        ranges = [positions if positions else range(self.mesh.size(a)) for a in axes]
        out = []
        for values in product(*ranges):
            c = dict(here)
            c.update(zip(axes, values))
            out.append(self.mesh.rank(c))
        return tuple(sorted(out))

    def name(self, rank: int, axes: tuple[str, ...], positions: tuple[int, ...] = ()) -> str:
        members = self.members(rank, axes, positions)
        mask = sum(1 << self.mesh.axes.index(a) for a in axes)
        number = ((mask << 1) | bool(positions)) * self.mesh.world + members[0]
        self.ids.setdefault(number, members)
        return str(number)

    def to_json(self) -> dict[str, list[int]]:
        return {str(i): list(m) for i, m in sorted(self.ids.items())}


def payload_bytes(label: str, per_rank: int, group: int) -> int:
    """A collective's buffer (Chakra's comm_size, which ASTRA-sim splits into
    its algorithm's steps itself) from the bytes each rank moves, as the `coll`
    ops state them: a ring all-reduce moves 2(n-1)/n of its buffer, all-gather,
    reduce-scatter and all-to-all (n-1)/n, a broadcast all of it."""
    if group <= 1:
        return 0  # a group of one moves nothing
    if label == "all_reduce":
        return round(per_rank * group / (2 * (group - 1)))
    if label == "broadcast":
        return per_rank
    return round(per_rank * group / (group - 1))


def _tag(channel: str, src: int, dst: int, k: int) -> int:
    """Equal for the k-th send and the k-th receive of one channel, whichever rank computes it."""
    return (zlib.crc32(f"{channel}:{src}:{dst}".encode()) & 0x7FFF) << 32 | k


def _rounded(rc: RankClass) -> list[int]:
    """Whole microseconds per node such that each stream's running total stays
    within half a microsecond of the exact one (rounding node by node lost up to
    half a microsecond per kernel)."""
    total: dict[int, float] = {}
    out = []
    for d, s in zip(rc.duration_s, rc.stream):
        before = total.get(s, 0.0)
        after = before + d * 1e6
        total[s] = after
        out.append(max(0, round(after) - round(before)))
    return out


def _subgroups(classes: list[RankClass], mesh: Mesh) -> dict[tuple[str, ...], tuple[int, ...]]:
    """Collectives on fewer ranks than their axes span (the pipeline's embedding
    all-reduce between the first and last stage): positions along the axis,
    read off which stages run them."""
    found: dict[tuple[str, ...], set[int]] = {}
    for rc in classes:
        for i in range(len(rc)):
            if rc.kind[i] == COLL and rc.axes[i] == ("pp",):
                found.setdefault(("pp",), set()).add(rc.stage)
    return {axes: tuple(sorted(stages)) for axes, stages in found.items() if len(stages) < mesh.size("pp")}


@dataclass
class ExportSummary:
    directory: Path
    ranks: list[int]
    nodes: dict[int, int]
    """Nodes written per rank."""
    groups: int
    classes: list[RankClass]
    rank_class: dict[int, int]


class Exporter:
    """The per-rank traces of a lowered module."""

    def __init__(self, module: ModuleOp, meta: dict[str, str] | None = None) -> None:
        programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
        if not programs:
            raise CharonError("chakra: the module has no event programs (lower it with lower-to-events first)")
        self.mesh = Mesh.of(module)
        self.classes = [unroll(p) for p in programs]
        self.meta = meta or {}
        world = self.mesh.world
        by_stage: dict[int, int] = {}
        for index, rc in enumerate(self.classes):
            if rc.stage in by_stage:
                raise CharonError(f"chakra: programs {self.classes[by_stage[rc.stage]].name} and {rc.name} "
                                  f"are both stage {rc.stage}")
            by_stage[rc.stage] = index
        self.by_stage = by_stage
        pp = self.mesh.size("pp")
        if len(self.classes) != pp or sorted(by_stage) != list(range(pp)):
            raise CharonError(f"chakra: {len(self.classes)} event programs (stages {sorted(by_stage)}) for a "
                              f"mesh of {pp} pipeline stages")
        if sum(rc.ranks for rc in self.classes) != world:
            raise CharonError(f"chakra: the programs hold {sum(rc.ranks for rc in self.classes)} GPUs, "
                              f"the mesh {dict(zip(self.mesh.axes, self.mesh.shape))} {world}")
        self.subgroups = _subgroups(self.classes, self.mesh)
        # the k-th message of a channel: its size, from the sender (a recv event carries no bytes)
        self.sent: dict[tuple[str, int, int, int], int] = {}
        for rc in self.classes:
            for i, (channel, src, dst, k) in rc.p2p.items():
                if rc.kind[i] == SEND:
                    self.sent[(channel, src, dst, k)] = rc.nbytes[i]
        for rc in self.classes:
            for i, key in rc.p2p.items():
                if rc.kind[i] == RECV and key not in self.sent:
                    raise CharonError(f"chakra: {rc.name} receives message {key[3]} of channel '{key[0]}' "
                                      f"({key[1]} -> {key[2]}), which no stage sends")
        self.groups = Groups(self.mesh)
        self.bases: dict[str, tuple[list[bytes], list[bytes], list[int]]] = {}

    def rank_class(self, rank: int) -> RankClass:
        return self.classes[self.by_stage[self.mesh.coords(rank).get("pp", 0)]]

    def _peer(self, rank: int, axes: tuple[str, ...], channel: str, src: int, dst: int, sending: bool) -> int:
        coords = self.mesh.coords(rank)
        if axes == ("pp",):  # between pipeline stages: src and dst are virtual stages
            pp = self.mesh.size("pp")
            coords["pp"] = (dst if sending else src) % pp
            return self.mesh.rank(coords)
        m = re.fullmatch(r"([a-z_]+?)([+-]\d+)", channel)
        if m is None:
            raise CharonError(f"chakra: point-to-point channel '{channel}' names no axis and shift")
        axes, shift = m.group(1).split("_"), int(m.group(2))
        if len(axes) != 1 or axes[0] not in self.mesh.axes:
            raise CharonError(f"chakra: point-to-point channel '{channel}' is not on one mesh axis")
        axis = axes[0]
        coords[axis] = (coords[axis] + (shift if sending else -shift)) % self.mesh.size(axis)
        return self.mesh.rank(coords)

    def _base(self, rc: RankClass) -> tuple[list[bytes], list[bytes], list[int]]:
        """Each node of a rank class serialized without what depends on the rank
        (pg_name, the peer of a send or receive): the same for all its ranks.
        A rank's node is that plus its own attributes, since concatenated
        protobuf messages parse as one (repeated fields append)."""
        found = self.bases.get(rc.name)
        if found is not None:
            return found
        s = schema()
        types, comm_types = s.node_types, s.comm_types
        Node, Attr = s.Node, s.AttributeProto
        micros = _rounded(rc)
        out = []
        for i in range(len(rc)):
            kind = rc.kind[i]
            node = Node(id=i, name=rc.label[i], duration_micros=micros[i])
            node.data_deps.extend(rc.data_deps[i])
            if rc.ctrl_dep[i] >= 0:
                node.ctrl_deps.append(rc.ctrl_dep[i])
            attrs = [Attr(name="is_cpu_op", bool_val=False),
                     Attr(name="charon_duration_s", double_val=rc.duration_s[i]),
                     Attr(name="charon_stream", string_val=rc.streams[rc.stream[i]])]
            if kind == COMP:
                node.type = types["COMP_NODE"]
                attrs.append(Attr(name="num_ops", int64_val=rc.flops[i]))
            elif kind == COLL:
                node.type = types["COMM_COLL_NODE"]
                attrs.append(Attr(name="comm_type", int64_val=comm_types[COLLECTIVES[rc.label[i]]]))
                attrs.append(Attr(name="comm_size", int64_val=payload_bytes(rc.label[i], rc.nbytes[i], rc.group[i])))
                attrs.append(Attr(name="charon_bytes_per_rank", int64_val=rc.nbytes[i]))
            else:
                key = rc.p2p[i]
                node.type = types["COMM_SEND_NODE" if kind == SEND else "COMM_RECV_NODE"]
                attrs.append(Attr(name="comm_tag", int64_val=_tag(*key)))
                attrs.append(Attr(name="comm_size", int64_val=self.sent[key]))
            node.attr.extend(attrs)
            out.append(node.SerializeToString())
        # the compute nodes between two communication nodes, framed once as one
        # chunk: a rank's file is these chunks and its own communication nodes
        chunks: list[bytes] = []
        comm: list[int] = []
        run: list[bytes] = []
        for i, payload in enumerate(out):
            if rc.kind[i] == COMP:
                run.append(frame(payload))
            else:
                chunks.append(b"".join(run))
                comm.append(i)
                run = []
        chunks.append(b"".join(run))
        layout = (out, chunks, comm)
        self.bases = {rc.name: layout}  # one rank class at a time: ranks are written class by class
        return layout

    def nodes(self, rank: int) -> Iterator[bytes]:
        """The framed messages of one rank's trace: metadata, then its nodes."""
        s = schema()
        rc = self.rank_class(rank)
        meta = s.GlobalMetadata(version=VERSION)
        for key, value in {"schema": f"chakra {VERSION}", "generator": "charon-ir", "rank": str(rank),
                           "world_size": str(self.mesh.world), "rank_class": rc.name,
                           "mesh": json.dumps(dict(zip(self.mesh.axes, self.mesh.shape))),
                           **self.meta}.items():
            meta.attr.add(name=key, string_val=value)
        yield frame(meta.SerializeToString())
        base, chunks, comm = self._base(rc)
        Node, Attr = s.Node, s.AttributeProto
        pg_names: dict[tuple[str, ...], bytes] = {}
        for chunk, i in zip(chunks, comm):
            if chunk:
                yield chunk
            kind, axes = rc.kind[i], rc.axes[i]
            if kind == COLL:
                extra = pg_names.get(axes)
                if extra is None:
                    name = self.groups.name(rank, axes, self.subgroups.get(axes, ()))
                    extra = pg_names[axes] = Node(attr=[Attr(name="pg_name", string_val=name)]).SerializeToString()
            else:
                channel, src, dst, _ = rc.p2p[i]
                sending = kind == SEND
                peer = self._peer(rank, axes, channel, src, dst, sending)
                extra = Node(attr=[Attr(name="comm_src", int32_val=rank if sending else peer),
                                   Attr(name="comm_dst", int32_val=peer if sending else rank)]).SerializeToString()
            yield frame(base[i] + extra)
        if chunks[-1]:
            yield chunks[-1]

    def write(self, directory: str | Path, ranks: list[int]) -> ExportSummary:
        """Write DIR/charon.<rank>.et for each rank, then DIR/comm_group.json;
        each file is written under a temporary name and renamed, so a failed
        export leaves no partial trace."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written: dict[int, int] = {}
        # class by class: a rank class's serialized nodes are kept while its ranks are written
        for rank in sorted(ranks, key=lambda r: (self.rank_class(r).stage, r)):
            path = directory / f"{TRACE_NAME}.{rank}.et"
            with atomic_output(path) as tmp, open(tmp, "wb") as f:
                f.writelines(self.nodes(rank))
            written[rank] = len(self.rank_class(rank))
        with atomic_output(directory / "comm_group.json") as tmp:
            groups = self.groups.to_json()
            Path(tmp).write_text("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in groups.items())
                                 + "\n}\n")
        return ExportSummary(directory, ranks, written, len(self.groups.ids), self.classes,
                             {r: self.classes.index(self.rank_class(r)) for r in ranks})
