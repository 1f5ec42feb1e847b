"""Peak device memory of each pipeline stage of a training (or serving) step.

    from charon_ir.memory import analyze_memory
    for stage in analyze_memory(module, target):
        print(stage.stage, stage.peak, stage.top())

peak = parameters + gradients + optimizer states (ZeRO-sharded,
`charon_ir.memory.states`) + communication buffers + activations, where
activations is the most bytes live at once over the stage's schedule: the saved
activations of the micro-batches in flight (counted from the exact order of
`charon_ir.parallel.schedules.stage_order`, e.g. pp - stage under 1F1B) plus the
working set of the micro-batch running (liveness, `charon_ir.memory.liveness`).
A physical stage of an interleaved schedule holds several model chunks: their
states add up, and each chunk's micro-batches are tracked on their own.

Communication buffers: what collectives write that is not an activation, the
largest one of the stage (a weight gathered for a layer, a data-parallel bucket
gathered or reduced), plus under ZeRO-3 the gathered parameters of the largest
layer, twice (the layer running and the one being prefetched, as FSDP gathers
block by block), or with `zero3_live_params` at most that many elements (DeepSpeed's
`stage3_max_live_parameters` and prefetch bucket) and never less than the largest
single weight. A collective over
activations (a tensor-parallel all-reduce, a pipeline send or receive) writes an
activation, which liveness counts; NCCL's own staging buffers are not modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Block

from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import MEMORY_ATTR, PIPELINE_ATTR
from charon_ir.errors import CharonError
from charon_ir.memory.liveness import STATIC, PhaseMemory, Roots, fp8_saved_gemm_inputs, phase_memory
from charon_ir.memory.schedule import scheduled_activations
from charon_ir.memory.allocations import ALL_GATHER_STREAM, COMPUTE_STREAM, ChunkProgram, stage_events
from charon_ir.memory.allocator import AllocatorStats
from charon_ir.memory.allocator import replay as replay_allocator
from charon_ir.memory.states import GRAD_BYTES, DataParallel, StateTensors, state_bytes, state_tensors
from charon_ir.memory.tensors import value_bytes
from charon_ir.parallel.schedules import SPLIT_BACKWARD

if TYPE_CHECKING:
    from charon_ir.memory.schedule import ScheduledActivations
    from charon_ir.target.target import Target

GIB = 2**30

CONSUMER_LABELS = {
    "activations": "activations",
    "optimizer": "optimizer states",
    "params": "parameters",
    "grads": "gradients",
    "comm_buffers": "communication buffers",
}


@dataclass(frozen=True)
class StageMemory:
    """Bytes one GPU of pipeline stage `stage` holds at its peak."""

    stage: int
    params: int
    grads: int
    optimizer: int
    activations: int
    """Live activation bytes at the peak: in-flight saved plus the working set."""
    saved_per_microbatch: int
    """What one micro-batch's forward keeps for its backward (all chunks of an
    interleaved stage together)."""
    in_flight: int
    """Most forwards (micro-batch x chunk) whose backward has not run yet:
    pp - stage under 1F1B, every micro-batch under GPipe."""
    comm_buffers: int
    weight_grad_residual_per_microbatch: int = 0
    """Under zb-h1: what one micro-batch keeps from its B item to its W item."""
    host_activations: int = 0
    """Saved activation bytes per micro-batch kept in host memory
    (`offload-activations`), not counted on the GPU."""
    saved_in_flight: int = 0
    """Most bytes the in-flight forwards keep at once, without the working set of
    the item running (`activations` adds it): the quantity Megatron-LM's
    theoretical activation memory states. Not in the `sim.memory` report."""
    reserved: int | None = None
    """The caching allocator's peak reserved bytes over two steps of the stage
    replayed (`allocations.stage_events` through `allocator.replay`): what
    `torch.cuda.memory_stats()['reserved_bytes.all.peak']` reports. None when
    not replayed (`analyze_memory(replay=False)`). Not in the `sim.memory`
    report."""
    reserved_fits: bool | None = None
    """Whether the replay stayed within the device's capacity (`capacity`): False
    when a request found no room even after the allocator released its cached
    segments, where PyTorch raises its out-of-memory error
    (`allocator.AllocatorStats.over_capacity`). None when not replayed."""

    @property
    def peak(self) -> int:
        return sim.held_at_peak(lambda field: getattr(self, field))

    def consumers(self) -> list[tuple[str, int]]:
        """(label, bytes), largest first."""
        items = [(label, getattr(self, field)) for field, label in CONSUMER_LABELS.items()]
        return sorted(items, key=lambda item: -item[1])

    def top(self, n: int = 3) -> list[tuple[str, int]]:
        return self.consumers()[:n]

    def to_attr(self) -> sim.StageMemoryAttr:
        return sim.StageMemoryAttr(
            stage=self.stage, params=self.params, grads=self.grads, optimizer=self.optimizer,
            activations=self.activations, saved_per_microbatch=self.saved_per_microbatch,
            in_flight=self.in_flight, comm_buffers=self.comm_buffers,
            weight_grad_residual=self.weight_grad_residual_per_microbatch,
            host_activations=self.host_activations,
        )

    def reserved_oom_message(self, limit_bytes: float) -> str:
        """The diagnostic of a replay that ran past `limit_bytes`."""
        def size(n: float) -> str:  # two decimals of GiB, or of MiB under a GiB
            return f"{n / GIB:.2f} GiB" if limit_bytes >= GIB else f"{n / 2**20:.2f} MiB"

        return (
            f"allocator replay: stage {self.stage}'s caching allocator needs {size(self.reserved or 0)} reserved of "
            f"{size(limit_bytes)} (allocated peak {size(self.peak)}): the replay runs out of memory after releasing "
            f"its cached segments (reported, not refused: docs/calibration.md, \"The caching allocator's reserved bytes\")"
        )

    def oom_message(self, limit_bytes: float) -> str:
        parts = ", ".join(f"{label} {gib(b)} GiB" for label, b in self.top())
        return (
            f"memory-analysis: stage {self.stage} needs {gib(self.peak)} GiB of "
            f"{gib(limit_bytes)} GiB: {parts}"
        )


def gib(n: float) -> str:
    return f"{n / GIB:.1f}"


def _collective_buffer(block: Block, roots: Roots) -> int:
    """The largest buffer a collective of the block writes that is not an
    activation."""
    largest = 0
    for op in block.walk():
        if isinstance(op, coll.CollectiveOp):
            sizes = [value_bytes(r) for r in op.results if roots.root(r) == STATIC]
            largest = max([largest, *sizes])
    return largest


def _zero3_gathered(block: Block, data_parallel: DataParallel, zero3_live_params: int = 0,
                    zero3_keep_gathered: bool = False) -> tuple[int, dict[sim.RepeatOp, int]]:
    """Under ZeRO-3: the gathered parameters counted as communication buffers,
    and per layer repeat the bytes of one layer's (empty when a DeepSpeed limit
    caps them, which then gathers module by module, not layer by layer)."""
    # parameters kept gathered are counted with the parameters
    if not (data_parallel.zero >= 3 and data_parallel.dense_replicas > 1 and not zero3_keep_gathered):
        return 0, {}
    layer = weight = element = 0
    per_repeat: dict[sim.RepeatOp, int] = {}
    for op in block.walk():
        if isinstance(op, sim.RepeatOp) and op.trip_count > 0:
            params = [s for s in op.slices if isinstance(s.owner, sim.ParamOp)]
            if params:
                per_repeat[op] = sum(value_bytes(s) for s in params) // op.trip_count
            layer = max(layer, sum(value_bytes(s) for s in params) // op.trip_count)
            for s in params:
                weight = max(weight, value_bytes(s) // op.trip_count)
                element = element or sim.element_bytes(s.type.element_type)  # pyright: ignore[reportAttributeAccessIssue]
    gathered = 2 * layer
    if zero3_live_params:
        # DeepSpeed gathers module by module and frees what it will not
        # reuse soon, keeping at most `zero3_live_params` elements; one
        # weight larger than that is still gathered whole
        gathered = min(gathered, max(zero3_live_params * element, weight))
        per_repeat = {}
    return gathered, per_repeat


@dataclass
class StageClass:
    """What memory-analysis counts of one virtual stage's block, its schedule
    aside: a physical stage adds up its chunks' states and buffers and walks
    their `phases` through its schedule (`scheduled_activations`). Bytes per
    rank."""

    block: Block
    phases: PhaseMemory
    """Saved activations per micro-batch and the forward and backward peaks
    beyond them (`liveness.phase_memory`)."""
    params: int
    grads: int
    optimizer: int
    """Parameters, gradients and optimizer states, ZeRO-sharded as the module's
    data-parallel says (`states.model_states`)."""
    comm_buffers: int
    """The largest buffer a collective of the block writes that is not an
    activation (module docstring)."""
    roots: Roots = field(default_factory=Roots)
    state_tensors: StateTensors = field(default_factory=lambda: StateTensors([], []))
    """The model states as the framework allocates them, bytes per tensor, and
    when (`states.state_tensors`)."""
    held_buffers: list[tuple[int, int]] = field(default_factory=list)
    """(bytes, stream) of the communication buffers held through the step: the
    largest collective buffer, and DeepSpeed's capped gathered parameters."""
    gathered_layer: dict[sim.RepeatOp, int] = field(default_factory=dict)
    """ZeRO-3's gathered parameters of one layer, per layer repeat."""


