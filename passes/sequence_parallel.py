"""
Megatron sequence parallelism on top of tensor parallelism (run after shard-tensor).

Options: tp-comm-overlap (default false): mark the module so that the tp
all_gathers / reduce_scatters are priced pipelined with their GEMMs (Megatron-Core
`--tp-comm-overlap`).

Every `coll.all_reduce` over `tp` of an activation with a token dim (the partial
sums of the row-parallel matmuls, the vocab-parallel embedding, and their
backward counterparts) becomes a `reduce_scatter` on the token dim followed by an
`all_gather`: the same bytes in total (each moves (tp-1)/tp of the buffer, the
all_reduce twice that). The all_gather then sinks below every op that is local
to a token (elementwise ops, dropout, norms, reductions over other dims, views,
and the frontend's LayerNorm generics: `layer_norm_stats` and
`aten.native_layer_norm_backward`) until something needs the whole sequence (a
column-parallel matmul, a weight gradient, attention, the loss): between the two,
the residual stream, the norms, their backward and dropout run on 1/tp of the
tokens. The hidden state carried from layer to layer, and the activations a layer
saves for its backward, are kept split (the backward gathers what it needs again,
as Megatron does). Sums over tokens of a split tensor (a norm's weight and bias
gradients) are all-reduced over `tp`.

Per layer this leaves Megatron's collectives (Korthikanti et al. 2022): forward,
2 all_gathers + 2 reduce_scatters; backward, 2 all_gathers of the incoming
gradients, 2 re-gathers of the saved norm outputs for the weight gradients and 2
reduce_scatters, plus the small all_reduces of the norm weights' gradients. In a
layer's body the gather of the carried value (what its first GEMM waits for) is
issued first on the tp stream, before those re-gathers.

The work that shard-tensor left replicated and that is now split is reported
(negative) as replicated work of this pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from charon_ir.dialects import coll, sim
from charon_ir.dialects.coll import GRAD_SYNC
from charon_ir.dialects.sim import SEQUENCE_PARALLEL_ATTR, TP_COMM_OVERLAP_ATTR
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import record_replicated_flops, step_tokens, total_flops
from charon_ir.parallel.mesh import MESH, grid_axes
from charon_ir.parallel.sharding.layout import reshape_groups, shape, with_shape


@dataclass(frozen=True)
class Tokens:
    """Token counts of the step: a token dim has `seq` or `batch * seq` entries."""

    seq: int
    batch: int
    tp: int

    def dim(self, value: SSAValue) -> int | None:
        if not isinstance(value.type, TensorType):
            return None
        dims = shape(value)
        for d, n in enumerate(dims):
            if n in (self.seq, self.seq * self.batch) and n % self.tp == 0:
                return d
        return None


def _gathered(value: SSAValue) -> coll.AllGatherOp | None:
    """The SP all_gather `value` comes from, if any."""
    owner = value.owner
    if isinstance(owner, coll.AllGatherOp) and SEQUENCE_PARALLEL_ATTR in owner.attributes:
        return owner
    return None


def _first_gathered(op: Operation) -> tuple[int, int, tuple[int, ...]] | None:
    """The first operand of `op` an SP all_gather produces: (its index, the dim
    the gather joins, its whole shape)."""
    for i, v in enumerate(op.operands):
        if (g := _gathered(v)) is not None:
            return i, g.axis.value.data, shape(v)
    return None


def _clone_on(op: Operation, operands: list[SSAValue], result_types: dict[int, TensorType] | None = None) -> Operation:
    """A copy of `op` reading `operands` (the rank's shares) instead of its own,
    its results `result_types` (index -> type) retyped."""
    local = op.clone()
    for k, v in enumerate(operands):
        local.operands[k] = v
    for k, t in (result_types or {}).items():
        # the copy is not in the IR yet: nothing to notify
        Rewriter.replace_value_with_new_type(local.results[k], t)
    return local


def _gather(value: SSAValue, dim: int, tp: int) -> coll.AllGatherOp:
    full = list(shape(value))
    full[dim] *= tp
    op = coll.AllGatherOp(value, MESH, ["tp"], with_shape(value.type, full), axis=IntegerAttr(dim, 64))
    op.attributes[SEQUENCE_PARALLEL_ATTR] = UnitAttr()
    return op


def _sum_over_tokens(value: SSAValue) -> coll.AllReduceOp:
    reduce = coll.AllReduceOp(value, MESH, ["tp"])
    reduce.attributes[SEQUENCE_PARALLEL_ATTR] = UnitAttr()  # a sum over tokens: stays whole
    return reduce


def _gather_for_readers(rewriter: PatternRewriter, value: SSAValue, share: TensorType, dim: int, tp: int,
                        at: InsertPoint) -> SSAValue:
    """`value` becomes its rank's `share`, and an all_gather of it on `dim`,
    inserted `at`, feeds what read the whole value. Returns the retyped value."""
    users = list(value.uses)
    value = rewriter.replace_value_with_new_type(value, share)
    ag = _gather(value, dim, tp)
    rewriter.insert(ag, at)
    for u in users:
        u.operation.operands[u.index] = ag.result
        rewriter.handle_operation_modification(u.operation)
    return value


def _split_type(value: SSAValue, dim: int, tp: int) -> TensorType:
    local = list(shape(value))
    local[dim] //= tp
    return with_shape(value.type, local)


def _local_slice(value: SSAValue, dim: int, tp: int) -> sim.GenericOp:
    return sim.GenericOp(sim.GenericCallee.SHARD_SLICE, [value], [_split_type(value, dim, tp)], 0.0, 0.0)


def _share(value: SSAValue, dim: int, tp: int) -> tuple[SSAValue, Operation | None]:
    """The rank's share of `value` split on `dim`: what the SP all_gather on
    `dim` that made it gathered, else a local slice of it (returned too, for the
    caller to insert before the reader)."""
    g = _gathered(value)
    if g is not None and g.axis.value.data == dim:
        return g.input, None
    sl = _local_slice(value, dim, tp)
    return sl.results[0], sl


@dataclass
class SplitAllReduce(RewritePattern):
    """all_reduce(x) -> all_gather(reduce_scatter(x)) on the token dim."""

    tokens: Tokens

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coll.AllReduceOp, rewriter: PatternRewriter) -> None:
        if op.axis_names() != ["tp"] or GRAD_SYNC in op.attributes or SEQUENCE_PARALLEL_ATTR in op.attributes:
            return
        src = op.input.owner
        while isinstance(src, sim.ViewOp):
            src = src.input.owner
        if sim.is_generic(src, sim.GenericCallee.SHARD_ROW_STATS):
            return
        if isinstance(src, sim.AttentionGradOp):
            return  # the gradient of a kv head shared by several ranks
        d = self.tokens.dim(op.input)
        if d is None:
            return
        tp = self.tokens.tp
        rs = coll.ReduceScatterOp(op.input, MESH, ["tp"], _split_type(op.input, d, tp), axis=IntegerAttr(d, 64))
        ag = _gather(rs.result, d, tp)
        rewriter.replace(op, [rs, ag], [ag.result])


TOKEN_LOCAL = (sim.ElementwiseOp, sim.NormOp, sim.ReduceOp, sim.ViewOp, sim.SoftmaxOp)

TOKEN_LOCAL_GENERICS: dict[str, frozenset[int]] = {
    # LayerNorm as the frontend emits it: the norm's statistics (mean, 1/std per
    # token), aten's own kernel when it has no sim.norm form, and its backward
    # (dx per token; the weight and bias gradients, results 1 and 2, are sums over
    # the tokens). Megatron-SP runs all of them on the rank's own tokens.
    sim.GenericCallee.LAYER_NORM_STATS: frozenset(),
    "aten.native_layer_norm": frozenset(),
    "aten.native_layer_norm_backward": frozenset({1, 2}),
}
"""sim.generic callees local to each token -> the results that are sums over the
tokens (all-reduced over `tp` when the op runs split)."""


def _is_token_local(op: Operation) -> bool:
    return isinstance(op, TOKEN_LOCAL) or (
        isinstance(op, sim.GenericOp) and op.callee.data in TOKEN_LOCAL_GENERICS
    )


def _token_local_result_dim(op: Operation, operand: SSAValue, dim: int) -> int | None:
    """Where dim `dim` of `operand` lands in the result of token-local op `op`
    (None: the op is not token-local in that dim)."""
    res = op.results[0]
    if isinstance(op, (sim.ElementwiseOp, sim.NormOp)):
        rd = dim + len(shape(res)) - len(shape(operand))
        return rd if shape(res)[rd] == shape(operand)[dim] else None
    if isinstance(op, sim.SoftmaxOp):
        return dim if op.dim.value.data != dim else None
    if isinstance(op, sim.ReduceOp):
        dims = [int(x) for x in op.dims.get_values()]
        if dim in dims:
            return -1  # a sum over tokens
        if len(shape(res)) == len(shape(operand)):
            return dim
        return dim - sum(1 for x in dims if x < dim)
    if isinstance(op, sim.ViewOp):
        src, dst = shape(operand), shape(res)
        groups = reshape_groups(src, dst)
        n = src[dim]
        if groups is not None:
            for gi, gj in groups:
                if dim in gi:
                    if len(gi) == 1 and gj and dst[gj[0]] % n == 0 or len(gj) == 1:
                        return gj[0]
                    same = [j for j in gj if dst[j] == n]
                    return same[0] if same else None
        same = [j for j, m in enumerate(dst) if m == n]
        return same[0] if len(same) == 1 else None
    return None


@dataclass
class SinkGather(RewritePattern):
    """op(all_gather(x), y, ...) -> all_gather(op(x, slice(y), ...)) for an op that
    is local to each token."""

    tokens: Tokens

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, sim.GenericOp):
            if op.callee.data in TOKEN_LOCAL_GENERICS:
                self.sink_generic(op, rewriter)
            return
        if not isinstance(op, TOKEN_LOCAL):
            return
        tp = self.tokens.tp
        if isinstance(op, sim.ViewOp) and not all(
            _is_token_local(u.operation) or isinstance(u.operation, sim.YieldOp) for u in op.result.uses
        ):
            # a view moves nothing: gathering after it only pays when what reads
            # it runs split too (else a second gather of the same data)
            return
        lead = _first_gathered(op)
        if lead is None:
            return
        i0, gdim, full0 = lead
        rd = _token_local_result_dim(op, op.operands[i0], gdim)
        if rd is None:
            return
        res = op.results[0]
        res_rank = len(shape(res))
        new_operands: list[SSAValue] = []
        pre: list[Operation] = []
        for v in op.operands:
            g = _gathered(v)
            v_shape = shape(v)
            # the operand's dim aligned with the token dim (numpy broadcasting)
            od = gdim + len(v_shape) - len(full0) if isinstance(op, sim.ElementwiseOp) else (gdim if v is op.operands[i0] or len(v_shape) == len(full0) else -1)
            if g is not None and g.axis.value.data == od:
                new_operands.append(g.input)
            elif od < 0 or od >= len(v_shape) or v_shape[od] == 1:
                new_operands.append(v)  # broadcast along the tokens: no split
            elif v_shape[od] == full0[gdim]:
                sl = _local_slice(v, od, tp)
                pre.append(sl)
                new_operands.append(sl.results[0])
            else:
                return
        if rd == -1:
            local = _clone_on(op, new_operands)
            reduce = _sum_over_tokens(local.results[0])
            rewriter.insert([*pre, local, reduce], InsertPoint.before(op))
            rewriter.replace(op, [], [reduce.result])
            return
        if rd >= res_rank or shape(res)[rd] % tp:
            return
        local = _clone_on(op, new_operands, {0: _split_type(res, rd, tp)})
        ag = _gather(local.results[0], rd, tp)
        rewriter.insert([*pre, local], InsertPoint.before(op))
        rewriter.replace(op, [ag], [ag.result])

    def sink_generic(self, op: sim.GenericOp, rewriter: PatternRewriter) -> None:
        """A token-local sim.generic (a LayerNorm kernel, its statistics, its
        backward) on gathered operands runs on the rank's tokens: its token-shaped
        results are gathered after it, its sums over tokens all-reduced, and its
        FLOPs and the bytes of its token-shaped tensors divided by tp."""
        tp = self.tokens.tp
        lead = _first_gathered(op)
        if lead is None:
            return
        _, gdim, full0 = lead
        n = full0[gdim]

        def token_shaped(v: SSAValue) -> bool:
            s_ = shape(v)
            return len(s_) == len(full0) and s_[gdim] == n

        summed = TOKEN_LOCAL_GENERICS[op.callee.data]
        for k, r in enumerate(op.results):
            if not isinstance(r.type, TensorType) or not (token_shaped(r) or k in summed):
                return
        new_operands: list[SSAValue] = []
        pre: list[Operation] = []
        fixed = 0  # bytes of the tensors the split leaves whole (weights, their gradients)
        for v in op.operands:
            if not isinstance(v.type, TensorType) or not token_shaped(v):
                new_operands.append(v)  # a weight, a bias: read whole by every rank
                fixed += sim.tensor_bytes(v.type) if isinstance(v.type, TensorType) else 0
                continue
            share, sl = _share(v, gdim, tp)
            if sl is not None:
                pre.append(sl)
            new_operands.append(share)
        fixed += sum(sim.tensor_bytes(r.type) for r in op.results if not token_shaped(r))
        local = _clone_on(op, new_operands, {
            k: _split_type(r, gdim, tp) for k, r in enumerate(op.results) if token_shaped(r)
        })
        local.properties["flop_count"] = FloatAttr(op.flop_count.value.data / tp, 64)
        moved = op.byte_count.value.data
        kept = min(float(fixed), moved)
        local.properties["byte_count"] = FloatAttr(kept + (moved - kept) / tp, 64)
        post: list[Operation] = []
        new_results: list[SSAValue] = []
        for r, lr in zip(op.results, local.results):
            if token_shaped(r):
                ag = _gather(lr, gdim, tp)
                post.append(ag)
                new_results.append(ag.result)
            else:
                reduce = _sum_over_tokens(lr)
                post.append(reduce)
                new_results.append(reduce.result)
        rewriter.insert([*pre, local], InsertPoint.before(op))
        rewriter.replace(op, post, new_results)


@dataclass
class KeepYieldedSplit(RewritePattern):
    """A phase or repeat yields all_gather(x) as a saved activation: yield x (split)
    and gather after the parent, for whoever reads it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.YieldOp, rewriter: PatternRewriter) -> None:
        parent = op.parent_op()
        n_iter = len(parent.iter_init) if isinstance(parent, sim.RepeatOp) else 0
        if not isinstance(parent, (sim.PhaseOp, sim.RepeatOp)):
            return
        for i in range(n_iter, len(op.values)):
            g = _gathered(op.values[i])
            if g is None:
                continue
            d = g.axis.value.data
            result = parent.results[i]
            shift = 1 if isinstance(parent, sim.RepeatOp) else 0
            tp = g.group_size()
            op.operands[i] = g.input
            _gather_for_readers(rewriter, result, with_shape(result.type, (*shape(result)[:shift], *shape(g.input))),
                                d + shift, tp, InsertPoint.after(parent))
            rewriter.handle_operation_modification(op)


