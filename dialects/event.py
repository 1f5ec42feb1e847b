"""
The `event` dialect: what the hardware does, in order.

One `event.program` per rank class (a pipeline stage, say), never one per GPU. It
declares its streams (a compute stream, one lane per communication axis, and, when
the host's launches are modelled, a host stream) and holds events. An event runs on one stream for `duration_s` seconds, after the events it
names in `after(...)` and after the previous event of its stream (a stream runs its
events in program order, as a CUDA stream does). Every event yields a `!event.token`
that later events can wait on.

`event.loop` keeps repetition structured (layers, micro-batches): its body runs
`count` times; the body's block argument is the token the previous iteration
yielded (the loop's `init` token on the first one).
"""

from __future__ import annotations

import functools
import math

from typing import ClassVar

from xdsl.dialects.builtin import (
    SymbolNameConstraint,
    I64,
    ArrayAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import (
    HasParent,
    IsTerminator,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """The completion of an event."""

    name = "event.token"


Token = base(TokenType)


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """The events of one rank class; `ranks` GPUs run it. A pipeline stage's
    program names its `stage`; the program that feeds the step's tokens in
    states how many (`tokens`, for throughput); `recompute_flops` are the FLOPs
    per rank its step spends re-running the forward (recompute), which model
    FLOPs (MFU) leave out and hardware FLOPs count; on a cluster of several
    node kinds, `hardware` is the GPU (its ref) the stage runs on."""

    name = "event.program"

    sym_name = prop_def(SymbolNameConstraint())
    ranks = prop_def(IntegerAttr[I64])
    stage = opt_prop_def(IntegerAttr[I64])
    tokens = opt_prop_def(IntegerAttr[I64])
    recompute_flops = opt_prop_def(FloatAttr[Float64Type])
    hardware = opt_prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), NoTerminator(), SymbolTable())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name `ranks` $ranks attr-dict-with-keyword $body"

    def __init__(
        self,
        sym_name: str,
        ranks: int,
        body,
        stage: int | None = None,
        tokens: int | None = None,
        recompute_flops: float | None = None,
        hardware: str | None = None,
    ):
        properties: dict[str, Attribute] = {"sym_name": StringAttr(sym_name), "ranks": IntegerAttr(ranks, 64)}
        if stage is not None:
            properties["stage"] = IntegerAttr(stage, 64)
        if tokens is not None:
            properties["tokens"] = IntegerAttr(tokens, 64)
        if recompute_flops is not None:
            properties["recompute_flops"] = FloatAttr(float(recompute_flops), Float64Type())
        if hardware is not None:
            properties["hardware"] = StringAttr(hardware)
        super().__init__(properties=properties, regions=[body])

    def stage_index(self) -> int:
        """The pipeline stage the program runs (0 when it names none)."""
        return self.stage.value.data if self.stage is not None else 0

    def token_count(self) -> int:
        """Tokens the step feeds in through this program (0 when it states none)."""
        return self.tokens.value.data if self.tokens is not None else 0

    def recomputed_flops(self) -> float:
        return self.recompute_flops.value.data if self.recompute_flops is not None else 0.0

    def hardware_ref(self) -> str:
        """The GPU the program's ranks are, where not the target's ("" otherwise)."""
        return self.hardware.data if self.hardware is not None else ""

    def verify_(self) -> None:
        if self.ranks.value.data < 1:
            raise VerifyException(f"ranks must be >= 1, got {self.ranks.value.data}")
        for name in ("stage", "tokens"):
            count = self.properties.get(name)
            if isinstance(count, IntegerAttr) and count.value.data < 0:
                raise VerifyException(f"{name} must be >= 0, got {count.value.data}")
        if self.recompute_flops is not None and not 0 <= self.recompute_flops.value.data < math.inf:
            raise VerifyException(
                f"recompute_flops must be finite and >= 0, got {self.recompute_flops.value.data}"
            )
        if self.hardware is not None and not self.hardware.data:
            raise VerifyException("hardware must name a GPU")


class StreamKind(StrEnum):
    """What runs on a stream."""

    COMPUTE = "compute"
    """The GPU's kernels, one after another."""
    COMM = "comm"
    """Communications over the grid axes the stream names (NCCL's streams)."""
    HOST = "host"
    """The CPU thread that issues the GPU's kernels."""
    COPY = "copy"
    """The GPU's copy engines moving data to or from host memory (DMA over the
    host link): beside the kernels, taking none of their SMs."""


