"""Rebuild a structural `sim` op with fewer results (xDSL ops have a fixed result
list): a phase that yields fewer values, an optimizer step over fewer pairs, a
repeat or a fused kernel with fewer outputs. The passes that move ops between
stages, merge copies or drop unread outputs share these."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from charon_ir.dialects import sim


def replace_keeping(old: Operation, new: Operation, keep: Sequence[int]) -> None:
    """Put `new`, given `old`'s attributes, in `old`'s place: its results are
    `old`'s results `keep`, in that order (their uses move over); `old`'s other
    results must be unused. `old` is erased."""
    new.attributes.update(old.attributes)
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    for new_i, old_i in enumerate(keep):
        old.results[old_i].replace_all_uses_with(new.results[new_i])
    old.detach()
    old.erase(safe_erase=False)


def keep_phase_outputs(phase: sim.PhaseOp, keep: Sequence[int]) -> sim.PhaseOp:
    """Replace `phase` by one that yields only its outputs `keep` (their uses move
    to the new results); the others must be unused."""
    term = phase.body.block.last_op
    assert isinstance(term, sim.YieldOp)
    new_term = sim.YieldOp(*[term.values[i] for i in keep])
    phase.body.block.insert_op_before(new_term, term)
    term.detach()
    term.erase()
    new = sim.PhaseOp(phase.kind.data, phase.detach_region(phase.body), [phase.outputs[i].type for i in keep])
    replace_keeping(phase, new, keep)
    return new


def optimizer_step_over(step: sim.OptimizerStepOp, keep: Sequence[int]) -> sim.OptimizerStepOp:
    """A step over the (param, grad) pairs `keep` of `step`, inserted before it;
    the updated params it returns replace `step`'s. `step` stays (the caller
    erases it once nothing reads it)."""
    new = sim.OptimizerStepOp.build(
        operands=[[step.params[i] for i in keep], [step.grads[i] for i in keep]],
        result_types=[[step.updated[i].type for i in keep] if step.updated else []],
        properties={"kind": step.kind},
    )
    if step.updated:
        for new_i, old_i in enumerate(keep):
            step.updated[old_i].replace_all_uses_with(new.updated[new_i])
    block = step.parent_block()
    assert block is not None
    block.insert_op_before(new, step)
    return new
