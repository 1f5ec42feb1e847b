"""
The `sim` dialect: what a model computes, at tensor level.

Ops are a closed, named set. Each compute op knows its own FLOPs and the bytes it
moves to and from device memory (`flops()` / `bytes_moved()`): the cost engines
price ops from these, so a pass that reshapes a tensor changes the cost with it.
Anything unnamed imports as `sim.generic`, which carries its FLOPs and bytes.

Structure:
- `sim.phase` holds the ops of one phase of a training step (forward, backward,
  optimizer) or of a serving step (prefill, decode) and yields the values that later
  phases use (saved activations, gradients): what a phase yields is what it keeps
  alive, which is what memory analysis reads.
- `sim.repeat` holds one layer's body, run `count` times. Like a scan it has
  carried values (the hidden state) and sliced values: a sliced operand has a
  leading `count` dimension and each iteration sees one slice (a layer's weights);
  sliced results are stacked the same way (per-layer saved activations).
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from math import prod
from typing import ClassVar, NamedTuple, TypeVar, final, get_args, get_origin, get_type_hints

from xdsl.dialects.builtin import (
    I64,
    AnyFloatConstr,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    FloatData,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    OpResult,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import (
    HasCanonicalizationPatternsTrait,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryWriteEffect,
    NoTerminator,
    Pure,
)
from xdsl.transforms.dead_code_elimination import result_only_effects
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

AnyTensor = base(TensorType)

ELEMENT_BYTES: dict[str, float] = {
    "f64": 8,
    "f32": 4,
    "tf32": 4,
    "bf16": 2,
    "f16": 2,
    "f8E4M3FN": 1,
    "f8E5M2": 1,
    "i64": 8,
    "i32": 4,
    "i16": 2,
    "i8": 1,
    "i1": 1,
    "complex<f32>": 8,
    "complex<f64>": 16,
}


@cache
def element_bytes(element_type: Attribute) -> float:
    """Bytes per element of a builtin element type (kept per type: a type's
    text costs a print, and memory analysis asks for it per value)."""
    text = str(element_type)
    if text in ELEMENT_BYTES:
        return ELEMENT_BYTES[text]
    if isinstance(element_type, IntegerType):
        return max(1, element_type.width.data // 8)
    raise VerifyException(f"element type {text} has no known size")


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def numel(value: SSAValue | Attribute) -> int:
    return prod(shape_of(value))


def tensor_bytes(value: SSAValue | Attribute) -> float:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return prod(t.get_shape()) * element_bytes(t.element_type)


def _check_static(op_name: str, *values: SSAValue) -> None:
    for v in values:
        t = v.type
        if isinstance(t, TensorType) and any(d < 0 for d in t.get_shape()):
            raise VerifyException(f"'{op_name}' needs static shapes, got {t}")


# ---------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------

# The names of the discardable attributes passes leave for later passes, each
# defined here once (a pass and its readers import it).

# On the module, set by the frontend (what was imported, and how):
MODEL_ATTR = "sim.model"
"""The model's name as the import was asked for it (a preset, a Hugging Face id, a path)."""
MODE_ATTR = "sim.mode"
"""What was traced: train (forward, backward, optimizer) or a serving step (prefill, decode)."""
SEQ_LEN_ATTR = "sim.seq_len"
"""The traced sequence length (an integer)."""
BATCH_ATTR = "sim.batch"
"""The traced (micro-)batch (an integer)."""
DTYPE_ATTR = "sim.dtype"
"""The element type the model was traced in (bf16, fp16, ...)."""
FRONTEND_ATTR = "sim.frontend"
"""The frontend's version (FRONTEND_VERSION) that wrote the module."""
HF_PARAM_COUNT_ATTR = "sim.hf_param_count"
"""The model's parameter count as its Hugging Face module has it (an integer;
absent where the model code is not a Hugging Face module): the sweep's memory
bound reads it."""
FREE_OPS_ATTR = "sim.free_ops"
"""aten op -> count of the ops that became no op at all (listed so that nothing
disappears silently)."""
GENERIC_OPS_ATTR = "sim.generic_ops"
"""aten op -> count of the ops priced only as a `sim.generic`."""

# On the module, set by passes:
TARGET_ATTR = "sim.target"
"""A `#sim.target`: the hardware or cluster the module is priced for (`set-target`)."""
PIPELINE_ATTR = "sim.pipeline"
"""The module attribute the `pipeline` pass records its schedule in (pp, vpp,
microbatches, schedule), read by memory analysis, the lowering and the tiers."""
DATA_PARALLEL_ATTR = "sim.data_parallel"
"""Set by data-parallel: its dp, ZeRO stage and groups (memory-analysis reads them)."""
MEMORY_ATTR = "sim.memory"
"""Set by memory-analysis: a list of `#sim.memory`, each physical stage's bytes at its peak."""
RECOMPUTE_POLICY_ATTR = "sim.recompute_policy"
"""A `#sim<recompute_policy ...>`: the policy `recompute` compiled the step with, for reports."""
OPTIMIZER_KERNELS_ATTR = "sim.optimizer_kernels"
"""A unit attribute set by unfuse-optimizer: the optimizer step runs as separate
kernels (pipeline and data-parallel refuse to run after it)."""
ACCUMULATED_ATTR = "sim.accumulated_gradients"
"""Set by accumulate-gradients (it refuses a second run)."""
TENSOR_PARALLEL_ATTR = "sim.tensor_parallel"
"""Set by shard-tensor: the module is split over this many tp ranks."""
EXPERT_TP_ATTR = "sim.expert_tp"
"""Set once the experts' ffn dim is settled (by shard-expert's etp or by
shard-tensor): shard-tensor leaves expert weights alone when it is there."""
TP_COMM_OVERLAP_ATTR = "sim.tp_comm_overlap"
"""Set by `sequence-parallel{tp-comm-overlap=true}`: the tp all_gathers /
reduce_scatters run pipelined with the GEMMs next to them (the analytic engine
prices them so)."""
REPLICATED_ATTR = "sim.replicated_flops"
"""A `#sim.replicated_flops`, set by the parallelising passes: FLOPs every rank repeats (not split)."""

# On ops:
COST_ATTR = "sim.cost"
"""A `#sim.cost` on every op `cost-annotate` priced (per iteration in a repeat)."""
NODE_KIND_ATTR = "sim.node_kind"
"""On a `sim.stage` of a module targeted at a cluster of several node kinds: the
kind (a `node` block's label, a string) its ranks sit on, set by `set-target`;
the stage's verifier checks it, `StageOp.node_kind` reads it."""
RECOMPUTE_ATTR = "sim.recompute"
"""A `#sim<recompute ...>` (`RecomputeKind`), set by the `recompute` pass:
selective on a non-flash attention whose core is recomputed in backward (the
forward one, its backward clone and its gradient) and on the clones of the
sub-blocks it recomputes; full on a forward layer repeat whose body is re-run in
backward and on the ops of that re-run. Read it with `recompute_kind`."""
DROPOUT_ATTR = "sim.dropout"
"""A unit attribute on `sim.attention`: the softmax is followed by dropout, whose
mask (1 byte per score) and output are saved as well (Megatron's attention
dropout, Korthikanti et al. 2022, eq. 2)."""
FIRST_FORWARD_ATTR = "sim.first_forward"
"""On the ops of a parameter gather (packing, all_gathers, unpacking) that run only
in a chunk's first forward of the step (data-parallel's ZeRO-3)."""
CPU_OFFLOAD_ATTR = "sim.cpu_offload"
"""A `#sim.cpu_offload`, set by `offload-activations` on each forward layer repeat
of a step that offloads, and on its reverse twin in the backward: how many of
its first layers keep their saved activations in host memory (Megatron-Core's
`--cpu-offloading-num-layers`, Transformer Engine's CPU offload handler)."""
CPU_OFFLOAD_BYTES_ATTR = "sim.cpu_offload_bytes"
"""An integer on a layer repeat that offloads (`#sim.cpu_offload` with layers > 0),
set by `memory-analysis`: the bytes one of its offloaded layers sends to the host
(and back), as memory-analysis counts them (fp8 casts included). lower-to-events
times the copies with it, so the copies and the host bytes are one number. Read
it with `offload_copy_bytes`."""
SEQUENCE_PARALLEL_ATTR = "sim.sequence_parallel"
"""Marks the all_gathers sequence-parallel made, the only ones it moves; on the
module, one imported already sequence-parallel (the frontend's Megatron-Core
models), which the pass leaves as it is."""


def exact_float(value: float) -> str:
    """A finite `value` as a float literal that parses back to the same double
    (repr's digits, with the point a float literal needs: 1e+20 prints 1.0e+20)."""
    text = repr(float(value))
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def parse_text(parser: AttrParser) -> str:
    """A string literal, its escapes resolved. xDSL lexes a literal whose escapes
    name non-ASCII bytes as a bytes literal, even valid UTF-8 (which
    `print_string_literal` writes for every non-ASCII character), and its
    `parse_str_literal` then refuses it: such a literal is read as UTF-8 here."""
    if (text := parser.parse_optional_str_literal()) is not None:
        return text
    raw = parser.parse_optional_bytes_literal()
    if raw is None:
        parser.raise_error("string literal expected")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        parser.raise_error("string literal expected (UTF-8 text)")


@dataclass(frozen=True)
class _FieldCodec:
    """How one declared parameter type of a `KeywordAttr` prints and parses."""

    print: Callable[[Printer, Attribute], None]
    parse: Callable[[AttrParser], Attribute]


def _print_list(element: _FieldCodec) -> Callable[[Printer, Attribute], None]:
    def print_list(printer: Printer, value: Attribute) -> None:
        assert isinstance(value, ArrayAttr)
        with printer.in_square_brackets():
            printer.print_list(value.data, lambda item: element.print(printer, item))

    return print_list


def _parse_list(element: _FieldCodec) -> Callable[[AttrParser], Attribute]:
    return lambda parser: ArrayAttr(
        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: element.parse(parser))
    )


_SCALAR_CODECS: dict[object, _FieldCodec] = {
    IntAttr: _FieldCodec(
        lambda printer, value: printer.print_string(str(value.data)),  # pyright: ignore[reportAttributeAccessIssue]
        lambda parser: IntAttr(parser.parse_integer(allow_boolean=False)),
    ),
    FloatData: _FieldCodec(
        lambda printer, value: printer.print_string(exact_float(value.data)),  # pyright: ignore[reportAttributeAccessIssue]
        lambda parser: FloatData(float(parser.parse_number())),
    ),
    StringAttr: _FieldCodec(
        lambda printer, value: printer.print_string_literal(value.data),  # pyright: ignore[reportAttributeAccessIssue]
        lambda parser: StringAttr(parse_text(parser)),
    ),
    BoolAttr: _FieldCodec(
        lambda printer, value: printer.print_string("true" if value.value.data else "false"),  # pyright: ignore[reportAttributeAccessIssue]
        lambda parser: BoolAttr.from_bool(parser.parse_boolean()),
    ),
}


def _enum_codec(declared: type[EnumAttribute], where: str) -> _FieldCodec:
    """An enum attribute field printed as its value's string literal (the text a
    string field of the same value prints); a value outside the enum does not parse."""
    enum_type = declared.enum_type
    allowed = ", ".join(m.value for m in enum_type)

    def parse(parser: AttrParser) -> Attribute:
        pos = parser.pos
        text = parse_text(parser)
        if text not in enum_type.__members__.values():
            parser.raise_error(f"{where} must be one of {allowed}, got '{text}'", pos, parser.pos)
        return declared(enum_type(text))

    return _FieldCodec(lambda printer, value: printer.print_string_literal(value.data.value), parse)  # pyright: ignore[reportAttributeAccessIssue]


def _codec_of(declared: object, where: str) -> _FieldCodec:
    if get_origin(declared) is ArrayAttr:
        (element,) = get_args(declared)
        element_codec = _codec_of(element, where)
        return _FieldCodec(_print_list(element_codec), _parse_list(element_codec))
    if declared in _SCALAR_CODECS:
        return _SCALAR_CODECS[declared]
    if isinstance(declared, type) and issubclass(declared, EnumAttribute):
        return _enum_codec(declared, where)
    raise TypeError(f"{where}: a keyword attribute field must be IntAttr, FloatData, StringAttr, BoolAttr, "
                    f"an EnumAttribute or an ArrayAttr of one, got {declared}")


