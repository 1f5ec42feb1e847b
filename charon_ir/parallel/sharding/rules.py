"""The sharding rules: given the layout of its operands, the layout of an op's
results and the layout its operands must have (`Sharding.assign`,
`Sharding.use`). A rule reads the module as it was (unsharded shapes,
`Sharding.full_shape`, `Sharding.rank_shape`); what it asks for is recorded
(`ShardingAnalysis`).

An op declares its own rule as data beside its FLOPs (`sharding_rule()`, a
`sim.ShardingRule` of factors, as Shardy's `OpShardingRule`): `ShardByRule`
applies it, the default for every op that has one. A family pattern is kept
only where factors do not say what to do (a view's reshape, attention's shared
kv heads, routing, a repeat's block arguments, a yield, the optimizer) and where
an op's choice goes beyond its rule (`ShardEmbedding`, `ShardCollective`). Each
is a `ShardPattern`; a pass puts its own first (shard-context's attention,
shard-expert's dispatch and combine)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.sharding.layout import REPLICATED, Shard, shape, split
from charon_ir.parallel.sharding.state import Sharding


@dataclass
class ShardPattern(RewritePattern):
    """The rule for the ops of `op_types`: applied once per op (`state.done`), when
    the walk reaches it, its operands laid out already."""

    state: Sharding

    op_types: tuple[type[Operation], ...] = ()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        if op in st.done or not isinstance(op, self.op_types):
            return
        st.done.add(op)
        self.shard_op(op, rewriter)

    def shard_op(self, op, rewriter: PatternRewriter) -> None:  # pragma: no cover
        raise NotImplementedError


def position(dims: sim.Factors | None, factor: str) -> int | None:
    """The dim of `dims` that `factor` names, or None."""
    return dims.index(factor) if dims is not None and factor in dims else None


@dataclass
class ShardByRule(ShardPattern):
    """The ops that declare a factor rule (`op.sharding_rule()`, beside
    `flops()`): matmuls, pointwise ops, norms, reductions, softmax, lookups,
    collectives on other axes. One split factor is chosen from the operands'
    layouts; every operand that has it is split on it, the others are whole; the
    results are split where they have it, or partial sums when it is a
    `reduction` factor.

    Where operands are split on different factors, a pointwise rule (every
    factor kept in the results) follows the first split operand and converts the
    others to it; any other rule gathers one operand (one whose kind is in
    `gather_first`, else the last) and chooses again, so a weight stays split."""

    op_types: tuple[type[Operation], ...] = (sim.HasShardingRule,)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        if op in st.done or not isinstance(op, self.op_types) or not isinstance(op, sim.HasShardingRule):
            return  # the subclasses' op_types narrow it (an embedding's, a collective's)
        rule = op.sharding_rule()
        if rule is None:
            return  # a family pattern's op
        if wrong := rule.mismatch(op):
            raise CharonError(f"'{op.name}': its sharding rule does not describe it ({wrong})")
        st.done.add(op)
        self.apply(op, rule)

    def apply(self, op: Operation, rule: sim.ShardingRule) -> None:
        tensors = [
            i for i, v in enumerate(op.operands) if isinstance(v.type, TensorType) and rule.operands[i] is not None
        ]
        i0, factor, s0 = self.follow(op, rule, tensors) if rule.pointwise else self.settle(op, rule, tensors)
        for r, dims in zip(op.results, rule.results):
            if not isinstance(r.type, TensorType):
                continue
            if factor is None:
                s = s0
            elif factor in rule.reduction:
                s = Shard(partial=True, tag=s0.tag)
            else:
                d = position(dims, factor)
                s = split(d, s0.factor, s0.tag) if d is not None else REPLICATED
            self.state.assign(r, s, self.result_shape(op, rule, r, dims))
        stats = dict(rule.row_stats)
        if factor in stats:
            self.state.row_stats(op, i0, position(rule.operands[i0], factor), stats[factor])

    def follow(self, op: Operation, rule: sim.ShardingRule, tensors: list[int]) -> tuple[int, str | None, Shard]:
        """Pointwise: the results take the split of the first operand split on
        a factor the results keep (larger than 1); the others are converted to
        it. Linear ops pass partial sums through. Returns (operand, factor, its
        layout) for the results (factor None: that layout, whole or partial)."""
        st = self.state
        shards = [st.shard(st.operand(op, i)) for i in tensors]
        if rule.linear and shards and all(s.partial and s.dim is None for s in shards):
            return tensors[0], None, Shard(partial=True, tag=shards[0].tag)
        sizes = {f: n for r, dims in zip(op.results, rule.results) for f, n in zip(dims, shape(r))}
        for i in tensors:
            s = st.shard(st.operand(op, i))
            if s.dim is not None and sizes.get(rule.operands[i][s.dim], 0) > 1:
                i0, factor, s0 = i, rule.operands[i][s.dim], s
                break
        else:
            st.resolve_partials(op)
            st.gather_all(op, "split dim broadcast away")
            return tensors[0] if tensors else 0, None, REPLICATED
        for i in tensors:
            d = position(rule.operands[i], factor)
            if d is None:
                if not st.shard(st.operand(op, i)).replicated:
                    st.use(op, i, REPLICATED)
                continue
            st.use(op, i, Shard(d, s0.factor, False, s0.tag))
        return i0, factor, st.shard(st.operand(op, i0))

    def settle(self, op: Operation, rule: sim.ShardingRule, tensors: list[int]) -> tuple[int, str | None, Shard]:
        """Not pointwise: partial sums are summed first and operands split on a
        factor that must stay whole are gathered; operands split on different
        factors are gathered one at a time until they agree; the others that
        have the chosen factor are split on it. Returns as `follow`."""
        st = self.state
        st.resolve_partials(op)
        for i in tensors:
            s = st.shard(st.operand(op, i))
            if s.dim is not None and rule.operands[i][s.dim] in (None, *rule.need_replication):
                st.use(op, i, REPLICATED)
        for _ in range(len(tensors) + 1):
            splits = [(i, st.shard(st.operand(op, i))) for i in tensors]
            splits = [(i, s, rule.operands[i][s.dim]) for i, s in splits if s.dim is not None]
            if not splits:
                return tensors[0] if tensors else 0, None, REPLICATED
            i0, s0, factor = splits[0]
            if all(f == factor and s.factor == s0.factor for _, s, f in splits):
                break
            gather = next((i for i, s, _ in splits if s.tag in st.gather_first), splits[-1][0])
            st.use(op, gather, REPLICATED)
        else:  # pragma: no cover
            raise AssertionError(f"{op.name}: sharding did not settle")
        for i in tensors:
            d = position(rule.operands[i], factor)
            if i != i0 and d is not None:
                st.use(op, i, split(d, s0.factor, s0.tag))
        return i0, factor, s0

    def result_shape(self, op: Operation, rule: sim.ShardingRule, result: SSAValue, dims: sim.Factors) -> list[int]:
        """The per-rank shape of `result`: each dim as the first operand dim of
        its factor is on this rank (whole where no operand has it)."""
        local = list(shape(result))
        for d, factor in enumerate(dims):
            for i, operand_dims in enumerate(rule.operands):
                e = position(operand_dims, factor) if factor is not None else None
                if e is not None:
                    local[d] = self.state.rank_shape(self.state.operand(op, i))[e]
                    break
        return local


@dataclass
class ShardView(ShardPattern):
    """A view carries the split to the dim that holds it after the reshape, by
    size and by the split's kind where a dim is split in parts (heads of heads x
    head_dim), a partial sum with it: more than factors say (`sim.view` declares
    none)."""

    op_types: tuple[type[Operation], ...] = (sim.ViewOp,)

    def shard_op(self, op: sim.ViewOp, rewriter: PatternRewriter) -> None:
        st = self.state
        s = st.shard(st.operand(op, 0))
        if s.dim is None:
            if s.partial:
                st.assign(op.result, s)
            return
        src = st.full_shape(st.operand(op, 0))
        dst = list(shape(op.result))
        sources = op.dim_sources()
        d = st.map_dim(src, dst, s) if sources is None else st.map_dim_through(dst, sources, s)
        if d is None:
            st.use(op, 0, Shard(partial=s.partial))
            st.fallbacks.append(f"sim.view {src} -> {dst}: split dim {s.dim} has no image")
            return
        st.assign(op.result, Shard(d, s.factor, s.partial, s.tag))


@dataclass
class ShardEmbedding(ShardByRule):
    """The embedding's rule (vocab-parallel: a partial sum; split ids split the
    result), but for ids and table both split, which gathers both where the
    rule alone would gather one (the ids of a `gather_first` kind) and keep the
    table split: a choice beyond the factors, kept as the passes make it."""

    op_types: tuple[type[Operation], ...] = (sim.EmbeddingOp,)

    def apply(self, op: Operation, rule: sim.ShardingRule) -> None:
        st = self.state
        assert isinstance(op, sim.EmbeddingOp)
        if st.layout_of(op, op.table).dim is not None and st.layout_of(op, op.ids).dim is not None:
            st.gather_all(op, "embedding split on table and ids")
            return
        super().apply(op, rule)


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
        qs, ks = st.layout_of(op, op.q), st.layout_of(op, op.k)
        vs = st.layout_of(op, op.v)
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
        qs = st.layout_of(op, op.q)
        q, k, v = (st.rank_shape(st.operand_of(op, x)) for x in (op.q, op.k, op.v))
        if isinstance(op, sim.AttentionOp):
            st.assign(op.result, qs, (*q[:3], v[3]))
            return
        st.use_value(op, op.out, qs)
        st.use_value(op, op.grad_out, qs)
        st.assign(op.grad_q, qs, q)
        ks = st.layout_of(op, op.k)
        # a kv head shared by several ranks gets a gradient from each of them
        shared = (ks.dim == 2 and ks.factor < qs.factor) or (ks.replicated and qs.dim == 2)
        for g, s, local in ((op.grad_k, ks, k), (op.grad_v, st.layout_of(op, op.v), v)):
            st.assign(g, replace(s, partial=shared) if not s.replicated else s, local)


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
    TOKEN_LOCAL = frozenset({sim.GenericCallee.MOE_COMBINE_WEIGHT_GRAD.value})
    """Ops that compute each token from its own rows only (the combine's routing-weight
    gradient: a token's expert outputs dotted with its gradient): an operand split
    as many ways as the lead one keeps its split (the expert buffers on their
    capacity, beside the tokens on the sequence), never gathered."""
    TOKEN_SUMS = frozenset({"aten.embedding_dense_backward"})
    """Results summed over the tokens (the embedding table's gradient): split on
    the sequence, a partial sum, whatever dim of the result has the sequence's
    size (a table of hidden 8192 at sequence 8192)."""

    def shard_op(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        callee = op.callee.data if isinstance(op, sim.GenericOp) else op.name
        st.resolve_partials(op)
        split_ops = [
            (i, st.operand(op, i)) for i, v in enumerate(op.operands)
            if isinstance(v.type, TensorType) and st.shard(st.operand(op, i)).dim is not None
        ]
        known = self.split_results.get(callee)
        if known is not None:
            s = known(op)
            if s is not None:
                st.assign_results(op, [s] + [REPLICATED] * (len(op.results) - 1), scale_cost=True)
                return
        if not split_ops or not any(isinstance(r.type, TensorType) for r in op.results):
            return  # nothing split, or nothing to lay out (a KV-cache write of local heads)
        # lead with an operand shaped like the results (the gradient next to ids)
        ranks = {len(shape(r)) for r in op.results if isinstance(r.type, TensorType)}
        i0, v0 = next(((i, v) for i, v in split_ops if len(shape(op.operands[i])) in ranks), split_ops[0])
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
            if callee in self.TOKEN_SUMS and s0.tag == "seq":
                d = None
            elif sources is not None:
                d = st.map_dim_through(dst, sources, s0)
            elif len(dst) == len(src_full) and dst[s0.dim] == src_full[s0.dim]:
                d = s0.dim
            elif len(dst) == len(src_full) and dst[s0.dim] % s0.factor == 0 and dst[s0.dim] > 1 and s0.tag != "seq":
                d = s0.dim
            else:
                d = st.map_dim(src_full, dst, s0)
            if d is not None:
                result_shards.append(Shard(d, s0.factor, False, s0.tag))
            elif callee in self.LOSS_LIKE or s0.tag == "seq" or callee in self.TOKEN_SUMS:
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
            s = st.shard(st.operand(op, i))
            full = st.full_shape(st.operand(op, i))
            if s.dim is not None and s.tag == s0.tag and s.factor == s0.factor:
                continue  # split the same way (token ids next to token activations)
            if callee in self.TOKEN_LOCAL and s.dim == 1 and len(full) == 3 and s.factor == s0.factor:
                continue  # [experts, capacity, h] split on its capacity: each token's own rows
            if len(full) == len(src_full) and full[s0.dim] == src_full[s0.dim] and full[s0.dim] > 1:
                st.use(op, i, Shard(s0.dim, s0.factor, False, s0.tag))
            elif not s.replicated:
                st.use(op, i, REPLICATED)
        if callee in self.SOFTMAX_LIKE and s0.dim == len(src_full) - 1:
            st.row_stats(op, i0, s0.dim, 2)
        if callee in self.LOSS_LIKE and s0.dim == len(src_full) - 1 and s0.tag != "seq":
            st.row_stats(op, i0, s0.dim, 1)
            result_shards = [REPLICATED] * len(result_shards)
        st.assign_results(op, result_shards, scale_cost=True)


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
            s = st.layout_of(op, op.input)
            if s.dim == 0 and s.tag == "seq":
                st.use(op, 1, s)
                st.assign(op.result, Shard(1, s.factor, False, "capacity"))
                return
        else:
            s = st.layout_of(op, op.indices)
            if s.dim == 0 and s.tag == "seq" and st.layout_of(op, op.input).dim == 1:
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
            st.use(op, n + i, replace(st.shard(st.operand(op, i)), partial=False))


@dataclass
class ShardRepeat(ShardPattern):
    """A repeat's block arguments take the layout of what they receive: carried
    values their init's, sliced values their operand's without the leading layer
    dim."""

    op_types: tuple[type[Operation], ...] = (sim.RepeatOp,)

    def shard_op(self, op: sim.RepeatOp, rewriter: PatternRewriter) -> None:
        st = self.state
        block = op.body.block
        n_iter = len(op.iter_init)
        for i in range(n_iter):
            s = st.shard(st.operand(op, i))
            if s.partial:
                st.use(op, i, replace(s, partial=False))
                s = st.shard(st.operand(op, i))
            st.assign(block.args[i], s, st.rank_shape(st.operand(op, i)))
        for j in range(len(op.slices)):
            k = n_iter + j
            s = st.shard(st.operand(op, k))
            if s.partial:
                st.use(op, k, replace(s, partial=False))
                s = st.shard(st.operand(op, k))
            if s.dim == 0:
                st.use(op, k, REPLICATED)
                s = REPLICATED
            st.assign(
                block.args[k], Shard(s.dim - 1, s.factor, False, s.tag) if s.dim is not None else REPLICATED,
                st.rank_shape(st.operand(op, k))[1:],
            )


@dataclass
class ShardYield(ShardPattern):
    """The end of a repeat or phase body: carried values go back in the layout they
    came in, partial sums are summed, and the parent's results take the yielded
    layouts."""

    op_types: tuple[type[Operation], ...] = (sim.YieldOp,)

    def shard_op(self, op: sim.YieldOp, rewriter: PatternRewriter) -> None:
        st = self.state
        parent = op.parent_op()
        n_iter = len(parent.iter_init) if isinstance(parent, sim.RepeatOp) else 0
        if isinstance(parent, sim.RepeatOp):
            args = parent.body.block.args
            for i in range(n_iter):
                st.use(op, i, st.shard(args[i]))
        backward = sim.phase_kind(op) == sim.PhaseKind.BACKWARD
        for i in range(n_iter, len(op.values)):
            s = st.shard(st.operand(op, i))
            if s.partial:
                st.use(op, i, replace(s, partial=False))
                if backward:
                    # a gradient summed over the group: a data-parallel pass may
                    # fold this into its own gradient reduction
                    st.mark_grad_sync(st.operand(op, i))
        if not isinstance(parent, (sim.RepeatOp, sim.PhaseOp)):
            return
        for i in range(min(len(op.values), len(parent.results))):
            s = st.shard(st.operand(op, i))
            local = st.rank_shape(st.operand(op, i))
            if isinstance(parent, sim.RepeatOp) and i >= n_iter:
                # stacked over the layers: one dim further
                s = Shard(s.dim + 1, s.factor, False, s.tag) if s.dim is not None else REPLICATED
                local = [parent.trip_count, *local]
            st.assign(parent.results[i], s, local)


@dataclass
class ShardCollective(ShardByRule):
    """Collectives an earlier pass put on another axis carry the split through
    (their rule); one on this pass's own axis is the pass's own doing, left as
    it is. Beyond the rule: the per-rank result follows from the local input
    and the op's own resizing (a gather along our split dim concatenates local
    pieces)."""

    op_types: tuple[type[Operation], ...] = (
        coll.AllReduceOp, coll.BroadcastOp, coll.AllGatherOp, coll.ReduceScatterOp, coll.AllToAllOp,
    )

    def apply(self, op: Operation, rule: sim.ShardingRule) -> None:
        assert isinstance(op, coll.CollectiveOp)
        if self.state.axis not in op.axis_names():
            super().apply(op, rule)

    def result_shape(self, op: Operation, rule: sim.ShardingRule, result: SSAValue, dims: sim.Factors) -> list[int]:
        assert isinstance(op, coll.CollectiveOp)
        local = super().result_shape(op, rule, result, dims)
        return list(op.result_shape_for(local, op.group_size()))


def default_rules(st: Sharding) -> list[ShardPattern]:
    """The rules every propagation has, after the pass's own."""
    return [
        ShardView(st), ShardEmbedding(st), ShardOptimizer(st), ShardMoe(st),
        ShardRepeat(st), ShardYield(st), ShardCollective(st), ShardByRule(st),
    ]