@irdl_attr_definition
class StreamKindAttr(EnumAttribute[StreamKind], SpacedOpaqueSyntaxAttribute):
    """`compute`, `comm` or `host`: an `event.stream`'s kind (`StreamKind`),
    `#event<stream_kind comm>` standing alone."""

    name = "event.stream_kind"


@irdl_op_definition
class StreamOp(IRDLOperation):
    """A stream: `compute`, `comm` with the grid axes it serves, `host`: the
    CPU thread that issues the GPU's kernels, one after another, or `copy`: the
    copy engines' transfers to and from host memory (with the axis their exposed
    time is reported under)."""

    name = "event.stream"

    sym_name = prop_def(SymbolNameConstraint())
    kind = prop_def(StreamKindAttr)
    axes = opt_prop_def(ArrayAttr[StringAttr])

    traits = traits_def(SymbolOpInterface(), HasParent(ProgramOp))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name $kind attr-dict"

    def __init__(self, sym_name: str, kind: StreamKind | str, axes: list[str] | None = None):
        props = {"sym_name": StringAttr(sym_name), "kind": StreamKindAttr(StreamKind(kind))}
        if axes:
            props["axes"] = ArrayAttr([StringAttr(a) for a in axes])
        super().__init__(properties=props)


# Attributes are immutable and verified when built; a lowering emits the same
# streams, labels and durations for every stage and micro-batch, so share them.
@functools.cache
def _symbol(name: str) -> SymbolRefAttr:
    return SymbolRefAttr(name)


@functools.cache
def _string(text: str) -> StringAttr:
    return StringAttr(text)


@functools.cache
def _seconds(value: float) -> FloatAttr:
    return FloatAttr(value, Float64Type())


@functools.cache
def _token_type() -> TokenType:
    return TokenType()


