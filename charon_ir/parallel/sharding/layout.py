"""The vocabulary of sharding: how one value is laid out over a grid axis
(`Shard`), per-rank shapes, and retyping a value through the rewriter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, BlockArgument, SSAValue
from xdsl.rewriter import Rewriter

from charon_ir.dialects import sim


@dataclass(frozen=True)
class Shard:
    """How one value is laid out over the pass's grid axis."""

    dim: int | None = None
    """The split dim, None when whole on every rank."""
    factor: int = 1
    """Ways the dim is split (the axis size, or fewer for shared kv heads)."""
    partial: bool = False
    """Each rank holds a partial sum; the true value is the sum over the axis."""
    tag: str = ""

    @property
    def replicated(self) -> bool:
        return self.dim is None and not self.partial


REPLICATED = Shard()


def split(dim: int, factor: int, tag: str = "") -> Shard:
    return Shard(dim, factor, False, tag)


def shape(value: SSAValue) -> tuple[int, ...]:
    return sim.shape_of(value)


def with_shape(t: Attribute, new_shape: Sequence[int]) -> TensorType:
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, list(new_shape))


def retype(value: SSAValue, t: Attribute) -> SSAValue:
    """`value` with type `t`: through the rewriter, a new value takes its place
    and its uses (the old one is dropped, so hold on to the one returned); the
    value itself when it has that type already."""
    if value.type == t:
        return value
    return Rewriter.replace_value_with_new_type(value, t)


def reshape_groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """Minimal runs of dims of `a` and `b` with equal products (a reshape's
    structure), or None when the products do not line up."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        gi, gj = [], []
        pa = pb = 1
        if i < len(a):
            gi.append(i)
            pa = a[i]
            i += 1
        if j < len(b):
            gj.append(j)
            pb = b[j]
            j += 1
        while pa != pb:
            if pa < pb and i < len(a):
                gi.append(i)
                pa *= a[i]
                i += 1
            elif pb < pa and j < len(b):
                gj.append(j)
                pb *= b[j]
                j += 1
            else:
                return None
        groups.append((gi, gj))
    return groups


def weight_layouts(module: ModuleOp) -> dict[str, bool]:
    """Parameter name -> True when a forward matmul reads it as [out, in]
    (`transpose_rhs`, nn.Linear), False when as [in, out] (Conv1D)."""
    layouts: dict[str, bool] = {}
    for op in module.walk():
        if not isinstance(op, sim.MatmulOp):
            continue
        rhs = op.rhs
        if isinstance(rhs, BlockArgument) and isinstance(rhs.block.parent_op(), sim.RepeatOp):
            rhs = rhs.block.parent_op().operands[rhs.index]  # pyright: ignore[reportOptionalMemberAccess]
        if isinstance(rhs.owner, sim.ParamOp):
            layouts.setdefault(rhs.owner.sym_name.data, op.transpose_rhs is not None)
    return layouts
