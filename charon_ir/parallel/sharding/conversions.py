"""What communication a change of layout needs: the collective (or free local
slice) that turns a value laid out one way into the layout an op wants,
inserted right after the value's definition, once per (value, layout):

    partial    -> replicated   all_reduce
    partial    -> split d      reduce_scatter
    split d    -> replicated   all_gather
    split d    -> split e      all_to_all
    replicated -> split d      a free local slice (`sim.generic "shard.slice"`)

and the per-row statistics a softmax or a cross-entropy over a split vocabulary
all-reduces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from xdsl.dialects.builtin import Float32Type, IntegerAttr, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.mesh import MESH
from charon_ir.parallel.sharding.layout import REPLICATED, Shard, shape, with_shape


@dataclass
class Conversions:
    """The layout of each value over one grid axis, and the conversions made so far."""

    axis: str
    size: int
    pass_name: str
    group_axes: tuple[str, ...] = ()
    """The grid axes whose ranks form the group of `size` (default: `axis` alone;
    shard-expert's experts folded over tensor parallelism: ("ep", "tp"))."""
    shards: dict[SSAValue, Shard] = field(default_factory=dict)
    """The layout of each value not whole on every rank."""
    converted: dict[tuple[SSAValue, Shard], SSAValue] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)
    """Ops whose operands were gathered whole because no rule fits (CHARON_DEBUG_SHARDING)."""

    def shard(self, value: SSAValue) -> Shard:
        return self.shards.get(value, REPLICATED)

    def local_shape(self, full: Sequence[int], s: Shard, what: str = "") -> list[int]:
        out = list(full)
        if s.dim is not None and s.tag == "capacity":
            # per-expert buffers of the local tokens: ceil(tokens * k / experts)
            out[s.dim] = -(-out[s.dim] // s.factor)
        elif s.dim is not None:
            if out[s.dim] % s.factor:
                raise CharonError(
                    f"{self.pass_name}: option '{self.axis}' ({s.factor}) does not divide "
                    f"dim {s.dim} ({out[s.dim]}) of {what or 'a tensor'}"
                )
            out[s.dim] //= s.factor
        return out

    def full_shape(self, value: SSAValue) -> list[int]:
        s = self.shard(value)
        out = list(shape(value))
        if s.dim is not None:
            out[s.dim] *= s.factor
        return out

    def _insert_point(self, value: SSAValue) -> InsertPoint:
        if isinstance(value, BlockArgument):
            return InsertPoint.at_start(value.block)
        assert isinstance(value, OpResult)
        return InsertPoint.after(value.op)

    def _insert(self, value: SSAValue, ops: Sequence[Operation]) -> None:
        point = self._insert_point(value)
        for op in ops:
            Rewriter.insert_op(op, point)
            point = InsertPoint.after(op)

    def convert(self, value: SSAValue, want: Shard) -> SSAValue:
        """`value` laid out as `want`, adding the collective (or local slice) that
        does it right after the value's definition, once per (value, layout)."""
        have = self.shard(value)
        if (have.dim, have.factor, have.partial) == (want.dim, want.factor, want.partial):
            return value
        key = (value, replace(want, tag=""))
        if key in self.converted:
            return self.converted[key]
        ops: list[Operation] = []
        axes = list(self.group_axes or (self.axis,))
        cur = value
        cur_shard = have
        if cur_shard.partial:
            if want.dim is not None and not want.partial and have.dim is None:
                t = with_shape(cur.type, self.local_shape(shape(cur), want, "a partial sum"))
                op = coll.ReduceScatterOp(cur, MESH, axes, t, axis=IntegerAttr(want.dim, 64))
                ops.append(op)
                self._insert(value, ops)
                self.shards[op.result] = want
                self.converted[key] = op.result
                return op.result
            op = coll.AllReduceOp(cur, MESH, axes)
            ops.append(op)
            cur, cur_shard = op.result, replace(have, partial=False)
        if cur_shard.dim is not None and cur_shard.dim != want.dim:
            if want.dim is not None and cur_shard.factor == want.factor == self.size:
                full = list(shape(cur))
                full[cur_shard.dim] *= cur_shard.factor
                t = with_shape(cur.type, self.local_shape(full, want, "a tensor"))
                op = coll.AllToAllOp(
                    cur, MESH, axes, t,
                    split_axis=IntegerAttr(want.dim, 64), concat_axis=IntegerAttr(cur_shard.dim, 64),
                )
                ops.append(op)
                cur, cur_shard = op.result, want
            else:
                gathered = list(shape(cur))
                gathered[cur_shard.dim] *= self.size
                op = coll.AllGatherOp(
                    cur, MESH, axes, with_shape(cur.type, gathered),
                    axis=IntegerAttr(cur_shard.dim, 64),
                )
                ops.append(op)
                cur = op.result
                if cur_shard.factor != self.size:
                    # a dim split fewer ways than the group (shared kv heads): the
                    # gather brings copies; keep one
                    full = list(shape(value))
                    full[cur_shard.dim] *= cur_shard.factor
                    sl = sim.GenericOp("shard.slice", [cur], [with_shape(cur.type, full)], 0.0, 0.0)
                    ops.append(sl)
                    cur = sl.results[0]
                cur_shard = REPLICATED
        elif cur_shard.dim is not None and cur_shard.factor != want.factor and want.dim is not None:
            raise CharonError(
                f"{self.pass_name}: cannot re-split a dim split {cur_shard.factor} ways into {want.factor}"
            )
        if cur_shard.dim is None and want.dim is not None:
            t = with_shape(cur.type, self.local_shape(shape(cur), want, "a tensor"))
            op = sim.GenericOp("shard.slice", [cur], [t], 0.0, 0.0)
            ops.append(op)
            cur, cur_shard = op.results[0], want
        if want.partial and not cur_shard.partial:
            # a whole value stands for a partial sum on one rank; the others add
            # zeros: nothing to move, and nothing wrong in counting it on every rank
            cur_shard = replace(cur_shard, partial=True)
        self._insert(value, ops)
        if cur is not value:
            self.shards[cur] = want if not cur_shard.replicated else REPLICATED
            if cur_shard.replicated:
                self.shards.pop(cur, None)
        self.converted[key] = cur
        return cur

    def use(self, op: Operation, index: int, want: Shard) -> None:
        """Make operand `index` of `op` have layout `want`."""
        value = op.operands[index]
        new = self.convert(value, want)
        if new is not value:
            op.operands[index] = new

    def use_value(self, op: Operation, value: SSAValue, want: Shard) -> None:
        """Make every use of `value` by `op` have layout `want` (operands by name:
        IRDL orders a subclass's operands before its base class's)."""
        new = self.convert(value, want)
        if new is not value:
            for i, v in enumerate(op.operands):
                if v is value:
                    op.operands[i] = new

    def resolve_partials(self, op: Operation) -> None:
        for i, v in enumerate(op.operands):
            if isinstance(v.type, TensorType) and self.shard(v).partial:
                s = self.shard(v)
                self.use(op, i, replace(s, partial=False))

    def gather_all(self, op: Operation, reason: str) -> None:
        """Fallback: make every operand whole (correct, but moves data)."""
        for i, v in enumerate(op.operands):
            if isinstance(v.type, TensorType) and not self.shard(v).replicated:
                self.use(op, i, REPLICATED)
                self.fallbacks.append(f"{op.name}: {reason}")


def row_stats(st: Conversions, op: Operation, value: SSAValue, dim: int, count: int) -> None:
    """`count` fp32 statistics per row of `value` (max, sum of exponentials, the
    target logit), all-reduced over the group before `op` (vocab-parallel softmax
    and cross-entropy, Megatron's `_VocabParallelCrossEntropy`)."""
    stats_shape = [1 if i == dim else n for i, n in enumerate(shape(value))]
    t = TensorType(Float32Type(), stats_shape)
    for _ in range(count):
        stat = sim.GenericOp("shard.row_stats", [value], [t], 0.0, 0.0)
        red = coll.AllReduceOp(stat.results[0], MESH, [st.axis])
        Rewriter.insert_op([stat, red], InsertPoint.before(op))
