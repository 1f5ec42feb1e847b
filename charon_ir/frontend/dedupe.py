"""Merge the copies of one saved tensor that tracing leaves in a training step.

aot_autograd's partitioner saves one view node per consumer: the normed input of
a layer is saved three times for the q, k and v weight gradients, and the
`sim.view`s of it, the repeat outputs that stack them, the forward phase's
results and the backward repeat's slices all come in triplicate. Nothing about
the step's cost changes (a view is free, memory is counted by storage), but a
pass that rewrites the saved tensors does the work once per copy: sequence
parallelism would all-gather the normed input three times in each backward layer
where Megatron-LM gathers it once.

`merge_duplicate_saved(module)` rewrites to a fixpoint:
- identical `sim.view`s (same input, type and dims) in one block become one;
- a `sim.repeat` that stacks the same per-iteration value twice stacks it once;
- a `sim.phase` that yields the same value twice yields it once;
- a `sim.repeat` that slices the same stacked value twice slices it once.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import sim
from charon_ir.parallel.rebuild import keep_phase_outputs, replace_keeping


def _merge_views(block: Block) -> bool:
    changed = False
    first: dict[tuple[SSAValue, object], sim.ViewOp] = {}
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                changed |= _merge_views(inner)
        if not isinstance(op, sim.ViewOp):
            continue
        key = (op.input, op.result.type, op.dims)
        kept = first.setdefault(key, op)
        if kept is not op:
            op.result.replace_all_uses_with(kept.result)
            op.detach()
            op.erase()
            changed = True
    return changed


def _duplicates(values: list[SSAValue]) -> dict[int, int]:
    """index -> index of the first equal value, for every repeated one."""
    seen: dict[SSAValue, int] = {}
    dup: dict[int, int] = {}
    for i, v in enumerate(values):
        if v in seen:
            dup[i] = seen[v]
        else:
            seen[v] = i
    return dup


def _rebuild_repeat(rep: sim.RepeatOp, slices: list[SSAValue], keep_outputs: list[int]) -> sim.RepeatOp:
    region = rep.detach_region(rep.body)
    new = sim.RepeatOp(
        rep.trip_count, list(rep.iter_init), slices, region,
        [rep.outputs[i].type for i in keep_outputs], reverse=rep.reverse is not None,
    )
    replace_keeping(rep, new, keep_outputs)
    return new


def _merge_repeat(rep: sim.RepeatOp) -> bool:
    body = rep.body.block
    term = body.last_op
    assert isinstance(term, sim.YieldOp)
    n_iter = len(rep.iter_init)
    out_dup = {n_iter + i: n_iter + j for i, j in _duplicates(list(term.values)[n_iter:]).items()}
    slice_dup = _duplicates(list(rep.slices))
    if not out_dup and not slice_dup:
        return False
    for i, j in out_dup.items():
        rep.outputs[i].replace_all_uses_with(rep.outputs[j])
    for i, j in slice_dup.items():
        body.args[n_iter + i].replace_all_uses_with(body.args[n_iter + j])
    keep = [i for i in range(len(rep.outputs)) if i not in out_dup]
    if out_dup:
        new_term = sim.YieldOp(*[term.values[i] for i in keep])
        body.insert_op_before(new_term, term)
        term.detach()
        term.erase()
    for i in sorted(slice_dup, reverse=True):
        body.erase_arg(body.args[n_iter + i])
    slices = [s for i, s in enumerate(rep.slices) if i not in slice_dup]
    _rebuild_repeat(rep, slices, keep)
    return True


def _merge_phase(phase: sim.PhaseOp) -> bool:
    term = phase.body.block.last_op
    assert isinstance(term, sim.YieldOp)
    dup = _duplicates(list(term.values))
    if not dup:
        return False
    for i, j in dup.items():
        phase.outputs[i].replace_all_uses_with(phase.outputs[j])
    keep_phase_outputs(phase, [i for i in range(len(phase.outputs)) if i not in dup])
    return True


def merge_duplicate_saved(module: ModuleOp) -> None:
    changed = True
    while changed:
        changed = _merge_views(module.body.block)
        for op in list(module.walk()):
            if isinstance(op, sim.RepeatOp) and op.parent_block() is not None:
                changed |= _merge_repeat(op)
        for op in list(module.walk()):
            if isinstance(op, sim.PhaseOp) and op.parent_block() is not None:
                changed |= _merge_phase(op)