class KeywordAttr(ParametrizedAttribute):
    """An attribute written `#dialect.name<field = value, ...>`: its parameters
    by name, every one given once, in any order, each printed and parsed by its
    declared type, as xDSL's own parametrized attributes print theirs:
    `IntAttr` an integer, `FloatData` repr's digits (exact: text parses back to
    the same double), `StringAttr` a quoted, escaped string literal, `BoolAttr`
    `true`/`false`, an `EnumAttribute` its value's string literal,
    `ArrayAttr[...]` `[a, b]` of those. A float field is finite:
    inf and nan have no float literal (MLIR spells them as bit patterns), so the
    verifier refuses them rather than print text that does not parse back.

    A subclass declares its parameters with `param_def` (their order is the
    printed order) and `OPTIONAL`: fields that may be left out, the value they
    then take (left out when printed, too). Its own rules go in `verify_fields`,
    which runs after the checks every keyword attribute shares (a subclass that
    overrode `verify` could forget them)."""

    OPTIONAL: ClassVar[dict[str, Attribute]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "verify" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: a keyword attribute states its rules in verify_fields "
                            "(verify runs them and the checks every keyword attribute shares)")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in _field_codecs(cls))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        codecs = dict(_field_codecs(cls))
        values: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            while True:
                key = parser.parse_identifier()
                if key not in codecs:
                    parser.raise_error(f"#{cls.name} has no field {key} (fields: {', '.join(codecs)})")
                if key in values:
                    parser.raise_error(f"#{cls.name} gives {key} twice")
                parser.parse_punctuation("=")
                values[key] = codecs[key].parse(parser)
                if parser.parse_optional_punctuation(",") is None:
                    break
        missing = [k for k in codecs if k not in values and k not in cls.OPTIONAL]
        if missing:
            parser.raise_error(f"#{cls.name} is missing the field {missing[0]}")
        return [values[k] if k in values else cls.OPTIONAL[k] for k in codecs]

    def print_parameters(self, printer: Printer) -> None:
        values = [(name, codec, getattr(self, name)) for name, codec in _field_codecs(type(self))]
        shown = [(name, codec, value) for name, codec, value in values
                 if name not in self.OPTIONAL or value != self.OPTIONAL[name]]

        def print_field(entry: tuple[str, _FieldCodec, Attribute]) -> None:
            name, codec, value = entry
            printer.print_string(f"{name} = ")
            codec.print(printer, value)

        with printer.in_angle_brackets():
            printer.print_list(shown, print_field)

    @final
    def verify(self) -> None:
        self.verify_fields()
        for name, _ in _field_codecs(type(self)):
            value = getattr(self, name)
            if isinstance(value, FloatData) and not math.isfinite(value.data):
                raise VerifyException(f"#{self.name}: {name} must be finite, got {value.data}")

    def verify_fields(self) -> None:
        """The attribute's own rules (none by default)."""


@cache
def _field_codecs(cls: type[KeywordAttr]) -> tuple[tuple[str, _FieldCodec], ...]:
    """`cls`'s parameters in their declared order, each with its codec."""
    hints = get_type_hints(cls, include_extras=True)
    return tuple((name, _codec_of(hints[name], f"#{cls.name}: {name}"))
                 for name, _ in cls.get_irdl_definition().parameters)


@irdl_attr_definition
class TargetAttr(KeywordAttr):
    """`#sim.target<hardware = "H100-SXM5-80GB", gpus = 64, gpus_per_node = 8>`, with
    `cluster = "..."` (the cluster file's text) when one is attached: the hardware
    `set-target` priced the module for, under TARGET_ATTR (`Target.to_attr`; the
    passes read it back with `Target.from_module`)."""

    name = "sim.target"

    hardware: StringAttr = param_def()
    gpus: IntAttr = param_def()
    gpus_per_node: IntAttr = param_def()
    cluster: StringAttr = param_def()
    """The cluster's text; empty: none (the GPU table's implicit cluster)."""

    OPTIONAL: ClassVar[dict[str, Attribute]] = {"cluster": StringAttr("")}

    def __init__(self, hardware: str, gpus: int, gpus_per_node: int, cluster: str = ""):
        super().__init__(StringAttr(hardware), IntAttr(gpus), IntAttr(gpus_per_node), StringAttr(cluster))

    def verify_fields(self) -> None:
        if not self.hardware.data:
            raise VerifyException("#sim.target: hardware must name a GPU")
        for field in ("gpus", "gpus_per_node"):
            value = getattr(self, field).data
            if value < 1:
                raise VerifyException(f"#sim.target: {field} must be >= 1, got {value}")


@irdl_attr_definition
class CostAttr(KeywordAttr):
    """`#sim.cost<time_s = T, flops = F, bytes = B, engine = "E">`: what a cost
    engine said of one op (seconds, FLOPs, bytes moved) and which engine said it.
    `cost-annotate` leaves one on every op it prices, under COST_ATTR; the
    lowering, the serving latency model and the importers read it."""

    name = "sim.cost"

    time_s: FloatData = param_def()
    flops: FloatData = param_def()
    bytes: FloatData = param_def()
    engine: StringAttr = param_def()

    def __init__(self, time_s: float, flops: float, bytes: float, engine: str):
        super().__init__(
            FloatData(float(time_s)),
            FloatData(float(flops)),
            FloatData(float(bytes)),
            StringAttr(engine),
        )

    def verify_fields(self) -> None:
        for field in ("time_s", "flops", "bytes"):
            value = getattr(self, field).data
            if not 0 <= value < math.inf:  # NaN fails too
                raise VerifyException(f"#sim.cost: {field} must be finite and >= 0, got {value}")
        if not self.engine.data:
            raise VerifyException("#sim.cost: engine must name the engine that priced the op")


class _QuotedKind:
    """Prints an enum attribute's value as a string literal (see "Op kinds" below)."""

    data: StrEnum

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string_literal(self.data.value)


_Kind = TypeVar("_Kind", bound=StrEnum)


def kind_of(enum_type: type[_Kind], kind: str) -> _Kind:
    """`kind` as a member of `enum_type`, or a VerifyException naming the allowed kinds."""
    if kind not in enum_type.__members__.values():
        raise VerifyException(
            f"kind must be one of {sorted(m.value for m in enum_type)}, got '{kind}'"
        )
    return enum_type(kind)


class PipelineSchedule(StrEnum):
    """The pipeline schedules a `#sim.pipeline` may name (parallel/schedules
    builds each stage's order of forwards and backwards from it)."""

    GPIPE = "gpipe"
    """Every micro-batch's forward, then every backward."""
    ONE_F_ONE_B = "1f1b"
    """PipeDream-Flush / Megatron's 1F1B: a warm-up of forwards, then one
    forward and one backward alternating."""
    INTERLEAVED = "interleaved"
    """Megatron's interleaved 1F1B over vpp model chunks per stage."""
    ZB_H1 = "zb-h1"
    """Zero-bubble H1 (Qi et al. 2024): a backward split into its input
    gradients (B) and its weight gradients (W), W deferred into the bubble."""


@irdl_attr_definition
class PipelineScheduleAttr(_QuotedKind, EnumAttribute[PipelineSchedule], SpacedOpaqueSyntaxAttribute):
    """A `#sim.pipeline`'s schedule (`PipelineSchedule`), printed in it as a
    string literal (`schedule = "1f1b"`)."""

    name = "sim.pipeline_schedule"


PIPELINE_SCHEDULES = tuple(PipelineSchedule)
"""The pipeline schedules a `#sim.pipeline` may name, in their printed order."""


@irdl_attr_definition
class PipelineAttr(KeywordAttr):
    """`#sim.pipeline<pp = 4, vpp = 1, schedule = "1f1b", microbatches = 8,
    layers = [2, 2, 2, 2]>`: the schedule the `pipeline` pass split the step for,
    on the module under PIPELINE_ATTR: `pp` physical stages of `vpp` chunks each,
    `microbatches` per step, and the layers of each of the pp * vpp virtual
    stages. Memory analysis, the lowering and the tiers read it."""

    name = "sim.pipeline"

    pp: IntAttr = param_def()
    vpp: IntAttr = param_def()
    schedule: PipelineScheduleAttr = param_def()
    microbatches: IntAttr = param_def()
    layers: ArrayAttr[IntAttr] = param_def()

    def __init__(self, pp: int, vpp: int, schedule: PipelineSchedule | str, microbatches: int, layers: Sequence[int]):
        super().__init__(
            IntAttr(pp), IntAttr(vpp), PipelineScheduleAttr(kind_of(PipelineSchedule, schedule)), IntAttr(microbatches),
            ArrayAttr([IntAttr(n) for n in layers]),
        )

    def with_microbatches(self, microbatches: int) -> PipelineAttr:
        """The same schedule run over another number of micro-batches."""
        return PipelineAttr(self.pp.data, self.vpp.data, self.schedule.data, microbatches, self.layer_counts())

    def layer_counts(self) -> list[int]:
        return [n.data for n in self.layers]

    def verify_fields(self) -> None:
        for field in ("pp", "vpp", "microbatches"):
            value = getattr(self, field).data
            if value < 1:
                raise VerifyException(f"#sim.pipeline: {field} must be >= 1, got {value}")
        stages = self.pp.data * self.vpp.data
        counts = self.layer_counts()
        if len(counts) != stages or min(counts) < 0:
            raise VerifyException(
                f"#sim.pipeline: layers must give each of the pp * vpp = {stages} virtual stages "
                f"a count >= 0, got {counts}"
            )


@irdl_attr_definition
class DataParallelAttr(KeywordAttr):
    """`#sim.data_parallel<dp = 4, zero = 1, bucket_mb = 25, overlap = true,
    overlap_param_gather = false>`: what the `data-parallel` pass made of the
    step, on the module under DATA_PARALLEL_ATTR: `dp` replicas, the ZeRO stage
    (0-3), the gradient buckets' size in MiB, whether the gradients' reduction
    overlaps the backward and whether the parameters' gather overlaps the next
    forward (ZeRO 1 and 2 only). Memory analysis and the lowering read it."""

    name = "sim.data_parallel"

    dp: IntAttr = param_def()
    zero: IntAttr = param_def()
    bucket_mb: IntAttr = param_def()
    overlap: BoolAttr = param_def()
    overlap_param_gather: BoolAttr = param_def()

    def __init__(self, dp: int, zero: int, bucket_mb: int, overlap: bool, overlap_param_gather: bool):
        super().__init__(
            IntAttr(dp), IntAttr(zero), IntAttr(bucket_mb),
            BoolAttr.from_bool(overlap), BoolAttr.from_bool(overlap_param_gather),
        )

    def verify_fields(self) -> None:
        if self.dp.data < 1:
            raise VerifyException(f"#sim.data_parallel: dp must be >= 1, got {self.dp.data}")
        if self.zero.data not in (0, 1, 2, 3):
            raise VerifyException(f"#sim.data_parallel: zero must be 0, 1, 2 or 3, got {self.zero.data}")
        if self.bucket_mb.data < 1:
            raise VerifyException(f"#sim.data_parallel: bucket_mb must be >= 1, got {self.bucket_mb.data}")
        if self.overlap_param_gather.value.data and self.zero.data not in (1, 2):
            raise VerifyException(
                f"#sim.data_parallel: overlap_param_gather needs zero 1 or 2, got zero {self.zero.data}"
            )


@irdl_attr_definition
class StageMemoryAttr(KeywordAttr):
    """`#sim.memory<stage = 0, params = B, grads = B, optimizer = B, activations = B,
    saved_per_microbatch = B, in_flight = N, comm_buffers = B, weight_grad_residual = B[,
    host_activations = B]>`:
    what one GPU of physical pipeline stage `stage` holds at its peak, in bytes
    (`in_flight`: the forwards whose backward has not run yet). `memory-analysis`
    leaves a list of them under MEMORY_ATTR, one per physical stage a `sim.stage`
    (or the module) runs."""

    name = "sim.memory"

    stage: IntAttr = param_def()
    params: IntAttr = param_def()
    grads: IntAttr = param_def()
    optimizer: IntAttr = param_def()
    activations: IntAttr = param_def()
    saved_per_microbatch: IntAttr = param_def()
    in_flight: IntAttr = param_def()
    comm_buffers: IntAttr = param_def()
    weight_grad_residual: IntAttr = param_def()
    host_activations: IntAttr = param_def()
    """Saved activations kept in host memory instead (`offload-activations`), per
    micro-batch; not on the GPU, so not in the peak. Left out when 0."""

    OPTIONAL: ClassVar[dict[str, Attribute]] = {"host_activations": IntAttr(0)}

    HELD: ClassVar[tuple[str, ...]] = ("params", "grads", "optimizer", "activations", "comm_buffers")
    """The fields held at the peak together (the others say where activations
    come from): the peak is their sum (`held_at_peak`)."""

    def __init__(self, **fields: int):
        super().__init__(*(IntAttr(int(fields.get(f, 0) if f in self.OPTIONAL else fields[f]))
                           for f in self.field_names()))

    def field(self, name: str) -> int:
        return getattr(self, name).data

    def peak(self) -> int:
        return held_at_peak(self.field)

    def verify_fields(self) -> None:
        for name in self.field_names():
            if self.field(name) < 0:
                raise VerifyException(f"#sim.memory: {name} must be >= 0, got {self.field(name)}")


