"""Materialising a sharding plan: side-effect-free rewrite patterns that make
what `ShardingAnalysis` recorded into IR, through the rewriter's API.

- `RetypeValues`: each value the plan splits takes its per-rank type
  (`replace_value_with_new_type`), results and block arguments alike; a generic's
  FLOPs and bytes shrink with its results.
- `InsertConversions`: the conversions of the values an op (or a block it holds)
  defines, each right after what it converts, in the order the propagation asked
  for them, and the operands that read them (changed in place, `notify_op_modified`).
- `InsertRowStats`: the all-reduced row statistics before a vocab-parallel
  softmax or cross-entropy, once the operand they read is in place.
- `ApplyPartition`: an op that runs as ops of its own (ring attention's steps),
  once its operands and results are laid out; the conversions of its results
  then start from what stands in for them (the merge of the steps).

Each pattern reads only the plan and the op it matches, and does nothing on an op
it has done: the result does not depend on the order the ops are visited in
(`materialise(..., reverse=True)` gives the same module, byte for byte)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FloatAttr, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from charon_ir.dialects import coll, sim
from charon_ir.dialects.coll import GRAD_SYNC
from charon_ir.parallel.sharding.analysis import Conversion, ShardingPlan
from charon_ir.parallel.sharding.conversions import build_conversion, is_row_stats_of, row_stats_ops
from charon_ir.parallel.sharding.layout import shape, with_shape

Readers = dict[Conversion, list[tuple[Operation, int]]]


def _blocks(op: Operation) -> list[Block]:
    return [block for region in op.regions for block in region.blocks]


def scale_generic_cost(op: sim.GenericOp, old_bytes: float, old_numel: float) -> None:
    """A generic whose results were split does its work on the local part: its
    FLOPs shrink with its results' elements, its bytes with their bytes."""
    tensors = [r for r in op.results if isinstance(r.type, TensorType)]
    ratio = sum(sim.numel(r) for r in tensors) / old_numel
    in_ratio = sum(sim.tensor_bytes(r) for r in tensors) / old_bytes if old_bytes else 1.0
    op.properties["flop_count"] = FloatAttr(op.flop_count.value.data * ratio, 64)
    op.properties["byte_count"] = FloatAttr(op.byte_count.value.data * in_ratio, 64)


@dataclass(frozen=True)
class RetypeValues(RewritePattern):
    """The values `op` defines (its results, its blocks' arguments) take the
    per-rank types the plan gives them."""

    plan: ShardingPlan

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        shapes = self.plan.shapes
        changed = [
            (r.index, local) for r in op.results
            if (local := shapes.get((op, r.index))) is not None and shape(r) != local
        ]
        if changed:
            tensors = [r for r in op.results if isinstance(r.type, TensorType)]
            old_bytes = sum(sim.tensor_bytes(r) for r in tensors)
            old_numel = sum(sim.numel(r) for r in tensors)
            for index, local in changed:
                r = op.results[index]
                rewriter.replace_value_with_new_type(r, with_shape(r.type, local))
            if op in self.plan.scale_cost:
                assert isinstance(op, sim.GenericOp)
                scale_generic_cost(op, old_bytes, old_numel)
                rewriter.notify_op_modified(op)
        for block in _blocks(op):
            for index in range(len(block.args)):
                arg = block.args[index]
                local = shapes.get((block, index))
                if local is not None and shape(arg) != local:
                    rewriter.replace_value_with_new_type(arg, with_shape(arg.type, local))


def _after(value: SSAValue) -> InsertPoint:
    if isinstance(value, BlockArgument):
        return InsertPoint.at_start(value.block)
    assert isinstance(value, OpResult)
    return InsertPoint.after(value.op)


@dataclass(frozen=True)
class InsertConversions(RewritePattern):
    """The conversions of the values `op` defines: each right after what it
    converts, a later one before an earlier one (where a walk converting as it goes
    puts them), and the operands that read them."""

    plan: ShardingPlan
    readers: Readers

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        self._at(op, rewriter)
        for block in _blocks(op):
            self._at(block, rewriter)

    def _done(self, planned: list[Conversion]) -> bool:
        """Whether the conversions are in the IR: an operand that reads one no
        longer reads the value it converts. (One nothing reads is not made.)"""
        for c in planned:
            for user, index in self.readers.get(c, ()):
                return user.operands[index] is not self.plan.current(c.root)
        return True

    def _at(self, owner: Operation | Block, rewriter: PatternRewriter) -> None:
        planned = self.plan.at.get(owner)
        if not planned or any(self.plan.current(c.root) is None for c in planned) or self._done(planned):
            return  # nothing to do, or the op's partition has not run yet, or done
        made: dict[Conversion, SSAValue] = {}
        for c in planned:
            source = made[c.source] if isinstance(c.source, Conversion) else self.plan.current(c.root)
            assert source is not None
            ops = build_conversion(source, c.steps, self.plan.axes)
            if c.grad_sync and isinstance(ops[-1], coll.AllReduceOp):
                ops[-1].attributes[GRAD_SYNC] = UnitAttr()
            rewriter.insert(ops, _after(source))
            made[c] = ops[-1].results[0]
        for c in planned:
            for user, index in self.readers.get(c, ()):
                # an in-place change the rewriter is told of (MLIR's modifyOpInPlace);
                # replace_uses_with_if would also rename the new value after the old
                user.operands[index] = made[c]
                rewriter.notify_op_modified(user)


@dataclass(frozen=True)
class InsertRowStats(RewritePattern):
    """Before `op`: the all-reduced row statistics of the operand the plan names,
    once that operand reads what the plan says (its conversion, if any)."""

    plan: ShardingPlan

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        stats = self.plan.row_stats.get(op)
        if stats is None:
            return
        value = op.operands[stats.index]
        planned = self.plan.operands.get((op, stats.index))
        if planned is not None:
            source = self.plan.current(planned.root)
            if source is None or value is source:
                return  # its conversion is not in place yet
        if is_row_stats_of(op.prev_op, value):
            return
        rewriter.insert(row_stats_ops(value, stats.shape, stats.count, self.plan.axis), InsertPoint.before(op))


@dataclass(frozen=True)
class ApplyPartition(RewritePattern):
    """An op the plan gives a `Partition`: rewritten by it, once its operands and
    results are laid out as planned."""

    plan: ShardingPlan

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        how = self.plan.partitions.get(op)
        if how is None or how.stand_in(op, 0) is not None or not self.plan.in_place(op):
            return
        how.rewrite(op, rewriter)


def materialisation_patterns(plan: ShardingPlan) -> list[RewritePattern]:
    return [
        RetypeValues(plan), InsertConversions(plan, plan.readers()), InsertRowStats(plan), ApplyPartition(plan),
    ]


def materialise(plan: ShardingPlan, root: Operation, reverse: bool = False) -> None:
    """Make `plan` IR in `root` (the ops visited last to first with `reverse`)."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(materialisation_patterns(plan), dce_enabled=False),
        walk_reverse=reverse,
    ).rewrite_region(root.regions[0])
