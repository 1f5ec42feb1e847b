"""
The `coll` dialect: collectives over named axes of a device grid.

The vocabulary follows MLIR's `shard` dialect (a `grid` symbol, collectives naming
the grid and the axes they run over) with two differences that a simulator needs:
axes have names (`dp`, `pp`, `cp`, `ep`, `tp`), and the set includes all_gather,
reduce_scatter and all_to_all, which `xdsl.dialects.shard` lacks.

Tensor types are per-rank (local) shapes. A group is every rank that differs from
this one only in the named axes; its size is the product of those axes' sizes. A
collective over one axis may name a `subgroup`, the positions along that axis its
group keeps (`{subgroup = array<i64: 0, 3>}` on `["pp"]`: the first and last of 4
pipeline stages, Megatron-LM's embedding group).
Each op states the bytes it moves per rank under a ring algorithm
(`ring_bytes_per_rank`), the closed forms the cost engines and the property tests
check against.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    SymbolNameConstraint,
    I64,
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.dialects.shard import DimensionList
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, MemoryWriteEffect, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from charon_ir.dialects.sim import (
    HasShardingRule,
    OffStageOperand,
    ShardingRule,
    indexed_factors,
    shape_of,
    tensor_bytes,
)

AnyTensor = base(TensorType)


GRAD_SYNC = "coll.grad_sync"
"""On a sharding pass's all-reduce of a weight gradient's partial sums: the
data-parallel reduction folds it into its own, and an accumulating micro-batch
skips it (lower-to-events)."""


class CommunicationOffStage(HasCanonicalizationPatternsTrait):
    """A collective of an off-stage value is off-stage (`OffStageOperand`)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (OffStageOperand(communication=True),)


@irdl_op_definition
class GridOp(IRDLOperation):
    """A logical grid of devices with named axes, outermost first:
    `coll.grid @mesh(axes = ["dp", "pp", "tp"], shape = 4x2x8)`."""

    name = "coll.grid"

    sym_name = prop_def(SymbolNameConstraint())
    axes = prop_def(ArrayAttr[StringAttr])
    shape = prop_def(DenseArrayBase[I64])

    traits = traits_def(SymbolOpInterface())
    assembly_format = (
        "$sym_name `(` `axes` `=` $axes `,` `shape` `=` custom<DimensionList>($shape) `)`"
        " attr-dict"
    )
    custom_directives = (DimensionList,)

    def __init__(self, sym_name: str, axes: dict[str, int]):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "axes": ArrayAttr([StringAttr(a) for a in axes]),
                "shape": DenseArrayBase.from_list(i64, list(axes.values())),
            }
        )

    def axis_sizes(self) -> dict[str, int]:
        return {
            a.data: int(s)
            for a, s in zip(self.axes.data, self.shape.get_values(), strict=True)
        }

    def verify_(self) -> None:
        names = [a.data for a in self.axes.data]
        sizes = self.shape.get_values()
        if len(names) != len(sizes):
            raise VerifyException(
                f"{len(names)} axis names but {len(sizes)} sizes"
            )
        if len(set(names)) != len(names):
            raise VerifyException(f"axis names must be distinct, got {names}")
        if any(s < 1 for s in sizes):
            raise VerifyException(f"axis sizes must be >= 1, got {list(sizes)}")
        block = self.parent_block()
        first = next((o for o in block.ops if isinstance(o, GridOp)), self) if block is not None else self
        if first is not self:  # reported at the second grid: the passes and the interpreter read one
            raise VerifyException("a module holds one coll.grid")

    def num_devices(self) -> int:
        return prod(self.shape.get_values())