def stage_class(
    block: Block, data_parallel: DataParallel, grad_bytes: int, split_backward: bool = False,
    fp8: bool = False, fp8_params: bool = False, zero3_live_params: int = 0, zero3_keep_gathered: bool = False,
    keep_stage_outputs: bool = False, fp32_param_shards: bool = False,
) -> StageClass:
    """The StageClass of a virtual stage's `block` (a `sim.stage`'s body, or a
    module's whole step); the options are `analyze_memory`'s (`split_backward`:
    the schedule runs each backward as B and W items). The sweep's screening tier
    composes a point's stages from these (`charon_ir.sweep.screen`)."""
    states = state_bytes(block, data_parallel, grad_bytes, fp8_params, zero3_keep_gathered, fp32_param_shards)
    roots = stage_roots(block, fp8)
    collective = _collective_buffer(block, roots)
    gathered, per_layer = _zero3_gathered(block, data_parallel, zero3_live_params, zero3_keep_gathered)
    held = [(collective, COMPUTE_STREAM)] + ([(gathered, ALL_GATHER_STREAM)] if gathered and not per_layer else [])
    return StageClass(
        block,
        phase_memory(block, roots, split_backward=split_backward, keep_stage_outputs=keep_stage_outputs),
        sum(states.params.values()),
        sum(states.grads.values()),
        sum(states.optimizer.values()),
        collective + gathered,
        roots,
        state_tensors(states, data_parallel.zero),
        held,
        per_layer,
    )