class EventOpBase(IRDLOperation):
    """An event on `stream`, lasting `duration_s`, after `deps`."""

    stream = prop_def(SymbolRefAttr)
    label = prop_def(StringAttr)
    duration_s = prop_def(FloatAttr[Float64Type])
    deps = var_operand_def(Token)
    token = result_def(TokenType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$label `on` $stream `duration` $duration_s (`after` `(` $deps^ `)`)? attr-dict"
    )

    engine = opt_prop_def(StringAttr)
    """The cost engine that priced the op this event runs (`#sim.cost`'s)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("engine",)
    """The optional properties this kind of event declares (printed in its
    attribute dictionary, in this order)."""

    def __init__(
        self,
        stream: str,
        label: str,
        duration_s: float,
        deps=(),
        **fields: Attribute,
    ):
        unknown = sorted(set(fields) - set(self.FIELDS))
        if unknown:
            raise VerifyException(f"'{self.name}' has no field {', '.join(unknown)} (fields: {', '.join(self.FIELDS)})")
        super().__init__(
            operands=[list(deps)],
            result_types=[_token_type()],
            properties={
                "stream": _symbol(stream),
                "label": _string(label),
                "duration_s": _seconds(float(duration_s)),
                **{k: fields[k] for k in self.FIELDS if k in fields},
            },
        )

    def flop_count(self) -> float:
        """FLOPs the event computes (a compute event's `flops`; 0 otherwise)."""
        return 0.0

    def byte_count(self) -> float:
        """Bytes per rank the event moves (a comm event's `bytes`; 0 otherwise)."""
        return 0.0

    def lookup_stream(self) -> StreamOp:
        op = SymbolTable.lookup_symbol(self, self.stream)
        if not isinstance(op, StreamOp):
            raise VerifyException(f"stream {self.stream} is not declared in this program")
        return op

    def verify_(self) -> None:
        if not 0 <= self.duration_s.value.data < math.inf:  # NaN fails too
            raise VerifyException(f"duration_s must be finite and >= 0, got {self.duration_s.value.data}")
        misplaced = sorted(set(self.attributes) & EVENT_FIELDS)
        if misplaced:
            raise VerifyException(
                f"'{self.name}' declares no {', '.join(misplaced)} (its fields: {', '.join(self.FIELDS)})"
            )
        for name, minimum in self.COUNTS:
            count = self.properties.get(name)
            if isinstance(count, IntegerAttr) and count.value.data < minimum:
                raise VerifyException(f"{name} must be >= {minimum}, got {count.value.data}")
        kind = self.lookup_stream().kind.data
        if kind != self.STREAM_KIND and kind not in self.ALSO_ON:
            wanted = " or ".join((self.STREAM_KIND, *self.ALSO_ON))
            raise VerifyException(
                f"'{self.name}' must run on a {wanted} stream, "
                f"{self.stream} is a {kind} stream"
            )

    STREAM_KIND: ClassVar[str] = ""
    ALSO_ON: ClassVar[tuple[str, ...]] = ()
    """Other stream kinds the event may run on."""
    COUNTS: ClassVar[tuple[tuple[str, int], ...]] = ()
    """Integer properties the interpreter reads, and their least value."""


@irdl_op_definition
class ComputeOp(EventOpBase):
    """A kernel on a compute stream, computing `flops`."""

    name = "event.compute"

    flops = opt_prop_def(IntegerAttr[I64])

    STREAM_KIND: ClassVar[str] = "compute"
    FIELDS: ClassVar[tuple[str, ...]] = ("engine", "flops")
    COUNTS: ClassVar[tuple[tuple[str, int], ...]] = (("flops", 0),)

    def flop_count(self) -> float:
        return float(self.flops.value.data) if self.flops is not None else 0.0


class Link(StrEnum):
    """The links a communication can cross (`event.comm`'s `link`)."""

    SCALE_UP = "scale-up"
    """Within a scale-up domain (NVLink)."""
    SCALE_OUT = "scale-out"
    """Between nodes (the NICs and the network)."""


@irdl_attr_definition
class LinkAttr(EnumAttribute[Link], SpacedOpaqueSyntaxAttribute):
    """`#event<link "scale-out">`: the link an `event.comm` crosses (`Link`)."""

    name = "event.link"


@irdl_op_definition
class CommOp(EventOpBase):
    """A communication on a comm stream; `group` ranks take part (a collective
    rendezvous) and it moves `bytes` per rank over `link`. A point-to-point
    send or receive names its `channel` and the virtual stages it goes from
    (`src`) and to (`dst`): the interpreter pairs the k-th send and the k-th
    receive of a channel."""

    name = "event.comm"

    bytes = opt_prop_def(IntegerAttr[I64])
    group = opt_prop_def(IntegerAttr[I64])
    link = opt_prop_def(LinkAttr)
    channel = opt_prop_def(StringAttr)
    src = opt_prop_def(IntegerAttr[I64])
    dst = opt_prop_def(IntegerAttr[I64])

    STREAM_KIND: ClassVar[str] = "comm"
    ALSO_ON: ClassVar[tuple[str, ...]] = ("copy",)
    """A copy to or from host memory runs on a copy stream."""
    FIELDS: ClassVar[tuple[str, ...]] = ("engine", "bytes", "group", "link", "channel", "src", "dst")
    COUNTS: ClassVar[tuple[tuple[str, int], ...]] = (("bytes", 0), ("group", 1), ("src", 0), ("dst", 0))

    def byte_count(self) -> float:
        return float(self.bytes.value.data) if self.bytes is not None else 0.0

    def group_size(self) -> int:
        """Ranks taking part (1 when the event names no group)."""
        return self.group.value.data if self.group is not None else 1

    def link_kind(self) -> Link | None:
        return self.link.data if self.link is not None else None

    def point_to_point(self) -> tuple[str, int, int] | None:
        """(channel, src, dst) of a send or receive; None for a collective."""
        if self.channel is None or self.src is None or self.dst is None:
            return None
        return self.channel.data, self.src.value.data, self.dst.value.data

    def verify_(self) -> None:
        super().verify_()
        named = [f for f in ("channel", "src", "dst") if self.properties.get(f) is not None]
        if named and len(named) != 3:
            raise VerifyException(
                f"a point-to-point event names channel, src and dst together, got only {', '.join(named)}"
            )


@irdl_op_definition
class LaunchOp(EventOpBase):
    """The host issuing one kernel or communication: `duration_s` of the CPU thread
    that drives the GPU (the framework's Python, the dispatcher, the launch). The
    event it launches waits for it; the host waits for nothing on the GPU but a
    barrier, so it runs ahead while kernels are longer than its launches and
    holds the GPU back when they are shorter."""

    name = "event.launch"
    STREAM_KIND: ClassVar[str] = "host"


class ScheduleItem(StrEnum):
    """A pipeline schedule's unit of work on one micro-batch (parallel/schedules)."""

    F = "F"
    """A forward."""
    B = "B"
    """A backward (all of it, or its input gradients when the weights' are split off)."""
    W = "W"
    """The weight gradients of a split backward (zero-bubble schedules)."""


@irdl_attr_definition
class ScheduleItemAttr(EnumAttribute[ScheduleItem], SpacedOpaqueSyntaxAttribute):
    """`#event<item F>`: which schedule item an `event.wait` marks the end of."""

    name = "event.item"


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Join: completes when all `deps` have completed; takes no time. With `item`
    it marks where a schedule item (a micro-batch's forward, backward or weight
    gradients) ends on its stage: memory over time counts the items done."""

    name = "event.wait"

    deps = var_operand_def(Token)
    item = opt_prop_def(ScheduleItemAttr)
    token = result_def(TokenType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $deps `)` attr-dict"

    def __init__(self, deps, item: ScheduleItem | None = None):
        super().__init__(
            operands=[list(deps)],
            result_types=[TokenType()],
            properties={"item": ScheduleItemAttr(item)} if item is not None else {},
        )


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Completes when every event issued before it in this program has completed,
    on every stream (a device-wide synchronisation, as before an optimizer step).
    Takes no time."""

    name = "event.barrier"

    token = result_def(TokenType)

    traits = traits_def(HasParent(ProgramOp))
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[TokenType()])