class CollectiveOp(IRDLOperation, HasShardingRule):
    """A collective over `grid_axes` of `grid`. Subclasses state their shape rule
    and their ring traffic per rank.

    A collective is communication the other ranks of its group observe, not a
    value computation: it stays when nothing in the IR reads its result
    (`MemoryWriteEffect`, so dead-code elimination keeps it). The passes insert
    collectives for traffic whose reader a one-step IR does not spell: the row
    statistics of a vocabulary-parallel cross-entropy, data parallelism's gradient
    reduce-scatter, ZeRO's all-gather of updated params that the next step reads;
    a send's and a recv's partners run in another stage's program. One that reads
    a value this pipeline stage does not hold (`sim.off_stage`) is not run here:
    its results are off-stage too (canonicalization, `OffStageOperand`)."""

    grid = prop_def(SymbolRefAttr)
    grid_axes = prop_def(ArrayAttr[StringAttr])
    subgroup = opt_prop_def(DenseArrayBase[I64])
    """Positions along the (single) axis the group keeps; absent: all of them."""

    traits = traits_def(MemoryWriteEffect(), CommunicationOffStage())
    irdl_options = (ParsePropInAttrDict(),)

    def lookup_grid(self) -> GridOp:
        op = SymbolTable.lookup_symbol(self, self.grid)
        if not isinstance(op, GridOp):
            raise VerifyException(f"grid {self.grid} is not a coll.grid in scope")
        return op

    def axis_names(self) -> list[str]:
        return [a.data for a in self.grid_axes.data]

    def subgroup_positions(self) -> tuple[int, ...]:
        """The `subgroup` positions, empty when the group is the whole axis."""
        return tuple(self.subgroup.get_values()) if self.subgroup is not None else ()

    def group_size(self) -> int:
        if self.subgroup is not None:
            return len(self.subgroup.get_values())
        sizes = self.lookup_grid().axis_sizes()
        return prod(sizes[a] for a in self.axis_names())

    def _verify_axes(self) -> int:
        sizes = self.lookup_grid().axis_sizes()
        names = self.axis_names()
        if not names:
            raise VerifyException("needs at least one grid axis")
        if len(set(names)) != len(names):
            raise VerifyException(f"grid axes must be distinct, got {list(names)}")
        for a in names:
            if a not in sizes:
                raise VerifyException(
                    f"axis '{a}' is not an axis of grid {self.grid} ({list(sizes)})"
                )
        if self.subgroup is not None:
            positions = self.subgroup_positions()
            if len(names) != 1:
                raise VerifyException(f"a subgroup takes exactly one grid axis, got {names}")
            if len(positions) < 2 or len(set(positions)) != len(positions) or not all(
                0 <= p < sizes[names[0]] for p in positions
            ):
                raise VerifyException(
                    f"subgroup must be 2 or more distinct positions along '{names[0]}' "
                    f"(0..{sizes[names[0]] - 1}), got {list(positions)}"
                )
            return len(positions)
        return prod(sizes[a] for a in names)

    def op_kind(self) -> str:
        return self.name.removeprefix("coll.")

    def result_shape_for(self, input_shape: Sequence[int], n: int) -> tuple[int, ...]:
        """The result shape for an input of `input_shape` over a group of `n`
        (the shape rule the op's verifier states): the input's, unless the op
        gathers, scatters or exchanges along an axis."""
        return tuple(input_shape)

    @abc.abstractmethod
    def payload_bytes(self) -> float:
        """The size S the closed forms are stated in (the full, unsplit buffer)."""

    @abc.abstractmethod
    def ring_bytes_per_rank(self) -> float:
        """Bytes each rank sends under a ring algorithm over a group of n."""

    def verify_(self) -> None:
        self._verify_axes()


class _UnaryCollective(CollectiveOp, abc.ABC):
    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    def __init__(
        self,
        input: SSAValue,
        grid: str,
        axes: list[str],
        result_type: Attribute | None = None,
        **props: Attribute,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type or input.type],
            properties={
                "grid": SymbolRefAttr(grid),
                "grid_axes": ArrayAttr([StringAttr(a) for a in axes]),
                **props,
            },
        )

    def sharding_rule(self) -> ShardingRule:
        """`([d..]) -> ([d..])`: a split over another grid axis is carried
        through; the dim the op concatenates or cuts over its own group is one
        factor all the same (its per-rank size scales with the op's)."""
        dims = indexed_factors("d", len(shape_of(self.input)))
        return ShardingRule((dims,), (dims,))

    def payload_bytes(self) -> float:
        return tensor_bytes(self.input)

    def ring_bytes_per_rank(self) -> float:
        """(n - 1) / n of the buffer: each rank passes on every other rank's
        part once (all_gather, reduce_scatter, all_to_all; an all_reduce is two
        such passes, a broadcast forwards the whole buffer)."""
        n = self.group_size()
        return (n - 1) / n * self.payload_bytes()


class _SameTypeCollective(_UnaryCollective, abc.ABC):
    T: ClassVar = VarConstraint("T", AnyTensor)
    input = operand_def(T)
    result = result_def(T)

    assembly_format = "$input `on` $grid $grid_axes attr-dict `:` type($input)"


