"""
The mixed-precision optimizer step as separate kernels, the way Megatron-LM's
`Float16OptimizerWithFloat16Params` runs it (megatron/optimizer/optimizer.py,
2021-22) around apex's multi-tensor FusedAdam, instead of one fused AdamW.

Options:
- loss-scale: fp16 with dynamic loss scaling (default true): the half-precision
  gradients are copied into fp32 main gradients (`_copy_model_grads_to_main_grads`)
  and unscaled with an inf/NaN check (`_unscale_main_grads_and_check_for_nan`).
  false (bf16): the main gradients are the fp32 accumulation buffer, neither runs.

Before each `sim.optimizer_step` the pass inserts, over the step's elements
(bytes per element, read + write):

    main_grads_from_half   2 + 4   (loss-scale only)
    unscale_check_finite   4 + 4   (loss-scale only)
    grad_norm              4       (`clip_grad_norm_fp32`, multi_tensor_l2norm)

and after it

    params_to_half         4 + 2   (`_copy_main_params_to_model_params`)
    zero_grad_buffer       2, or 4 without loss-scale (`zero_grad`)

The step itself keeps its 30 B per element, which stand for FusedAdam over the
fp32 master weights, main gradients, m and v (28 B) plus 2 (the fused step's own
bf16 parameter write, which `params_to_half` counts again). Per element the step
then moves 56 B (fp16) or 44 B (bf16) instead of 30; the element-wise passes are
`sim.generic` ops with no FLOPs, priced by their bytes. A step under ZeRO runs on
its shard, and so do the passes. The gradient-norm all-reduce over the model- and
data-parallel groups (a few bytes) is not modelled.

The pass marks the module (`sim.optimizer_kernels`, a unit attribute: the ops
it makes say which variant ran) and rejects a second run;
`pipeline` and `data-parallel`, which change what the step updates, refuse to run
after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from charon_ir.dialects import sim
from charon_ir.dialects.sim import OPTIMIZER_KERNELS_ATTR
from charon_ir.errors import CharonError


LOSS_SCALED_BEFORE = (("main_grads_from_half", 6), ("unscale_check_finite", 8))
BEFORE = (("grad_norm", 4),)
AFTER = (("params_to_half", 6),)
ZERO_GRAD_BYTES = {True: 2, False: 4}
"""Gradient buffer zeroed per element: fp16 model gradients with loss scaling,
the fp32 accumulation buffer without."""
KERNELS = frozenset(name for name, _ in (*LOSS_SCALED_BEFORE, *BEFORE, *AFTER)) | {"zero_grad_buffer"}
"""The callees of the passes this inserts."""


def _pass_op(
    callee: str, step: sim.OptimizerStepOp, reads: Sequence[SSAValue], bytes_per_element: int
) -> sim.GenericOp:
    return sim.GenericOp(
        callee, list(reads), [], flops=0.0, bytes=float(bytes_per_element * step.num_elements())
    )


@dataclass
class SplitOptimizerStep(RewritePattern):
    loss_scale: bool

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.OptimizerStepOp, rewriter: PatternRewriter) -> None:
        before = (*LOSS_SCALED_BEFORE, *BEFORE) if self.loss_scale else BEFORE
        # the passes before the step read its gradients (so they wait, as the step
        # does, for their data-parallel reduction); the copy after it its update
        after = [_pass_op(callee, op, op.updated or op.params, nbytes) for callee, nbytes in AFTER]
        after.append(_pass_op("zero_grad_buffer", op, op.grads, ZERO_GRAD_BYTES[self.loss_scale]))
        for callee, nbytes in before:
            rewriter.insert(_pass_op(callee, op, op.grads, nbytes), InsertPoint.before(op))
        rewriter.insert(after, InsertPoint.after(op))


@dataclass(frozen=True)
class UnfuseOptimizerPass(ModulePass):
    name = "unfuse-optimizer"

    loss_scale: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if OPTIMIZER_KERNELS_ATTR in op.attributes:
            raise CharonError("unfuse-optimizer: the optimizer step is already unfused")
        op.attributes[OPTIMIZER_KERNELS_ATTR] = UnitAttr()
        PatternRewriteWalker(SplitOptimizerStep(self.loss_scale), apply_recursively=False).rewrite_module(op)