LAYER_REPEAT = "repeat"
"""The `label` of the loop a `sim.repeat` (a model's identical layers) lowers to."""


@irdl_op_definition
class LoopOp(IRDLOperation):
    """Run the body `count` times; the body's token argument is the previous
    iteration's yield (`init` first); the result is the last iteration's yield.
    `label` names what repeats: LAYER_REPEAT for a model's layers, the schedule
    items of one run of a pipeline schedule (`F0,B1`: a forward of chunk 0 then a
    backward of chunk 1). A labelled loop's iterations are alike, which lets the
    interpreter fold them."""

    name = "event.loop"

    count = prop_def(IntegerAttr[I64])
    label = opt_prop_def(StringAttr)
    init = operand_def(Token)
    token = result_def(TokenType)
    body = region_def("single_block")

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$count `iter` `(` $init `)` attr-dict-with-keyword $body"

    def __init__(self, count: int, init, body, label: str | None = None):
        properties: dict[str, Attribute] = {"count": IntegerAttr(count, 64)}
        if label is not None:
            properties["label"] = StringAttr(label)
        super().__init__(
            operands=[init],
            result_types=[TokenType()],
            properties=properties,
            regions=[body],
        )

    def is_layer_repeat(self) -> bool:
        return self.label is not None and self.label.data == LAYER_REPEAT

    def verify_(self) -> None:
        if self.count.value.data < 1:
            raise VerifyException(f"count must be >= 1, got {self.count.value.data}")
        if self.label is not None and not self.label.data:
            raise VerifyException("label must not be empty")
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, TokenType):
            raise VerifyException("body takes exactly one !event.token argument")
        if not isinstance(self.body.block.last_op, YieldOp):
            raise VerifyException("body must end with event.yield")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends an `event.loop` body with the token the next iteration starts after."""

    name = "event.yield"

    token = operand_def(Token)

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(LoopOp)))
    assembly_format = "$token attr-dict"

    def __init__(self, token):
        super().__init__(operands=[token])


EVENT_FIELDS = frozenset(ComputeOp.FIELDS + CommOp.FIELDS)
"""Every field an event kind declares: one on an event that does not declare it
is an error, not an attribute nobody reads."""


Event = Dialect(
    "event",
    [ProgramOp, StreamOp, ComputeOp, CommOp, LaunchOp, WaitOp, BarrierOp, LoopOp, YieldOp],
    [LinkAttr, ScheduleItemAttr, StreamKindAttr, TokenType],
)
