"""
Context parallelism on the `cp` axis of `coll.grid @mesh`: every rank holds 1/cp of
the sequence of every activation.

Options:
- cp: ranks in a context-parallel group (default 1: nothing to do).
- mode: how attention sees the whole sequence:
  - `ring` (default): ring attention. Keys and values travel around the ring by
    send/recv, one block per step, while each rank attends its queries to the block
    it holds. Causal load balancing: the sequence is cut into 2*cp chunks and rank r
    keeps chunks r and 2*cp-1-r, so the first step is a causal block and every later
    step is exactly half a block's work (half the queries against the whole kv
    block): each rank does 1/cp of the causal work. The backward sends the kv
    blocks again and their gradients back to their owners. The steps' partial
    results are joined by `sim.generic "ring_attention.merge*"`, memory-bound
    kernels outside the attention kernels as Transformer Engine's `AttnFuncWithCP`
    runs them (`merge_bytes`): the forward rescales each step's output by its
    softmax statistics and adds it into the output (`flash_attn_fwd_out_correction`:
    `out.add_(out_per_step * exp(lse_per_step - lse))`), the backward adds each
    step's dq and dk/dv into their accumulators (`dq.add_(dq_)`, `dkv.add_(dkv_)`),
    the first step's copied in (`copy_`). Their FLOPs (an exp and a multiply an
    element) are not counted.
  - `ulysses`: DeepSpeed-Ulysses. all_to_all turns q, k, v from split on the
    sequence into split on the heads, attention runs on the whole sequence for
    1/cp of the heads, and an all_to_all turns the output back (the backward does
    the same for the gradients). kv heads fewer than cp are gathered whole.
  - `a2a+p2p`: hierarchical, Transformer Engine's `cp_comm_type="a2a+p2p"`
    (Megatron-Core's `--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes
    a2a cp/a2a`): the cp ranks form groups of `a2a` consecutive ranks (grid axis
    `cpa`, inside `cp`, which then counts the cp/a2a groups). Around attention,
    Ulysses' all_to_alls over `cpa` turn [s/cp tokens, all heads] into
    [s/(cp/a2a) tokens, heads/a2a]; the ring (with its load-balanced causal
    chunks, 2*cp/a2a of them) runs over `cp` on those, its kv blocks of heads/a2a;
    the all_to_alls turn the output (and, in the backward, dq, dk, dv) back. q
    and kv heads must be multiples of `a2a` (TE asserts it). Weight gradients are
    one all_reduce over cp x cpa.
- a2a: with mode=a2a+p2p, ranks of the inner all-to-all group; it divides cp and
  lies strictly between 1 (mode=ring) and cp (mode=ulysses) (default 1).
- gather-kv: with mode=ulysses, kv heads fewer than cp are gathered whole, each
  rank keeping the kv head its queries use (default true, DeepSpeed-Ulysses' way
  with grouped-query attention); false refuses them, as Transformer Engine's a2a
  (`AttnFuncWithCPAndQKVOA2A` asserts cp divides the q and kv heads) and so
  Megatron-Core's `--cp-comm-type a2a` do.

Run it after shard-tensor and sequence-parallel: the kv blocks a ring step
receives (coll.recv) take their types from the module as it is then, and a later
pass that splits k and v again cannot retype them.

The sequence split starts at the step inputs (token ids, positions, labels, and
any other input with a sequence dim) and propagates; each op is token-local except
attention and the sums over tokens, which leave partial sums: weight gradients are
all-reduced over `cp` (over cp x cpa with a2a+p2p; marked `coll.grad_sync`:
data-parallel folds them into its one reduction over dp x cp per step) and so is
the loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import record_replicated_flops
from charon_ir.parallel.mesh import MESH, ensure_axis, refuse_after_data_parallel, refuse_axis_twice
from charon_ir.parallel.sharding.analysis import ShardingAnalysis
from charon_ir.parallel.sharding.layout import REPLICATED, Shard, shape, split, with_shape
from charon_ir.parallel.sharding.materialise import materialise
from charon_ir.parallel.sharding.propagation import analyse, tally_replicated
from charon_ir.parallel.sharding.rules import ShardAttention, ShardGeneric
from charon_ir.parallel.sharding.state import Partition, Sharding


def attention_dims(module: ModuleOp) -> tuple[int, int, int]:
    """(sequence, q heads, kv heads) of the first attention op."""
    for op in module.walk():
        if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)):
            return shape(op.q)[1], shape(op.q)[2], shape(op.k)[2]
    return 0, 0, 0


def _p2p(cls, axis: str, shift: int, operands=(), result_types=()) -> Operation:
    return cls.build(
        operands=list(operands),
        result_types=list(result_types),
        properties={
            "grid": SymbolRefAttr(MESH),
            "grid_axes": ArrayAttr([StringAttr(axis)]),
            "shift": IntegerAttr(shift, 64),
        },
    )


def _slice(value: SSAValue, dim: int, size: int) -> sim.GenericOp:
    """A free local view of part of `value` along `dim` (half the local queries)."""
    new = list(shape(value))
    new[dim] = size
    return sim.GenericOp(sim.GenericCallee.SHARD_SLICE, [value], [with_shape(value.type, new)], 0.0, 0.0)


def merge_bytes(parts: list[SSAValue]) -> float:
    """HBM traffic of accumulating the ring steps' partial results as Transformer
    Engine does, one elementwise kernel a step: the first part copied into the
    accumulator (read it, write it), every later part added in place (read the
    part, read and write the accumulator's region of the part's size)."""
    first, *rest = (sim.tensor_bytes(part) for part in parts)
    return 2 * first + 3 * sum(rest)


def _merge(name: str, parts: list[SSAValue], result_type) -> sim.GenericOp:
    return sim.GenericOp(name, parts, [result_type], 0.0, merge_bytes(parts))


@dataclass
class ContextAttention:
    """Takes attention over from the default propagation when q, k, v are split on
    the sequence: Ulysses by layouts and conversions alone, the ring by its steps
    as well (`RingSteps`)."""

    state: Sharding
    mode: str

    def __call__(self, op: Operation, rewriter: PatternRewriter) -> bool:
        st = self.state
        if all(st.shard(st.operand(op, i)).replicated for i in range(len(op.operands))):
            return False
        if self.mode == "ulysses":
            self.ulysses(op, rewriter)
        else:
            self.ring(op, rewriter)
        return True

    # -- Ulysses --------------------------------------------------------------

    def _heads(self, value: SSAValue) -> Shard:
        heads = shape(value)[2]
        cp = self.state.size
        if heads % cp == 0:
            return split(2, cp, "heads")
        # fewer kv heads than ranks: each rank keeps the kv head its queries use
        return Shard(2, heads, False, "heads") if heads > 1 else REPLICATED

    def _to_heads(self, op: Operation, value: SSAValue) -> None:
        st = self.state
        want = self._heads(value)
        have = st.layout_of(op, value)
        if have.dim == 2:
            return
        # fewer kv heads than ranks: the conversion gathers the sequence and keeps
        # the kv head the local query heads need
        st.use_value(op, value, want)
        parent_yield = self._saving_yield(op)
        if parent_yield is not None:
            # save what attention read (split on heads), as Ulysses' autograd does:
            # the backward then needs no all_to_all for it
            for i, v in enumerate(parent_yield.operands):
                if v is value:
                    st.use(parent_yield, i, want)

    @staticmethod
    def _saving_yield(op: Operation) -> sim.YieldOp | None:
        block = op.parent_block()
        last = block.last_op if block else None
        return last if isinstance(last, sim.YieldOp) else None

    def _back_to_seq(self, op: Operation, result: SSAValue, keep_saved: bool) -> None:
        """Every reader of `result` but the yield that saves it reads it split on
        the sequence again."""
        st = self.state
        saving = self._saving_yield(op) if keep_saved else None
        for use in list(result.uses):
            if use.operation is not saving:
                st.use(use.operation, use.index, split(1, st.size, "seq"))

    def ulysses(self, op: Operation, rewriter: PatternRewriter) -> None:
        st = self.state
        for value in (op.q, op.k, op.v):
            self._to_heads(op, value)
        qs = st.layout_of(op, op.q)
        q, v = st.rank_shape(st.operand_of(op, op.q)), st.rank_shape(st.operand_of(op, op.v))
        if isinstance(op, sim.AttentionOp):
            st.assign(op.result, qs, (*q[:3], v[3]))
            self._back_to_seq(op, op.result, keep_saved=True)
            return
        self._to_heads(op, op.out)
        self._to_heads(op, op.grad_out)
        for k, src in enumerate((op.q, op.k, op.v)):
            s = st.layout_of(op, src)
            # a kv head used by several ranks' queries gets a gradient from each
            shared = (s.dim == 2 and s.factor < qs.factor) or (s.replicated and qs.dim is not None)
            st.assign(op.results[k], Shard(s.dim, s.factor, shared, s.tag), st.rank_shape(st.operand_of(op, src)))
            self._back_to_seq(op, op.results[k], keep_saved=False)

    # -- ring -----------------------------------------------------------------

    def ring(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.window is not None:
            # which kv blocks a window reaches depends on the chunk layout; the
            # remote blocks are priced whole below, which a window would undo
            raise CharonError(f"shard-context: sliding-window attention (window {op.window_size()}) is not "
                              "modelled on the ring; use the all-to-all (Ulysses) variant")
        if op.chunk is not None:
            # the same for a chunk: whether a remote block lies in a query's chunk
            # depends on where the ring's blocks fall
            raise CharonError(f"shard-context: chunked attention (chunk {op.chunk_size()}) is not "
                              "modelled on the ring; use the all-to-all (Ulysses) variant")
        st = self.state
        seq = split(1, st.size, "seq")
        for value in (op.q, op.k, op.v):
            st.use_value(op, value, seq)
        if isinstance(op, sim.AttentionGradOp):
            st.use_value(op, op.out, seq)
            st.use_value(op, op.grad_out, seq)
        q, v = st.rank_shape(st.operand_of(op, op.q)), st.rank_shape(st.operand_of(op, op.v))
        if isinstance(op, sim.AttentionOp):
            st.assign(op.result, seq, (*q[:3], v[3]))
        else:
            for k, src in enumerate((op.q, op.k, op.v)):
                st.assign(op.results[k], seq, st.rank_shape(st.operand_of(op, src)))
        st.partition(op, RingSteps(st.axis, st.size))


@dataclass(frozen=True)
class RingSteps(Partition):
    """Ring attention on one rank, its q, k, v split on the sequence: the kv blocks
    travel around the ring by send/recv, one attention step per block, the steps'
    partial results joined by a merge that the op's readers read instead."""

    axis: str
    cp: int

    MERGE = sim.GenericCallee.RING_MERGE
    GRADIENT_MERGES = (sim.GenericCallee.RING_MERGE_DQ, sim.GenericCallee.RING_MERGE_DK,
                       sim.GenericCallee.RING_MERGE_DV)

    def _merge_name(self, op: Operation, index: int) -> str:
        return self.MERGE if isinstance(op, sim.AttentionOp) else self.GRADIENT_MERGES[index]

    def stand_in(self, op: Operation, index: int) -> SSAValue | None:
        name = self._merge_name(op, index)
        for use in op.results[index].uses:
            user = use.operation
            if isinstance(user, sim.GenericOp) and user.callee.data == name:
                return user.results[0]
        return None

    def rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        causal = op.causal is not None
        half = shape(op.q)[1] // 2
        k, v = op.k, op.v
        blocks: list[tuple[SSAValue, SSAValue]] = [(k, v)]
        new_ops: list[Operation] = []
        # kv blocks around the ring: at step i a rank holds the block of rank r - i
        for _ in range(1, self.cp):
            pk, pv = blocks[-1]
            new_ops += [_p2p(coll.SendOp, self.axis, 1, [pk]), _p2p(coll.SendOp, self.axis, 1, [pv])]
            rk = _p2p(coll.RecvOp, self.axis, -1, result_types=[pk.type])
            rv = _p2p(coll.RecvOp, self.axis, -1, result_types=[pv.type])
            new_ops += [rk, rv]
            blocks.append((rk.results[0], rv.results[0]))
        rewriter.insert(new_ops, InsertPoint.before(op))
        if isinstance(op, sim.AttentionOp):
            parts = [op.result]
            for bk, bv in blocks[1:]:
                q = op.q
                pre: list[Operation] = []
                if causal:  # balanced: half the local queries see a whole block
                    sl = _slice(op.q, 1, half)
                    pre.append(sl)
                    q = sl.results[0]
                att = sim.AttentionOp(q, bk, bv, with_shape(op.result.type, (*shape(q)[:3], shape(bv)[3])), causal=False, flash=op.flash is not None)
                rewriter.insert([*pre, att], InsertPoint.after(parts[-1].owner))  # pyright: ignore[reportArgumentType]
                parts.append(att.result)
            merge = _merge(self.MERGE, parts, op.result.type)
            rewriter.insert(merge, InsertPoint.after(parts[-1].owner))  # pyright: ignore[reportArgumentType]
            rewriter.replace_uses_with_if(op.result, merge.results[0], lambda use: use.operation is not merge)
            return
        # backward: each step's partial gradients; dk, dv go back to their owners
        grads_q, grads_k, grads_v = [op.grad_q], [op.grad_k], [op.grad_v]
        after: Operation = op
        for bk, bv in blocks[1:]:
            pre: list[Operation] = []
            q, out, dout = op.q, op.out, op.grad_out
            if causal:
                sq, so, sd = _slice(q, 1, half), _slice(out, 1, half), _slice(dout, 1, half)
                pre += [sq, so, sd]
                q, out, dout = sq.results[0], so.results[0], sd.results[0]
            g = sim.AttentionGradOp.build(
                operands=[out, dout, q, bk, bv],
                result_types=[q.type, bk.type, bv.type],
                properties={"flash": op.flash} if op.flash is not None else {},
            )
            send_k = _p2p(coll.SendOp, self.axis, -1, [g.results[1]])
            send_v = _p2p(coll.SendOp, self.axis, -1, [g.results[2]])
            recv_k = _p2p(coll.RecvOp, self.axis, 1, result_types=[bk.type])
            recv_v = _p2p(coll.RecvOp, self.axis, 1, result_types=[bv.type])
            rewriter.insert([*pre, g, send_k, send_v, recv_k, recv_v], InsertPoint.after(after))
            after = recv_v
            grads_q.append(g.results[0])
            grads_k.append(recv_k.results[0])
            grads_v.append(recv_v.results[0])
        merges = [
            (r, _merge(self._merge_name(op, i), parts, r.type))
            for i, (parts, r) in enumerate(((grads_q, op.grad_q), (grads_k, op.grad_k), (grads_v, op.grad_v)))
        ]
        rewriter.insert([m for _, m in merges], InsertPoint.after(after))
        for r, m in merges:
            rewriter.replace_uses_with_if(r, m.results[0], lambda use, m=m: use.operation is not m)


