"""What a module computes and communicates, summed over one step of one rank.

Ops inside a `sim.repeat` run `count` times (nested repeats multiply), so every sum
here weights an op by its multiplicity. The property tests of the parallelism
passes compare these sums before and after a pass:

    group_size * total_flops(after) == total_flops(before) + replicated_flops(after)

A pass that leaves work replicated on every rank of its group (a norm on the
replicated hidden state, a kv head shared by several ranks) records it with
`record_replicated_flops`, under its own name, in the module attribute
`sim.replicated_flops`.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from charon_ir.dialects.coll import CollectiveOp
from charon_ir.dialects.sim import (
    REPLICATED_ATTR,
    AttentionGradOp,
    AttentionOp,
    ComputeOp,
    RepeatOp,
    ReplicatedFlopsAttr,
    shape_of,
)


def walk_with_multiplicity(op: Operation, mult: int = 1) -> Iterator[tuple[Operation, int]]:
    """Every op nested in `op` with how many times one step runs it."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield inner, mult
                inner_mult = mult * inner.trip_count if isinstance(inner, RepeatOp) else mult
                yield from walk_with_multiplicity(inner, inner_mult)


def multiplicity(op: Operation) -> int:
    """How many times one step runs `op` (the product of enclosing repeat counts)."""
    mult = 1
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, RepeatOp):
            mult *= parent.trip_count
        parent = parent.parent_op()
    return mult


def total_flops(module: ModuleOp) -> float:
    """FLOPs of one step on one rank: every compute op times its multiplicity."""
    return sum(
        op.flops() * mult
        for op, mult in walk_with_multiplicity(module)
        if isinstance(op, ComputeOp)
    )


def total_bytes_moved(module: ModuleOp) -> float:
    return sum(
        op.bytes_moved() * mult
        for op, mult in walk_with_multiplicity(module)
        if isinstance(op, ComputeOp)
    )


def collective_calls(
    module: ModuleOp, kind: type[CollectiveOp] = CollectiveOp, axis: str | None = None
) -> list[tuple[CollectiveOp, int]]:
    """(collective, multiplicity) pairs, filtered by op class (`coll.AllReduceOp`) and axis."""
    return [
        (op, mult)
        for op, mult in walk_with_multiplicity(module)
        if isinstance(op, kind)
        and (axis is None or axis in op.axis_names())
    ]


def collective_bytes(module: ModuleOp, kind: type[CollectiveOp] = CollectiveOp, axis: str | None = None) -> float:
    """Ring bytes sent per rank per step by the matching collectives."""
    return sum(op.ring_bytes_per_rank() * mult for op, mult in collective_calls(module, kind, axis))


def replicated_flops(module: ModuleOp) -> dict[str, float]:
    """Replicated work each pass reported: pass name -> FLOPs summed over its group
    beyond the unsharded FLOPs."""
    attr = module.attributes.get(REPLICATED_ATTR)
    return attr.by_pass() if isinstance(attr, ReplicatedFlopsAttr) else {}


def record_replicated_flops(module: ModuleOp, pass_name: str, flops: float) -> None:
    module.attributes[REPLICATED_ATTR] = ReplicatedFlopsAttr(replicated_flops(module) | {pass_name: float(flops)})


def step_tokens(module: ModuleOp) -> tuple[int, int]:
    """(sequence, batch) from the first attention op's queries."""
    for op in module.walk():
        if isinstance(op, (AttentionOp, AttentionGradOp)):
            q = shape_of(op.q)
            return q[1], q[0]
    return 0, 0
