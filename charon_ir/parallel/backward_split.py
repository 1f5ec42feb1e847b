"""Split a backward phase into B (input gradients) and W (weight gradients).

Zero-bubble schedules (Qi et al. 2023) run the two halves of a backward as separate
items: B carries the gradient to the previous stage and is on the critical path; W
only fills gradient buffers and can wait. Which ops are which is read off the data
flow, never off op names:

- In the body of a reverse `sim.repeat` (a layer's backward), B is everything the
  carried values (the gradient flowing to the previous layer) are computed from;
  W is the rest: the weight-gradient GEMMs and what consumes them (gradient
  buckets, their reductions over data-parallel replicas).
- At the phase level, B is what the sends and the layer repeats read (the loss
  gradient seed, received gradients, recomputation); W is the rest (the head's and
  the embedding's weight gradients, gradient reductions after the layers).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Block, Operation, SSAValue

from charon_ir.dialects import coll, sim


def _ancestors(block: Block, roots: Iterable[SSAValue]) -> set[Operation]:
    """Ops of `block` that `roots` are computed from (roots' owners included)."""
    found: set[Operation] = set()
    work = list(roots)
    while work:
        value = work.pop()
        owner = value.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not block or owner in found:
            continue
        found.add(owner)
        work.extend(owner.operands)
        for region in owner.regions:
            for inner in region.walk():
                work.extend(v for v in inner.operands)
    return found


def weight_gradient_ops(backward: sim.PhaseOp) -> frozenset[Operation]:
    """The W ops of `backward` (the B ops are all others)."""
    block = backward.body.block
    roots: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, coll.SendOp):
            roots.extend(op.operands)
        elif isinstance(op, sim.RepeatOp):
            roots.extend([*op.iter_init, *op.slices])
    b_ops = _ancestors(block, roots)
    b_ops.update(op for op in block.ops if isinstance(op, coll.SendOp))
    w_ops: set[Operation] = set()
    for op in block.ops:
        if isinstance(op, sim.RepeatOp):
            body = op.body.block
            term = body.last_op
            assert isinstance(term, sim.YieldOp)
            carried = _ancestors(body, term.values[: len(op.iter_init)])
            w_ops.update(o for o in body.ops if o not in carried and o is not term)
        elif op not in b_ops and not isinstance(op, sim.YieldOp):
            w_ops.add(op)
    return frozenset(w_ops)