class JoinContextSums(RewritePattern):
    """a2a+p2p: a sum over one context axis whose only reader sums it over the
    other (a weight gradient, partial over both: the ring's all_reduce, then
    Ulysses') is one all_reduce over cp x cpa, with the outer sum's marks
    (`coll.grad_sync`), as Megatron-Core reduces over its whole cp group."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coll.AllReduceOp, rewriter: PatternRewriter) -> None:
        first = op.input.owner
        if not isinstance(first, coll.AllReduceOp) or not first.result.has_one_use() or first.attributes:
            return
        if {*op.axis_names(), *first.axis_names()} != {"cp", "cpa"} or len(op.axis_names()) != 1:
            return
        props = {k: v for k, v in op.properties.items() if k not in ("grid", "grid_axes")}
        if props != {k: v for k, v in first.properties.items() if k not in ("grid", "grid_axes")}:
            return
        joined = coll.AllReduceOp(first.input, MESH, ["cp", "cpa"], op.result.type, **props)
        joined.attributes.update(op.attributes)
        rewriter.replace(op, joined)
        rewriter.erase(first)


@dataclass(frozen=True)
class ShardContextPass(ModulePass):
    name = "shard-context"

    cp: int = 1
    mode: Literal["ring", "ulysses", "a2a+p2p"] = "ring"
    a2a: int = 1
    gather_kv: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.cp < 1:
            raise CharonError(f"shard-context: option 'cp' must be >= 1, got {self.cp}")
        if self.mode != "a2a+p2p" and self.a2a != 1:
            raise CharonError(f"shard-context: option 'a2a' ({self.a2a}) needs mode=a2a+p2p, not mode={self.mode}")
        if self.mode != "ulysses" and not self.gather_kv:
            raise CharonError(f"shard-context: option 'gather-kv' needs mode=ulysses, not mode={self.mode}")
        if self.cp == 1:
            return
        if self.mode == "a2a+p2p":
            self.apply_hierarchical(op)
            return
        st = self.analyse(op)
        materialise(st.plan, op)
        tally_replicated(st, op)
        record_replicated_flops(op, self.name, st.replicated_flops)

    def apply_hierarchical(self, op: ModuleOp) -> None:
        """a2a+p2p: Ulysses over the inner `cpa` axis (a2a ranks), then the ring
        over the outer `cp` axis (cp / a2a ranks) on what Ulysses left: each ring
        step's q, k, v are split on the sequence by the ring and on the heads by
        the all_to_alls, and the kv blocks it receives are typed so."""
        cp, a2a = self.cp, self.a2a
        refuse_axis_twice(op, "cp", self.name)
        refuse_axis_twice(op, "cpa", self.name)
        refuse_after_data_parallel(op, self.name)
        seq, heads, kv_heads = attention_dims(op)
        if not seq:
            raise CharonError("shard-context: the module has no attention op to split the sequence of")
        if a2a < 2 or a2a >= cp or cp % a2a:
            raise CharonError(
                f"shard-context: option 'a2a' ({a2a}) must divide 'cp' ({cp}) and lie strictly between 1 and "
                "cp (mode=a2a+p2p; a2a=1 is mode=ring, a2a=cp is mode=ulysses)"
            )
        ring = cp // a2a
        if seq % (2 * cp):
            raise CharonError(
                f"shard-context: option 'cp' ({cp}) does not divide the sequence length ({seq}) into "
                f"2*cp load-balanced chunks (mode=a2a+p2p)"
            )
        for what, n in (("attention heads", heads), ("kv heads", kv_heads)):
            if n % a2a:
                raise CharonError(
                    f"shard-context: option 'a2a' ({a2a}) does not divide the {what} ({n}) (mode=a2a+p2p)"
                )
        inner = self._analysis(op, "cpa", a2a, "ulysses", seq, seq, heads, kv_heads)
        materialise(inner.plan, op)
        tally_replicated(inner, op)
        # the ring sees the inputs Ulysses split (seq / a2a tokens) and attention on
        # the whole sequence for heads / a2a
        outer = self._analysis(op, "cp", ring, "ring", seq // a2a, seq, heads // a2a, kv_heads // a2a)
        materialise(outer.plan, op)
        tally_replicated(outer, op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([JoinContextSums()], dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
        # a rank's work beyond 1/cp of the whole: each analysis tallied its own
        # axis's share; the ring's is over work already 1/a2a of the whole
        record_replicated_flops(op, self.name, inner.replicated_flops + outer.replicated_flops * a2a)

    def analyse(self, op: ModuleOp) -> ShardingAnalysis:
        """The cp grid axis, the split step inputs, then the propagation's record
        of every value's layout and of the ring's steps (no other IR change)."""
        cp = self.cp
        refuse_axis_twice(op, "cp", self.name)
        refuse_after_data_parallel(op, self.name)
        seq, heads, kv_heads = attention_dims(op)
        if not seq:
            raise CharonError("shard-context: the module has no attention op to split the sequence of")
        if seq % cp:
            raise CharonError(f"shard-context: option 'cp' ({cp}) does not divide the sequence length ({seq})")
        if self.mode == "ring" and seq % (2 * cp):
            raise CharonError(
                f"shard-context: option 'cp' ({cp}) does not divide the sequence length ({seq}) "
                f"into 2*cp load-balanced chunks (mode=ring)"
            )
        if self.mode == "ulysses" and heads % cp:
            raise CharonError(
                f"shard-context: option 'cp' ({cp}) does not divide the attention heads ({heads}) (mode=ulysses)"
            )
        if self.mode == "ulysses" and kv_heads % cp and not self.gather_kv:
            raise CharonError(
                f"shard-context: option 'cp' ({cp}) does not divide the kv heads ({kv_heads}) "
                "(mode=ulysses, gather-kv=false: Transformer Engine's a2a)"
            )
        if self.mode == "ulysses" and kv_heads % cp and cp % kv_heads:
            raise CharonError(
                f"shard-context: option 'cp' ({cp}) neither divides nor is a multiple of the kv heads "
                f"({kv_heads}) (mode=ulysses)"
            )
        return self._analysis(op, "cp", cp, self.mode, seq, seq, heads, kv_heads)

    def _analysis(self, op: ModuleOp, axis: str, size: int, mode: str, tokens_in: int, seq: int,
                  heads: int, kv_heads: int) -> ShardingAnalysis:
        """Grid axis `axis` of `size`, every step input with a dim of `tokens_in`
        tokens split on it, and the propagation with attention run as `mode`."""
        ensure_axis(op, axis, size, self.name)
        hints = {"seq": {seq, tokens_in}, "heads": {heads, kv_heads}}
        st = ShardingAnalysis(axis, size, self.name, hints=hints)
        st.snapshot(op)
        seeded = 0
        for inp in op.body.block.ops:
            if not isinstance(inp, sim.InputOp):
                continue
            dims = shape(inp.result)
            tokens = [d for d, n in enumerate(dims) if n == tokens_in and d < 2]
            if not tokens:
                # a [tokens, ...] input of a hand-written layer (batch folded in)
                tokens = [0] if dims and dims[0] % tokens_in == 0 and len(dims) == 2 else []
            if tokens:
                st.assign(inp.result, split(tokens[0], size, "seq"))
                seeded += 1
        if not seeded:
            raise CharonError("shard-context: no step input has a sequence dim to split")
        handler = ContextAttention(st, mode)
        analyse(st, op, [ShardAttention(st, handler=handler), ShardGeneric(st)])
        return st
