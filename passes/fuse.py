"""
Kernel fusion: groups of ops that real training stacks run as one kernel become one
op whose intermediate tensors never reach device memory.

Options (each on by default):
- attention: flash attention; `sim.attention` / `sim.attention_grad` get `flash`,
  so the score matrix is never written or read back (`attention-kernel`, default
  empty: the flash kernel's name, flash2 / flash3 / triton, for the cost engine).
- norm: an RMSNorm imported as its pieces (cast, pow, mean, add eps, rsqrt, mul,
  cast, mul by the weight) becomes one `sim.generic "fused.rms_norm"`; a LayerNorm
  and its bias add (and saved statistics) one `"fused.layer_norm"`.
- bias-act: a bias add and the activation computed from it (gelu, silu, relu, or
  GELU's tanh form as imported: the pointwise ops that read only the group), and a
  gated unit's activation times its gate (SwiGLU: silu(g) * u), become one
  `sim.generic "fused.bias_act"` / `"fused.swiglu"`.
- rope: rotary embeddings imported as x * cos + rotate_half(x) * sin (slices, neg,
  cat, two muls and an add) become one `sim.generic "fused.rope"`.

A fusion changes bytes moved, never FLOPs: the fused op carries the sum of its
parts' FLOPs, and reads each outside input once and writes each value that is used
outside the group once (a value the backward saves stays an output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, UnitAttr
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

from charon_ir.dialects import sim
from charon_ir.engines.compute_efficiency import ATTENTION_KERNELS
from charon_ir.errors import CharonError

ACTIVATIONS = frozenset({"gelu", "silu", "relu", "tanh", "sigmoid"})


def _kind(op: Operation | None, *kinds: str) -> bool:
    return isinstance(op, sim.ElementwiseOp) and op.kind.data in kinds


def _owner(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def _single_user(value: SSAValue) -> Operation | None:
    users = {u.operation for u in value.uses}
    return next(iter(users)) if len(users) == 1 else None


def fuse_group(group: Sequence[Operation], callee: str, rewriter: PatternRewriter) -> bool:
    """Replace `group` (ops of one block) by one `sim.generic` at the place of its
    last op. Inputs: values from outside the group; outputs: group values used
    outside it. Returns False (changing nothing) when an outside use comes before
    the last op, where the fused op could not reach it."""
    members = set(group)
    block = group[0].parent_block()
    if block is None or any(op.parent_block() is not block for op in group):
        return False
    order = {op: i for i, op in enumerate(block.ops)}
    last = max(group, key=lambda op: order[op])
    inputs: list[SSAValue] = []
    outputs: list[SSAValue] = []
    for op in sorted(group, key=lambda o: order[o]):
        for v in op.operands:
            if (_owner(v) not in members) and v not in inputs:
                inputs.append(v)
        for r in op.results:
            outside = [u.operation for u in r.uses if u.operation not in members]
            if not outside:
                continue
            for user in outside:
                ancestor = block.find_ancestor_op_in_block(user)
                if ancestor is None or order.get(ancestor, -1) <= order[last]:
                    return False
            outputs.append(r)
    if not outputs:
        return False
    flops = sum(op.flops() for op in group if isinstance(op, sim.ComputeOp))
    tensors = [v for v in (*inputs, *outputs) if isinstance(v.type, TensorType)]
    moved = sum(sim.tensor_bytes(v) for v in tensors)
    fused = sim.GenericOp(callee, inputs, [r.type for r in outputs], flops, moved)
    rewriter.insert(fused, InsertPoint.after(last))
    for old, new in zip(outputs, fused.results):
        old.replace_all_uses_with(new)
        new.name_hint = old.name_hint
    for op in sorted(group, key=lambda o: -order[o]):
        rewriter.erase(op, safe_erase=False)
    return True


ATTENTION_KERNEL_ATTR = "kernel"
"""Which flash-attention kernel runs an attention op (read by the cost engine)."""


class FlashAttention(RewritePattern):
    """Mark attention flash: scores stay in on-chip memory; with a `kernel`, name
    the flash kernel that runs it."""

    def __init__(self, kernel: str = ""):
        self.kernel = kernel

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)) and op.flash is None:
            op.properties["flash"] = UnitAttr()
            if self.kernel:
                op.attributes[ATTENTION_KERNEL_ATTR] = StringAttr(self.kernel)
            rewriter.handle_operation_modification(op)


class FuseRmsNorm(RewritePattern):
    """x -> [cast] -> pow -> mean -> add eps -> rsqrt -> mul x -> [cast] -> mul w."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ReduceOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != "mean":
            return
        power = _owner(op.input)
        if not _kind(power, "pow"):
            return
        x = power.operands[0]
        group: list[Operation] = [power, op]
        cast_in = _owner(x)
        if _kind(cast_in, "cast"):
            group.insert(0, cast_in)
        eps = _single_user(op.result)
        if not _kind(eps, "add"):
            return
        rstd = _single_user(eps.results[0])
        if not _kind(rstd, "rsqrt"):
            return
        scale = next(
            (u.operation for u in rstd.results[0].uses
             if _kind(u.operation, "mul") and x in u.operation.operands),
            None,
        )
        if scale is None:
            return
        group += [eps, rstd, scale]
        tail = scale.results[0]
        cast_out = _single_user(tail)
        if _kind(cast_out, "cast"):
            group.append(cast_out)
            tail = cast_out.results[0]
        weight = next(
            (u.operation for u in tail.uses if _kind(u.operation, "mul")
             and any(len(sim.shape_of(v)) == 1 for v in u.operation.operands)),
            None,
        )
        if weight is not None:
            group.append(weight)
        fuse_group(group, "fused.rms_norm", rewriter)