@irdl_attr_definition
class CpuOffloadAttr(KeywordAttr):
    """`#sim.cpu_offload<layers = 2, first = 0, chunk_layers = 8, chunk_offloaded = 2>`:
    on a layer repeat (CPU_OFFLOAD_ATTR), the number of its first iterations whose
    saved activations are copied to the host after their forward and back before
    their backward. The chunk's counts place the repeat among its chunk's layers
    (`first`: the chunk's index of its first layer; the chunk offloads its first
    `chunk_offloaded` of `chunk_layers`), which decide when each copy is waited for
    (Transformer Engine's `layer_window_map`). A chunk offloads fewer layers than
    it has, and this repeat's share is what of the chunk's first
    `chunk_offloaded` falls in it (0 for a repeat past them, which is marked for
    its place among the chunk's layers)."""

    name = "sim.cpu_offload"

    layers: IntAttr = param_def()
    first: IntAttr = param_def()
    chunk_layers: IntAttr = param_def()
    chunk_offloaded: IntAttr = param_def()

    def __init__(self, layers: int, first: int, chunk_layers: int, chunk_offloaded: int):
        super().__init__(IntAttr(layers), IntAttr(first), IntAttr(chunk_layers), IntAttr(chunk_offloaded))

    def verify_fields(self) -> None:
        for name in self.field_names():
            if getattr(self, name).data < 0:
                raise VerifyException(f"#sim.cpu_offload: {name} must be >= 0, got {getattr(self, name).data}")
        chunk, offloaded = self.chunk_layers.data, self.chunk_offloaded.data
        if offloaded >= chunk:
            raise VerifyException(f"#sim.cpu_offload: chunk_offloaded must be < chunk_layers ({chunk}), "
                                  f"got {offloaded}")
        share = max(0, offloaded - self.first.data)
        if self.layers.data > share or (self.layers.data == 0 and share > 0):
            raise VerifyException(f"#sim.cpu_offload: layers must be what of the chunk's first {offloaded} "
                                  f"layers starts at layer {self.first.data}, at most {share}, got {self.layers.data}")

    def windows(self) -> list[int]:
        """The chunk layer after whose forward the copy of offloaded layer i (of the
        chunk) must be complete, i = 0 .. chunk_offloaded - 1: Transformer Engine's
        `AsyncDoubleBufferGroupOffloadHandler.layer_window_map`, which spreads the
        copies evenly over the chunk's layers (the last one ends with the forward)."""
        return offload_windows(self.chunk_layers.data, self.chunk_offloaded.data)


