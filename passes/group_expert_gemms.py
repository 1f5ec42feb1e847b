"""
The routed experts' GEMMs as grouped GEMMs: one GEMM per local expert.

The frontends write a mixture-of-experts layer's experts as one batched
`sim.matmul` over the stacked expert weights ([experts, out, in],
`#sim.role<expert>`). No training stack runs them as one strided-batched GEMM:
Transformer Engine's GroupedLinear (Megatron-Core's `moe_grouped_gemm`) issues one
cuBLAS GEMM per expert, torchtitan's `torch._grouped_mm` and DeepGEMM one kernel
whose tiles each belong to one expert. Either way an expert's rows fill their own
tiles and waves, which a batched GEMM would pool across the experts. The pass marks
each such matmul `grouped`, and a cost engine prices a `grouped` matmul as `batch`
GEMMs of one expert's shape.

A matmul is an expert GEMM when its operands are batched and, by the shapes of one
layer's routed-expert weights (the `sim.param`s of role `expert` of rank three, their
layer dim dropped when stacked, in either orientation of their last two dims: Mixtral's
[experts, out, in], GPT-OSS's [experts, in, out]):
- its rhs has such a shape (the forward, rows x W; the data gradient, dy x W), unless
  it is another parameter (traced through `sim.repeat` slices to a `sim.param` of
  another role); or
- it contracts its transposed lhs into a result of such a shape (the weight gradient,
  rows^T x dy).
The frontends write no other batched GEMM of those shapes (attention is `sim.attention`).

Measured on an H200 (bench/moe_gemm_bench.py, test/data/gpu/moe_gemm-h200.json):
for the expert shapes of the bundled MoE records, a loop of per-expert GEMMs took
1.01-1.06 times the analytic price of per-expert GEMMs and `torch._grouped_mm`
0.99-1.11 times, where the price of one batched GEMM fell 1.5-15 % short.

No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from charon_ir.dialects import sim
from charon_ir.dialects.sim import ParamRole, shape_of


def expert_weight_shapes(module: ModuleOp) -> frozenset[tuple[int, ...]]:
    """One layer's routed-expert weight shapes ([experts, a, b]), in both
    orientations of their last two dims."""
    shapes: set[tuple[int, ...]] = set()
    for op in module.walk():
        if isinstance(op, sim.ParamOp) and op.param_role() == ParamRole.EXPERT:
            shape = tuple(shape_of(op.result))[1 if op.is_stacked() else 0:]
            if len(shape) == 3:
                shapes.update((shape, (shape[0], shape[2], shape[1])))
    return frozenset(shapes)


@dataclass
class GroupExpertGemm(RewritePattern):
    """`rows x W`, `dy x W` or `rows^T x dy -> dW` of a routed expert's weight W -> `grouped`."""

    weights: frozenset[tuple[int, ...]]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.MatmulOp, rewriter: PatternRewriter) -> None:
        if op.grouped is not None or len(shape_of(op.lhs)) < 3 or len(shape_of(op.rhs)) < 3:
            return
        param = sim.param_of(op.rhs)
        reads_weight = tuple(shape_of(op.rhs)) in self.weights and (
            param is None or param.param_role() == ParamRole.EXPERT)
        yields_gradient = op.transpose_lhs is not None and tuple(shape_of(op.result)) in self.weights
        if not (reads_weight or yields_gradient):
            return
        op.properties["grouped"] = UnitAttr()
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class GroupExpertGemmsPass(ModulePass):
    name = "group-expert-gemms"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        weights = expert_weight_shapes(op)
        if weights:
            PatternRewriteWalker(GroupExpertGemm(weights), apply_recursively=False).rewrite_module(op)
