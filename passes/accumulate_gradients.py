"""
Gradient accumulation over micro-batches as a kernel of its own: each micro-batch's
weight gradients are added into the step's gradient buffer by a separate
element-wise pass, as Megatron-LM's local DDP did before gradient-accumulation
fusion (2021-22: `param.main_grad.add_(param.grad.data)` in the hook of
megatron/model/distributed.py; without contiguous buffers autograd's
`AccumulateGrad` runs the same add on `param.grad`). Fused accumulation (the
weight-gradient GEMM adding into the buffer, Megatron-Core's default) needs no pass.

Options:
- bytes-per-element: HBM traffic of the add per gradient element (default 6: a
  16-bit gradient read, a 16-bit buffer read and written; 10 for an fp32 buffer).

The IR holds one micro-batch's step, repeated by the schedule, so the pass adds
one `sim.generic "accumulate_grads"` (no FLOPs, priced by its bytes) inside each
backward layer repeat, beside the layer's weight gradients (its per-iteration
outputs), and one before each backward phase's yield for the gradients made
outside the layers (embedding, head, final norm). Run it after the passes that
restructure the step (`pipeline`, `data-parallel`, `recompute`); a second run is
an error.
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
from charon_ir.dialects.sim import ACCUMULATED_ATTR
from charon_ir.errors import CharonError

CALLEE = "accumulate_grads"


def _accumulate(grads: Sequence[SSAValue], bytes_per_element: int) -> sim.GenericOp:
    elements = sum(sim.numel(g) for g in grads)
    return sim.GenericOp(CALLEE, list(grads), [], flops=0.0, bytes=bytes_per_element * elements)


@dataclass
class AccumulateBackwardGradients(RewritePattern):
    """One backward phase: an add beside each layer repeat's weight gradients, and
    one for the phase's other gradients."""

    bytes_per_element: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.PhaseOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != sim.PhaseKind.BACKWARD:
            return
        repeats = [o for o in op.body.walk() if isinstance(o, sim.RepeatOp)]
        for repeat in repeats:
            body_yield = repeat.body.block.last_op
            assert body_yield is not None
            grads = body_yield.operands[len(repeat.iter_init):]
            if grads:
                rewriter.insert(_accumulate(grads, self.bytes_per_element),
                                InsertPoint.before(body_yield))
        phase_yield = op.body.block.last_op
        assert phase_yield is not None
        outside = [v for v in phase_yield.operands if not isinstance(v.owner, sim.RepeatOp)]
        if outside:
            rewriter.insert(_accumulate(outside, self.bytes_per_element),
                            InsertPoint.before(phase_yield))


@dataclass(frozen=True)
class AccumulateGradientsPass(ModulePass):
    name = "accumulate-gradients"

    bytes_per_element: int = 6

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if ACCUMULATED_ATTR in op.attributes:
            raise CharonError("accumulate-gradients: the gradients already accumulate in their own kernels")
        if not self.bytes_per_element > 0:
            raise CharonError(f"accumulate-gradients: option 'bytes-per-element' must be > 0, "
                              f"got {self.bytes_per_element}")
        op.attributes[ACCUMULATED_ATTR] = UnitAttr()
        PatternRewriteWalker(AccumulateBackwardGradients(self.bytes_per_element),
                             apply_recursively=False).rewrite_module(op)