def offload_windows(layers: int, offloaded: int) -> list[int]:
    """`layer_window_map` of Transformer Engine's AsyncDoubleBufferGroupOffloadHandler
    for `offloaded` of `layers` layers (cpu_offload.py, TE 1.x-2.x)."""
    windows: list[int] = []
    constant = 0
    for i in range(offloaded):
        window = (layers // offloaded) * (i + 1) - 1
        if i < layers % offloaded:
            window += i + 1
            constant = i + 1
        else:
            window += constant
        windows.append(window)
    return windows


def cpu_offload_of(op: Operation) -> CpuOffloadAttr | None:
    """The `offload-activations` mark on a layer repeat, None when it has none."""
    mark = op.attributes.get(CPU_OFFLOAD_ATTR)
    if mark is None:
        return None
    if not isinstance(mark, CpuOffloadAttr):
        raise VerifyException(f"'{op.name}': {CPU_OFFLOAD_ATTR} must be a #sim.cpu_offload<...>, got {mark}")
    return mark


def offload_copy_bytes(op: Operation) -> int | None:
    """CPU_OFFLOAD_BYTES_ATTR of a layer repeat, None when memory-analysis has not
    set it."""
    size = op.attributes.get(CPU_OFFLOAD_BYTES_ATTR)
    if size is None:
        return None
    if not isinstance(size, IntegerAttr) or size.value.data < 0:
        raise VerifyException(f"'{op.name}': {CPU_OFFLOAD_BYTES_ATTR} must be an integer >= 0, got {size}")
    return size.value.data


def offloaded_layers(op: Operation) -> int:
    """How many of a layer repeat's first iterations keep their saved activations
    on the host (0 when unmarked)."""
    mark = cpu_offload_of(op)
    return 0 if mark is None else mark.layers.data


def held_at_peak(count: Callable[[str], int]) -> int:
    """A stage's peak bytes: what it holds together at its peak, the sum of the
    `StageMemoryAttr.HELD` fields as `count` gives them (the report's and the
    analysis's one formula)."""
    return sum(count(f) for f in StageMemoryAttr.HELD)


@irdl_attr_definition
class ReplicatedFlopsAttr(ParametrizedAttribute):
    """`#sim.replicated_flops<"shard-tensor" = F, "sequence-parallel" = G, ...>`:
    per parallelising pass, the FLOPs its group computes beyond the unsharded step
    (work every rank repeats; negative where a pass removes repeated work, as
    sequence parallelism does), on the module under REPLICATED_ATTR. The parallel
    accounting checks group x FLOPs per rank = unsharded FLOPs + their sum.
    Two parallel arrays (pass names, `FloatData` counts) in the order the passes
    ran, so that equality follows the printed order (a dictionary's would not);
    each count printed exactly (`exact_float`)."""

    name = "sim.replicated_flops"

    passes: ArrayAttr[StringAttr] = param_def()
    flops: ArrayAttr[FloatData] = param_def()

    def __init__(self, by_pass: dict[str, float]):
        super().__init__(ArrayAttr(StringAttr(p) for p in by_pass),
                         ArrayAttr(FloatData(float(f)) for f in by_pass.values()))

    def by_pass(self) -> dict[str, float]:
        return {p.data: f.data for p, f in zip(self.passes.data, self.flops.data)}

    def verify(self) -> None:
        names = [p.data for p in self.passes.data]
        if len(names) != len(self.flops.data):
            raise VerifyException(f"#sim.replicated_flops: {len(names)} pass names for "
                                  f"{len(self.flops.data)} counts")
        if len(set(names)) != len(names):
            raise VerifyException(f"#sim.replicated_flops names a pass twice: {names}")
        for name, count in zip(names, self.flops.data):
            if not name:
                raise VerifyException("#sim.replicated_flops: a pass name must not be empty")
            if not math.isfinite(count.data):
                raise VerifyException(f"#sim.replicated_flops: {name} must be finite, got {count.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def entry() -> tuple[str, float]:
            name = parse_text(parser)
            parser.parse_punctuation("=")
            return name, float(parser.parse_number())

        entries = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, entry)
        names = [n for n, _ in entries]
        if len(set(names)) != len(names):
            parser.raise_error(f"#sim.replicated_flops names a pass twice: {names}")
        return [ArrayAttr(StringAttr(n) for n in names), ArrayAttr(FloatData(f) for _, f in entries)]

    def print_parameters(self, printer: Printer) -> None:
        def print_entry(entry: tuple[str, float]) -> None:
            printer.print_string_literal(entry[0])
            printer.print_string(f" = {exact_float(entry[1])}")

        with printer.in_angle_brackets():
            printer.print_list(self.by_pass().items(), print_entry)


class ParamRole(StrEnum):
    """What a parameter is in the model, as the frontend knows it: the passes
    read this, never the parameter's (Hugging Face) name."""

    EMBEDDING = "embedding"
    """The token embedding table [vocab, hidden] (a learned position table is
    `other`: nothing splits it on the vocabulary)."""
    ATTENTION = "attention"
    MLP = "mlp"
    ROUTER = "router"
    """An MoE router's scores (its weight, bias, correction bias)."""
    EXPERT = "expert"
    """The routed experts' stacked weights and biases [experts, ...]."""
    SHARED_EXPERT = "shared_expert"
    NORM = "norm"
    HEAD = "head"
    """The output projection to the vocabulary [vocab, hidden]."""
    OTHER = "other"


ROLES_WITH_A_TABLE = frozenset({ParamRole.EMBEDDING, ParamRole.HEAD, ParamRole.EXPERT})
"""Roles whose parameter has two dims at least: a table's rows, or the experts."""


class _AngledKind:
    """Prints and parses an enum attribute as `#dialect.name<value>` (the value
    a bare word), the form of an enum that stands alone in an attribute
    dictionary."""

    data: StrEnum
    enum_type: ClassVar[type[StrEnum]]

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> StrEnum:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(cls.enum_type)


@irdl_attr_definition
class ParamRoleAttr(_AngledKind, EnumAttribute[ParamRole]):
    """`#sim.role<expert>`: a `sim.param`'s role (`ParamRole`)."""

    name = "sim.role"


class WeightSplit(StrEnum):
    """Where Megatron's tensor parallelism splits a layer's weight, as the
    frontend knows it from the module: shard-tensor reads this, never the name.
    A table of role embedding or head is split on the vocabulary instead."""

    COLUMN = "column"
    """The output features (ColumnParallelLinear: q, k, v, gate, up, fc1; the
    routed experts' gate_up): a bias is split with them."""
    KV = "kv"
    """A column split over the kv heads (k, v): with fewer kv heads than ranks a
    kv head is shared by tp / kv_heads ranks."""
    ROW = "row"
    """The input features (RowParallelLinear: o, down, fc2): a bias, added after
    the all-reduce, stays whole."""


@irdl_attr_definition
class WeightSplitAttr(_AngledKind, EnumAttribute[WeightSplit]):
    """`#sim.split<column>`: a `sim.param`'s tensor-parallel split (`WeightSplit`)."""

    name = "sim.split"


# ---------------------------------------------------------------------------
# Op kinds: each a closed set, an enum attribute (`StrEnum` + `EnumAttribute`,
# as arith's fastmath or llvm's linkage). An op prints its kind as the string
# literal it always had (`sim.phase "forward"`), so the text the frontend cache
# and the tests hold is unchanged; a bare word parses too. Standing alone a kind
# reads `#sim<phase_kind "forward">`. An unknown kind does not parse, and the
# builders refuse one naming the allowed kinds.
# ---------------------------------------------------------------------------


class PhaseKind(StrEnum):
    """Which part of a step a `sim.phase` holds."""

    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    PREFILL = "prefill"
    """A serving step's forward over the prompt (it writes the KV cache)."""
    DECODE = "decode"
    """A serving step's forward over one new token per sequence."""


@irdl_attr_definition
class PhaseKindAttr(_QuotedKind, EnumAttribute[PhaseKind], SpacedOpaqueSyntaxAttribute):
    """A `sim.phase`'s kind (`PhaseKind`)."""

    name = "sim.phase_kind"


class NormKind(StrEnum):
    """What a `sim.norm` computes over the last dim."""

    RMS = "rms"
    LAYER = "layer"


@irdl_attr_definition
class NormKindAttr(_QuotedKind, EnumAttribute[NormKind], SpacedOpaqueSyntaxAttribute):
    """A `sim.norm`'s kind (`NormKind`)."""

    name = "sim.norm_kind"


class ReduceKind(StrEnum):
    """How a `sim.reduce` combines the elements it reduces."""

    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class ReduceKindAttr(_QuotedKind, EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """A `sim.reduce`'s kind (`ReduceKind`)."""

    name = "sim.reduce_kind"


class ElementwiseKind(StrEnum):
    """The pointwise function a `sim.elementwise` applies: the frontend's image
    of the aten pointwise ops (frontend/convert.py), their backward kernels and
    the few fused ones hand-written IR names."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    NEG = "neg"
    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    POW = "pow"
    ABS = "abs"
    SIGN = "sign"
    ERF = "erf"
    SIN = "sin"
    COS = "cos"
    MAX = "max"
    MIN = "min"
    CLAMP = "clamp"
    COMPARE = "compare"
    NOT = "not"
    AND = "and"
    OR = "or"
    WHERE = "where"
    COPY = "copy"
    CAST = "cast"
    FILL = "fill"
    RELU = "relu"
    SILU = "silu"
    GELU = "gelu"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    DROPOUT = "dropout"
    SILU_GRAD = "silu_grad"
    GELU_GRAD = "gelu_grad"
    TANH_GRAD = "tanh_grad"
    SIGMOID_GRAD = "sigmoid_grad"
    ROPE = "rope"
    """A rotary embedding applied in one kernel (hand-written IR)."""
    RMS_NORM_GRAD = "rms_norm_grad"
    """An RMSNorm's input gradient in one kernel (hand-written IR)."""


@irdl_attr_definition
class ElementwiseKindAttr(_QuotedKind, EnumAttribute[ElementwiseKind], SpacedOpaqueSyntaxAttribute):
    """A `sim.elementwise`'s kind (`ElementwiseKind`)."""

    name = "sim.elementwise_kind"


class OptimizerKind(StrEnum):
    """The update rule a `sim.optimizer_step` runs."""

    ADAMW = "adamw"
    ADAM = "adam"
    SGD = "sgd"


class AttentionKernel(StrEnum):
    """The flash-attention kernel that runs a flash `sim.attention` (`fuse`'s
    `attention-kernel`); the cost engine prices each."""

    FLASH2 = "flash2"
    """FlashAttention-2."""
    FLASH3 = "flash3"
    """FlashAttention-3 (Hopper)."""
    TRITON = "triton"
    """The Triton FlashAttention of 2022-23."""


@irdl_attr_definition
class AttentionKernelAttr(_QuotedKind, EnumAttribute[AttentionKernel], SpacedOpaqueSyntaxAttribute):
    """A flash attention's kernel (`AttentionKernel`)."""

    name = "sim.attention_kernel"


@irdl_attr_definition
class OptimizerKindAttr(_QuotedKind, EnumAttribute[OptimizerKind], SpacedOpaqueSyntaxAttribute):
    """A `sim.optimizer_step`'s kind (`OptimizerKind`)."""

    name = "sim.optimizer_kind"


class RecomputePolicy(StrEnum):
    """How the `recompute` pass trades backward FLOPs for saved activations
    (its `policy` option; Megatron-LM's --recompute-granularity)."""

    NONE = "none"
    SELECTIVE = "selective"
    """Sub-blocks (by default the attention core) re-run in backward."""
    SELECTIVE_OP = "selective-op"
    """torchtitan's op-level selective checkpointing: each layer saves its input
    and the outputs of the ops its policy saves (every other matmul, the fused
    attention), and re-runs the rest in backward."""
    FULL = "full"
    """Each layer re-run in backward from its saved input."""


@irdl_attr_definition
class RecomputePolicyAttr(_QuotedKind, EnumAttribute[RecomputePolicy], SpacedOpaqueSyntaxAttribute):
    """The policy a module was compiled with (`RecomputePolicy`), under RECOMPUTE_POLICY_ATTR."""

    name = "sim.recompute_policy"


class RecomputeKind(StrEnum):
    """Why the `recompute` pass marked an op (RECOMPUTE_ATTR): the policy that
    recomputes it, never none."""

    SELECTIVE = "selective"
    SELECTIVE_OP = "selective-op"
    """A layer op re-run under op-level selective checkpointing: it runs under
    autograd, so what it saves for its gradient is saved again."""
    FULL = "full"


@irdl_attr_definition
class RecomputeKindAttr(_QuotedKind, EnumAttribute[RecomputeKind], SpacedOpaqueSyntaxAttribute):
    """`#sim<recompute "full">`: an op's recompute mark (`RecomputeKind`), under RECOMPUTE_ATTR."""

    name = "sim.recompute"


def recompute_kind(op: Operation) -> RecomputeKind | None:
    """The `recompute` pass's mark on `op`, None when unmarked; a mark of
    another type (hand-written IR of before the enum) is an error, not unmarked."""
    mark = op.attributes.get(RECOMPUTE_ATTR)
    if mark is None:
        return None
    if not isinstance(mark, RecomputeKindAttr):
        raise VerifyException(
            f"'{op.name}': {RECOMPUTE_ATTR} must be a #sim<recompute ...> "
            f"(one of {', '.join(m.value for m in RecomputeKind)}), got {mark}"
        )
    return mark.data


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """A value with no data: an ordering edge (a send's completion)."""

    name = "sim.token"


# ---------------------------------------------------------------------------
# Sharding rules
# ---------------------------------------------------------------------------


Factors = tuple[str | None, ...]
"""A factor name for each dim of one operand or result (None: a dim in no factor,
a size-1 dim broadcast against a larger one)."""


class ShardingRule(NamedTuple):
    """How an op's work divides when its dims are split, as data (Shardy's
    `OpShardingRule`, e.g. `([i, k], [k, j])->([i, j]) reduction={k}`; MLIR's
    `ShardingInterface`). Each dim of each operand and result is named by a
    factor: dims with the same factor are one index space, split together. A
    split factor that appears in the results keeps them split there; one in
    `reduction` leaves each rank a partial sum. The sharding propagation
    (`charon_ir.parallel.sharding`) applies the rule; an op's FLOPs divide by the
    ways any factor it may split is split."""

    operands: tuple[Factors | None, ...]
    """Per operand, its dims' factors (None: not a tensor)."""
    results: tuple[Factors, ...]
    reduction: tuple[str, ...] = ()
    """Factors summed over (a matmul's K, a reduce's dims): split, each rank holds
    a partial sum of the results."""
    need_replication: tuple[str, ...] = ()
    """Factors that cannot be split (a norm's hidden dim): an operand split on
    one is gathered."""
    row_stats: tuple[tuple[str, int], ...] = ()
    """(factor, count): a factor reduced inside the op and kept in its results
    (softmax's dim). Split, `count` fp32 statistics per row are all-reduced over
    the group before the op."""
    linear: bool = False
    """Linear in each operand (add, sub, neg, copy): partial-sum operands give a
    partial-sum result."""

    @property
    def pointwise(self) -> bool:
        """Every operand factor is kept in the results and none is summed or
        needs replication: any split of an operand can be the results' split."""
        kept = {f for dims in self.results for f in dims if f is not None}
        return not self.reduction and not self.need_replication and all(
            f is None or f in kept for dims in self.operands if dims is not None for f in dims
        )

    def mismatch(self, op: Operation) -> str:
        """Why the rule does not describe `op` (its operand and result counts,
        each tensor's rank), or "" when it does: a plugin op's rule is checked
        before the propagation trusts it."""
        if len(self.operands) != len(op.operands) or len(self.results) != len(op.results):
            return (f"{len(self.operands)} operand and {len(self.results)} result entries for "
                    f"{len(op.operands)} operands and {len(op.results)} results")
        values = [*zip(op.operands, self.operands), *zip(op.results, self.results)]
        for value, dims in values:
            if dims is not None and isinstance(value.type, TensorType) and len(dims) != value.type.get_num_dims():
                return f"{len(dims)} factors for a rank-{value.type.get_num_dims()} tensor"
        return ""


def indexed_factors(prefix: str, rank: int) -> Factors:
    """`prefix0 .. prefix{rank-1}`: one factor per dim."""
    return tuple(f"{prefix}{i}" for i in range(rank))


class HasShardingRule(abc.ABC):
    """An op that states how its work divides over split dims (MLIR's
    `ShardingInterface`): `sharding_rule()` returns its `ShardingRule`, or None
    where no factor rule says it (a pattern of the sharding propagation that the
    op's docstring names lays it out)."""

    @abc.abstractmethod
    def sharding_rule(self) -> ShardingRule | None:
        """The op's sharding rule, or None (see the op's own docstring)."""


# ---------------------------------------------------------------------------
# Op families
# ---------------------------------------------------------------------------


class ComputeOp(IRDLOperation, HasShardingRule):
    """An op that runs on a GPU's compute units and can be priced from its shapes.
    One that only computes its results (`Pure`) and reads an off-stage value is
    off-stage itself (`OffStageOperand`)."""

    traits = lazy_traits_def(lambda: (OffStageSpreads(),))

    @abc.abstractmethod
    def flops(self) -> float:
        """Floating-point operations (a multiply-add counts 2)."""

    @abc.abstractmethod
    def bytes_moved(self) -> float:
        """Bytes read from and written to device memory by an unfused kernel."""

    def verify(self, verify_nested_ops: bool = True) -> None:
        # a kernel over an empty tensor is a typo in hand-written IR (`tensor<0x4096xbf16>`),
        # not a step: it would price at zero and run. The optimizer step may see one (a
        # pipeline stage holding none of a repeat's layers stacks its weights as [0, ...]),
        # and so may an opaque aten op: HF code slices empty halves (Phi-3's pass-through
        # part of a full rotary embedding) and concatenates them back
        if not isinstance(self, (OptimizerStepOp, GenericOp)):
            for value in (*self.operands, *self.results):
                if isinstance(value.type, TensorType) and 0 in value.type.get_shape():
                    raise VerifyException(f"computes on an empty tensor: {value.type} "
                                          "has a dimension of 0")
        super().verify(verify_nested_ops)

    def op_kind(self) -> str:
        """Key used by cost databases and reports."""
        return self.name.removeprefix("sim.")

    def shapes_key(self) -> tuple[tuple[int, ...], ...]:
        return tuple(
            shape_of(v) for v in (*self.operands, *self.results)
            if isinstance(v.type, TensorType)
        )

    def _io_bytes(self) -> float:
        return sum(
            tensor_bytes(v)
            for v in (*self.operands, *self.results)
            if isinstance(v.type, TensorType)
        )


# flops per output element, per elementwise kind (exp/div/tanh count as one flop
# each, as in Megatron's and Calculon's accounting): one unless stated
ELEMENTWISE_FLOPS: dict[ElementwiseKind, int] = {kind: 1 for kind in ElementwiseKind} | {
    ElementwiseKind.COPY: 0,
    ElementwiseKind.CAST: 0,
    ElementwiseKind.FILL: 0,
    ElementwiseKind.SILU: 4,
    ElementwiseKind.GELU: 8,
    ElementwiseKind.SIGMOID: 4,
    ElementwiseKind.DROPOUT: 2,
    ElementwiseKind.SILU_GRAD: 6,
    ElementwiseKind.GELU_GRAD: 12,
}


def _broadcastable(src: Sequence[int], dst: Sequence[int]) -> bool:
    if len(src) > len(dst):
        return False
    for s, d in zip(reversed(src), reversed(dst)):
        if s != d and s != 1:
            return False
    return True


@irdl_op_definition
class MatmulOp(ComputeOp):
    """
    `C[..., M, N] = op(A)[..., M, K] x op(B)[..., K, N]`, op() transposing the last
    two dims when `transpose_lhs`/`transpose_rhs` is set. `rhs` is either rank 2 (a
    weight shared over the batch dims of `lhs`) or has the same batch dims as `lhs`.
    `grouped` (batched operands only): one GEMM per batch index, each its own
    kernel or its own tiles of a grouped kernel, as the routed experts run
    (`group-expert-gemms`), not one strided-batched GEMM whose waves pool them.
    """

    name = "sim.matmul"

    lhs = operand_def(AnyTensor)
    rhs = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    grouped = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: Attribute,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ):
        props: dict[str, Attribute] = {}
        if transpose_lhs:
            props["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            props["transpose_rhs"] = UnitAttr()
        super().__init__(
            operands=[lhs, rhs], result_types=[result_type], properties=props
        )

    def dims(self) -> tuple[int, int, int, int]:
        """(batch, M, N, K) with batch the product of the leading dims of lhs."""
        a, b = shape_of(self.lhs), shape_of(self.rhs)
        m, k = (a[-1], a[-2]) if self.transpose_lhs else (a[-2], a[-1])
        n = b[-2] if self.transpose_rhs else b[-1]
        return prod(a[:-2]), m, n, k

    def gemm_dims(self) -> tuple[int, int, int, int]:
        """(batch, M, N, K) of the kernel that runs it: a weight shared over the
        batch dims (rank-2 rhs, lhs not transposed) is one GEMM with the batch
        folded into M, as nn.Linear runs on [b, s, h]."""
        batch, m, n, k = self.dims()
        if len(shape_of(self.rhs)) == 2 and not self.transpose_lhs:
            return 1, batch * m, n, k
        return batch, m, n, k

    def verify_(self) -> None:
        _check_static(self.name, self.lhs, self.rhs, self.result)
        a, b, c = shape_of(self.lhs), shape_of(self.rhs), shape_of(self.result)
        if len(a) < 2 or len(b) < 2:
            raise VerifyException(
                f"operands must have rank >= 2, got ranks {len(a)} and {len(b)}"
            )
        k_lhs = a[-2] if self.transpose_lhs else a[-1]
        k_rhs = b[-1] if self.transpose_rhs else b[-2]
        if k_lhs != k_rhs:
            raise VerifyException(
                f"contracting dims differ: lhs K = {k_lhs}, rhs K = {k_rhs}"
            )
        if len(b) > 2 and tuple(b[:-2]) != tuple(a[:-2]):
            raise VerifyException(
                f"batch dims differ: lhs {list(a[:-2])}, rhs {list(b[:-2])}"
            )
        if self.grouped is not None and (len(a) < 3 or len(b) < 3):
            raise VerifyException(
                f"grouped needs batched operands (one GEMM per batch index), got ranks {len(a)} and {len(b)}"
            )
        _, m, n, _ = self.dims()
        expected = (*a[:-2], m, n)
        if c != expected:
            raise VerifyException(
                f"result shape must be {list(expected)} (batch x M x N), got {list(c)}"
            )

    def flops(self) -> float:
        batch, m, n, k = self.dims()
        return 2.0 * batch * m * n * k

    def sharding_rule(self) -> ShardingRule:
        """`([b.., m, k], [b.., k, n]) -> ([b.., m, n]) reduction={k}`, the last
        two dims of an operand swapped when it is transposed; a rank-2 rhs has no
        batch factors (a weight shared over the batch)."""
        ra, rb = len(shape_of(self.lhs)), len(shape_of(self.rhs))
        lhs = (*indexed_factors("b", ra - 2), *(("k", "m") if self.transpose_lhs else ("m", "k")))
        rhs = (*indexed_factors("b", rb - 2), *(("n", "k") if self.transpose_rhs else ("k", "n")))
        return ShardingRule((lhs, rhs), ((*indexed_factors("b", ra - 2), "m", "n"),), reduction=("k",))

    def bytes_moved(self) -> float:
        return self._io_bytes()


class _AttentionBase(ComputeOp, abc.ABC):
    """Shape rule shared by attention and its gradient: q [b, sq, hq, d],
    k [b, skv, hkv, d], v [b, skv, hkv, dv], hq a multiple of hkv (GQA/MQA).
    `window` (causal only): a query sees the `window` latest keys, itself
    included (sliding-window attention, HF's `sliding_window`).
    `chunk` (causal only, not with a window): the sequence is cut into chunks
    of `chunk` tokens and a query at position p sees the keys of its own chunk,
    floor(p / chunk) * chunk .. p (Llama 4's chunked attention,
    `attention_chunk_size`).
    `kernel` (flash only): the flash kernel that runs it; absent: the cost
    engine's default."""

    q = operand_def(AnyTensor)
    k = operand_def(AnyTensor)
    v = operand_def(AnyTensor)
    causal = opt_prop_def(UnitAttr)
    flash = opt_prop_def(UnitAttr)
    window = opt_prop_def(IntegerAttr[I64])
    chunk = opt_prop_def(IntegerAttr[I64])
    kernel = opt_prop_def(AttentionKernelAttr)

    def window_size(self) -> int:
        """Keys a query may see at most; 0: no window."""
        return self.window.value.data if self.window is not None else 0

    def chunk_size(self) -> int:
        """Tokens of an attention chunk; 0: not chunked."""
        return self.chunk.value.data if self.chunk is not None else 0

    def _verify_qkv(self) -> None:
        _check_static(self.name, self.q, self.k, self.v)
        q, k, v = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise VerifyException(
                "q, k, v must be rank 4 [batch, seq, heads, head_dim]"
            )
        if q[0] != k[0] or k[0] != v[0]:
            raise VerifyException(
                f"batch differs: q {q[0]}, k {k[0]}, v {v[0]}"
            )
        if k[1] != v[1] or k[2] != v[2]:
            raise VerifyException("k and v must have the same seq and heads")
        if q[3] != k[3]:
            raise VerifyException(
                f"q and k head_dim differ: {q[3]} vs {k[3]}"
            )
        if k[2] == 0 or q[2] % k[2] != 0:
            raise VerifyException(
                f"q heads ({q[2]}) must be a multiple of kv heads ({k[2]})"
            )
        if self.causal and q[1] > k[1]:
            raise VerifyException(
                f"causal attention needs q seq ({q[1]}) <= kv seq ({k[1]})"
            )
        if self.window is not None and (self.window_size() < 1 or not self.causal):
            raise VerifyException(
                f"a window ({self.window_size()}) must be >= 1 and needs causal attention"
            )
        if self.chunk is not None and (self.chunk_size() < 1 or not self.causal):
            raise VerifyException(
                f"a chunk ({self.chunk_size()}) must be >= 1 and needs causal attention"
            )
        if self.chunk is not None and self.window is not None:
            raise VerifyException(
                "a chunk and a window exclude each other: a query sees its chunk or its window"
            )
        if self.kernel is not None and self.flash is None:
            raise VerifyException(f"a kernel ({self.kernel.data}) runs a flash attention only")

    def score_pairs(self) -> float:
        """(query, key) pairs computed per batch row and head; a causal mask keeps
        the pairs at or below the diagonal, aligned to the end of the kv sequence."""
        sq, skv = shape_of(self.q)[1], shape_of(self.k)[1]
        if not self.causal:
            return float(sq * skv)
        window, chunk = self.window_size(), self.chunk_size()
        if (not window or window >= skv) and (not chunk or chunk >= skv):
            return float(sq * (skv - sq) + sq * (sq + 1) / 2)

        def seen_by_first(n: int) -> float:
            """Keys seen by the queries at kv positions 0 .. n-1."""
            if chunk:  # position p sees p mod chunk + 1 keys
                whole, rest = divmod(n, chunk)
                return whole * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2
            if n <= window:
                return n * (n + 1) / 2
            return window * (window + 1) / 2 + (n - window) * window

        return float(seen_by_first(skv) - seen_by_first(skv - sq))

    def forward_flops(self) -> float:
        b, _, hq, d = shape_of(self.q)
        dv = shape_of(self.v)[3]
        return 2.0 * b * hq * self.score_pairs() * (d + dv)

    def score_bytes(self) -> float:
        """Bytes of the score matrix, written and read back when not flash-fused."""
        b, sq, hq, _ = shape_of(self.q)
        skv = shape_of(self.k)[1]
        return 0.0 if self.flash else 2.0 * b * hq * sq * skv * element_bytes(
            self.q.type.element_type  # pyright: ignore[reportAttributeAccessIssue]
        )


@irdl_op_definition
class AttentionOp(_AttentionBase):
    """softmax(q k^T / sqrt(d) [+ causal mask]) v, per head; kv heads shared by
    hq / hkv query heads. Result: [b, sq, hq, dv]."""

    name = "sim.attention"

    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$q `,` $k `,` $v attr-dict `:` `(` type($q) `,` type($k) `,` type($v) `)`"
        " `->` type($result)"
    )

    def __init__(
        self,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        result_type: Attribute,
        causal: bool = True,
        flash: bool = False,
        window: int = 0,
        chunk: int = 0,
    ):
        props: dict[str, Attribute] = {}
        if causal:
            props["causal"] = UnitAttr()
        if flash:
            props["flash"] = UnitAttr()
        if window:
            props["window"] = IntegerAttr(window, 64)
        if chunk:
            props["chunk"] = IntegerAttr(chunk, 64)
        super().__init__(
            operands=[q, k, v], result_types=[result_type], properties=props
        )

    def verify_(self) -> None:
        self._verify_qkv()
        b, sq, hq, _ = shape_of(self.q)
        dv = shape_of(self.v)[3]
        if shape_of(self.result) != (b, sq, hq, dv):
            raise VerifyException(
                f"result shape must be {[b, sq, hq, dv]} [batch, q seq, q heads, v head_dim], "
                f"got {list(shape_of(self.result))}"
            )

    def flops(self) -> float:
        return self.forward_flops()

    def sharding_rule(self) -> None:
        """None: heads split with fewer kv heads than ranks (a kv head shared,
        or read whole) and context parallelism's ring or all-to-all over the
        sequence are more than factors say (`ShardAttention`, shard-context's
        handler)."""
        return None

    def bytes_moved(self) -> float:
        return self._io_bytes() + self.score_bytes()


@irdl_op_definition
class AttentionGradOp(_AttentionBase):
    """Backward of `sim.attention`: from q, k, v, the output and its gradient,
    produce dq, dk, dv. Costs 2.5x the forward FLOPs (five matmuls against two),
    the FlashAttention-2 convention."""

    name = "sim.attention_grad"

    out = operand_def(AnyTensor)
    grad_out = operand_def(AnyTensor)
    grad_q = result_def(AnyTensor)
    grad_k = result_def(AnyTensor)
    grad_v = result_def(AnyTensor)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$q `,` $k `,` $v `,` $out `,` $grad_out attr-dict `:` "
        "`(` type($q) `,` type($k) `,` type($v) `,` type($out) `,` type($grad_out) `)`"
        " `->` `(` type($grad_q) `,` type($grad_k) `,` type($grad_v) `)`"
    )

    def verify_(self) -> None:
        self._verify_qkv()
        if self.out.type != self.grad_out.type:
            raise VerifyException("out and grad_out must have the same type")
        for grad, src, label in (
            (self.grad_q, self.q, "q"),
            (self.grad_k, self.k, "k"),
            (self.grad_v, self.v, "v"),
        ):
            if shape_of(grad) != shape_of(src):
                raise VerifyException(
                    f"grad_{label} shape must equal {label} shape {list(shape_of(src))}"
                )

    def flops(self) -> float:
        return 2.5 * self.forward_flops()

    def sharding_rule(self) -> None:
        """None: as `sim.attention` (`ShardAttention`); a kv head shared by
        several ranks gets a partial gradient from each."""
        return None

    def bytes_moved(self) -> float:
        return self._io_bytes() + self.score_bytes()