class FuseRope(RewritePattern):
    """x * cos + cat(-x2, x1) * sin, rooted at the add."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != "add" or len(op.inputs) != 2:
            return
        a, b = (_owner(v) for v in op.inputs)
        if not (_kind(a, "mul") and _kind(b, "mul")):
            return
        for cos_mul, sin_mul in ((a, b), (b, a)):
            cat = next((_owner(v) for v in sin_mul.operands if isinstance(_owner(v), sim.GenericOp)
                        and _owner(v).callee.data == "aten.cat"), None)
            if cat is None or len(cat.operands) != 2:
                continue
            neg = _owner(cat.operands[0])
            if not _kind(neg, "neg"):
                continue
            group: list[Operation] = [cos_mul, sin_mul, cat, neg, op]
            for v in (neg.operands[0], cat.operands[1]):
                sl = _owner(v)
                if isinstance(sl, sim.GenericOp) and sl.callee.data == "aten.slice" and sl not in group:
                    group.append(sl)
            fuse_group(group, "fused.rope", rewriter)
            return


class FuseNormBias(RewritePattern):
    """A LayerNorm and the add of its bias (and the statistics it saves for the
    backward, read from the same input)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.NormOp, rewriter: PatternRewriter) -> None:
        add = _single_user(op.result)
        if not (_kind(add, "add") and any(len(sim.shape_of(v)) == 1 for v in add.operands)):
            return
        group: list[Operation] = [op, add]
        for use in op.input.uses:
            stats = use.operation
            if isinstance(stats, sim.GenericOp) and stats.callee.data == "layer_norm_stats":
                group.append(stats)
        fuse_group(group, "fused.layer_norm", rewriter)


def _is_bias_add(op: Operation | None) -> bool:
    return _kind(op, "add") and len(op.operands) == 2 and any(  # pyright: ignore[reportOptionalMemberAccess]
        len(sim.shape_of(v)) == 1 for v in op.operands  # pyright: ignore[reportOptionalMemberAccess]
    )


class FuseBiasActivation(RewritePattern):
    """A bias add and the activation computed from it alone (gelu, or its tanh /
    erf decomposition as imported); SwiGLU's silu(g) * u."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if _is_bias_add(op):
            # grow over the pointwise ops that read only the group (constants folded)
            group: list[Operation] = [op]
            members: set[Operation] = {op}
            block = op.parent_block()
            assert block is not None
            started = False
            for later in block.ops:
                started = started or later is op
                if not started or later in members or not isinstance(later, sim.ElementwiseOp):
                    continue
                owners = [_owner(v) for v in later.operands]
                if owners and all(o in members for o in owners):
                    group.append(later)
                    members.add(later)
            if any(_kind(g, *ACTIVATIONS, "erf") for g in group):
                fuse_group(group, "fused.bias_act", rewriter)
            return
        if op.kind.data == "mul" and len(op.inputs) == 2:
            for v in op.inputs:
                act = _owner(v)
                if _kind(act, "silu", "gelu") and len(act.operands) == 1:
                    fuse_group([act, op], "fused.swiglu", rewriter)
                    return


@dataclass(frozen=True)
class FusePass(ModulePass):
    name = "fuse"

    attention: bool = True
    norm: bool = True
    bias_act: bool = True
    rope: bool = True
    attention_kernel: str = ""
    """The flash kernel the cost engine prices attention with (flash2, flash3,
    triton); empty: the engine's default."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.attention_kernel and self.attention_kernel not in ATTENTION_KERNELS:
            # the engine would silently price an unknown name as its default kernel
            raise CharonError(
                f"fuse: option 'attention-kernel': unknown kernel '{self.attention_kernel}' "
                f"(known: {', '.join(ATTENTION_KERNELS)})"
            )
        patterns: list[RewritePattern] = []
        if self.attention:
            patterns.append(FlashAttention(self.attention_kernel))
        if self.norm:
            patterns += [FuseRmsNorm(), FuseNormBias()]
        if self.rope:
            patterns.append(FuseRope())
        if self.bias_act:
            patterns.append(FuseBiasActivation())
        if not patterns:
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
