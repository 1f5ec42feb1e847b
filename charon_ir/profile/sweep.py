"""
Shape variants of an op, for the predictor to fit on.

A model's own ops give a handful of shapes per kind; the predictor is asked about
the shapes a run uses but the profile did not (another sequence length, batch or
tensor-parallel split). So `charon profile` also measures each op with one
dimension scaled: the token dim of activations, and for a matmul each of M, N
and K in turn, keeping each dim's alignment (`scaled_dim`). A variant is the same op class with the same properties, rebuilt
on placeholder values of the new types and verified; one that does not verify is
dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.test import TestOp
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects.sim import (
    AttentionGradOp,
    AttentionOp,
    ComputeOp,
    ElementwiseOp,
    EmbeddingOp,
    MatmulOp,
    NormOp,
    OptimizerStepOp,
    ReduceOp,
    SoftmaxOp,
    shape_of,
)
from charon_ir.profile.key import int_list

Edit = list[tuple[SSAValue, int]]
"""(value, dim) pairs scaled together: one axis of the op."""

DEFAULT_FACTORS = (0.25, 0.5, 0.75, 1.5, 2.0, 3.0)


def _token_dim(shape: Sequence[int], skip: Sequence[int] = ()) -> int | None:
    """The dim a sweep scales: the largest dim but the last (the hidden or
    feature dim, fixed by the model), else the last; never a dim in `skip`.
    For [batch, seq, hidden] that is seq, for [tokens, hidden] tokens."""
    dims = [i for i, s in enumerate(shape) if s > 1 and i not in skip]
    leading = [i for i in dims if i != len(shape) - 1] or dims
    return max(leading, key=lambda i: shape[i], default=None)


def scalable_axes(op: ComputeOp) -> list[Edit]:
    """The independent axes of `op` a sweep scales, each as the dims it touches."""
    if isinstance(op, MatmulOp):
        ra, rb = len(shape_of(op.lhs)), len(shape_of(op.rhs))
        rc = len(shape_of(op.result))
        tl, tr = op.transpose_lhs is not None, op.transpose_rhs is not None
        m = [(op.lhs, ra - 1 if tl else ra - 2), (op.result, rc - 2)]
        n = [(op.rhs, rb - 2 if tr else rb - 1), (op.result, rc - 1)]
        k = [(op.lhs, ra - 2 if tl else ra - 1), (op.rhs, rb - 1 if tr else rb - 2)]
        return [m, n, k]
    if isinstance(op, AttentionOp | AttentionGradOp):
        if isinstance(op, AttentionOp):
            q_like, kv_like = [op.q, op.result], [op.k, op.v]
        else:
            q_like = [op.q, op.out, op.grad_out, op.grad_q]
            kv_like = [op.k, op.v, op.grad_k, op.grad_v]
        same_seq = shape_of(op.q)[1] == shape_of(op.k)[1]
        # prefill scales both sequences; decode (a few queries) only the kv cache
        return [[(v, 1) for v in (q_like if same_seq else []) + kv_like]]
    if isinstance(op, EmbeddingOp):
        ids = shape_of(op.ids)
        d = max(range(len(ids)), key=lambda i: ids[i], default=None)
        return [] if d is None else [[(op.ids, d), (op.result, d)]]
    if isinstance(op, NormOp):
        d = _token_dim(shape_of(op.input)[:-1])
        return [] if d is None else [[(op.input, d), (op.result, d)]]
    if isinstance(op, ElementwiseOp):
        out = shape_of(op.result)
        d = _token_dim(out)
        if d is None:
            return []
        edit: Edit = [(op.result, d)]
        for v in op.inputs:
            s = shape_of(v)
            aligned = d - (len(out) - len(s))
            if aligned >= 0 and s[aligned] == out[d]:
                edit.append((v, aligned))
        return [edit]
    if isinstance(op, ReduceOp):
        reduced = int_list(op.dims)
        x = shape_of(op.input)
        d = _token_dim(x, reduced)
        if d is None:
            return []
        kept = len(shape_of(op.result)) == len(x)
        return [[(op.input, d), (op.result, d if kept else d - sum(r < d for r in reduced))]]
    if isinstance(op, SoftmaxOp):
        d = _token_dim(shape_of(op.input), [op.dim.value.data])
        return [] if d is None else [[(op.input, d), (op.result, d)]]
    if isinstance(op, OptimizerStepOp):
        # each tensor's last dim: a stacked layer dim (first) is often tiny
        return [[(v, len(shape_of(v)) - 1) for v in (*op.params, *op.grads)]]
    return []


def rebuild(op: ComputeOp, shapes: Sequence[Sequence[int]]) -> ComputeOp | None:
    """`op` with new operand and result shapes (same element types and
    properties), or None if it does not verify."""
    values = [*op.operands, *op.results]
    types = [
        TensorType(v.type.element_type, s) if isinstance(v.type, TensorType) else v.type  # pyright: ignore[reportAttributeAccessIssue]
        for v, s in zip(values, shapes)
    ]
    n = len(op.operands)
    placeholders = [TestOp(result_types=[t]).results[0] for t in types[:n]]
    new = type(op).create(
        operands=placeholders, result_types=types[n:], properties=dict(op.properties)
    )
    try:
        new.verify_()
    except VerifyException:
        return None
    return new


ALIGNMENT_CAP = 32


def scaled_dim(dim: int, factor: float) -> int:
    """`dim * factor`, rounded to a multiple of the power of two `dim` is a
    multiple of (at most 32): models use aligned sizes, and kernels tile by
    them, so a ragged size would measure a padding penalty no model pays."""
    align = min(ALIGNMENT_CAP, dim & -dim) if dim > 0 else 1
    return max(align, round(dim * factor / align) * align)


def with_midpoints(factors: Sequence[float]) -> list[float]:
    """`factors` and 1, plus the geometric midpoint between each neighbouring pair."""
    points = sorted({*factors, 1.0})
    mids = [(a * b) ** 0.5 for a, b in zip(points, points[1:])]
    return sorted({*points, *mids} - {1.0})


def variants(op: ComputeOp, factors: Sequence[float] = DEFAULT_FACTORS) -> list[ComputeOp]:
    """`op` with each scalable axis scaled by each factor (the op itself
    excluded). An op with a single axis (all but matmul) is swept at the
    midpoints too, so its family gets enough sizes to interpolate across the
    steps a kernel takes where it changes tile size."""
    values = [*op.operands, *op.results]
    base = [list(shape_of(v)) for v in values]
    out: list[ComputeOp] = []
    axes = scalable_axes(op)
    if len(axes) == 1:
        factors = with_midpoints(factors)
    for edit in axes:
        for f in factors:
            shapes = [list(s) for s in base]
            for value, dim in edit:
                # a value used twice (attention's k and v) is scaled at both uses
                for i, v in enumerate(values):
                    if v is value:
                        shapes[i][dim] = scaled_dim(base[i][dim], f)
            if shapes == base:
                continue
            new = rebuild(op, shapes)
            if new is not None:
                out.append(new)
    return out