@irdl_op_definition
class EmbeddingOp(ComputeOp):
    """Row lookup: table [vocab, h] and integer ids [...] give [..., h]."""

    name = "sim.embedding"

    table = operand_def(AnyTensor)
    ids = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    assembly_format = (
        "$table `,` $ids attr-dict `:` `(` type($table) `,` type($ids) `)` `->` type($result)"
    )

    def verify_(self) -> None:
        _check_static(self.name, self.table, self.ids, self.result)
        table, ids, res = shape_of(self.table), shape_of(self.ids), shape_of(self.result)
        if len(table) != 2:
            raise VerifyException(f"table must be rank 2 [vocab, hidden], got rank {len(table)}")
        if not isinstance(self.ids.type.element_type, IntegerType):  # pyright: ignore[reportAttributeAccessIssue]
            raise VerifyException("ids must have an integer element type")
        if res != (*ids, table[1]):
            raise VerifyException(
                f"result shape must be {[*ids, table[1]]} (ids shape x hidden), got {list(res)}"
            )

    def flops(self) -> float:
        return 0.0

    def sharding_rule(self) -> ShardingRule:
        """`([v, h], [i..]) -> ([i.., h]) reduction={v}`: a rank holding some
        rows of the table looks those up and zeros the rest (vocab-parallel)."""
        ids = indexed_factors("i", len(shape_of(self.ids)))
        return ShardingRule((("v", "h"), ids), ((*ids, "h"),), reduction=("v",))

    def bytes_moved(self) -> float:
        # reads only the rows it gathers, not the whole table
        return tensor_bytes(self.ids) + 2 * tensor_bytes(self.result)


@irdl_op_definition
class NormOp(ComputeOp):
    """RMSNorm or LayerNorm over the last dim; `weight` is [hidden]. Result type =
    input type."""

    name = "sim.norm"

    T: ClassVar = VarConstraint("T", AnyTensor)

    input = operand_def(T)
    weight = operand_def(AnyTensor)
    result = result_def(T)
    kind = prop_def(NormKindAttr)

    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input `,` $weight attr-dict `:` type($input) `,` type($weight)"
    )

    KINDS: ClassVar[dict[NormKind, int]] = {NormKind.RMS: 4, NormKind.LAYER: 7}
    """FLOPs per input element of each kind."""

    def __init__(self, kind: NormKind | str, input: SSAValue, weight: SSAValue):
        super().__init__(
            operands=[input, weight],
            result_types=[input.type],
            properties={"kind": NormKindAttr(kind_of(NormKind, kind))},
        )

    def verify_(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if not x or w != (x[-1],):
            raise VerifyException(
                f"weight shape must be [{x[-1] if x else '?'}] (the input's last dim), got {list(w)}"
            )

    def flops(self) -> float:
        return float(self.KINDS[self.kind.data] * numel(self.input))

    def sharding_rule(self) -> ShardingRule:
        """`([d.., h], [h]) -> ([d.., h])`, h needing replication: the norm's
        statistics are over the whole hidden dim."""
        dims = (*indexed_factors("d", len(shape_of(self.input)) - 1), "h")
        return ShardingRule((dims, ("h",)), (dims,), need_replication=("h",))

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class ElementwiseOp(ComputeOp):
    """A pointwise op of `kind`; operands broadcast (numpy rules) to the result."""

    name = "sim.elementwise"

    inputs = var_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    kind = prop_def(ElementwiseKindAttr)

    traits = traits_def(Pure())
    assembly_format = (
        "$kind $inputs attr-dict `:` type($inputs) `->` type($result)"
    )

    def __init__(self, kind: ElementwiseKind | str, inputs: Sequence[SSAValue], result_type: Attribute):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"kind": ElementwiseKindAttr(kind_of(ElementwiseKind, kind))},
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("needs at least one input")
        out = shape_of(self.result)
        for i, v in enumerate(self.inputs):
            if not _broadcastable(shape_of(v), out):
                raise VerifyException(
                    f"input #{i} shape {list(shape_of(v))} does not broadcast to result {list(out)}"
                )

    def flops(self) -> float:
        return float(ELEMENTWISE_FLOPS[self.kind.data] * numel(self.result))

    def sharding_rule(self) -> ShardingRule:
        """Pointwise: one factor per result dim, an input's dims aligned to the
        result's last ones (numpy broadcasting); a size-1 input dim broadcast
        against a larger one is in no factor. Linear kinds (add, sub; neg and
        copy of one input) pass partial sums through."""
        out = shape_of(self.result)
        result = indexed_factors("d", len(out))
        inputs: list[Factors] = []
        for v in self.inputs:
            dims = shape_of(v)
            lead = len(out) - len(dims)
            inputs.append(tuple(
                result[lead + j] if dims[j] == out[lead + j] else None for j in range(len(dims))
            ))
        kind = self.kind.data
        linear = kind in (ElementwiseKind.ADD, ElementwiseKind.SUB) or (
            len(self.inputs) == 1 and kind in (ElementwiseKind.NEG, ElementwiseKind.COPY)
        )
        return ShardingRule(tuple(inputs), (result,), linear=linear)

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class ReduceOp(ComputeOp):
    """Reduce `dims` of the input with `kind` (sum, mean, max, min). The result
    drops those dims, or keeps them with size 1."""

    name = "sim.reduce"

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    kind = prop_def(ReduceKindAttr)
    dims = prop_def(DenseArrayBase[I64])

    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input $dims attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self, kind: ReduceKind | str, input: SSAValue, dims: Sequence[int], result_type: Attribute
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kind": ReduceKindAttr(kind_of(ReduceKind, kind)),
                "dims": DenseArrayBase.from_list(i64, list(dims)),
            },
        )

    def verify_(self) -> None:
        x, r = shape_of(self.input), shape_of(self.result)
        dims = [int(d) for d in self.dims.get_values()]
        if any(d < 0 or d >= len(x) for d in dims) or len(set(dims)) != len(dims):
            raise VerifyException(f"dims {dims} must be distinct dims of a rank {len(x)} input")
        dropped = tuple(s for i, s in enumerate(x) if i not in dims)
        kept = tuple(1 if i in dims else s for i, s in enumerate(x))
        if r not in (dropped, kept):
            raise VerifyException(
                f"result shape must be {list(dropped)} or {list(kept)}, got {list(r)}"
            )

    def flops(self) -> float:
        return float(numel(self.input))

    def sharding_rule(self) -> ShardingRule:
        """`([d..]) -> ([d.. but dims])` reduction={dims}; a kept reduced dim
        (size 1) is in no factor."""
        rank = len(shape_of(self.input))
        dims = {int(d) for d in self.dims.get_values()}
        factors = indexed_factors("d", rank)
        keeps = len(shape_of(self.result)) == rank
        result = tuple(None if i in dims else f for i, f in enumerate(factors) if keeps or i not in dims)
        return ShardingRule((factors,), (result,), reduction=tuple(factors[i] for i in sorted(dims)))

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class SoftmaxOp(ComputeOp):
    """Softmax along `dim`; result type = input type."""

    name = "sim.softmax"

    T: ClassVar = VarConstraint("T", AnyTensor)

    input = operand_def(T)
    result = result_def(T)
    dim = prop_def(IntegerAttr[I64])

    traits = traits_def(Pure())
    assembly_format = "$input `dim` $dim attr-dict `:` type($input)"

    def verify_(self) -> None:
        rank = len(shape_of(self.input))
        if not 0 <= self.dim.value.data < rank:
            raise VerifyException(f"dim {self.dim.value.data} out of range for rank {rank}")

    def flops(self) -> float:
        # max, subtract, exp, sum, divide
        return 5.0 * numel(self.input)

    def sharding_rule(self) -> ShardingRule:
        """Pointwise over `([d..]) -> ([d..])`; split along `dim` (vocab-parallel),
        each row's max and sum of exponentials are all-reduced first."""
        factors = indexed_factors("d", len(shape_of(self.input)))
        return ShardingRule((factors,), (factors,), row_stats=((factors[self.dim.value.data], 2),))

    def bytes_moved(self) -> float:
        return self._io_bytes()


