"""Sharding propagation over the sim dialect, shared by the parallelism passes.

A pass seeds some values with a `Shard` (a weight split on a dim, the token ids
split on the sequence) and walks the module once in program order. Each op's
pattern reads its operands' shards, picks the shards of its results (a matmul of a
replicated input by a column-split weight is split on its last dim; by a row-split
weight, it is a partial sum), rewrites the result types to per-rank shapes, and
converts an operand whose shard does not fit with the collective that fits:

    partial    -> replicated   all_reduce
    partial    -> split d      reduce_scatter
    split d    -> replicated   all_gather
    split d    -> split e      all_to_all
    replicated -> split d      a free local slice (`sim.generic "shard.slice"`)

Every value keeps its one definition: the module stays one rank's program, never
a copy per GPU. Work that stays whole on every rank of the group (a norm on the
replicated hidden state) is summed in `replicated_flops`, which the pass records
on the module (`charon_ir.parallel.accounting`).

A `Shard` names one split dim (with how many ways it is split: the group size, or
less when a kv head is shared by several ranks) and what the dim is (`tag`:
heads, ffn, vocab, seq, experts, capacity), which guides reshapes whose dim
mapping the shapes alone leave open (a view that also transposes): a heads dim
goes to the output dim whose size is a head count. Where nothing fits, the
operands are gathered whole (correct, but it moves data);
CHARON_DEBUG_SHARDING=1 prints those fallbacks and the replicated work per op.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import prod

from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerAttr, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.mesh import GRAD_SYNC, MESH


@dataclass(frozen=True)
class Shard:
    """How one value is laid out over the pass's grid axis."""

    dim: int | None = None
    """The split dim, None when whole on every rank."""
    factor: int = 1
    """Ways the dim is split (the axis size, or fewer for shared kv heads)."""
    partial: bool = False
    """Each rank holds a partial sum; the true value is the sum over the axis."""
    tag: str = ""

    @property
    def replicated(self) -> bool:
        return self.dim is None and not self.partial


REPLICATED = Shard()


def split(dim: int, factor: int, tag: str = "") -> Shard:
    return Shard(dim, factor, False, tag)


def shape(value: SSAValue) -> tuple[int, ...]:
    return sim.shape_of(value)


def with_shape(t: Attribute, new_shape: Sequence[int]) -> TensorType:
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, list(new_shape))


def retype(value: SSAValue, t: Attribute) -> SSAValue:
    """`value` with type `t`: through the rewriter, a new value takes its place
    and its uses (the old one is dropped, so hold on to the one returned); the
    value itself when it has that type already."""
    if value.type == t:
        return value
    return Rewriter.replace_value_with_new_type(value, t)


