"""Split a backward phase into B (input gradients) and W (weight gradients).

Zero-bubble schedules (Qi et al. 2023) run the two halves of a backward as separate
items: B carries the gradient to the previous stage and is on the critical path; W
only fills gradient buffers and can wait. Which ops are which is read off the data
flow, never off op names:

- In the body of a reverse `sim.repeat` (a layer's backward), B is everything the
  carried values (the gradient flowing to the previous layer) are computed from;
  W is the weight-gradient GEMMs among the rest and what consumes them (gradient
  buckets, their reductions over data-parallel replicas).
- At the phase level, B is what the sends and the layer repeats read (the loss
  gradient seed, received gradients, recomputation); W is, among the rest, the
  head's weight-gradient GEMM and what consumes it, and gradient reductions after
  the layers.

A weight gradient that is not a GEMM (a norm's weight: a multiply and a sum over
tokens; an embedding's scatter-add) stays in B, as in Qi et al.'s implementation,
whose deferral store holds the inputs of linear layers only: deferring it would
keep its whole-activation operands (the output gradient, the normalised input)
alive until W for a few microseconds of work.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Block, Operation, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import recompute_kind


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
    phase_level: list[Operation] = []
    for op in block.ops:
        if isinstance(op, sim.RepeatOp):
            body = op.body.block
            term = body.last_op
            assert isinstance(term, sim.YieldOp)
            carried = _ancestors(body, term.values[: len(op.iter_init)])
            w_ops.update(_gemm_rooted(o for o in body.ops if o not in carried and o is not term))
        elif op not in b_ops and not isinstance(op, sim.YieldOp):
            phase_level.append(op)
    w_ops.update(_gemm_rooted(phase_level, keep_communication=True))
    return frozenset(w_ops)


def _gemm_rooted(candidates: Iterable[Operation], keep_communication: bool = False) -> set[Operation]:
    """Of `candidates` (in program order), the weight-gradient GEMMs, what reads
    their results and what only they read; with `keep_communication`,
    collectives too (gradient reductions the phase runs after the layers)."""
    # a recomputed forward GEMM whose result no input gradient reads (a layer's
    # last one under full recomputation) is recomputation, run before B
    ordered = [op for op in candidates if recompute_kind(op) is None]
    gemms = [op for op in ordered if isinstance(op, sim.MatmulOp)]
    w = set(gemms)
    for op in ordered:  # what reads them
        if (keep_communication and isinstance(op, coll.CollectiveOp)) or any(
            isinstance(v.owner, Operation) and v.owner in w for v in op.operands
        ):
            w.add(op)
    pool = set(ordered)
    work = list(gemms)
    while work:  # what only W reads, among the candidates (B runs first: it reads no W value)
        for value in work.pop().operands:
            owner = value.owner
            if (
                isinstance(owner, Operation) and owner in pool and owner not in w
                and all(use.operation in w for r in owner.results for use in r.uses)
            ):
                w.add(owner)
                work.append(owner)
    return w