def stage_roots(block: Block, fp8: bool = False) -> Roots:
    """The storage roots of a virtual stage's `block`; under Transformer Engine's
    fp8 training, with the values saved as their fp8 cast."""
    roots = Roots()
    return Roots(fp8_saved_gemm_inputs(block, roots)) if fp8 else roots


def _pipeline(module: ModuleOp) -> tuple[int, int, str, int]:
    attr = module.attributes.get(PIPELINE_ATTR)
    if not isinstance(attr, sim.PipelineAttr):
        raise CharonError(
            "memory-analysis: the module has sim.stage ops but no #sim.pipeline attribute"
        )
    return attr.pp.data, attr.vpp.data, attr.schedule.data, attr.microbatches.data


def analyze_memory(
    module: ModuleOp, target: Target | None = None, *, grad_bytes: int = GRAD_BYTES,
    fp8: bool = False, fp8_params: bool = False, zero3_live_params: int = 0, zero3_keep_gathered: bool = False,
    keep_stage_outputs: bool = False, fp32_param_shards: bool = False, replay: bool = False,
    capacity: int | Sequence[int] | None = None,
) -> list[StageMemory]:
    """Per physical pipeline stage (one entry, stage 0, when not pipelined). The
    target is not needed for the byte counts; it is accepted so that callers
    that hold one pass it as for every other analysis. `fp8`: Transformer
    Engine's fp8 training, whose linears save their inputs in fp8
    (`liveness.fp8_saved_gemm_inputs`); `fp8_params`, whose GEMM weights are
    kept in fp8 (`states.model_states`); `zero3_live_params`, the most parameter
    elements ZeRO-3 holds gathered at once (0: two whole layers);
    `zero3_keep_gathered`, ZeRO-3 parameters kept gathered and gradients
    accumulated unsharded through the step (FSDP2 under pipelining,
    `states.model_states`); `keep_stage_outputs`, each stage's output kept to its
    micro-batch's backward (PyTorch's pipelining, `liveness.phase_memory`);
    `fp32_param_shards`, ZeRO-3 shards that are the fp32 master copy (FSDP2's
    mixed precision, `states.model_states`); `replay`, each stage's allocations
    of two steps replayed through PyTorch's caching allocator for its peak
    reserved bytes (`StageMemory.reserved`), on a device of `capacity` bytes
    (a sequence: per physical stage, for stages on GPUs of several kinds; None:
    the allocator never releases its cache)."""
    del target
    data_parallel = DataParallel.from_module(module)
    if zero3_keep_gathered and data_parallel.zero < 3:
        raise CharonError(f"memory-analysis: option 'zero3-keep-gathered' needs ZeRO-3 "
                          f"(data-parallel{{zero=3}}), the module has zero {data_parallel.zero}")
    if fp32_param_shards and data_parallel.zero < 3:
        raise CharonError(f"memory-analysis: option 'fp32-param-shards' needs ZeRO-3 "
                          f"(data-parallel{{zero=3}}), the module has zero {data_parallel.zero}")
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    if not stages:
        cls = stage_class(module.body.block, data_parallel, grad_bytes, fp8=fp8, fp8_params=fp8_params,
                           zero3_live_params=zero3_live_params, zero3_keep_gathered=zero3_keep_gathered,
                           keep_stage_outputs=keep_stage_outputs, fp32_param_shards=fp32_param_shards)
        acts = scheduled_activations([cls.phases], "gpipe", 1, 1, 0)
        replayed = (_replayed([cls], "gpipe", 1, 1, 0, keep_stage_outputs, _stage_capacity(capacity, 0))
                    if replay else None)
        return [_result(0, [cls], acts, replayed)]
    pp, vpp, schedule, microbatches = _pipeline(module)
    by_virtual: dict[int, StageClass] = {}
    for op in stages:
        cls = stage_class(op.body.block, data_parallel, grad_bytes, schedule in SPLIT_BACKWARD, fp8, fp8_params,
                           zero3_live_params, zero3_keep_gathered, keep_stage_outputs, fp32_param_shards)
        for v in op.stage_ids():
            by_virtual[v] = cls
    results = []
    for stage in range(pp):
        chunks = []
        for c in range(vpp):
            v = c * pp + stage
            if v not in by_virtual:
                raise CharonError(f"memory-analysis: no sim.stage holds virtual stage {v}")
            chunks.append(by_virtual[v])
        acts = scheduled_activations([c.phases for c in chunks], schedule, pp, microbatches, stage)
        replayed = (_replayed(chunks, schedule, pp, microbatches, stage, keep_stage_outputs,
                              _stage_capacity(capacity, stage))
                    if replay else None)
        results.append(_result(stage, chunks, acts, replayed))
    return results


