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

A matmul is an expert GEMM when its operands are batched and it reads a routed
expert's weight (the forward, rows x W; the data gradient, dy x W) or yields one's
gradient (the weight gradient: a result of W's shape, either orientation); the
expert weights are the `sim.param`s of role `expert` of rank three, their layer
dim dropped when stacked.

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
    """A batched matmul reading an expert weight or yielding its gradient -> `grouped`."""

    weights: frozenset[tuple[int, ...]]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.MatmulOp, rewriter: PatternRewriter) -> None:
        if op.grouped is not None:
            return
        lhs, rhs, result = (tuple(shape_of(v)) for v in (op.lhs, op.rhs, op.result))
        if len(lhs) < 3 or len(rhs) < 3:
            return
        if not self.weights.intersection((lhs, rhs, result)):
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