@irdl_op_definition
class AllReduceOp(_SameTypeCollective):
    """Sum (or `reduction`) of `input` over the group, result on every rank."""

    name = "coll.all_reduce"

    def ring_bytes_per_rank(self) -> float:
        n = self.group_size()
        return 2.0 * (n - 1) / n * self.payload_bytes()


@irdl_op_definition
class BroadcastOp(_SameTypeCollective):
    """Copy `input` of the group's first rank to every rank of the group."""

    name = "coll.broadcast"

    def ring_bytes_per_rank(self) -> float:
        # a pipelined ring forwards the whole buffer once per rank
        return self.payload_bytes() if self.group_size() > 1 else 0.0


class _AxisCollective(_UnaryCollective, abc.ABC):
    axis = prop_def(IntegerAttr[I64])

    assembly_format = (
        "$input `on` $grid $grid_axes `axis` $axis attr-dict `:` type($input) `->` type($result)"
    )

    def _check_axis(self) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        x, r = shape_of(self.input), shape_of(self.result)
        a = self.axis.value.data
        if not 0 <= a < len(x):
            raise VerifyException(f"axis {a} out of range for rank {len(x)}")
        if len(r) != len(x):
            raise VerifyException("input and result must have the same rank")
        return x, r, a


@irdl_op_definition
class AllGatherOp(_AxisCollective):
    """Concatenate every rank's `input` along `axis`: result dim = n x input dim."""

    name = "coll.all_gather"

    def verify_(self) -> None:
        n = self._verify_axes()
        x, r, a = self._check_axis()
        want = self.result_shape_for(x, n)
        if r != want:
            raise VerifyException(
                f"result shape must be {list(want)} (axis {a} x group size {n}), got {list(r)}"
            )

    def result_shape_for(self, input_shape: Sequence[int], n: int) -> tuple[int, ...]:
        a = self.axis.value.data
        return tuple(size * n if i == a else size for i, size in enumerate(input_shape))

    def payload_bytes(self) -> float:
        return tensor_bytes(self.result)