@dataclass
class SplitCarried(RewritePattern):
    """A repeat whose carried value comes in or goes out gathered carries it split:
    the layers pass the hidden state (and its gradient) split on the tokens."""

    tokens: Tokens

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.RepeatOp, rewriter: PatternRewriter) -> None:
        tp = self.tokens.tp
        block = op.body.block
        term = block.last_op
        assert isinstance(term, sim.YieldOp)
        for i, init in enumerate(op.iter_init):
            arg = block.args[i]
            g_in, g_out = _gathered(init), _gathered(term.values[i])
            if g_in is None and g_out is None:
                continue
            d = (g_in or g_out).axis.value.data  # pyright: ignore[reportOptionalMemberAccess]
            if shape(arg)[d] % tp:
                continue
            # init: the split value itself, or a local slice of the whole one
            share, sl = _share(init, d, tp)
            if sl is not None:
                rewriter.insert(sl, InsertPoint.before(op))
            op.operands[i] = share
            # body: the argument arrives split; gather it for the ops that read it
            arg = _gather_for_readers(rewriter, arg, _split_type(arg, d, tp), d, tp, InsertPoint.at_start(block))
            share, sl = _share(term.values[i], d, tp)
            if sl is not None:
                rewriter.insert(sl, InsertPoint.before(term))
            term.operands[i] = share
            rewriter.handle_operation_modification(term)
            _gather_for_readers(rewriter, op.results[i], arg.type, d, tp, InsertPoint.after(op))
            rewriter.handle_operation_modification(op)
            return


