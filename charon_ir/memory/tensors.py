"""What one value costs in device memory: its storage root and that root's bytes.

Views share storage with what they view: a `sim.view`, or a `sim.generic` of a
known aten view op (or any generic with no FLOPs and no bytes whose one result is
no larger than its first input — how the frontend imports split/transpose). A
value's bytes are counted once per storage root, however many views of it are
alive (PyTorch keeps a whole storage alive while any view of it is).

Ops that keep more than their results show: a `sim.attention` without `flash`
materialises the [b, heads, sq, skv] score matrix and, unless recomputed, saves
the softmax probabilities for its gradient. Those bytes ride on the attention
result's root (`hidden_saved_bytes`): whatever keeps the attention output alive
keeps its probabilities alive, which is what autograd does.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import DROPOUT_ATTR, RecomputeKind, recompute_kind


ALIAS_CALLEES = frozenset(
    {
        "view", "aten.view", "aten._unsafe_view", "aten.reshape", "aten.transpose",
        "aten.t", "aten.permute", "aten.expand", "aten.split", "aten.split_with_sizes",
        "aten.slice", "aten.select", "aten.unsqueeze", "aten.squeeze", "aten.alias",
        "aten.as_strided", "aten.detach", "aten.unbind", "aten.chunk", "aten.narrow",
        # shard-expert's per-expert buffer of the tp group's rows under MoE
        # parallel folding (etp 1, tp > 1): a layout of the all-to-all's rows, not
        # storage of its own; Megatron-Core's unpermutation keeps the rank's own
        # rows (its sequence-parallel share), which the all-to-all returned
        sim.GenericCallee.MOE_LOCAL_ROWS,
    }
)


def value_bytes(value: SSAValue | Attribute) -> int:
    t = value.type if isinstance(value, SSAValue) else value
    if not isinstance(t, TensorType):
        return 0
    return int(sim.tensor_bytes(t))


def is_alias_op(op: Operation) -> bool:
    """Whether the op's first result is a view of its first operand."""
    if isinstance(op, sim.ViewOp):
        return True
    if isinstance(op, sim.GenericOp) and op.inputs and len(op.outputs) == 1:
        if op.callee.data in ALIAS_CALLEES:
            return True
        no_work = op.flop_count.value.data == 0 and op.byte_count.value.data == 0
        src, out = op.inputs[0].type, op.outputs[0].type
        if no_work and isinstance(src, TensorType) and isinstance(out, TensorType):
            return (
                src.element_type == out.element_type
                and sim.numel(out) <= sim.numel(src)
            )
    return False


def alias_source(value: SSAValue) -> SSAValue | None:
    """The value `value` is a view of, or None when it owns its storage."""
    op = value.owner
    if isinstance(op, Operation) and is_alias_op(op) and value.index == 0:
        return op.operands[0]
    return None


def score_elements(op: sim.AttentionOp | sim.AttentionGradOp) -> int:
    b, sq, hq, _ = sim.shape_of(op.q)
    return b * hq * sq * sim.shape_of(op.k)[1]


def is_recomputed(op: Operation) -> bool:
    """Whether the recompute pass took this op's saved internals away: the op is
    marked, or sits in a layer repeat marked for full recompute."""
    if recompute_kind(op) == RecomputeKind.SELECTIVE:
        return True
    cur = op.parent_op()
    while isinstance(cur, sim.RepeatOp):
        if recompute_kind(cur) is not None:
            return True
        cur = cur.parent_op()
    return False


def hidden_saved_bytes(op: Operation) -> int:
    """Bytes an op keeps beside its results for its gradient, not visible as SSA
    values: a non-flash attention's softmax output (and dropout mask and output)."""
    if not isinstance(op, sim.AttentionOp) or op.flash or is_recomputed(op):
        return 0
    elem = sim.element_bytes(op.q.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
    per_score = elem
    if DROPOUT_ATTR in op.attributes:
        per_score += 1 + elem  # the mask, then the dropped probabilities
    return int(score_elements(op) * per_score)


def flash_saved_bytes(op: Operation) -> int:
    """A flash attention saves its fp32 log-sum-exp per query row and head."""
    if isinstance(op, sim.AttentionOp) and op.flash:
        b, sq, hq, _ = sim.shape_of(op.q)
        return 4 * b * sq * hq
    return 0


def transient_bytes(op: Operation) -> int:
    """Scratch an op holds only while it runs: a non-flash attention's scores
    (before softmax); a non-flash attention gradient's dP and dS, plus the
    probabilities it recomputed when its forward is recomputed."""
    if isinstance(op, sim.AttentionOp) and not op.flash:
        elem = sim.element_bytes(op.q.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
        return int(score_elements(op) * elem)
    if isinstance(op, sim.AttentionGradOp) and not op.flash:
        elem = sim.element_bytes(op.q.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
        scratch = 3 if recompute_kind(op) is not None else 2
        return int(scratch * score_elements(op) * elem)
    return 0


MODEL_STATE_CALLEES = sim.DATA_PARALLEL_CALLEES
"""The `data-parallel` pass's packing ops: views into Megatron-style contiguous
gradient and parameter buffers, whose bytes are model states, not activations."""


def is_model_state_buffer(op: Operation) -> bool:
    """Whether the op's results live in the model-state (or data-parallel
    communication) buffers: a data-parallel packing op, or a collective over the
    `dp` axis (gradient buckets reduced, parameter shards gathered)."""
    if isinstance(op, sim.GenericOp):
        return op.callee.data in MODEL_STATE_CALLEES
    if isinstance(op, coll.CollectiveOp):
        return "dp" in op.axis_names()
    return False


def saved_source(value: SSAValue) -> SSAValue:
    """The forward value a backward value is a saved copy of: follow repeat
    slices to the stacked operand, phase results to what the phase yields,
    stacked repeat results to what the body yields, and views to what they view."""
    while True:
        if isinstance(value, BlockArgument):
            rep = value.owner.parent_op()
            if isinstance(rep, sim.RepeatOp) and value.index >= len(rep.iter_init):
                value = rep.slices[value.index - len(rep.iter_init)]
                continue
            return value
        assert isinstance(value, OpResult)
        op = value.op
        if isinstance(op, sim.PhaseOp):
            value = yielded(op.body.block)[value.index]
            continue
        if isinstance(op, sim.RepeatOp) and value.index >= len(op.iter_init):
            value = yielded(op.body.block)[value.index]
            continue
        src = alias_source(value)
        if src is None:
            return value
        value = src


def yielded(block: Block) -> tuple[SSAValue, ...]:
    """The values a phase, repeat or stage body yields (its terminator's operands)."""
    term = block.last_op
    assert isinstance(term, sim.YieldOp)
    return tuple(term.values)
