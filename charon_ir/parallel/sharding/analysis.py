"""Sharding as an analysis: the rules' requests recorded, the IR untouched.

`ShardingAnalysis` answers the rules from the unchanged module (every type is the
unsharded one) and records what they ask for in a `ShardingPlan`: the per-rank
shape of each value a rule laid out, the conversions each operand needs (planned
`Conversion`s, deduplicated per (value, layout) as they would be in the IR), the
row statistics before an op, the generics whose cost shrinks with their results,
and the all_reduces that sum a gradient. `materialise.py` makes the plan IR.

The plan names values by place (an op and a result index, a block and an argument
index), so it stays true while the materialising patterns replace values by
values of the per-rank type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from charon_ir.dialects import sim
from charon_ir.parallel.sharding.conversions import Step, conversion_steps, stats_shape
from charon_ir.parallel.sharding.layout import Shard, shape
from charon_ir.parallel.sharding.state import Partition, Sharding

Place = tuple[Operation | Block, int]
"""Where a value is defined: (op, result index) or (block, argument index)."""


def place_of(value: SSAValue) -> Place:
    if isinstance(value, OpResult):
        return value.op, value.index
    assert isinstance(value, BlockArgument)
    return value.block, value.index


def value_at(place: Place) -> SSAValue:
    """The value defined at `place` now."""
    owner, index = place
    return owner.results[index] if isinstance(owner, Operation) else owner.args[index]


@dataclass(eq=False)
class Conversion:
    """A planned conversion: `steps` applied to `source` (a value's place, or
    another conversion), in the order the propagation asked for them (`order`)."""

    source: Place | Conversion
    steps: tuple[Step, ...]
    order: int
    grad_sync: bool = False
    """The last op is an all_reduce of a gradient (`coll.grad_sync`)."""

    @property
    def root(self) -> Place:
        src = self.source
        return src.root if isinstance(src, Conversion) else src


@dataclass(frozen=True)
class RowStats:
    """Row statistics of operand `index` of an op, before it."""

    index: int
    shape: tuple[int, ...]
    count: int


@dataclass
class ShardingPlan:
    """What a sharding propagation decided, by place; no IR."""

    axis: str
    axes: tuple[str, ...]
    shapes: dict[Place, tuple[int, ...]] = field(default_factory=dict)
    """The per-rank shape of each value whose layout splits it."""
    operands: dict[tuple[Operation, int], Conversion] = field(default_factory=dict)
    """(op, operand index) -> the conversion it reads instead of its operand."""
    conversions: list[Conversion] = field(default_factory=list)
    """Every planned conversion, in the order asked for."""
    at: dict[Operation | Block, list[Conversion]] = field(default_factory=dict)
    """The conversions of the values an op or block defines (and the conversions of
    those), in the order asked for."""
    row_stats: dict[Operation, RowStats] = field(default_factory=dict)
    scale_cost: set[Operation] = field(default_factory=set)
    """Generics whose FLOPs and bytes shrink with their results."""
    partitions: dict[Operation, Partition] = field(default_factory=dict)
    """Ops that run as a `Partition` builds them."""

    def add(self, conversion: Conversion) -> None:
        self.conversions.append(conversion)
        self.at.setdefault(conversion.root[0], []).append(conversion)

    def current(self, place: Place) -> SSAValue | None:
        """The value the readers of `place` read now: the value there, or what
        stands in for it once its op's partition has run (None before)."""
        owner, index = place
        how = self.partitions.get(owner) if isinstance(owner, Operation) else None
        return value_at(place) if how is None else how.stand_in(owner, index)  # pyright: ignore[reportArgumentType]

    def in_place(self, op: Operation) -> bool:
        """Whether `op` reads its operands as planned, each with its per-rank
        type, and its results have theirs."""
        for index, value in enumerate(op.operands):
            c = self.operands.get((op, index))
            if c is not None:
                source = self.current(c.root)
                if source is None or value is source:
                    return False
            elif isinstance(value.type, TensorType) and shape(value) != self.shapes.get(place_of(value), shape(value)):
                return False
        return all(shape(r) == self.shapes.get((op, r.index), shape(r)) for r in op.results)

    def readers(self) -> dict[Conversion, list[tuple[Operation, int]]]:
        """The operands that read each conversion."""
        out: dict[Conversion, list[tuple[Operation, int]]] = {}
        for use, c in self.operands.items():
            out.setdefault(c, []).append(use)
        return out