@dataclass
class SplitSlices(RewritePattern):
    """A repeat slicing a gathered stack slices the split stack and gathers inside."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.RepeatOp, rewriter: PatternRewriter) -> None:
        n_iter = len(op.iter_init)
        block = op.body.block
        for j, stacked in enumerate(op.slices):
            g = _gathered(stacked)
            if g is None or g.axis.value.data == 0:
                continue
            arg = block.args[n_iter + j]
            op.operands[n_iter + j] = g.input
            _gather_for_readers(rewriter, arg, with_shape(arg.type, shape(g.input)[1:]), g.axis.value.data - 1,
                                g.group_size(), InsertPoint.at_start(block))
            rewriter.handle_operation_modification(op)
            return


class FoldSliceOfGather(RewritePattern):
    """slice(all_gather(x)) is x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.GenericOp, rewriter: PatternRewriter) -> None:
        if not op.calls(sim.GenericCallee.SHARD_SLICE) or len(op.operands) != 1:
            return
        g = _gathered(op.operands[0])
        if g is not None and g.input.type == op.results[0].type:
            rewriter.replace(op, [], [g.input])


class EraseUnusedGather(RewritePattern):
    """A gather nothing reads moves nothing (only this pass's own gathers)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coll.AllGatherOp, rewriter: PatternRewriter) -> None:
        if SEQUENCE_PARALLEL_ATTR in op.attributes and not op.result.uses:
            rewriter.erase(op)


def carried_gathers_first(module: ModuleOp) -> None:
    """In each repeat body, the gathers of the carried value (the hidden state, or
    its gradient: what the first GEMM of the layer waits for) go first on the tp
    stream, ahead of the re-gathers of saved activations for the weight gradients
    (the tp stream runs its collectives in program order)."""
    for rep in module.walk():
        if not isinstance(rep, sim.RepeatOp):
            continue
        block = rep.body.block
        carried = set(block.args[: len(rep.iter_init)])
        first = [
            op for op in block.ops
            if isinstance(op, coll.AllGatherOp) and SEQUENCE_PARALLEL_ATTR in op.attributes and op.input in carried
        ]
        for op in reversed(first):
            op.detach()
            block.insert_op_before(op, block.first_op) if block.first_op else block.add_op(op)


@dataclass(frozen=True)
class SequenceParallelPass(ModulePass):
    name = "sequence-parallel"

    tp_comm_overlap: bool = False
    """Megatron-Core `--tp-comm-overlap` (Transformer Engine userbuffers): each
    tp all_gather / reduce_scatter is split into chunks pipelined with the GEMM
    that consumes / produces it; marks the module, cost-annotate prices it."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tp = grid_axes(op).get("tp", 1)
        if tp == 1:
            raise CharonError("sequence-parallel: needs tensor parallelism (run shard-tensor{tp=N} first)")
        if SEQUENCE_PARALLEL_ATTR in op.attributes:
            # imported sequence-parallel (Megatron-Core's model code at its tp):
            # its all-gathers and reduce-scatters are the model's own
            if self.tp_comm_overlap:
                op.attributes[TP_COMM_OVERLAP_ATTR] = UnitAttr()
            return
        seq, batch = step_tokens(op)
        if not seq:
            raise CharonError("sequence-parallel: the module has no attention op to take the sequence length from")
        if seq % tp:
            raise CharonError(
                f"sequence-parallel: the tp axis ({tp}) does not divide the sequence length ({seq})"
            )
        before = total_flops(op)
        tokens = Tokens(seq, batch, tp)
        for inp in list(op.body.block.ops):
            # a hidden state entering the step (a hand-written layer's input) is the
            # previous layer's output: split like the residual stream
            d = tokens.dim(inp.results[0]) if isinstance(inp, sim.InputOp) else None
            if d is None or not isinstance(inp.results[0].type.element_type, AnyFloat):  # pyright: ignore
                continue
            users = list(inp.results[0].uses)
            local = _local_slice(inp.results[0], d, tp)
            ag = _gather(local.results[0], d, tp)
            Rewriter.insert_op([local, ag], InsertPoint.after(inp))
            for u in users:
                u.operation.operands[u.index] = ag.result
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    SplitAllReduce(tokens), SinkGather(tokens), KeepYieldedSplit(),
                    SplitCarried(tokens), SplitSlices(), FoldSliceOfGather(), EraseUnusedGather(),
                ],
                dce_enabled=False,
            ),
        ).rewrite_module(op)
        carried_gathers_first(op)
        record_replicated_flops(op, self.name, tp * (total_flops(op) - before))
        if self.tp_comm_overlap:
            op.attributes[TP_COMM_OVERLAP_ATTR] = UnitAttr()
