"""
What identifies one measurement: the op kind, its variant (the properties that
change what runs: transposes, the elementwise kind, reduced dims, causality), the
shapes of its operands and results, and their element types. The device and the
torch version complete the database key (`store`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute

from charon_ir.dialects.sim import ComputeOp, GenericOp

# Elementwise kinds that take two tensors, or one and a scalar.
_BINARY_KINDS = frozenset({"add", "sub", "mul", "div", "pow", "max", "min", "compare", "and", "or"})

# Properties that restate what the operand types already say.
_REDUNDANT_PROPERTIES = frozenset({"operandSegmentSizes", "resultSegmentSizes"})


def int_list(attr: Attribute) -> list[int]:
    """The integers of an `array<i64: ...>` or `[...]` attribute."""
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    assert isinstance(attr, ArrayAttr)
    return [int(a.value.data) for a in attr.data]  # pyright: ignore


def _attr_text(attr: Attribute, where: str) -> str:
    """`attr` as key text. A type not named here is refused: its printed form
    (`str(attr)`) is no canonical text, and a change of it (an attribute made
    typed, a printer changed) would silently change every key of the database."""
    if isinstance(attr, DenseArrayBase):
        return "[" + ",".join(map(str, int_list(attr))) + "]"
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, EnumAttribute):  # an op kind: its value, as when it was a string
        return attr.data.value
    if isinstance(attr, IntegerAttr):
        return str(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(attr.value.data)
    if isinstance(attr, ArrayAttr):
        return "[" + ",".join(_attr_text(a, where) for a in attr.data) + "]"
    raise TypeError(f"profile key: {where} is a {type(attr).__name__} ({attr}), which has no key text: "
                    "give its type one in charon_ir/profile/key.py")


def variant_of(op: ComputeOp) -> str:
    """The op's properties as canonical text: `kind=silu`, `causal flash`, ..."""
    parts = []
    for name in sorted(op.properties):
        if name in _REDUNDANT_PROPERTIES:
            continue
        attr = op.properties[name]
        parts.append(name if isinstance(attr, UnitAttr) else f"{name}={_attr_text(attr, f'{op.name} property {name}')}")
    return " ".join(parts)


@dataclass(frozen=True)
class OpKey:
    kind: str
    """`op_kind()`: matmul, attention, elementwise, ..."""
    variant: str
    shapes: str
    """JSON list of the operand then result shapes."""
    dtypes: str
    """JSON list of the operand then result element types."""

    @staticmethod
    def of(op: ComputeOp) -> OpKey:
        values = [v for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)]
        return OpKey(
            op.op_kind(),
            variant_of(op),
            json.dumps([list(v.type.get_shape()) for v in values], separators=(",", ":")),  # pyright: ignore[reportAttributeAccessIssue]
            json.dumps([str(v.type.element_type) for v in values], separators=(",", ":")),  # pyright: ignore[reportAttributeAccessIssue]
        )

    @property
    def family(self) -> str:
        """What the predictor fits one model for: the kind, refined by the op's
        own `kind` property where it has one, and the result's element type
        (`elementwise[silu]:bf16`, `matmul:f32`): a kernel's rate differs by type."""
        dtypes = self.dtype_list()
        family = family_of(self.kind, self.variant) + (f":{dtypes[-1]}" if dtypes else "")
        if self.kind == "elementwise":
            shapes = self.shape_list()
            # a broadcast operand (a norm weight, RoPE's cos) changes the access
            # pattern, and a binary kind with one tensor input (x * 2) reads half
            # the bytes: each is a family of its own
            if any(prod(s) != prod(shapes[-1]) for s in shapes[:-1]):
                family += ":broadcast"
            elif len(shapes) == 2 and family_of(self.kind, self.variant).split("[")[-1].rstrip("]") in _BINARY_KINDS:
                family += ":scalar"
        return family

    def shape_list(self) -> list[list[int]]:
        return json.loads(self.shapes)

    def dtype_list(self) -> list[str]:
        return json.loads(self.dtypes)


def family_of(kind: str, variant: str) -> str:
    for part in variant.split(" "):
        if part.startswith("kind="):
            return f"{kind}[{part.removeprefix('kind=')}]"
    return kind


def kind_of_family(family: str) -> str:
    """`elementwise[silu]:bf16` -> `elementwise`; `aten.cat:f32` -> `aten.cat`."""
    return family.split(":")[0].split("[")[0]


def is_free_view(op: ComputeOp) -> bool:
    """A `sim.generic` that does no FLOPs and moves no bytes (a reshape or view
    kept for data flow): no kernel runs, so it costs 0 on every device."""
    return isinstance(op, GenericOp) and op.flops() == 0 and op.bytes_moved() == 0
