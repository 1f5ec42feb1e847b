"""Translate an aten-level FX graph (one traced part of a model) into sim ops.

Each aten op maps to a named sim op (matmul, attention, embedding, softmax,
reduce, elementwise, moe_*, kv_cache_*), to nothing (views and layout ops: they
move no data), or to `sim.generic` carrying its FLOPs and bytes. Every mapping is
counted in an `ImportSummary`, so nothing is dropped silently.

Views are resolved lazily: a view node is remembered as (source value, shape) and
materialised as a free `sim.view` only when a consumer needs that exact shape.
Matmuls absorb the transposes of their operands (`transpose_lhs/rhs`) and the
flattening of leading dims that `nn.Linear` does, so `x [b, s, h] @ W^T` stays one
op on the 3-D activation.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any

import torch
from torch import fx
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ComplexType,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.parallel.mesh import MESH
from charon_ir.parallel.sharding.layout import reshape_groups

_ELEMENT_TYPES: dict[torch.dtype, Callable[[], Attribute]] = {
    torch.bfloat16: BFloat16Type,
    torch.float16: Float16Type,
    torch.float32: Float32Type,
    torch.float64: Float64Type,
    torch.int64: lambda: i64,
    torch.int32: lambda: IntegerType(32),
    torch.int16: lambda: IntegerType(16),
    torch.int8: lambda: IntegerType(8),
    torch.uint8: lambda: IntegerType(8),
    torch.bool: lambda: i1,
    # rotary tables as complex numbers (DeepSeek-V2's freqs_cis)
    torch.complex64: lambda: ComplexType(Float32Type()),
    torch.complex128: lambda: ComplexType(Float64Type()),
}


def tensor_type(shape: Sequence[int], dtype: torch.dtype) -> TensorType:
    return TensorType(_ELEMENT_TYPES[dtype](), [int(d) for d in shape])


def type_of(t: torch.Tensor) -> TensorType:
    return tensor_type(tuple(t.shape), t.dtype)


# aten ops that move no data: they map to nothing (or to a free sim.view)
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "permute",
    "expand", "unsqueeze", "squeeze", "slice", "select", "alias", "detach", "clone",
    "contiguous", "as_strided", "narrow", "lift_fresh_copy", "lift_fresh", "view_as",
    "view_as_complex", "view_as_real",
    "expand_as", "split", "split_with_sizes", "unbind", "chunk", "unflatten", "flatten",
    "diagonal", "_unsafe_view_copy", "view_copy", "permute_copy", "t_copy",
    "transpose_copy", "expand_copy", "squeeze_copy", "unsqueeze_copy", "slice_copy",
})

# aten op -> sim.elementwise kind
ELEMENTWISE_KINDS: dict[str, sim.ElementwiseKind] = {aten: sim.ElementwiseKind(kind) for aten, kind in {
    "add": "add", "sub": "sub", "rsub": "sub", "mul": "mul", "div": "div", "neg": "neg",
    "exp": "exp", "rsqrt": "rsqrt", "pow": "pow", "relu": "relu", "silu": "silu",
    "gelu": "gelu", "tanh": "tanh", "sigmoid": "sigmoid", "where": "where",
    "masked_fill": "where", "threshold_backward": "where", "silu_backward": "silu_grad",
    "gelu_backward": "gelu_grad", "tanh_backward": "tanh_grad",
    "sigmoid_backward": "sigmoid_grad", "_to_copy": "cast", "to": "cast",
    "_to_dtype": "cast", "copy": "copy", "sqrt": "sqrt", "log": "log", "abs": "abs",
    "reciprocal": "div", "clamp": "clamp", "clamp_min": "clamp", "clamp_max": "clamp",
    "maximum": "max", "minimum": "min", "eq": "compare", "ne": "compare", "gt": "compare",
    "lt": "compare", "ge": "compare", "le": "compare", "logical_not": "not",
    "logical_and": "and", "logical_or": "or", "bitwise_not": "not", "bitwise_and": "and",
    "bitwise_or": "or", "sign": "sign", "erf": "erf", "sin": "sin", "cos": "cos",
    "native_dropout_backward": "mul", "fill": "fill", "sum_to_size": "add",
}.items()}

REDUCE_KINDS: dict[str, sim.ReduceKind] = {
    "sum": sim.ReduceKind.SUM, "mean": sim.ReduceKind.MEAN, "amax": sim.ReduceKind.MAX, "amin": sim.ReduceKind.MIN,
}

# ops that create a tensor from nothing but shapes
FACTORY_OPS = frozenset({
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
    "new_zeros", "new_ones", "new_full", "new_empty", "arange", "scalar_tensor",
    "empty_strided", "new_empty_strided",
})

# generic ops that only move data
ZERO_FLOP_GENERICS = frozenset({
    "cat", "stack", "slice_backward", "select_backward", "gather", "scatter", "index",
    "index_select", "index_put", "one_hot", "constant_pad_nd", "repeat", "embedding_dense_backward",
    "scatter_add", "index_add", "masked_scatter", "diagonal_backward", "expand_backward",
})


GATHERING_GENERICS: dict[str, int] = {"nll_loss_forward": 0, "nll_loss2d_forward": 0}
"""aten ops that read one element per row of one input (the input named by its
index: the target class's log-probability), not the whole row: its bytes are
one element per row (the shipped H100 kernel timings read 0.02x a whole-row
price)."""

# FLOPs per element of the first input, for generic ops whose count is not one
# per output element (softmax-like: max, subtract, exp, sum, divide)
GENERIC_FLOPS_PER_INPUT_ELEMENT: dict[str, float] = {
    "_log_softmax": 5.0,
    "_log_softmax_backward_data": 3.0,
    "_softmax_backward_data": 3.0,
    "native_layer_norm_backward": 14.0,  # twice the forward's 7 (sim.norm "layer")
    "native_group_norm_backward": 14.0,
}


@dataclass
class ImportSummary:
    """How each aten op of the traced graphs was mapped, by bucket and op name."""

    named: Counter[str] = field(default_factory=Counter)
    free: Counter[str] = field(default_factory=Counter)
    generic: Counter[str] = field(default_factory=Counter)

    def merge(self, other: ImportSummary) -> None:
        self.named.update(other.named)
        self.free.update(other.free)
        self.generic.update(other.generic)

    def lines(self) -> list[str]:
        def fmt(c: Counter[str]) -> str:
            return ", ".join(f"{k} x{v}" for k, v in sorted(c.items())) or "none"

        return [
            f"named sim ops: {fmt(self.named)}",
            f"free (views and layout, no sim op): {fmt(self.free)}",
            f"sim.generic (priced from FLOPs/bytes estimates): {fmt(self.generic)}",
        ]


@dataclass
class Lazy:
    """An fx value: `base` viewed as `shape`. `kind` says how it relates to base:
    "same" (identical), "t" (last two dims swapped), "expand" (broadcast of base),
    "view" (anything else)."""

    base: SSAValue
    shape: tuple[int, ...]
    kind: str = "same"
    label: str = "view"
    materialized: SSAValue | None = None
    reshape_only: bool = True
    """Only reshapes (no transpose, slice, broadcast) between base and this value."""
    transpose_of: Lazy | None = None
    """When this value is the last-two-dims transpose of another fx value."""
    dims: tuple[frozenset[int], ...] | None = None
    """Which dims of `base` each dim is made of (None: not known, or not needed
    because only reshapes lie between); kept through reshapes and permutations
    so a `sim.view` that permutes can say so."""

    def dim_sources(self) -> tuple[frozenset[int], ...] | None:
        """`dims`, or what a plain reshape of `base` gives (None: not a reshape)."""
        if self.dims is not None:
            return self.dims
        return _reshape_dims(_shape(self.base), self.shape, _identity_dims(len(_shape(self.base))))


RESHAPES = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "detach", "alias", "clone",
    "contiguous", "lift_fresh_copy", "lift_fresh", "unsqueeze", "squeeze", "flatten",
    "unflatten", "view_as",
})
"""View ops that keep the row-major order of the elements."""


def _identity_dims(rank: int) -> tuple[frozenset[int], ...]:
    return tuple(frozenset([i]) for i in range(rank))


def _reshape_dims(
    src: tuple[int, ...], dst: tuple[int, ...], before: tuple[frozenset[int], ...]
) -> tuple[frozenset[int], ...] | None:
    """Dim sources after reshaping `src` (whose dims come from `before`) to `dst`."""
    if src == dst:
        return before
    groups = reshape_groups(src, dst) if prod(src) == prod(dst) else None
    if groups is None:
        return None
    out: list[frozenset[int]] = [frozenset()] * len(dst)
    for gi, gj in groups:
        merged = frozenset().union(*(before[i] for i in gi))
        for j in gj:
            out[j] = merged
    return tuple(out)


def _view_dims(node: fx.Node, name: str, src: Lazy, shape: tuple[int, ...]) -> tuple[frozenset[int], ...] | None:
    """The base dims each dim of `node`'s result is made of, or None when `name`
    does more than reshape or permute (a slice, a broadcast)."""
    before = src.dim_sources()
    rank = len(shape)
    if before is None:
        return None
    if name in RESHAPES:
        return _reshape_dims(src.shape, shape, before)
    if name == "t":
        return tuple(reversed(before)) if rank == 2 else before
    if name == "transpose":
        a, b = (d % rank for d in node.args[1:3])
        out = list(before)
        out[a], out[b] = out[b], out[a]
        return tuple(out)
    if name == "permute":
        return tuple(before[d % rank] for d in node.args[1])
    if name in ("slice", "narrow", "expand", "expand_as") and len(before) == rank:
        return before  # the same dims, some shorter (or broadcast)
    if name == "select" and len(before) == rank + 1:
        d = node.args[1] % (rank + 1)
        return before[:d] + before[d + 1:]
    return None


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]


def _io_bytes(values: Sequence[SSAValue]) -> float:
    return float(sum(sim.tensor_bytes(v) for v in values if isinstance(v.type, TensorType)))


def _broadcasts(src: Sequence[int], dst: Sequence[int]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s == d or s == 1 for s, d in zip(reversed(src), reversed(dst)))


class GraphConverter:
    """Appends the sim ops of one FX graph to a block."""

    def __init__(self, block: Block, summary: ImportSummary):
        self.block = block
        self.summary = summary
        self.env: dict[fx.Node, Any] = {}

    # -- plumbing ---------------------------------------------------------

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def bind(self, node: fx.Node, value: SSAValue | Lazy | None) -> None:
        if isinstance(value, SSAValue):
            value = Lazy(value, _shape(value))
        self.env[node] = value

    def lazy(self, arg: Any) -> Lazy:
        entry = self.env[arg]
        assert isinstance(entry, Lazy), f"{arg} is not a tensor"
        return entry

    def value(self, arg: Any) -> SSAValue:
        """`arg` as an SSA value of exactly its traced shape."""
        return self.materialize(self.lazy(arg))

    def materialize(self, entry: Lazy) -> SSAValue:
        if entry.kind == "same" or entry.shape == _shape(entry.base) and entry.kind != "t" and (
            entry.dims is None or entry.dims == _identity_dims(len(entry.shape))
        ):
            return entry.base
        if entry.materialized is None:
            base_type = entry.base.type
            assert isinstance(base_type, TensorType)
            result_type = TensorType(base_type.element_type, list(entry.shape))
            if prod(entry.shape) == prod(_shape(entry.base)):
                permutes = not entry.reshape_only and entry.dims is not None
                op = sim.ViewOp(entry.base, result_type, entry.dims if permutes else None)
            else:  # a slice or broadcast view: free, but the element count changes
                permutes = entry.dims is not None and entry.dims != _identity_dims(len(entry.shape))
                op = sim.GenericOp(f"aten.{entry.label}", [entry.base], [result_type], 0.0, 0.0,
                                   view_dims=entry.dims if permutes else None)
            self.add(op)
            entry.materialized = op.results[0]
        return entry.materialized

    @staticmethod
    def meta(node: fx.Node) -> Any:
        return node.meta["val"]

    # -- driver -----------------------------------------------------------

    def run(self, graph: fx.Graph, inputs: dict[str, SSAValue | Lazy | None]) -> list[Lazy | None]:
        """Convert `graph` with its placeholders bound by name; returns the outputs."""
        outputs: list[Lazy | None] = []
        for node in graph.nodes:
            if node.op == "placeholder":
                self.bind(node, inputs[node.name])
            elif node.op == "output":
                results = node.args[0]
                for arg in results if isinstance(results, (list, tuple)) else [results]:
                    outputs.append(self.env.get(arg) if isinstance(arg, fx.Node) else None)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "get_attr" and isinstance(node.meta.get("val"), torch.Tensor):
                self.constant(node)
            else:
                raise NotImplementedError(f"fx node kind {node.op} ({node.target})")
        return outputs

    def call(self, node: fx.Node) -> None:
        target = node.target
        if target is operator.getitem:
            src, index = node.args
            entry = self.env[src]
            self.env[node] = entry[index] if isinstance(entry, (list, tuple)) else entry
            return
        if not isinstance(target, torch._ops.OpOverload):
            raise NotImplementedError(f"call to {target}")
        name = target.overloadpacket.__name__
        full = f"{target.namespace}.{name}"
        if target.namespace == "charon":
            self.summary.named[full] += 1
            getattr(self, f"on_{name}")(node)
            return
        if name in VIEW_OPS:
            self.summary.free[full] += 1
            self.on_view(node, name)
            return
        handler = getattr(self, f"on_{name}", None)
        if handler is not None and handler(node) is not False:
            self.summary.named[full] += 1
            return
        if name in ELEMENTWISE_KINDS and self.elementwise(node, ELEMENTWISE_KINDS[name]):
            self.summary.named[full] += 1
            return
        if name in REDUCE_KINDS and self.reduce(node, REDUCE_KINDS[name]):
            self.summary.named[full] += 1
            return
        self.summary.generic[full] += 1
        self.generic(node, full, zero_flops=name in ZERO_FLOP_GENERICS or name in FACTORY_OPS,
                     no_inputs=name in FACTORY_OPS)

    def constant(self, node: fx.Node) -> None:
        """A tensor the traced code built from Python values (Falcon's index
        list): read from memory, computed by nothing."""
        t = type_of(self.meta(node))
        self.summary.generic["constant"] += 1
        op = self.add(sim.GenericOp("constant", [], [t], 0.0, float(sim.tensor_bytes(t))))
        self.bind(node, op.results[0])

    # -- views ------------------------------------------------------------

    def on_view(self, node: fx.Node, name: str) -> None:
        val = self.meta(node)
        if isinstance(val, (list, tuple)):  # split / unbind / chunk
            src = self.lazy(node.args[0])
            self.env[node] = [
                Lazy(src.base, tuple(v.shape), "view", name) for v in val
            ]
            return
        src = self.lazy(node.args[0])
        shape = tuple(val.shape)
        if name in ("detach", "alias", "clone", "contiguous", "lift_fresh_copy", "lift_fresh") or (
            name in ("view", "_unsafe_view", "reshape") and shape == src.shape
        ):
            kind = src.kind
        elif name in ("t", "transpose", "permute") and self._swaps_last_two(node, name, len(shape)):
            kind = {"same": "t", "t": "same"}.get(src.kind, "view")
        elif name in ("expand", "expand_as") and src.kind in ("same", "expand"):
            kind = "expand"
        else:
            kind = "view"
        if kind == "same" and shape != _shape(src.base):
            kind = "view"
        swaps = name in ("t", "transpose", "permute") and self._swaps_last_two(node, name, len(shape))
        reshape_only = src.reshape_only and name in RESHAPES
        self.env[node] = Lazy(src.base, shape, kind, name, reshape_only=reshape_only,
                              transpose_of=src if swaps else None,
                              dims=None if reshape_only else _view_dims(node, name, src, shape))

    @staticmethod
    def _swaps_last_two(node: fx.Node, name: str, rank: int) -> bool:
        if name == "t":
            return rank == 2
        if name == "transpose":
            dims = sorted(d % rank for d in node.args[1:3])
            return rank >= 2 and dims == [rank - 2, rank - 1]
        perm = [d % rank for d in node.args[1]]
        return perm == [*range(rank - 2), rank - 1, rank - 2]

    # -- named ops --------------------------------------------------------

    def _matmul(self, node: fx.Node, lhs_arg: Any, rhs_arg: Any) -> SSAValue:
        out = self.meta(node)
        lhs_e, rhs_e = self.lazy(lhs_arg), self.lazy(rhs_arg)
        transpose_lhs = transpose_rhs = False
        if rhs_e.kind == "same":
            rhs = rhs_e.base
        elif rhs_e.kind == "t":
            rhs, transpose_rhs = rhs_e.base, True
        elif rhs_e.transpose_of is not None:
            rhs, transpose_rhs = self.materialize(rhs_e.transpose_of), True
        else:
            rhs = self.materialize(rhs_e)
        lhs_base_shape = _shape(lhs_e.base)
        if lhs_e.kind == "same":
            lhs = lhs_e.base
            result_shape = tuple(out.shape)
        elif lhs_e.kind == "t" and len(lhs_e.shape) == len(lhs_base_shape):
            lhs, transpose_lhs = lhs_e.base, True
            result_shape = tuple(out.shape)
        elif lhs_e.transpose_of is not None:
            # a weight gradient: (dY viewed as [tokens, out])^T x X
            lhs, transpose_lhs = self.materialize(lhs_e.transpose_of), True
            result_shape = tuple(out.shape)
        elif (
            lhs_e.kind == "view" and lhs_e.reshape_only and len(lhs_e.shape) == 2
            and len(_shape(rhs)) == 2 and len(lhs_base_shape) > 2
            and lhs_base_shape[-1] == lhs_e.shape[-1]
        ):
            # nn.Linear flattens [b, s, h] to [b*s, h]: keep the 3-D activation
            lhs = lhs_e.base
            result_shape = (*lhs_base_shape[:-1], out.shape[-1])
        elif lhs_e.kind == "view" and lhs_e.reshape_only and len(lhs_e.shape) == 2 and len(_shape(rhs)) == 2 and (
            batch_dims := self._leading_dims(lhs_base_shape, lhs_e.shape[0])
        ):
            # [b, s, heads, d] viewed as [b*s, heads*d]: view it as [b, s, heads*d]
            # instead, so the matmul keeps the token dims
            lhs_type = lhs_e.base.type
            assert isinstance(lhs_type, TensorType)
            view = self.add(sim.ViewOp(lhs_e.base, TensorType(lhs_type.element_type, [*batch_dims, lhs_e.shape[1]])))
            lhs = view.results[0]
            result_shape = (*batch_dims, out.shape[-1])
        else:
            lhs = self.materialize(lhs_e)
            result_shape = tuple(out.shape)
        op = self.add(sim.MatmulOp(lhs, rhs, tensor_type(result_shape, out.dtype), transpose_lhs, transpose_rhs))
        self.env[node] = Lazy(op.results[0], tuple(out.shape), "same" if result_shape == tuple(out.shape) else "view")
        return op.results[0]

    @staticmethod
    def _leading_dims(shape: tuple[int, ...], rows: int) -> tuple[int, ...] | None:
        """The leading dims of `shape` whose product is `rows`, when there are 2 or more."""
        acc = 1
        for i, d in enumerate(shape):
            if acc == rows and i >= 2:
                return shape[:i]
            acc *= d
            if acc > rows:
                return None
        return None

    def on_mm(self, node: fx.Node) -> None:
        self._matmul(node, node.args[0], node.args[1])

    def on_bmm(self, node: fx.Node) -> None:
        self._matmul(node, node.args[0], node.args[1])

    def on_addmm(self, node: fx.Node) -> None:
        bias, lhs, rhs = node.args[:3]
        product = self._matmul(node, lhs, rhs)
        out_type = product.type
        bias_v = self.value(bias)
        op = self.add(sim.ElementwiseOp(sim.ElementwiseKind.ADD, [product, bias_v], out_type))
        entry = self.env[node]
        self.env[node] = Lazy(op.results[0], entry.shape, entry.kind)

    def on_embedding(self, node: fx.Node) -> None:
        table, ids = self.value(node.args[0]), self.value(node.args[1])
        op = self.add(sim.EmbeddingOp.build(operands=[table, ids], result_types=[type_of(self.meta(node))]))
        self.bind(node, op.results[0])

    def on__softmax(self, node: fx.Node) -> bool:
        x = self.value(node.args[0])
        out = self.meta(node)
        if type_of(out) != x.type:
            return False
        dim = node.args[1] % len(out.shape)
        op = self.add(sim.SoftmaxOp.build(operands=[x], result_types=[x.type], properties={"dim": IntegerAttr(dim, 64)}))
        self.bind(node, op.results[0])
        return True

    def on_native_layer_norm(self, node: fx.Node) -> bool:
        x = self.value(node.args[0])
        weight, bias = (node.args[2:4] + (None, None))[:2] if len(node.args) > 2 else (None, None)
        if not isinstance(weight, fx.Node) or len(node.args[1]) != 1:
            return False
        out, mean, rstd = self.meta(node)
        norm = self.add(sim.NormOp(sim.NormKind.LAYER, x, self.value(weight)))
        result = norm.results[0]
        if isinstance(bias, fx.Node):
            result = self.add(sim.ElementwiseOp(sim.ElementwiseKind.ADD, [result, self.value(bias)], x.type)).results[0]
        # mean and 1/std are by-products of the norm kernel, kept for the backward:
        # they cost only their own (small) writes
        stats_types = [type_of(mean), type_of(rstd)]
        stats = self.add(sim.GenericOp(
            sim.GenericCallee.LAYER_NORM_STATS, [x], stats_types, 0.0, sum(sim.tensor_bytes(t) for t in stats_types),
        ))
        self.env[node] = [Lazy(result, _shape(result)), *(Lazy(r, _shape(r)) for r in stats.results)]
        return True

    def on_topk(self, node: fx.Node) -> bool:
        x = self.value(node.args[0])
        k = node.args[1]
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", -1)
        values, indices = self.meta(node)
        if dim % len(values.shape) != len(values.shape) - 1:
            return False
        op = self.add(sim.TopKOp(x, k, type_of(values), type_of(indices)))
        self.env[node] = [Lazy(r, _shape(r)) for r in op.results]
        return True

    def elementwise(self, node: fx.Node, kind: sim.ElementwiseKind) -> bool:
        out = self.meta(node)
        if not isinstance(out, torch.Tensor):
            return False
        out_shape = tuple(out.shape)
        inputs: list[SSAValue] = []
        for arg in [*node.args, *node.kwargs.values()]:
            if isinstance(arg, fx.Node) and isinstance(self.env.get(arg), Lazy):
                entry = self.env[arg]
                if entry.kind == "expand" and _broadcasts(_shape(entry.base), out_shape):
                    inputs.append(entry.base)  # broadcasting reads the small tensor
                else:
                    inputs.append(self.materialize(entry))
        if not inputs:
            return False
        op = self.add(sim.ElementwiseOp(kind, inputs, type_of(out)))
        self.bind(node, op.results[0])
        return True

    def reduce(self, node: fx.Node, kind: sim.ReduceKind) -> bool:
        out = self.meta(node)
        x = self.value(node.args[0])
        rank = len(_shape(x))
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if dims is None or dims == []:
            dims = list(range(rank))
        elif isinstance(dims, int):
            dims = [dims]
        dims = sorted({d % rank for d in dims}) if rank else []
        if not dims:
            return False
        op = self.add(sim.ReduceOp(kind, x, dims, type_of(out)))
        self.bind(node, op.results[0])
        return True

    def generic(self, node: fx.Node, callee: str, zero_flops: bool = False, no_inputs: bool = False) -> None:
        val = self.meta(node)
        outs = list(val) if isinstance(val, (list, tuple)) else [val]
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        inputs: list[SSAValue] = []
        if not no_inputs:
            flat: list[Any] = []
            fx.node.map_arg((node.args, node.kwargs), flat.append)
            for arg in flat:
                if isinstance(self.env.get(arg), Lazy):
                    inputs.append(self.value(arg))
        result_types = [type_of(t) for t in tensors]
        out_elems = sum(t.numel() for t in tensors)
        flops = 0.0 if zero_flops else float(out_elems)
        per_input = GENERIC_FLOPS_PER_INPUT_ELEMENT.get(callee.split(".", 1)[-1])
        if per_input is not None and inputs:
            flops = per_input * sim.numel(inputs[0])
        bytes_ = _io_bytes(inputs) + sum(sim.tensor_bytes(t) for t in result_types)
        gathered = GATHERING_GENERICS.get(callee.split(".", 1)[-1])
        if gathered is not None and gathered < len(inputs):
            rows_of = inputs[gathered].type
            assert isinstance(rows_of, TensorType)
            row = rows_of.get_shape()[-1] if rows_of.get_shape() else 1
            bytes_ -= sim.tensor_bytes(inputs[gathered]) * (1 - 1 / max(1, row))
        op = self.add(sim.GenericOp(callee, inputs, result_types, flops, bytes_))
        results = iter(op.results)
        entries = [Lazy(next(results), tuple(o.shape)) if isinstance(o, torch.Tensor) else None for o in outs]
        self.env[node] = entries if isinstance(val, (list, tuple)) else entries[0]

    # -- charon custom ops --------------------------------------------------

    def on_attention(self, node: fx.Node) -> None:
        q, k, v = (self.value(a) for a in node.args[:3])
        causal = bool(node.args[3])
        window = int(node.args[4]) if len(node.args) > 4 else 0
        chunk = int(node.args[5]) if len(node.args) > 5 else 0
        op = self.add(sim.AttentionOp(q, k, v, type_of(self.meta(node)), causal=causal, window=window, chunk=chunk))
        self.bind(node, op.results[0])

    def on_attention_backward(self, node: fx.Node) -> None:
        named = dict(zip(("q", "k", "v", "out", "grad_out"), (self.value(a) for a in node.args[:5])))
        # operands go in the op's definition order, which need not be q, k, v, ...
        order = [name for name, _ in sim.AttentionGradOp.get_irdl_definition().operands]
        props: dict[str, Attribute] = {"causal": UnitAttr()} if node.args[5] else {}
        if len(node.args) > 6 and node.args[6]:
            props["window"] = IntegerAttr(int(node.args[6]), 64)
        if len(node.args) > 7 and node.args[7]:
            props["chunk"] = IntegerAttr(int(node.args[7]), 64)
        op = self.add(sim.AttentionGradOp.build(
            operands=[named[n] for n in order], result_types=[type_of(t) for t in self.meta(node)],
            properties=props,
        ))
        self.env[node] = [Lazy(r, _shape(r)) for r in op.results]

    def on_moe_dispatch(self, node: fx.Node) -> None:
        x, idx = self.value(node.args[0]), self.value(node.args[1])
        op = self.add(sim.MoeDispatchOp.build(operands=[x, idx], result_types=[type_of(self.meta(node))]))
        self.bind(node, op.results[0])

    def on_moe_combine(self, node: fx.Node) -> None:
        out, idx, w = (self.value(a) for a in node.args[:3])
        op = self.add(sim.MoeCombineOp.build(operands=[out, idx, [w]], result_types=[type_of(self.meta(node))]))
        self.bind(node, op.results[0])

    def on_moe_dispatch_backward(self, node: fx.Node) -> None:
        grad, idx = self.value(node.args[0]), self.value(node.args[1])
        op = self.add(sim.MoeCombineOp.build(operands=[grad, idx, []], result_types=[type_of(self.meta(node))]))
        self.bind(node, op.results[0])

    def on_moe_combine_backward(self, node: fx.Node) -> None:
        grad, expert_out, idx, w = (self.value(a) for a in node.args[:4])
        grad_out_t, grad_w_t = (type_of(t) for t in self.meta(node))
        dispatch = self.add(sim.MoeDispatchOp.build(operands=[grad, idx], result_types=[grad_out_t]))
        tokens_k = prod(_shape(idx))
        hidden = _shape(grad)[-1]
        weight_grad = self.add(sim.GenericOp(
            sim.GenericCallee.MOE_COMBINE_WEIGHT_GRAD, [expert_out, grad, idx], [grad_w_t],
            2.0 * tokens_k * hidden, _io_bytes([expert_out, grad, idx]) + sim.tensor_bytes(grad_w_t),
        ))
        self.env[node] = [Lazy(dispatch.results[0], _shape(dispatch.results[0])),
                          Lazy(weight_grad.results[0], _shape(weight_grad.results[0]))]

    # -- collectives of model code that parallelises itself ----------------

    def on_all_reduce(self, node: fx.Node) -> None:
        op = self.add(coll.AllReduceOp(self.value(node.args[0]), MESH, [str(node.args[1])]))
        self.bind(node, op.results[0])

    def on_all_gather(self, node: fx.Node) -> None:
        op = self.add(coll.AllGatherOp(self.value(node.args[0]), MESH, [str(node.args[1])],
                                       type_of(self.meta(node)), axis=IntegerAttr(int(node.args[2]), 64)))
        self.bind(node, op.results[0])

    def on_reduce_scatter(self, node: fx.Node) -> None:
        op = self.add(coll.ReduceScatterOp(self.value(node.args[0]), MESH, [str(node.args[1])],
                                           type_of(self.meta(node)), axis=IntegerAttr(int(node.args[2]), 64)))
        self.bind(node, op.results[0])

    def on_copy(self, node: fx.Node) -> bool:
        """A collective's result copied into the tensor it reduced in place or
        into the buffer the model code allocated for it (`dist.all_reduce(x)`,
        `all_gather_into_tensor(buffer, x)`, functionalized): the result itself,
        no copy kernel, and the unused buffer no op. Any other copy is one."""
        dst, src = node.args[0], node.args[1]
        source = self.lazy(src)
        val = self.meta(node)
        if not (isinstance(source.base.owner, coll.CollectiveOp) and source.shape == tuple(val.shape)
                and self.meta(src).dtype == val.dtype):
            return False
        buffer = self.lazy(dst).base.owner
        if (isinstance(buffer, sim.GenericOp) and buffer.callee.data in ("aten.empty", "aten.empty_like")
                and len(dst.users) == 1 and not buffer.results[0].uses):
            buffer.detach()
            buffer.erase()
            self.summary.generic[buffer.callee.data] -= 1
            if not self.summary.generic[buffer.callee.data]:
                del self.summary.generic[buffer.callee.data]
        self.env[node] = source
        return True

    def on_kv_cache_write(self, node: fx.Node) -> None:
        k, v = self.value(node.args[0]), self.value(node.args[1])
        self.add(sim.KVCacheWriteOp.build(operands=[k, v]))
        self.env[node] = None

    def on_kv_cache_read(self, node: fx.Node) -> None:
        k, v = self.value(node.args[0]), self.value(node.args[1])
        op = self.add(sim.KVCacheReadOp.build(operands=[k, v], result_types=[type_of(t) for t in self.meta(node)]))
        self.env[node] = [Lazy(r, _shape(r)) for r in op.results]