def reshape_groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """Minimal runs of dims of `a` and `b` with equal products (a reshape's
    structure), or None when the products do not line up."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        gi, gj = [], []
        pa = pb = 1
        if i < len(a):
            gi.append(i)
            pa = a[i]
            i += 1
        if j < len(b):
            gj.append(j)
            pb = b[j]
            j += 1
        while pa != pb:
            if pa < pb and i < len(a):
                gi.append(i)
                pa *= a[i]
                i += 1
            elif pb < pa and j < len(b):
                gj.append(j)
                pb *= b[j]
                j += 1
            else:
                return None
        groups.append((gi, gj))
    return groups


@dataclass
class ShardingState:
    """What one propagation knows: the shard of each value, the conversions already
    made, and the replicated work so far."""

    axis: str
    size: int
    pass_name: str
    hints: dict[str, set[int]] = field(default_factory=dict)
    group_axes: tuple[str, ...] = ()
    """The grid axes whose ranks form the group of `size` (default: `axis` alone;
    shard-expert's experts folded over tensor parallelism: ("ep", "tp"))."""
    """tag -> sizes (unsharded) a dim of that kind can have; guides views."""
    gather_first: frozenset[str] = frozenset({"seq"})
    """In a matmul whose operands are split on incompatible dims, gather the operand
    with one of these tags (Megatron-SP gathers the sequence, never a weight)."""
    carried: Callable[[SSAValue, Shard], Shard] | None = None
    """Shard wanted for a value carried around a `sim.repeat` (default: its init's)."""
    shards: dict[SSAValue, Shard] = field(default_factory=dict)
    converted: dict[tuple[SSAValue, Shard], SSAValue] = field(default_factory=dict)
    done: set[Operation] = field(default_factory=set)
    replicated_flops: float = 0.0
    fallbacks: list[str] = field(default_factory=list)
    flops_before: dict[Operation, float] = field(default_factory=dict)

    # -- shards and types ----------------------------------------------------

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

    def retype(self, value: SSAValue, t: Attribute) -> SSAValue:
        """`value` with type `t` (`retype`), keeping the shard recorded for it."""
        new = retype(value, t)
        if new is not value and value in self.shards:
            self.shards[new] = self.shards.pop(value)
        return new

    def assign(self, value: SSAValue, s: Shard, full: Sequence[int] | None = None) -> SSAValue:
        """Give `value` shard `s` and its per-rank type; `full` is its unsharded
        shape (default: its type now). Returns the retyped value."""
        full = list(full if full is not None else shape(value))
        value = self.retype(value, with_shape(value.type, self.local_shape(full, s, self._describe(value))))
        if s.replicated:
            self.shards.pop(value, None)
        else:
            self.shards[value] = s
        return value

    @staticmethod
    def _describe(value: SSAValue) -> str:
        owner = value.owner
        if isinstance(owner, (sim.ParamOp, sim.InputOp)):
            return f"'{owner.sym_name.data}'"
        if isinstance(owner, Operation):
            return f"the result of {owner.name}"
        return "a block argument"

    # -- conversions ---------------------------------------------------------

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

    def run(self, root: Operation, patterns: Sequence[RewritePattern]) -> None:
        """Propagate over `root` in program order and tally the replicated work:
        the group's FLOPs beyond the unsharded FLOPs, op by op."""
        try:
            PatternRewriteWalker(
                GreedyRewritePatternApplier([*patterns, *default_patterns(self)], dce_enabled=False),
                apply_recursively=False,
            ).rewrite_region(root.regions[0])
        except CharonError as e:
            # the walker attaches the whole module to the error as notes: one line only
            raise CharonError(str(e)) from None
        if os.environ.get("CHARON_DEBUG_SHARDING"):
            for line in self.fallbacks:
                print(f"{self.pass_name}: fallback: {line}", file=sys.stderr)
            for o, mult in walk_with_multiplicity(root):
                if isinstance(o, sim.ComputeOp):
                    extra = (self.size * o.flops() - self.flops_before.get(o, 0.0)) * mult
                    if abs(extra) > 1e-9:
                        print(f"{self.pass_name}: replicated {extra:.0f} in {o.name} {o.op_kind()} {[str(r.type) for r in o.results]}", file=sys.stderr)
        self.replicated_flops += sum(
            (self.size * op.flops() - self.flops_before.get(op, 0.0)) * mult
            for op, mult in walk_with_multiplicity(root)
            if isinstance(op, sim.ComputeOp)
        )

    def snapshot(self, root: Operation) -> None:
        """Remember every op's FLOPs before the pass changes any type."""
        self.flops_before = {
            op: op.flops() for op, _ in walk_with_multiplicity(root) if isinstance(op, sim.ComputeOp)
        }

    # -- reshape mapping -----------------------------------------------------

    def map_dim_through(self, dst: Sequence[int], sources: Sequence[Sequence[int]], s: Shard) -> int | None:
        """The result dim a split moves to through a view that says which input
        dims each result dim is made of (`sim.view` dims, a generic view's
        `view_dims`): the one made of the split dim, the outermost that divides
        (a known unit first: heads of heads x head_dim) when a reshape splits it."""
        assert s.dim is not None
        made_of = [j for j, group in enumerate(sources) if s.dim in group]
        hinted = self.hints.get(s.tag, set())
        for j in made_of:
            if dst[j] in hinted and dst[j] % s.factor == 0:
                return j
        for j in made_of:
            if dst[j] % s.factor == 0 and dst[j] > 1:
                return j
        return None

    def map_dim(self, src_full: Sequence[int], dst_full: Sequence[int], s: Shard) -> int | None:
        """The dim of `dst_full` that carries split dim `s.dim` of `src_full` through
        a view (or a view-like generic), or None."""
        assert s.dim is not None
        f = s.factor
        hinted = self.hints.get(s.tag, set())

        def kept(k: int) -> bool:
            # a leading dim the reshape leaves in place (the batch) is not the image
            # of a later split dim, even when its size is a head count
            return not (k < s.dim and k < len(src_full) and dst_full[k] == src_full[k]
                        and all(dst_full[i] == src_full[i] for i in range(k)))

        groups = reshape_groups(src_full, dst_full) if prod(src_full) == prod(dst_full) else None
        if groups is not None:
            for gi, gj in groups:
                if s.dim not in gi:
                    continue
                if len(gi) == 1 or len(gj) == 1:
                    for j in gj:
                        if dst_full[j] % f == 0 and dst_full[j] > 1:
                            if len(gi) == 1 and len(gj) > 1 and hinted:
                                # a split of the dim: prefer the part that is a
                                # known unit (heads of heads x head_dim)
                                pick = [k for k in gj if dst_full[k] in hinted and dst_full[k] % f == 0]
                                if pick:
                                    return pick[0]
                            return j
                    return None
                pick = [k for k in gj if dst_full[k] in hinted and dst_full[k] % f == 0 and kept(k)]
                if pick:
                    return pick[0]
                same = [k for k in gj if dst_full[k] == src_full[s.dim]]
                if same:
                    return same[0]
                return None
        pick = [k for k, n in enumerate(dst_full) if n in hinted and n % f == 0 and kept(k)]
        if pick:
            return pick[0]
        if s.dim < len(dst_full) and dst_full[s.dim] == src_full[s.dim]:
            return s.dim
        same = [k for k, n in enumerate(dst_full) if n == src_full[s.dim]]
        return same[0] if len(same) == 1 else None



# ---------------------------------------------------------------------------
# Patterns: one per op family. Each handles an op once (`state.done`).
# ---------------------------------------------------------------------------


@dataclass
class ShardPattern(RewritePattern):
    state: ShardingState

    op_types: tuple[type[Operation], ...] = ()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        if op in st.done or not isinstance(op, self.op_types):
            return
        st.done.add(op)
        self.shard_op(op, rewriter)

    def shard_op(self, op, rewriter: PatternRewriter) -> None:  # pragma: no cover
        raise NotImplementedError


def _all_whole(st: ShardingState, op: Operation) -> bool:
    return all(st.shard(v).replicated for v in op.operands if isinstance(v.type, TensorType))


@dataclass
class ShardMatmul(ShardPattern):
    """Column/row parallel matmuls, their backward and weight gradients: from where
    each operand is split (batch, M, N or K), where the result is split or whether
    it is a partial sum."""

    op_types: tuple[type[Operation], ...] = (sim.MatmulOp,)

    @staticmethod
    def roles(op: sim.MatmulOp) -> tuple[list[str], list[str]]:
        ra, rb = len(shape(op.lhs)), len(shape(op.rhs))
        lhs = [f"b{i}" for i in range(ra - 2)] + (["K", "M"] if op.transpose_lhs else ["M", "K"])
        rhs = [f"b{i}" for i in range(rb - 2)] + (["N", "K"] if op.transpose_rhs else ["K", "N"])
        return lhs, rhs

    def shard_op(self, op: sim.MatmulOp, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        for _ in range(3):
            lhs_roles, rhs_roles = self.roles(op)
            sl, sr = st.shard(op.lhs), st.shard(op.rhs)
            rl = lhs_roles[sl.dim] if sl.dim is not None else None
            rr = rhs_roles[sr.dim] if sr.dim is not None else None
            out = self.result(op, sl, sr, rl, rr)
            if out is not None:
                break
            # incompatible splits: gather one side (the sequence first, else the rhs)
            if sl.tag in st.gather_first and sl.dim is not None:
                st.use(op, 0, REPLICATED)
            elif sr.dim is not None:
                st.use(op, 1, REPLICATED)
            else:
                st.use(op, 0, REPLICATED)
        else:  # pragma: no cover
            raise AssertionError("matmul sharding did not settle")
        _, m, n, _ = op.dims()
        res_shape = (*shape(op.lhs)[:-2], m, n)
        st.retype(op.result, with_shape(op.result.type, res_shape))
        if out.replicated:
            st.shards.pop(op.result, None)
        else:
            st.shards[op.result] = out

    def result(self, op: sim.MatmulOp, sl: Shard, sr: Shard, rl: str | None, rr: str | None) -> Shard | None:
        st = self.state
        rank = len(shape(op.result))
        rb = len(shape(op.rhs))
        if rl is None and rr is None:
            return REPLICATED
        if rl == "M" and rr is None:
            return split(rank - 2, sl.factor, sl.tag)
        if rl is None and rr == "N":
            return split(rank - 1, sr.factor, sr.tag)
        if rl == "K" and rr == "K":
            return Shard(partial=True, tag=sl.tag) if sl.factor == sr.factor else None
        if rl == "K" and rr is None:
            st.use(op, 1, split(self.roles(op)[1].index("K"), sl.factor, sl.tag))
            return Shard(partial=True, tag=sl.tag)
        if rl is None and rr == "K":
            st.use(op, 0, split(self.roles(op)[0].index("K"), sr.factor, sr.tag))
            return Shard(partial=True, tag=sr.tag)
        if rl is not None and rl.startswith("b"):
            i = int(rl[1:])
            if rr is None and rb == 2:
                return split(i, sl.factor, sl.tag)
            if rr is None:
                st.use(op, 1, split(i, sl.factor, sl.tag))
                return split(i, sl.factor, sl.tag)
            if rr == rl and sl.factor == sr.factor:
                return split(i, sl.factor, sl.tag)
            return None
        if rr is not None and rr.startswith("b") and rl is None:
            i = int(rr[1:])
            st.use(op, 0, split(i, sr.factor, sr.tag))
            return split(i, sr.factor, sr.tag)
        return None


LINEAR_KINDS = frozenset({"add", "sub"})


@dataclass
class ShardElementwise(ShardPattern):
    """Pointwise ops follow their split operands; whole operands broadcast or are
    sliced locally; partial sums pass through sums of partial sums only."""

    op_types: tuple[type[Operation], ...] = (sim.ElementwiseOp,)

    def shard_op(self, op: sim.ElementwiseOp, rewriter: PatternRewriter) -> None:
        st = self.state
        out_full = list(shape(op.result))
        rank = len(out_full)
        tensors = [i for i, v in enumerate(op.operands) if isinstance(v.type, TensorType)]
        shards = [st.shard(op.operands[i]) for i in tensors]
        if shards and all(s.partial and s.dim is None for s in shards) and (
            op.kind.data in LINEAR_KINDS or len(tensors) == 1 and op.kind.data in ("neg", "copy")
        ):
            st.shards[op.result] = Shard(partial=True, tag=shards[0].tag)
            return
        target: Shard | None = None
        for i in tensors:
            s = st.shard(op.operands[i])
            if s.dim is not None:
                v_rank = len(shape(op.operands[i]))
                rd = s.dim + rank - v_rank
                if 0 <= rd < rank and out_full[rd] > 1:
                    target = split(rd, s.factor, s.tag)
                    break
        if target is None:
            st.resolve_partials(op)
            st.gather_all(op, "split dim broadcast away")
            return
        for i in tensors:
            v = op.operands[i]
            v_rank = len(shape(v))
            od = target.dim - (rank - v_rank)
            s = st.shard(v)
            if od < 0 or st.full_shape(v)[od] == 1:
                # broadcast along the split dim: the operand must be whole there
                if not s.replicated:
                    st.use(op, i, REPLICATED)
                continue
            st.use(op, i, Shard(od, target.factor, False, target.tag))
        st.assign(op.result, target)


@dataclass
class ShardView(ShardPattern):
    """A view carries the split to the dim that holds it after the reshape."""

    op_types: tuple[type[Operation], ...] = (sim.ViewOp,)

    def shard_op(self, op: sim.ViewOp, rewriter: PatternRewriter) -> None:
        st = self.state
        s = st.shard(op.input)
        if s.dim is None:
            if s.partial:
                st.shards[op.result] = s
            return
        src = st.full_shape(op.input)
        dst = list(shape(op.result))
        sources = op.dim_sources()
        d = st.map_dim(src, dst, s) if sources is None else st.map_dim_through(dst, sources, s)
        if d is None:
            st.use(op, 0, Shard(partial=s.partial))
            st.fallbacks.append(f"sim.view {src} -> {dst}: split dim {s.dim} has no image")
            return
        st.assign(op.result, Shard(d, s.factor, s.partial, s.tag))

@dataclass
class ShardNorm(ShardPattern):
    """A norm reduces over the hidden dim: split elsewhere it stays split."""

    op_types: tuple[type[Operation], ...] = (sim.NormOp,)

    def shard_op(self, op: sim.NormOp, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        s = st.shard(op.input)
        if s.dim is not None and s.dim == len(shape(op.input)) - 1:
            st.use(op, 0, REPLICATED)
            s = REPLICATED
        st.use(op, 1, REPLICATED)
        st.retype(op.result, op.input.type)
        if s.dim is not None:
            st.shards[op.result] = s


@dataclass
class ShardReduce(ShardPattern):
    """A reduction over the split dim leaves a partial result."""

    op_types: tuple[type[Operation], ...] = (sim.ReduceOp,)

    def shard_op(self, op: sim.ReduceOp, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        s = st.shard(op.input)
        if s.dim is None:
            return
        dims = [int(d) for d in op.dims.get_values()]
        out_full = list(shape(op.result))
        keeps = len(out_full) == len(shape(op.input))
        if s.dim in dims:
            st.shards[op.result] = Shard(partial=True, tag=s.tag)
            return
        d = s.dim if keeps else s.dim - sum(1 for x in dims if x < s.dim)
        st.assign(op.result, Shard(d, s.factor, False, s.tag))


@dataclass
class ShardSoftmax(ShardPattern):
    """Softmax along a split dim (vocab-parallel): a local softmax plus the max and
    the sum of exponentials all-reduced per row."""

    op_types: tuple[type[Operation], ...] = (sim.SoftmaxOp,)

    def shard_op(self, op: sim.SoftmaxOp, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        s = st.shard(op.input)
        st.retype(op.result, op.input.type)
        if s.dim is None:
            return
        st.shards[op.result] = s
        if s.dim == op.dim.value.data:
            row_stats(st, op, op.input, s.dim, 2)


def row_stats(st: ShardingState, op: Operation, value: SSAValue, dim: int, count: int) -> None:
    """`count` fp32 statistics per row of `value` (max, sum of exponentials, the
    target logit), all-reduced over the group before `op` (vocab-parallel softmax
    and cross-entropy, Megatron's `_VocabParallelCrossEntropy`)."""
    stats_shape = [1 if i == dim else n for i, n in enumerate(shape(value))]
    t = TensorType(Float32Type(), stats_shape)
    for _ in range(count):
        stat = sim.GenericOp("shard.row_stats", [value], [t], 0.0, 0.0)
        red = coll.AllReduceOp(stat.results[0], MESH, [st.axis])
        Rewriter.insert_op([stat, red], InsertPoint.before(op))


@dataclass
class ShardEmbedding(ShardPattern):
    """Vocab-parallel embedding: each rank looks up the rows it owns, zeros
    elsewhere, so the result is a partial sum; split ids split the result."""

    op_types: tuple[type[Operation], ...] = (sim.EmbeddingOp,)

    def shard_op(self, op: sim.EmbeddingOp, rewriter: PatternRewriter) -> None:
        st = self.state
        t, ids = st.shard(op.table), st.shard(op.ids)
        if ids.dim is not None and t.dim is None:
            st.assign(op.result, ids)
        elif t.dim == 0 and ids.dim is None:
            st.shards[op.result] = Shard(partial=True, tag=t.tag)
        elif t.dim == 1 and ids.dim is None:
            st.assign(op.result, split(len(shape(op.result)) - 1, t.factor, t.tag))
        elif not (t.replicated and ids.replicated):
            st.gather_all(op, "embedding split on table and ids")


@dataclass
class ShardAttention(ShardPattern):
    """Attention is independent per head (and per batch row): q, k, v split on the
    heads give outputs split on the heads. A pass may take it over (`handler`):
    context parallelism does."""

    op_types: tuple[type[Operation], ...] = (sim.AttentionOp, sim.AttentionGradOp)
    handler: Callable[[Operation, PatternRewriter], bool] | None = None

    def shard_op(self, op, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        if self.handler is not None and self.handler(op, rewriter):
            return
        qs, ks = st.shard(op.q), st.shard(op.k)
        vs = st.shard(op.v)
        if qs.dim is None and ks.dim is None and vs.dim is None:
            if isinstance(op, sim.AttentionGradOp):
                st.use_value(op, op.out, REPLICATED)
                st.use_value(op, op.grad_out, REPLICATED)
            return
        if qs.dim == 2 and ks.dim == 2 and vs.dim == 2:
            pass
        elif qs.dim == 2 and ks.dim is None and vs.dim is None:
            if shape(op.k)[2] % qs.factor == 0:
                st.use_value(op, op.k, split(2, qs.factor, "heads"))
                st.use_value(op, op.v, split(2, qs.factor, "heads"))
            # else every rank reads the few kv heads whole (MQA)
        elif qs.dim == 0 and ks.dim in (0, None) and vs.dim in (0, None):
            st.use_value(op, op.k, qs)
            st.use_value(op, op.v, qs)
        else:
            st.gather_all(op, "attention operands split on different dims")
            return
        qs = st.shard(op.q)
        if isinstance(op, sim.AttentionOp):
            st.retype(op.result, with_shape(op.result.type, (*shape(op.q)[:3], shape(op.v)[3])))
            st.shards[op.result] = qs
            return
        st.use_value(op, op.out, qs)
        st.use_value(op, op.grad_out, qs)
        st.retype(op.grad_q, op.q.type)
        st.retype(op.grad_k, op.k.type)
        st.retype(op.grad_v, op.v.type)
        st.shards[op.grad_q] = qs
        ks = st.shard(op.k)
        # a kv head shared by several ranks gets a gradient from each of them
        shared = (ks.dim == 2 and ks.factor < qs.factor) or (ks.replicated and qs.dim == 2)
        for g, s in ((op.grad_k, ks), (op.grad_v, st.shard(op.v))):
            st.shards[g] = replace(s, partial=shared) if not s.replicated else s


@dataclass
class ShardGeneric(ShardPattern):
    """Ops without a rule of their own (sim.generic, MoE and KV-cache ops): results
    that keep a split operand's dim (by size, or by a known size along a view-like
    reshape) are split there and their FLOPs and bytes shrink with them;
    cross-entropy's generic ops get their per-row all_reduces; a result that drops
    a split sequence dim is a partial sum (a gradient summed over tokens);
    anything else gathers its operands."""

    op_types: tuple[type[Operation], ...] = (
        sim.GenericOp, sim.TopKOp, sim.KVCacheWriteOp, sim.KVCacheReadOp,
    )
    split_results: dict[str, Callable[[Operation], Shard | None]] = field(default_factory=dict)
    """callee -> shard of the (first) result, for generics a pass knows."""

    SOFTMAX_LIKE = frozenset({"aten._log_softmax", "aten._softmax"})
    LOSS_LIKE = frozenset({"aten.nll_loss_forward", "aten.nll_loss2d_forward"})

    def shard_op(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        callee = op.callee.data if isinstance(op, sim.GenericOp) else op.name
        st.resolve_partials(op)
        split_ops = [(i, v) for i, v in enumerate(op.operands) if isinstance(v.type, TensorType) and st.shard(v).dim is not None]
        known = self.split_results.get(callee)
        if known is not None:
            s = known(op)
            if s is not None:
                self._retype(op, [s] + [REPLICATED] * (len(op.results) - 1))
                return
        if not split_ops or not any(isinstance(r.type, TensorType) for r in op.results):
            return  # nothing split, or nothing to lay out (a KV-cache write of local heads)
        # lead with an operand shaped like the results (the gradient next to ids)
        ranks = {len(shape(r)) for r in op.results if isinstance(r.type, TensorType)}
        i0, v0 = next(((i, v) for i, v in split_ops if len(shape(v)) in ranks), split_ops[0])
        s0 = st.shard(v0)
        src_full = st.full_shape(v0)
        result_shards: list[Shard] = []
        for r in op.results:
            if not isinstance(r.type, TensorType):
                result_shards.append(REPLICATED)
                continue
            dst = list(shape(r))
            d = None
            sources = (
                op.dim_sources()
                if isinstance(op, sim.GenericOp) and len(op.results) == 1 and len(split_ops) == 1
                else None
            )
            if sources is not None:
                d = st.map_dim_through(dst, sources, s0)
            elif len(dst) == len(src_full) and dst[s0.dim] == src_full[s0.dim]:
                d = s0.dim
            elif len(dst) == len(src_full) and dst[s0.dim] % s0.factor == 0 and dst[s0.dim] > 1 and s0.tag != "seq":
                d = s0.dim
            else:
                d = st.map_dim(src_full, dst, s0)
            if d is not None:
                result_shards.append(Shard(d, s0.factor, False, s0.tag))
            elif callee in self.LOSS_LIKE or s0.tag == "seq" or callee == "aten.embedding_dense_backward":
                result_shards.append(Shard(partial=True, tag=s0.tag))
            else:
                result_shards.append(REPLICATED)
        if all(s.replicated for s in result_shards) and callee not in self.LOSS_LIKE:
            st.gather_all(op, f"no image of the split dim in the results of {callee}")
            return
        # operands: the split one as is; the others to the same split when they
        # have the dim at full size, whole otherwise
        for i, v in enumerate(op.operands):
            if i == i0 or not isinstance(v.type, TensorType):
                continue
            s = st.shard(v)
            full = st.full_shape(v)
            if s.dim is not None and s.tag == s0.tag and s.factor == s0.factor:
                continue  # split the same way (token ids next to token activations)
            if len(full) == len(src_full) and full[s0.dim] == src_full[s0.dim] and full[s0.dim] > 1:
                st.use(op, i, Shard(s0.dim, s0.factor, False, s0.tag))
            elif not s.replicated:
                st.use(op, i, REPLICATED)
        if callee in self.SOFTMAX_LIKE and s0.dim == len(src_full) - 1:
            row_stats(st, op, op.operands[i0], s0.dim, 2)
        if callee in self.LOSS_LIKE and s0.dim == len(src_full) - 1 and s0.tag != "seq":
            row_stats(st, op, op.operands[i0], s0.dim, 1)
            result_shards = [REPLICATED] * len(result_shards)
        self._retype(op, result_shards)

    def _retype(self, op: Operation, result_shards: Sequence[Shard]) -> None:
        st = self.state
        old = [sim.tensor_bytes(r) for r in op.results if isinstance(r.type, TensorType)]
        old_n = sum(sim.numel(r) for r in op.results if isinstance(r.type, TensorType))
        for r, s in zip(op.results, result_shards):
            if isinstance(r.type, TensorType):
                if s.dim is not None:
                    st.assign(r, s)
                elif s.partial:
                    st.shards[r] = s
        if isinstance(op, sim.GenericOp) and old_n:
            new_n = sum(sim.numel(r) for r in op.results if isinstance(r.type, TensorType))
            ratio = new_n / old_n
            in_ratio = 1.0
            if sum(old):
                in_ratio = sum(sim.tensor_bytes(r) for r in op.results if isinstance(r.type, TensorType)) / sum(old)
            op.properties["flop_count"] = FloatAttr(op.flop_count.value.data * ratio, 64)
            op.properties["byte_count"] = FloatAttr(op.byte_count.value.data * in_ratio, 64)


@dataclass
class ShardMoe(ShardPattern):
    """Routing on split tokens (context parallelism): each rank dispatches its own
    tokens into smaller per-expert buffers and combines them back. Anything else
    split (experts, hidden) is the business of shard-expert / shard-tensor: the
    operands are gathered."""

    op_types: tuple[type[Operation], ...] = (sim.MoeDispatchOp, sim.MoeCombineOp)

    def shard_op(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        st.resolve_partials(op)
        if isinstance(op, sim.MoeDispatchOp):
            s = st.shard(op.input)
            if s.dim == 0 and s.tag == "seq":
                st.use(op, 1, s)
                st.assign(op.result, Shard(1, s.factor, False, "capacity"))
                return
        else:
            s = st.shard(op.indices)
            if s.dim == 0 and s.tag == "seq" and st.shard(op.input).dim == 1:
                if op.weights is not None:
                    st.use_value(op, op.weights, s)
                st.assign(op.result, s)
                return
        st.gather_all(op, "routing on a split other than the tokens")


@dataclass
class ShardOptimizer(ShardPattern):
    """Each rank updates the shard of each parameter it holds: gradients are laid
    out like their parameters."""

    op_types: tuple[type[Operation], ...] = (sim.OptimizerStepOp,)

    def shard_op(self, op: sim.OptimizerStepOp, rewriter: PatternRewriter) -> None:
        st = self.state
        n = len(op.params)
        for i in range(n):
            st.use(op, n + i, replace(st.shard(op.params[i]), partial=False))


@dataclass
class ShardRepeat(ShardPattern):
    """A repeat's block arguments take the layout of what they receive: carried
    values their init's (or the one the pass asks for), sliced values their
    operand's without the leading layer dim."""

    op_types: tuple[type[Operation], ...] = (sim.RepeatOp,)

    def shard_op(self, op: sim.RepeatOp, rewriter: PatternRewriter) -> None:
        st = self.state
        block = op.body.block
        n_iter = len(op.iter_init)
        for i in range(n_iter):
            s = st.shard(op.iter_init[i])
            if s.partial:
                st.use(op, i, replace(s, partial=False))
                s = st.shard(op.iter_init[i])
            if st.carried is not None:
                want = st.carried(op.iter_init[i], s)
                if want != s:
                    st.use(op, i, want)
                    s = want
            arg = st.retype(block.args[i], op.iter_init[i].type)
            if not s.replicated:
                st.shards[arg] = s
        for j, v in enumerate(op.slices):
            s = st.shard(v)
            if s.partial:
                st.use(op, n_iter + j, replace(s, partial=False))
                v = op.slices[j]
                s = st.shard(v)
            if s.dim == 0:
                st.use(op, n_iter + j, REPLICATED)
                v = op.slices[j]
                s = REPLICATED
            arg = block.args[n_iter + j]
            arg = st.retype(arg, with_shape(arg.type, shape(v)[1:]))
            if s.dim is not None:
                st.shards[arg] = Shard(s.dim - 1, s.factor, False, s.tag)


@dataclass
class ShardYield(ShardPattern):
    """The end of a repeat or phase body: carried values go back in the layout they
    came in, partial sums are summed, and the parent's results take the yielded
    types."""

    op_types: tuple[type[Operation], ...] = (sim.YieldOp,)

    def shard_op(self, op: sim.YieldOp, rewriter: PatternRewriter) -> None:
        st = self.state
        parent = op.parent_op()
        n_iter = len(parent.iter_init) if isinstance(parent, sim.RepeatOp) else 0
        if isinstance(parent, sim.RepeatOp):
            args = parent.body.block.args
            for i in range(n_iter):
                st.use(op, i, st.shard(args[i]))
        backward = _in_backward(op)
        for i in range(n_iter, len(op.values)):
            s = st.shard(op.values[i])
            if s.partial:
                st.use(op, i, replace(s, partial=False))
                reduced = op.values[i].owner
                if backward and isinstance(reduced, coll.AllReduceOp):
                    # a gradient summed over the group: a data-parallel pass may
                    # fold this into its own gradient reduction
                    reduced.attributes[GRAD_SYNC] = UnitAttr()
        if not isinstance(parent, (sim.RepeatOp, sim.PhaseOp)):
            return
        for i, (v, r) in enumerate(zip(op.values, parent.results)):
            s = st.shard(v)
            if isinstance(parent, sim.RepeatOp) and i >= n_iter:
                r = st.retype(r, with_shape(v.type, (parent.trip_count, *shape(v))))
                if s.dim is not None:
                    st.shards[r] = Shard(s.dim + 1, s.factor, False, s.tag)
            else:
                r = st.retype(r, v.type)
                if not s.replicated:
                    st.shards[r] = s


@dataclass
class ShardCollective(ShardPattern):
    """Collectives an earlier pass put on another axis carry the split through."""

    op_types: tuple[type[Operation], ...] = (
        coll.AllReduceOp, coll.BroadcastOp, coll.AllGatherOp, coll.ReduceScatterOp, coll.AllToAllOp,
    )

    def shard_op(self, op: coll.CollectiveOp, rewriter: PatternRewriter) -> None:
        st = self.state
        if st.axis in op.axis_names():
            return
        st.resolve_partials(op)
        s = st.shard(op.input)
        local = list(shape(op.input))
        n = op.group_size()
        # per-rank shapes follow from the local input alone: a gather or an
        # all_to_all along our split dim concatenates (or cuts) local pieces
        if isinstance(op, coll.AllGatherOp):
            local[op.axis.value.data] *= n
        elif isinstance(op, coll.ReduceScatterOp):
            local[op.axis.value.data] //= n
        elif isinstance(op, coll.AllToAllOp):
            local[op.split_axis.value.data] //= n
            local[op.concat_axis.value.data] *= n
        st.retype(op.result, with_shape(op.result.type, local))
        if not s.replicated:
            st.shards[op.result] = s


def _in_backward(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, sim.PhaseOp):
            return parent.kind.data == "backward"
        parent = parent.parent_op()
    return False


def default_patterns(st: ShardingState) -> list[RewritePattern]:
    return [
        ShardMatmul(st), ShardElementwise(st), ShardView(st), ShardNorm(st),
        ShardReduce(st), ShardSoftmax(st), ShardEmbedding(st), ShardOptimizer(st), ShardMoe(st),
        ShardRepeat(st), ShardYield(st), ShardCollective(st),
    ]


def weight_layouts(module: ModuleOp) -> dict[str, bool]:
    """Parameter name -> True when a forward matmul reads it as [out, in]
    (`transpose_rhs`, nn.Linear), False when as [in, out] (Conv1D)."""
    layouts: dict[str, bool] = {}
    for op in module.walk():
        if not isinstance(op, sim.MatmulOp):
            continue
        rhs = op.rhs
        if isinstance(rhs, BlockArgument) and isinstance(rhs.block.parent_op(), sim.RepeatOp):
            rhs = rhs.block.parent_op().operands[rhs.index]  # pyright: ignore[reportOptionalMemberAccess]
        if isinstance(rhs.owner, sim.ParamOp):
            layouts.setdefault(rhs.owner.sym_name.data, op.transpose_rhs is not None)
    return layouts