DimSources = ArrayAttr[ArrayAttr[IntegerAttr[I64]]]
"""Per result dim, the input dims it is made of (a view that permutes)."""


def dim_sources_attr(groups: Sequence[Iterable[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(d, 64) for d in sorted(g)]) for g in groups])


def dim_sources_of(attr: ArrayAttr | None) -> list[list[int]] | None:
    if attr is None:
        return None
    return [[d.value.data for d in group.data] for group in attr.data]


class GenericCallee(StrEnum):
    """The `sim.generic` callees Charon itself makes, each read by a later pass
    (an unknown aten op keeps its own name as the callee: any text is a valid
    callee, only these have a meaning passes rely on). The callee prints as the
    string literal it always had (`sim.generic "grad_bucket"(...)`). Test a
    generic's callee with `GenericOp.calls`, never by its text."""

    LAYER_NORM_STATS = "layer_norm_stats"
    """Made by the frontend beside a LayerNorm's `sim.norm`: the mean and 1/std the
    norm kernel writes for its backward (free but for their writes). `fuse` folds
    it into the fused norm; sequence-parallel splits it with the norm's input."""
    MOE_COMBINE_WEIGHT_GRAD = "moe_combine_weight_grad"
    """Made by the frontend in an MoE combine's backward: the gradient of the
    routing weights (per token, per chosen expert). shard-expert moves it onto
    the expert-parallel side of the dispatch (its expert input is local)."""
    SHARD_SLICE = "shard.slice"
    """A free local slice of a replicated value to the piece one rank holds (a
    sharding conversion: parallel/sharding/conversions, sequence-parallel,
    shard-context); sequence-parallel recognises its own to move gathers."""
    SHARD_ROW_STATS = "shard.row_stats"
    """One fp32 statistic per row of a vocabulary-split value (max, sum of
    exponentials, target logit), all-reduced over the split (a sharding
    conversion); sequence-parallel leaves its all_reduce alone."""
    MOE_LOCAL_ROWS = "moe.local_rows"
    """Made by shard-expert under MoE parallel folding: a rank's own rows of a
    per-expert buffer of its tp group's tokens, and back. Memory analysis counts
    it as a view (no storage of its own)."""
    GRAD_BUCKET = "grad_bucket"
    """Made by data-parallel: gradients packed into flat buckets for their dp
    all_reduce / reduce_scatter (free: Megatron-Core's gradients live in the
    bucket). The screen tier reads the buckets' sizes."""
    ZERO_SHARD = "zero_shard"
    """Made by data-parallel for ZeRO >= 1: the 1/dp shard of the parameters
    (or gradients) a replica's optimizer updates. Memory analysis counts a
    parameter shard it yields as the replica's parameter state."""
    PARAM_BUCKET = "param_bucket"
    """Made by data-parallel for ZeRO >= 1: the updated parameter shards packed
    into buckets that are all_gathered after the optimizer step."""
    PARAM_SHARD_BUCKET = "param_shard_bucket"
    """Made by data-parallel for ZeRO-3 (and overlap-param-gather): a layer's
    parameter shards packed for the all_gather before the layer runs. Recompute
    finds a full-recompute layer's gathers from it."""
    PARAM_UNPACK = "param_unpack"
    """Made by data-parallel after such an all_gather: the gathered buckets seen
    as the layer's full parameters. Cost-annotate prices it as a parameter read;
    recompute re-gathers it in backward."""
    FUSED_RMS_NORM = "fused.rms_norm"
    FUSED_LAYER_NORM = "fused.layer_norm"
    """Made by `fuse`: one normalisation kernel (RMSNorm; LayerNorm with its bias
    and saved statistics). Recompute finds a layer's sub-block boundaries at them
    (parallel/sub_blocks)."""
    FUSED_ROPE = "fused.rope"
    FUSED_BIAS_ACT = "fused.bias_act"
    FUSED_SWIGLU = "fused.swiglu"
    FUSED_CROSS_ENTROPY = "fused.cross_entropy"
    FUSED_CROSS_ENTROPY_GRAD = "fused.cross_entropy_grad"
    """Made by `fuse`: one kernel each for the rotary embedding, a bias and its
    activation, SwiGLU's gate, the loss and its gradient (each priced by its
    bytes; a profile database keys its kernels by these names)."""
    FUSED_RMS_NORM_GRAD = "fused.rms_norm_grad"
    FUSED_LAYER_NORM_GRAD = "fused.layer_norm_grad"
    FUSED_ROPE_GRAD = "fused.rope_grad"
    FUSED_BIAS_ACT_GRAD = "fused.bias_act_grad"
    FUSED_SWIGLU_GRAD = "fused.swiglu_grad"
    """Made by `fuse`: the backward kernel of each fused forward kernel above, the
    pointwise gradient ops autograd derived from its pieces as one kernel
    (Transformer Engine's `rmsnorm_bwd`, its fused RoPE backward, Megatron-Core's
    `bias_swiglu_impl` / `bias_gelu_impl` backward)."""
    RING_MERGE = "ring_attention.merge"
    """Made by shard-context: a ring attention's per-step outputs joined into the
    attention output (Transformer Engine's out correction). Memory analysis keeps
    it 16-bit under fp8, as the attention output it stands for."""
    RING_MERGE_DQ = "ring_attention.merge_dq"
    RING_MERGE_DK = "ring_attention.merge_dk"
    RING_MERGE_DV = "ring_attention.merge_dv"
    """Made by shard-context: the ring's per-step q, k and v gradients summed."""


DATA_PARALLEL_CALLEES = frozenset({
    GenericCallee.GRAD_BUCKET, GenericCallee.PARAM_BUCKET, GenericCallee.ZERO_SHARD,
    GenericCallee.PARAM_SHARD_BUCKET, GenericCallee.PARAM_UNPACK,
})
"""The free packing and unpacking data-parallel makes around its collectives."""


@irdl_op_definition
class GenericOp(ComputeOp):
    """Anything without a named op (an unknown aten op, a custom kernel): carries
    its own FLOPs and bytes so it is priced, never dropped. A free view that
    changes the element count (a slice of a transposed tensor) says in
    `view_dims` which input dims each result dim is made of, as `sim.view`'s
    `dims` does."""

    name = "sim.generic"

    inputs = var_operand_def()
    outputs = var_result_def()
    callee = prop_def(StringAttr)
    flop_count = prop_def(FloatAttr)
    byte_count = prop_def(FloatAttr)
    view_dims = opt_prop_def(DimSources)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    )

    def __init__(
        self,
        callee: GenericCallee | str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        flops: float,
        bytes: float,
        view_dims: Sequence[Iterable[int]] | None = None,
    ):
        props: dict[str, Attribute] = {
            "callee": StringAttr(str(callee)),
            "flop_count": FloatAttr(float(flops), 64),
            "byte_count": FloatAttr(float(bytes), 64),
        }
        if view_dims is not None:
            props["view_dims"] = dim_sources_attr(view_dims)
        super().__init__(operands=[inputs], result_types=[result_types], properties=props)

    def calls(self, *callees: GenericCallee) -> bool:
        """Whether this generic is one of Charon's own `callees`."""
        return self.callee.data in callees

    def dim_sources(self) -> list[list[int]] | None:
        """Input dims of each result dim of a view-like generic, or None."""
        return dim_sources_of(self.view_dims)

    def verify_(self) -> None:
        for name, attr in (("flop_count", self.flop_count), ("byte_count", self.byte_count)):
            if not 0 <= attr.value.data < math.inf:  # NaN fails too
                raise VerifyException(f"{name} must be finite and >= 0, got {attr.value.data}")

    def op_kind(self) -> str:
        return self.callee.data

    def flops(self) -> float:
        return self.flop_count.value.data

    def sharding_rule(self) -> None:
        """None: an opaque op's dims are known by size only; `ShardGeneric` lays
        out its results by matching sizes (and `view_dims`), its FLOPs and bytes
        scaled with them, and gives cross-entropy's pieces their row statistics."""
        return None

    def bytes_moved(self) -> float:
        return self.byte_count.value.data


def is_generic(op: Operation, *callees: GenericCallee) -> bool:
    """Whether `op` is a `sim.generic` calling one of `callees`."""
    return isinstance(op, GenericOp) and op.calls(*callees)


@irdl_op_definition
class OptimizerStepOp(ComputeOp):
    """One optimizer update of `params` from `grads` (pairwise same shapes).
    AdamW with fp32 master weights: per element it reads the grad, param, master,
    m and v and writes param, master, m and v. The optional results are the updated
    params, for what must wait on the update (ZeRO's all_gather of updated shards)."""

    name = "sim.optimizer_step"

    params = var_operand_def(AnyTensor)
    grads = var_operand_def(AnyTensor)
    kind = prop_def(OptimizerKindAttr)
    updated = var_result_def(AnyTensor)

    traits = lazy_traits_def(lambda: (MemoryWriteEffect(), OptimizerStepCanonicalization()))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$kind `(` $params `:` type($params) `)` `grads` `(` $grads `:` type($grads) `)` attr-dict"
        " (`->` type($updated)^)?"
    )

    KINDS: ClassVar[dict[OptimizerKind, int]] = {
        OptimizerKind.ADAMW: 12, OptimizerKind.ADAM: 11, OptimizerKind.SGD: 2,
    }
    """FLOPs per parameter element of each kind."""

    def verify_(self) -> None:
        if len(self.params) != len(self.grads):
            raise VerifyException(
                f"{len(self.params)} params but {len(self.grads)} grads"
            )
        for i, (p, g) in enumerate(zip(self.params, self.grads)):
            if shape_of(p) != shape_of(g):
                raise VerifyException(f"param #{i} and grad #{i} shapes differ")
        if self.updated and [r.type for r in self.updated] != [p.type for p in self.params]:
            raise VerifyException("updated results must have the params' types")

    def num_elements(self) -> int:
        return sum(numel(p) for p in self.params)

    def flops(self) -> float:
        return float(self.KINDS[self.kind.data] * self.num_elements())

    def sharding_rule(self) -> None:
        """None: each rank updates the shards it holds, every grad laid out
        as its own param (`ShardOptimizer`); params need not agree with each
        other, which one rule's shared factors would say."""
        return None

    def bytes_moved(self) -> float:
        n = self.num_elements()
        # bf16 param + grad, fp32 master + m + v: read 2+2+4+4+4, write 2+4+4+4
        return float(n * (16 + 14)) if self.kind.data != OptimizerKind.SGD else self._io_bytes() * 2


# ---------------------------------------------------------------------------
# Values that enter the step
# ---------------------------------------------------------------------------


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A model parameter. A parameter sliced by a `sim.repeat` carries the leading
    `count` dim (all layers' copies stacked). `role` says what it is in the model
    (`#sim.role<...>`; absent: `other`); an embedding, a head or the routed
    experts have two dims at least. `split` says where tensor parallelism splits
    a layer's weight (`#sim.split<...>`; absent: nowhere); a table of role
    embedding or head, split on the vocabulary, has none. `stacked` (set by the
    frontend) says the leading dim is the layers' (the parameter is sliced by a
    `sim.repeat`): passes read that, never the parameter's name."""

    name = "sim.param"

    sym_name = prop_def(StringAttr)
    role = opt_prop_def(ParamRoleAttr)
    split = opt_prop_def(WeightSplitAttr)
    stacked = opt_prop_def(UnitAttr)
    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict `:` type($result)"

    def __init__(self, name: str, result_type: Attribute, role: ParamRole = ParamRole.OTHER,
                 split: WeightSplit | None = None, stacked: bool = False):
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        if role != ParamRole.OTHER:
            properties["role"] = ParamRoleAttr(role)
        if split is not None:
            properties["split"] = WeightSplitAttr(split)
        if stacked:
            properties["stacked"] = UnitAttr()
        super().__init__(result_types=[result_type], properties=properties)

    def is_stacked(self) -> bool:
        """Whether the leading dim is the layers' (a `sim.repeat` slices it)."""
        return self.stacked is not None

    def param_role(self) -> ParamRole:
        return self.role.data if self.role is not None else ParamRole.OTHER

    def weight_split(self) -> WeightSplit | None:
        return self.split.data if self.split is not None else None

    def verify_(self) -> None:
        t = self.result.type
        if self.is_stacked() and isinstance(t, TensorType) and not t.get_shape():
            raise VerifyException(f"a stacked parameter needs a leading layers dim, got {t}")
        if (self.param_role() in ROLES_WITH_A_TABLE and isinstance(t, TensorType)
                and len(t.get_shape()) < 2):
            raise VerifyException(
                f"a parameter of role '{self.param_role()}' needs two dims at least, got {t}"
            )
        if self.split is not None and self.param_role() in (ParamRole.EMBEDDING, ParamRole.HEAD):
            raise VerifyException(
                f"a parameter of role '{self.param_role()}' is split on the vocabulary, "
                f"not by '{self.weight_split()}'"
            )


