"""What communication a change of layout needs: the collective (or free local
slice) that turns a value laid out one way into the layout an op wants:

    partial    -> replicated   all_reduce
    partial    -> split d      reduce_scatter
    split d    -> replicated   all_gather
    split d    -> split e      all_to_all
    replicated -> split d      a free local slice (`sim.generic "shard.slice"`)

and the per-row statistics a softmax or a cross-entropy over a split vocabulary
all-reduces. `conversion_steps` plans a conversion from shapes and layouts alone
(no IR); `build_conversion` and `row_stats_ops` make the ops, for whoever
inserts them (the materialising patterns, or a pass that converts as it walks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from xdsl.dialects.builtin import Float32Type, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.mesh import MESH
from charon_ir.parallel.sharding.layout import REPLICATED, Shard, with_shape

SLICE = sim.GenericCallee.SHARD_SLICE
ROW_STATS = sim.GenericCallee.SHARD_ROW_STATS


class StepKind(Enum):
    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_TO_ALL = "all_to_all"
    ALL_GATHER = "all_gather"
    SLICE = "slice"


@dataclass(frozen=True)
class Step:
    """One op of a conversion and the per-rank shape it yields."""

    kind: StepKind
    shape: tuple[int, ...]
    dim: int = 0
    """The scattered or gathered dim (all_to_all: the split dim)."""
    concat: int = 0
    """all_to_all: the concatenated dim."""
    props: tuple[tuple[str, Attribute], ...] = ()
    """More properties of the collective (shard-expert's routing of an all_to_all)."""
    callee: str = SLICE
    """A slice's `sim.generic` name."""


LocalShape = Callable[[Sequence[int], Shard, str], list[int]]
"""(unsharded shape, layout, what) -> per-rank shape; raises when the split does
not divide the dim."""


def conversion_steps(
    local_in: Sequence[int], have: Shard, want: Shard, size: int, local_shape: LocalShape, pass_name: str,
) -> tuple[tuple[Step, ...], Shard]:
    """The ops that turn a value of per-rank shape `local_in` laid out as `have`
    into one laid out as `want` over a group of `size`, and the layout the last
    one yields; no steps (and `have`) when nothing moves."""
    steps: list[Step] = []
    cur = list(local_in)
    cur_shard = have
    if cur_shard.partial:
        if want.dim is not None and not want.partial and have.dim is None:
            t = local_shape(cur, want, "a partial sum")
            return (Step(StepKind.REDUCE_SCATTER, tuple(t), want.dim),), want
        steps.append(Step(StepKind.ALL_REDUCE, tuple(cur)))
        cur_shard = replace(have, partial=False)
    if cur_shard.dim is not None and cur_shard.dim != want.dim:
        if want.dim is not None and cur_shard.factor == want.factor == size:
            full = list(cur)
            full[cur_shard.dim] *= cur_shard.factor
            t = local_shape(full, want, "a tensor")
            steps.append(Step(StepKind.ALL_TO_ALL, tuple(t), want.dim, cur_shard.dim))
            cur, cur_shard = t, want
        else:
            gathered = list(cur)
            gathered[cur_shard.dim] *= size
            steps.append(Step(StepKind.ALL_GATHER, tuple(gathered), cur_shard.dim))
            cur = gathered
            if cur_shard.factor != size:
                # a dim split fewer ways than the group (shared kv heads): the
                # gather brings copies; keep one
                full = list(local_in)
                full[cur_shard.dim] *= cur_shard.factor
                steps.append(Step(StepKind.SLICE, tuple(full)))
                cur = full
            cur_shard = REPLICATED
    elif cur_shard.dim is not None and cur_shard.factor != want.factor and want.dim is not None:
        raise CharonError(
            f"{pass_name}: cannot re-split a dim split {cur_shard.factor} ways into {want.factor}"
        )
    if cur_shard.dim is None and want.dim is not None:
        t = local_shape(cur, want, "a tensor")
        steps.append(Step(StepKind.SLICE, tuple(t)))
        cur, cur_shard = t, want
    if want.partial and not cur_shard.partial:
        # a whole value stands for a partial sum on one rank; the others add
        # zeros: nothing to move, and nothing wrong in counting it on every rank
        cur_shard = replace(cur_shard, partial=True)
    if not steps:
        return (), have
    return tuple(steps), REPLICATED if cur_shard.replicated else want


def build_conversion(value: SSAValue, steps: Sequence[Step], axes: Sequence[str]) -> list[Operation]:
    """The ops of `steps`, the first reading `value`, each the next."""
    ops: list[Operation] = []
    cur = value
    for step in steps:
        t = with_shape(value.type, step.shape)
        props = dict(step.props)
        if step.kind is StepKind.ALL_REDUCE:
            op: Operation = coll.AllReduceOp(cur, MESH, list(axes), t, **props)
        elif step.kind is StepKind.REDUCE_SCATTER:
            op = coll.ReduceScatterOp(cur, MESH, list(axes), t, axis=IntegerAttr(step.dim, 64), **props)
        elif step.kind is StepKind.ALL_TO_ALL:
            op = coll.AllToAllOp(
                cur, MESH, list(axes), t,
                split_axis=IntegerAttr(step.dim, 64), concat_axis=IntegerAttr(step.concat, 64), **props,
            )
        elif step.kind is StepKind.ALL_GATHER:
            op = coll.AllGatherOp(cur, MESH, list(axes), t, axis=IntegerAttr(step.dim, 64), **props)
        else:
            op = sim.GenericOp(step.callee, [cur], [t], 0.0, 0.0)
        ops.append(op)
        cur = op.results[0]
    return ops


def stats_shape(local: Sequence[int], dim: int) -> tuple[int, ...]:
    """One statistic per row: `local` with `dim` reduced to 1."""
    return tuple(1 if i == dim else n for i, n in enumerate(local))


def row_stats_ops(value: SSAValue, shape: Sequence[int], count: int, axis: str) -> list[Operation]:
    """`count` fp32 statistics of `shape` per row of `value` (max, sum of
    exponentials, the target logit), each all-reduced over the group (vocab-parallel
    softmax and cross-entropy, Megatron's `_VocabParallelCrossEntropy`)."""
    t = TensorType(Float32Type(), list(shape))
    ops: list[Operation] = []
    for _ in range(count):
        stat = sim.GenericOp(ROW_STATS, [value], [t], 0.0, 0.0)
        ops += [stat, coll.AllReduceOp(stat.results[0], MESH, [axis])]
    return ops


def is_row_stats_of(op: Operation | None, value: SSAValue) -> bool:
    """Whether `op` is the all_reduce of a row statistic of `value`."""
    if not isinstance(op, coll.AllReduceOp):
        return False
    stat = op.input.owner
    return sim.is_generic(stat, ROW_STATS) and stat.operands[0] is value