def _stage_capacity(capacity: int | Sequence[int] | None, stage: int) -> int | None:
    """The replay's capacity on physical stage `stage`."""
    if capacity is None or isinstance(capacity, int):
        return capacity
    return capacity[stage % len(capacity)]


def _replayed(chunks: list[StageClass], schedule: str, pp: int, microbatches: int, stage: int,
              keep_stage_outputs: bool, capacity: int | None) -> AllocatorStats:
    """A physical stage's allocations replayed through the caching allocator:
    its chunks' model-state tensors made before the first step and its held
    buffers first, then two steps of its schedule, the optimizer's moments made
    by the first step's optimizer step (`states.StateTensors`)."""
    programs = [ChunkProgram(c.block, c.roots, c.gathered_layer) for c in chunks]
    held = [(n, COMPUTE_STREAM) for c in chunks for n in c.state_tensors.at_start]
    held += max((c.held_buffers for c in chunks), key=lambda buffers: sum(n for n, _ in buffers))
    first_step = [(n, COMPUTE_STREAM) for c in chunks for n in c.state_tensors.at_first_step]
    events = stage_events(programs, schedule, pp, microbatches, stage, held=held, at_first_step=first_step,
                          keep_stage_outputs=keep_stage_outputs)
    return replay_allocator(events, capacity)


def _result(stage: int, chunks: list[StageClass], acts: ScheduledActivations,
            replayed: AllocatorStats | None = None) -> StageMemory:
    return StageMemory(
        stage=stage,
        params=sum(c.params for c in chunks),
        grads=sum(c.grads for c in chunks),
        optimizer=sum(c.optimizer for c in chunks),
        activations=acts.peak,
        saved_per_microbatch=sum(c.phases.saved for c in chunks),
        in_flight=acts.in_flight,
        comm_buffers=max(c.comm_buffers for c in chunks),
        weight_grad_residual_per_microbatch=acts.weight_grad_residual,
        saved_in_flight=acts.most_saved,
        host_activations=sum(c.phases.host for c in chunks),
        reserved=replayed.peak_reserved if replayed else None,
        reserved_fits=not replayed.over_capacity if replayed else None,
    )


def peak_bytes_per_stage(module: ModuleOp) -> list[int]:
    """Peak bytes of each physical pipeline stage, stage 0 first: what
    `memory-analysis` attached (`sim.memory`), or a fresh analysis when the
    module has no report."""
    peaks: dict[int, int] = {}
    holders = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)] or [module]
    for holder in holders:
        report = holder.attributes.get(MEMORY_ATTR)
        if not isinstance(report, ArrayAttr):
            return [r.peak for r in analyze_memory(module)]
        for entry in report.data:
            if not isinstance(entry, sim.StageMemoryAttr):
                raise CharonError(f"'{MEMORY_ATTR}' must list #sim.memory attributes, got {entry}")
            peaks[entry.field("stage")] = entry.peak()
    return [peaks[k] for k in sorted(peaks)]