@irdl_op_definition
class InputOp(IRDLOperation):
    """A step input that is not a parameter (token ids, labels). `tokens` (set
    by the frontend) marks the input that stands for the step's tokens: token ids
    [batch, seq], or hidden states [..., hidden]; the lowering counts a step's
    tokens from it, never from an input's name."""

    name = "sim.input"

    sym_name = prop_def(StringAttr)
    tokens = opt_prop_def(UnitAttr)
    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict `:` type($result)"

    def __init__(self, name: str, result_type: Attribute, tokens: bool = False):
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        if tokens:
            properties["tokens"] = UnitAttr()
        super().__init__(result_types=[result_type], properties=properties)

    def is_tokens(self) -> bool:
        """Whether this input stands for the step's tokens."""
        return self.tokens is not None


@irdl_op_definition
class ViewOp(IRDLOperation, HasShardingRule):
    """A reshape, transpose or slice view that moves no data (a layout change).
    Free: it is never priced; the element count is kept.

    `dims` (optional) says which input dims each result dim is made of, when the
    view permutes dims (a transpose folded with reshapes): sizes alone cannot tell
    [b, s, h, d] -> [b, h, s, d] from a reshape when s == h. Without it the view
    is a plain reshape (row-major order kept)."""

    name = "sim.view"

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    dims = opt_prop_def(DimSources)

    traits = lazy_traits_def(lambda: (Pure(), OffStageSpreads()))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def sharding_rule(self) -> None:
        """None: a reshape moves a split to the result dim made of it, chosen by
        size and by the split's kind where a dim is split in parts (heads of
        heads x head_dim) (`ShardView`); partial sums pass through."""
        return None

    def __init__(
        self, input: SSAValue, result_type: Attribute, dims: Sequence[Iterable[int]] | None = None
    ):
        props = {} if dims is None else {"dims": dim_sources_attr(dims)}
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def dim_sources(self) -> list[list[int]] | None:
        """Input dims of each result dim, or None for a plain reshape."""
        return dim_sources_of(self.dims)

    def verify_(self) -> None:
        if numel(self.input) != numel(self.result):
            raise VerifyException(
                f"a view keeps the element count: {numel(self.input)} elements in, "
                f"{numel(self.result)} out"
            )
        if self.input.type.element_type != self.result.type.element_type:  # pyright: ignore[reportAttributeAccessIssue]
            raise VerifyException("a view keeps the element type")
        sources = self.dim_sources()
        if sources is not None:
            rank_in, rank_out = len(shape_of(self.input)), len(shape_of(self.result))
            if len(sources) != rank_out:
                raise VerifyException(f"dims has {len(sources)} entries for a rank-{rank_out} result")
            if any(d < 0 or d >= rank_in for group in sources for d in group):
                raise VerifyException(f"dims names an input dim outside 0..{rank_in - 1}")


# ---------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------


@irdl_op_definition
class StageOp(IRDLOperation):
    """
    The program of one pipeline stage class: its own params, inputs and phases, for
    one micro-batch and one model chunk. Stages with the same layers share one
    `sim.stage` (`virtual_stages` lists them: virtual stage v = chunk * pp + stage,
    so with vpp = 1 they are the physical stages). Activations and gradients cross
    stages through `coll.send`/`coll.recv` on the `pp` axis; the schedule that
    orders micro-batches is the module's `sim.pipeline` attribute.
    """

    name = "sim.stage"

    virtual_stages = prop_def(DenseArrayBase[I64])
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), IsolatedFromAbove())
    assembly_format = "$virtual_stages attr-dict-with-keyword $body"

    def __init__(self, virtual_stages: Sequence[int], body):
        super().__init__(
            properties={"virtual_stages": DenseArrayBase.from_list(i64, list(virtual_stages))},
            regions=[body],
        )

    def stage_ids(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.virtual_stages.get_values())

    def node_kind(self) -> str | None:
        """The node kind `set-target` placed the stage on (NODE_KIND_ATTR), None
        on a cluster of one kind."""
        kind = self.attributes.get(NODE_KIND_ATTR)
        return kind.data if isinstance(kind, StringAttr) else None

    def verify_(self) -> None:
        ids = self.stage_ids()
        if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
            raise VerifyException(f"virtual_stages must be distinct and >= 0, got {list(ids)}")
        kind = self.attributes.get(NODE_KIND_ATTR)
        if kind is not None and not (isinstance(kind, StringAttr) and kind.data):
            raise VerifyException(f"{NODE_KIND_ATTR} must be a node kind's name (a non-empty string), got {kind}")


@irdl_op_definition
class YieldOp(IRDLOperation, HasShardingRule):
    """Ends a `sim.phase` or `sim.repeat` body."""

    name = "sim.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(PhaseOp, RepeatOp)))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def sharding_rule(self) -> None:
        """None: carried values go back in the layout they came in and partial sums
        are summed (`ShardYield`)."""
        return None

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class PhaseOp(IRDLOperation):
    """One phase of a step. Its results are what it yields: the values later phases
    read (saved activations, gradients) and what the step returns (the loss), so a
    result nobody reads stays. Canonical form: a result whose yielded value another
    pipeline stage holds is off-stage outside the phase (`OffStagePhaseResults`),
    and a phase with no results and nothing but its yield is erased
    (`EraseEmptyPhase`)."""

    name = "sim.phase"

    kind = prop_def(PhaseKindAttr)
    outputs = var_result_def()
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (PhaseCanonicalization(),))

    assembly_format = "$kind attr-dict-with-keyword (`->` type($outputs)^)? $body"

    def __init__(self, kind: PhaseKind | str, body, result_types: Sequence[Attribute] = ()):
        super().__init__(
            properties={"kind": PhaseKindAttr(kind_of(PhaseKind, kind))},
            regions=[body],
            result_types=[result_types],
        )

    def verify_(self) -> None:
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("body must end with sim.yield")
        if tuple(v.type for v in term.values) != tuple(r.type for r in self.outputs):
            raise VerifyException("yielded types must equal the phase's result types")
        _verify_scoped_uses(self)


def phase_kind(op: Operation) -> PhaseKind | None:
    """The kind of the innermost `sim.phase` around `op` (None outside every phase):
    whether an op runs in the forward, the backward, the optimizer step..."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, PhaseOp):
            return parent.kind.data
        parent = parent.parent_op()
    return None


def step_blocks(module: Operation) -> list[Block]:
    """The blocks holding a step's phases: each `sim.stage`'s of a pipelined
    module, else the module's own."""
    block = module.regions[0].block
    stages = [op.body.block for op in block.ops if isinstance(op, StageOp)]
    return stages or [block]


def phases_of(block: Block) -> dict[PhaseKind, PhaseOp]:
    """The phases directly in `block` (a module's or a stage's), by kind."""
    return {op.kind.data: op for op in block.ops if isinstance(op, PhaseOp)}


def forward_twin(rep: RepeatOp, fwd: PhaseOp) -> RepeatOp | None:
    """The forward layer repeat whose stacked outputs the reverse repeat `rep`
    slices (through the forward phase `fwd`'s results)."""
    term = fwd.body.block.last_op
    assert isinstance(term, YieldOp)
    for s in rep.slices:
        if isinstance(s, OpResult) and s.op is fwd:
            src = term.values[s.index]
            if isinstance(src, OpResult) and isinstance(src.op, RepeatOp):
                return src.op
    return None


def layer_repeat_pairs(block: Block) -> list[tuple[RepeatOp, RepeatOp]]:
    """(forward layer repeat, its reverse twin in the backward) of the step in
    `block` (a module's or a stage's), in the forward's order; [] without a
    forward or a backward phase."""
    phases = phases_of(block)
    fwd, bwd = phases.get(PhaseKind.FORWARD), phases.get(PhaseKind.BACKWARD)
    if fwd is None or bwd is None:
        return []
    twins: dict[RepeatOp, RepeatOp] = {}
    for rep in bwd.body.block.ops:
        if isinstance(rep, RepeatOp) and rep.reverse:
            forward = forward_twin(rep, fwd)
            if forward is not None:
                twins[forward] = rep
    return [(rep, twins[rep]) for rep in fwd.body.block.ops if isinstance(rep, RepeatOp) and rep in twins]


def _verify_scoped_uses(op: Operation) -> None:
    """Every value an op nested in `op` reads is defined in a block that encloses
    that op: a phase reads another phase's values only through its results, and
    nothing reads a layer body's values from outside the body. (xDSL checks no
    dominance: without this, a pass that clones a forward body into the backward
    leaves IR that runs but does not parse back.)"""
    outer: set[Block] = set()
    block = op.parent_block()
    while block is not None:
        outer.add(block)
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
    stack: list[tuple[Block, frozenset[Block]]] = [
        (b, frozenset((b,))) for r in op.regions for b in r.blocks
    ]
    while stack:
        block, enclosing = stack.pop()
        for child in block.ops:
            for value in child.operands:
                owner = value.owner
                where = owner if isinstance(owner, Block) else owner.parent_block()
                if where not in enclosing and where not in outer:
                    phase = where.parent_op() if where is not None else None
                    while phase is not None and not isinstance(phase, PhaseOp):
                        phase = phase.parent_op()
                    if phase is not None and phase is not op:
                        raise VerifyException(
                            f"'{child.name}' reads a value defined inside sim.phase "
                            f'"{phase.kind.data}": a phase reads another phase\'s values only '
                            "through its results"
                        )
                    raise VerifyException(
                        f"'{child.name}' reads a value defined in a region that does not "
                        "enclose it (a layer body's values leave it only as the repeat's results)"
                    )
            stack += [(b, enclosing | {b}) for r in child.regions for b in r.blocks]


@irdl_op_definition
class RepeatOp(IRDLOperation, HasShardingRule):
    """
    Run the body `count` times (the identical layers of a model; `reverse` walks the
    slices last to first, as a backward pass does). A count of 0 is the empty repeat
    a pipeline stage keeps for layers it does not hold.

    Block arguments: one per `iter_init` (carried value), then one per `slices`
    operand (that operand without its leading `count` dim). The body yields the next
    carried values, then per-iteration outputs. Results: the final carried values,
    then each per-iteration output stacked with a leading `count` dim.
    """

    name = "sim.repeat"

    count = prop_def(IntegerAttr[I64])
    reverse = opt_prop_def(UnitAttr)
    iter_init = var_operand_def()
    slices = var_operand_def(AnyTensor)
    outputs = var_result_def()
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$count `iter` `(` $iter_init `:` type($iter_init) `)`"
        " `slices` `(` $slices `:` type($slices) `)` attr-dict"
        " `->` `(` type($outputs) `)` $body"
    )

    def sharding_rule(self) -> None:
        """None: its block arguments take the layout of what they receive, a sliced
        one without the layer dim (`ShardRepeat`)."""
        return None

    def __init__(
        self,
        count: int,
        iter_init: Sequence[SSAValue],
        slices: Sequence[SSAValue],
        body,
        result_types: Sequence[Attribute],
        reverse: bool = False,
    ):
        props: dict[str, Attribute] = {"count": IntegerAttr(count, 64)}
        if reverse:
            props["reverse"] = UnitAttr()
        super().__init__(
            operands=[iter_init, slices],
            result_types=[result_types],
            properties=props,
            regions=[body],
        )

    @property
    def trip_count(self) -> int:
        return self.count.value.data

    def verify_(self) -> None:
        n = self.trip_count
        if n < 0:
            raise VerifyException(f"count must be >= 0, got {n}")
        args = self.body.block.args
        n_iter = len(self.iter_init)
        if len(args) != n_iter + len(self.slices):
            raise VerifyException(
                f"body needs {n_iter + len(self.slices)} block arguments "
                f"({n_iter} carried + {len(self.slices)} sliced), got {len(args)}"
            )
        for i, (init, arg) in enumerate(zip(self.iter_init, args)):
            if init.type != arg.type:
                raise VerifyException(f"carried value #{i}: block argument type differs from init")
        for i, (s, arg) in enumerate(zip(self.slices, args[n_iter:])):
            st = shape_of(s)
            if not st or st[0] != n or st[1:] != shape_of(arg):
                raise VerifyException(
                    f"sliced operand #{i} must be [{n}] + block argument shape "
                    f"{list(shape_of(arg))}, got {list(st)}"
                )
        term = self.body.block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("body must end with sim.yield")
        ys = list(term.values)
        if len(ys) != len(self.outputs) or len(ys) < n_iter:
            raise VerifyException(
                f"body yields {len(ys)} values but the op has {len(self.outputs)} results"
            )
        for i in range(n_iter):
            if ys[i].type != self.iter_init[i].type or self.outputs[i].type != ys[i].type:
                raise VerifyException(f"carried value #{i} changes type across iterations")
        for i in range(n_iter, len(ys)):
            if shape_of(self.outputs[i]) != (n, *shape_of(ys[i])):
                raise VerifyException(
                    f"stacked result #{i} must be [{n}] + yielded shape {list(shape_of(ys[i]))}"
                )
        offloaded = offloaded_layers(self)
        if offloaded > n:
            raise VerifyException(f"{CPU_OFFLOAD_ATTR} offloads {offloaded} layers of a repeat of {n}")
        if offload_copy_bytes(self) is not None and offloaded == 0:
            raise VerifyException(f"{CPU_OFFLOAD_BYTES_ATTR} needs a {CPU_OFFLOAD_ATTR} that offloads layers")