@irdl_op_definition
class ReduceScatterOp(_AxisCollective):
    """Sum over the group, each rank keeping its 1/n slice along `axis`."""

    name = "coll.reduce_scatter"

    def verify_(self) -> None:
        n = self._verify_axes()
        x, r, a = self._check_axis()
        if x[a] % n:
            raise VerifyException(
                f"input dim {a} ({x[a]}) is not divisible by the group size {n}"
            )
        want = self.result_shape_for(x, n)
        if r != want:
            raise VerifyException(
                f"result shape must be {list(want)} (axis {a} / group size {n}), got {list(r)}"
            )


    def result_shape_for(self, input_shape: Sequence[int], n: int) -> tuple[int, ...]:
        a = self.axis.value.data
        return tuple(size // n if i == a else size for i, size in enumerate(input_shape))


@irdl_op_definition
class AllToAllOp(_UnaryCollective):
    """Split `input` along `split_axis` into n blocks, send block j to rank j, and
    concatenate the received blocks along `concat_axis`."""

    name = "coll.all_to_all"

    split_axis = prop_def(IntegerAttr[I64])
    concat_axis = prop_def(IntegerAttr[I64])
    top_k = opt_prop_def(IntegerAttr[I64])
    """On MoE tokens (dim 0 of the input split, a dispatch, or of the result
    concatenated, a combine, counting experts): each token is there top_k times,
    and the dispatcher sends it once per destination rank and once per
    destination node (DeepEP, HybridEP), not once per copy."""
    groups = opt_prop_def(IntegerAttr[I64])
    groups_per_token = opt_prop_def(IntegerAttr[I64])
    """With `top_k`: group-limited routing, a token's experts within
    `groups_per_token` of `groups` contiguous groups of experts."""
    token_replicas = opt_prop_def(IntegerAttr[I64])
    """On MoE tokens: this many neighbouring ranks (tensor parallelism) hold the
    same tokens; each sends 1/token_replicas of them, and a dispatch all-gathers
    what arrives among them."""

    assembly_format = (
        "$input `on` $grid $grid_axes `split` $split_axis `concat` $concat_axis attr-dict"
        " `:` type($input) `->` type($result)"
    )

    def verify_(self) -> None:
        n = self._verify_axes()
        x, r = shape_of(self.input), shape_of(self.result)
        s, c = self.split_axis.value.data, self.concat_axis.value.data
        if not (0 <= s < len(x) and 0 <= c < len(x)) or len(r) != len(x):
            raise VerifyException("split/concat axes must index the input's dims")
        if x[s] % n:
            raise VerifyException(
                f"input dim {s} ({x[s]}) is not divisible by the group size {n}"
            )
        want = list(self.result_shape_for(x, n))
        if list(r) != want:
            raise VerifyException(f"result shape must be {want}, got {list(r)}")
        self._verify_route(n)

    def result_shape_for(self, input_shape: Sequence[int], n: int) -> tuple[int, ...]:
        shape = list(input_shape)
        shape[self.split_axis.value.data] //= n
        shape[self.concat_axis.value.data] *= n
        return tuple(shape)

    def routed_experts(self) -> int | None:
        """The experts of an all_to_all of MoE tokens: dim 0 of the input of a
        dispatch (split along it) or of the result of a combine (concatenated
        along it); None for any other all_to_all."""
        if self.split_axis.value.data == 0:
            return shape_of(self.input)[0]
        if self.concat_axis.value.data == 0:
            return shape_of(self.result)[0]
        return None

    def _verify_route(self, n: int) -> None:
        values = {name: getattr(self, name) for name in
                  ("top_k", "groups", "groups_per_token", "token_replicas")}
        given = {k: v.value.data for k, v in values.items() if v is not None}
        if not given:
            return
        if any(v < 1 for v in given.values()):
            raise VerifyException(f"routing attributes must be >= 1, got {given}")
        experts = self.routed_experts()
        if experts is None:
            raise VerifyException("routing attributes need the experts on dim 0 (split 0 or concat 0)")
        if ("groups" in given) != ("groups_per_token" in given) or ("groups" in given and "top_k" not in given):
            raise VerifyException("groups and groups_per_token come together, with top_k")
        if "top_k" in given and given["top_k"] > experts:
            raise VerifyException(f"top_k ({given['top_k']}) exceeds the experts ({experts})")
        if "groups" in given:
            g, pick = given["groups"], given["groups_per_token"]
            if experts % g or pick > g or given["top_k"] > pick * (experts // g):
                raise VerifyException(
                    f"groups ({g}) must divide the experts ({experts}) and groups_per_token "
                    f"({pick}) <= groups hold top_k ({given['top_k']}) experts"
                )


@irdl_op_definition
class SendOp(CollectiveOp):
    """Send `input` to the rank `shift` steps along the (single) grid axis."""

    name = "coll.send"

    input = operand_def(AnyTensor)
    shift = prop_def(IntegerAttr[I64])

    assembly_format = (
        "$input `on` $grid $grid_axes `shift` $shift attr-dict `:` type($input)"
    )

    def sharding_rule(self) -> None:
        """None: made by the pipeline pass, after the sharding passes (its peer
        runs in another stage's program)."""
        return None

    def verify_(self) -> None:
        _verify_point_to_point(self, self.shift.value.data)

    def payload_bytes(self) -> float:
        return tensor_bytes(self.input)

    def ring_bytes_per_rank(self) -> float:
        return self.payload_bytes()


def _verify_point_to_point(op: CollectiveOp, shift: int) -> None:
    size = op._verify_axes()
    if len(op.grid_axes.data) != 1:
        raise VerifyException("point-to-point ops take exactly one grid axis")
    if op.subgroup is not None:
        raise VerifyException("point-to-point ops take no subgroup (the shift names the peer)")
    if not 0 < abs(shift) < size:
        raise VerifyException(f"shift must be nonzero and within the axis ({size} ranks), got {shift}")


@irdl_op_definition
class RecvOp(CollectiveOp):
    """Receive a tensor from the rank `shift` steps along the (single) grid axis."""

    name = "coll.recv"

    result = result_def(AnyTensor)
    shift = prop_def(IntegerAttr[I64])

    assembly_format = "`on` $grid $grid_axes `shift` $shift attr-dict `:` type($result)"

    def sharding_rule(self) -> None:
        """None: made by the pipeline pass, after the sharding passes."""
        return None

    def verify_(self) -> None:
        _verify_point_to_point(self, self.shift.value.data)

    def payload_bytes(self) -> float:
        return tensor_bytes(self.result)

    def ring_bytes_per_rank(self) -> float:
        # the sender is charged; a receive moves nothing of its own
        return 0.0


Coll = Dialect(
    "coll",
    [
        GridOp,
        AllReduceOp,
        AllGatherOp,
        ReduceScatterOp,
        AllToAllOp,
        BroadcastOp,
        SendOp,
        RecvOp,
    ],
    [],
)