@dataclass
class ShardingAnalysis(Sharding):
    """A propagation that only records (`plan`); the module keeps its types."""

    plan: ShardingPlan = field(init=False)

    def __post_init__(self) -> None:
        self.plan = ShardingPlan(self.axis, tuple(self.axes))

    # -- shapes ----------------------------------------------------------------

    def full_shape(self, value: SSAValue | Conversion) -> list[int]:
        while isinstance(value, Conversion):
            value = value.source if isinstance(value.source, Conversion) else value_at(value.source)
        return list(shape(value))

    def rank_shape(self, value: SSAValue | Conversion) -> list[int]:
        if isinstance(value, Conversion):
            return list(value.steps[-1].shape)
        return list(self.plan.shapes.get(place_of(value), shape(value)))

    def assign(self, value: SSAValue, s: Shard, local: Sequence[int] | None = None) -> None:
        if local is None:
            local = self.local_shape(shape(value), s, self._describe(value))
        local = tuple(local)
        place = place_of(value)
        if local != shape(value):
            self.plan.shapes[place] = local
        else:
            self.plan.shapes.pop(place, None)
        if s.replicated:
            self.shards.pop(value, None)
        else:
            self.shards[value] = s

    def assign_results(self, op: Operation, result_shards, scale_cost: bool) -> None:
        super().assign_results(op, result_shards, scale_cost)
        if scale_cost and isinstance(op, sim.GenericOp) and any(
            isinstance(r.type, TensorType) and sim.numel(r) for r in op.results
        ):
            self.plan.scale_cost.add(op)

    # -- conversions -----------------------------------------------------------

    def operand(self, op: Operation, index: int) -> SSAValue | Conversion:
        return self.plan.operands.get((op, index), op.operands[index])

    def conversion(self, value: SSAValue | Conversion, have: Shard, want: Shard) -> SSAValue | Conversion:
        steps, final = conversion_steps(
            self.rank_shape(value), have, want, self.size, self.local_shape, self.pass_name
        )
        return self.convert_with(value, steps, final) if steps else value

    def use(self, op: Operation, index: int, want: Shard) -> None:
        new = self.convert(self.operand(op, index), want)
        if isinstance(new, Conversion):
            self.plan.operands[(op, index)] = new

    def convert_with(self, value: SSAValue | Conversion, steps: Sequence[Step], layout: Shard) -> Conversion:
        source = value if isinstance(value, Conversion) else place_of(value)
        new = Conversion(source, tuple(steps), len(self.plan.conversions))
        self.plan.add(new)
        if not layout.replicated:
            self.shards[new] = layout
        return new

    def read(self, op: Operation, index: int, value: SSAValue | Conversion) -> None:
        if isinstance(value, Conversion):
            self.plan.operands[(op, index)] = value
        else:
            self.plan.operands.pop((op, index), None)

    def use_value(self, op: Operation, value: SSAValue, want: Shard) -> None:
        indices = [i for i, v in enumerate(op.operands) if v is value]
        new = self.convert(self.operand(op, indices[0]), want)
        if isinstance(new, Conversion):
            for i in indices:
                self.plan.operands[(op, i)] = new

    def row_stats(self, op: Operation, index: int, dim: int, count: int) -> None:
        local = stats_shape(self.rank_shape(self.operand(op, index)), dim)
        self.plan.row_stats[op] = RowStats(index, local, count)

    def mark_grad_sync(self, value: SSAValue | Conversion) -> None:
        if isinstance(value, Conversion):
            value.grad_sync = True

    def partition(self, op: Operation, how: Partition) -> None:
        self.plan.partitions[op] = how