# ---------------------------------------------------------------------------
# Ops the torch frontend emits beyond the core set: mixture-of-experts routing
# and the KV cache of a serving step
# ---------------------------------------------------------------------------


@irdl_op_definition
class TopKOp(ComputeOp):
    """The `k` largest entries along the last dim (an MoE router's expert choice):
    scores [..., n] give values [..., k] and integer indices [..., k]."""

    name = "sim.topk"

    input = operand_def(AnyTensor)
    values = result_def(AnyTensor)
    indices = result_def(AnyTensor)
    k = prop_def(IntegerAttr[I64])

    traits = traits_def(Pure())
    assembly_format = (
        "$input `k` `=` $k attr-dict `:` type($input) `->` `(` type($values) `,` type($indices) `)`"
    )

    def __init__(self, input: SSAValue, k: int, values_type: Attribute, indices_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[values_type, indices_type],
            properties={"k": IntegerAttr(k, 64)},
        )

    def verify_(self) -> None:
        x, v, i = shape_of(self.input), shape_of(self.values), shape_of(self.indices)
        k = self.k.value.data
        if not x or not 0 < k <= x[-1]:
            raise VerifyException(f"k = {k} must be in [1, {x[-1] if x else 0}] (the last dim)")
        if v != (*x[:-1], k) or i != v:
            raise VerifyException(
                f"values and indices must have shape {[*x[:-1], k]}, got {list(v)} and {list(i)}"
            )
        if not isinstance(self.indices.type.element_type, IntegerType):  # pyright: ignore[reportAttributeAccessIssue]
            raise VerifyException("indices must have an integer element type")

    def flops(self) -> float:
        # one comparison per input element per selected entry
        return float(numel(self.input) * self.k.value.data)

    def sharding_rule(self) -> None:
        """None: routing scores are laid out by size (`ShardGeneric`)."""
        return None

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class MoeDispatchOp(ComputeOp):
    """Send each token to its top-k experts: x [tokens, h] and expert indices
    [tokens, k] give per-expert buffers [experts, capacity, h]. An expert-parallel
    pass turns this into an all_to_all. Balanced routing: capacity is
    ceil(tokens * k / experts)."""

    name = "sim.moe_dispatch"

    input = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $indices attr-dict `:` `(` type($input) `,` type($indices) `)` `->` type($result)"
    )

    def verify_(self) -> None:
        x, idx, r = shape_of(self.input), shape_of(self.indices), shape_of(self.result)
        if len(x) != 2 or len(idx) != 2 or len(r) != 3:
            raise VerifyException("input must be [tokens, h], indices [tokens, k], result [experts, capacity, h]")
        if x[0] != idx[0] or r[2] != x[1]:
            raise VerifyException(
                f"token counts or hidden sizes differ: input {list(x)}, indices {list(idx)}, result {list(r)}"
            )

    def flops(self) -> float:
        return 0.0

    def sharding_rule(self) -> None:
        """None: tokens split over the ranks fill smaller per-expert buffers (the
        capacity dim, ceil-divided), which is no factor of the input
        (`ShardMoe`; shard-expert's `DispatchToExperts` routes the buffers)."""
        return None

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class MoeCombineOp(ComputeOp):
    """Bring expert outputs [experts, capacity, h] back to their tokens [tokens, h],
    summing a token's k copies, each scaled by its router weight [tokens, k] when
    `weights` is given (without weights it is the backward of `sim.moe_dispatch`).
    An expert-parallel pass turns this into an all_to_all."""

    name = "sim.moe_combine"

    input = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    weights = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `,` $indices (`weights` $weights^ `:` type($weights))? attr-dict"
        " `:` `(` type($input) `,` type($indices) `)` `->` type($result)"
    )

    def verify_(self) -> None:
        e, idx, r = shape_of(self.input), shape_of(self.indices), shape_of(self.result)
        if len(e) != 3 or len(idx) != 2 or len(r) != 2:
            raise VerifyException("input must be [experts, capacity, h], indices [tokens, k], result [tokens, h]")
        if r[0] != idx[0] or r[1] != e[2]:
            raise VerifyException(
                f"result must be [{idx[0]}, {e[2]}] (tokens x hidden), got {list(r)}"
            )
        if self.weights is not None and shape_of(self.weights) != idx:
            raise VerifyException(f"weights must have the shape of indices {list(idx)}")

    def flops(self) -> float:
        # a multiply-add per element of each of a token's k copies
        return 2.0 * numel(self.indices) * shape_of(self.result)[1]

    def sharding_rule(self) -> None:
        """None: the inverse of `sim.moe_dispatch` (`ShardMoe`; shard-expert's
        `CombineFromExperts`)."""
        return None

    def bytes_moved(self) -> float:
        return self._io_bytes()


@irdl_op_definition
class KVCacheWriteOp(ComputeOp):
    """Append the keys and values of this step's tokens, k and v [b, s, hkv, d],
    to the KV cache."""

    name = "sim.kv_cache_write"

    k = operand_def(AnyTensor)
    v = operand_def(AnyTensor)

    traits = traits_def(MemoryWriteEffect())

    assembly_format = "$k `,` $v attr-dict `:` type($k) `,` type($v)"

    def verify_(self) -> None:
        k, v = shape_of(self.k), shape_of(self.v)
        if len(k) != 4 or len(v) != 4 or k[:3] != v[:3]:
            raise VerifyException("k and v must be [batch, seq, kv heads, head_dim] with equal batch, seq, heads")

    def flops(self) -> float:
        return 0.0

    def sharding_rule(self) -> None:
        """None: a cache of local heads is written as is (`ShardGeneric`)."""
        return None

    def bytes_moved(self) -> float:
        # read once, written once into the cache
        return 2.0 * (tensor_bytes(self.k) + tensor_bytes(self.v))


@irdl_op_definition
class KVCacheReadOp(ComputeOp):
    """The whole cached context plus this step's keys and values: k_new, v_new
    [b, s, hkv, d] give k, v [b, context, hkv, d], context >= s. The attention that
    consumes them reads the cache, so the read is charged there, not here."""

    name = "sim.kv_cache_read"

    k_new = operand_def(AnyTensor)
    v_new = operand_def(AnyTensor)
    k = result_def(AnyTensor)
    v = result_def(AnyTensor)

    traits = traits_def(Pure())
    assembly_format = (
        "$k_new `,` $v_new attr-dict `:` type($k_new) `,` type($v_new) `->` type($k) `,` type($v)"
    )

    def verify_(self) -> None:
        for new, full, label in ((self.k_new, self.k, "k"), (self.v_new, self.v, "v")):
            n, f = shape_of(new), shape_of(full)
            if len(n) != 4 or len(f) != 4 or (n[0], n[2], n[3]) != (f[0], f[2], f[3]) or f[1] < n[1]:
                raise VerifyException(
                    f"{label}: result must be [{n[0] if n else '?'}, context >= {n[1] if len(n) > 1 else '?'}, "
                    f"heads, head_dim] matching the new entries, got {list(f)}"
                )

    def flops(self) -> float:
        return 0.0

    def sharding_rule(self) -> None:
        """None: laid out by size (`ShardGeneric`)."""
        return None

    def bytes_moved(self) -> float:
        return 0.0


# ---------------------------------------------------------------------------
# Values another pipeline stage holds, and the canonical forms they give
# ---------------------------------------------------------------------------


@irdl_op_definition
class OffStageOp(IRDLOperation):
    """A value this pipeline stage does not hold: another stage computes it (the
    pipeline pass puts one in place of each op it moves off a stage). Everything
    computed from it is off-stage too, as poison spreads in MLIR: an op that only
    computes values gives off-stage results (`OffStageOperand`), a phase stops
    yielding it, an optimizer step stops updating the pair. Nothing reads one once
    canonicalization is done, and dead-code elimination takes it away (`Pure`)."""

    name = "sim.off_stage"

    result = result_def()

    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])


def is_off_stage(value: SSAValue) -> bool:
    return isinstance(value.owner, OffStageOp)


def repeat_source(value: SSAValue) -> SSAValue | None:
    """What `value` is outside every `sim.repeat` around it: the operand a repeat
    block argument takes (its repeat's operands in order, through nested
    repeats), the value itself when it is no block argument; None for a block
    argument of another op."""
    while isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if not isinstance(owner, RepeatOp):
            return None
        value = owner.operands[value.index]
    return value


def param_of(value: SSAValue) -> ParamOp | None:
    """The `sim.param` `value` is, or a layer's slice of; None for anything else
    (an activation, ZeRO's gathered copy)."""
    source = repeat_source(value)
    return source.owner if source is not None and isinstance(source.owner, ParamOp) else None


def _off_stage_values(rewriter: PatternRewriter, old: Sequence[SSAValue], new: Sequence[SSAValue] = (),
                      keep: Sequence[int] = ()) -> list[SSAValue | None]:
    """What replaces `old`: result `keep[i]` the `new[i]`, each other one that
    something reads an off-stage value (inserted at the rewriter's insertion
    point), None for the unread."""
    kept = dict(zip(keep, new))
    return [kept[i] if i in kept else rewriter.insert(OffStageOp(v.type)).result if v.uses else None
            for i, v in enumerate(old)]


@dataclass(frozen=True)
class OffStageOperand(RewritePattern):
    """An op that reads an off-stage value is off-stage: its results are replaced
    by off-stage values and it goes. It applies to ops with no effect beyond their
    results, and to communication when `communication` is set (a collective of a
    value this stage does not hold is not run here)."""

    communication: bool = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.regions or not any(is_off_stage(v) for v in op.operands):
            return
        if not (self.communication or result_only_effects(op)):
            return
        rewriter.replace(op, [], _off_stage_values(rewriter, op.results))


class OffStageSpreads(HasCanonicalizationPatternsTrait):
    """What an op computes from an off-stage value is off-stage (`OffStageOperand`)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (OffStageOperand(),)


class OffStagePhaseResults(RewritePattern):
    """A phase result whose yielded value is off-stage is off-stage outside the
    phase too: the phase no longer yields it, its readers read an off-stage value."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PhaseOp, rewriter: PatternRewriter, /) -> None:
        term = op.body.block.last_op
        if not isinstance(term, YieldOp) or not any(is_off_stage(v) for v in term.values):
            return
        keep = [i for i, v in enumerate(term.values) if not is_off_stage(v)]
        rewriter.replace(term, YieldOp(*[term.values[i] for i in keep]))
        new = PhaseOp(op.kind.data, rewriter.move_region_contents_to_new_regions(op.body),
                      [op.outputs[i].type for i in keep])
        new.attributes.update(op.attributes)
        rewriter.replace(op, new, _off_stage_values(rewriter, op.outputs, new.outputs, keep))


class EraseEmptyPhase(RewritePattern):
    """A phase that computes nothing and returns nothing has no effect."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PhaseOp, rewriter: PatternRewriter, /) -> None:
        if not op.outputs and isinstance(op.body.block.first_op, YieldOp):
            rewriter.erase(op)


class PhaseCanonicalization(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (OffStagePhaseResults(), EraseEmptyPhase())


class DropOffStagePairs(RewritePattern):
    """A (param, grad) pair another stage holds (either off-stage) is updated there,
    not here: the step goes over the other pairs; an updated param of a dropped pair
    is off-stage."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OptimizerStepOp, rewriter: PatternRewriter, /) -> None:
        keep = [i for i, (p, g) in enumerate(zip(op.params, op.grads))
                if not (is_off_stage(p) or is_off_stage(g))]
        if len(keep) == len(op.params):
            return
        new = OptimizerStepOp.build(
            operands=[[op.params[i] for i in keep], [op.grads[i] for i in keep]],
            result_types=[[op.updated[i].type for i in keep] if op.updated else []],
            properties={"kind": op.kind},
            attributes=dict(op.attributes),
        )
        rewriter.replace(op, new, _off_stage_values(rewriter, op.updated, new.updated, keep))


class EraseEmptyStep(RewritePattern):
    """A step over no (param, grad) pairs updates nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OptimizerStepOp, rewriter: PatternRewriter, /) -> None:
        if not op.params:
            rewriter.erase(op)


class OptimizerStepCanonicalization(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (DropOffStagePairs(), EraseEmptyStep())


Sim = Dialect(
    "sim",
    [
        MatmulOp,
        AttentionOp,
        AttentionGradOp,
        EmbeddingOp,
        NormOp,
        ElementwiseOp,
        ReduceOp,
        SoftmaxOp,
        GenericOp,
        OptimizerStepOp,
        ParamOp,
        InputOp,
        ViewOp,
        PhaseOp,
        RepeatOp,
        StageOp,
        YieldOp,
        TopKOp,
        MoeDispatchOp,
        MoeCombineOp,
        KVCacheWriteOp,
        KVCacheReadOp,
        OffStageOp,
    ],
    [
        CostAttr,
        DataParallelAttr,
        ElementwiseKindAttr,
        NormKindAttr,
        OptimizerKindAttr,
        ParamRoleAttr,
        PhaseKindAttr,
        AttentionKernelAttr,
        PipelineAttr,
        RecomputeKindAttr,
        RecomputePolicyAttr,
        ReduceKindAttr,
        ReplicatedFlopsAttr,
        StageMemoryAttr,
        CpuOffloadAttr,
        TargetAttr,
        TokenType,
        WeightSplitAttr,
    ],
)
