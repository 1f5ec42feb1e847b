"""The screening tier of `charon sweep`: a training point timed from the
interpreter's costs of one layer, without building the point's own IR.

A sweep's points share far more than their pass prefixes: every point with the
same tensor-parallel layer (model, sequence, micro-batch, tp, sequence
parallelism, recomputation, kernels, hardware) runs the same layer, whatever its
pipeline, data-parallel or ZeRO settings. The screening tier builds that layer
once, as a probe, and composes each point from it:

- The probe is the point's own pass pipeline with pp = 1, dp = 1 and one
  micro-batch, priced, lowered and run by the fast tier with its layer repeats
  set to two counts (4 and 8 layers): the difference is what one layer's
  forward, backward (B) and weight-gradient (W, split schedules) items take on
  the compute stream, tensor-parallel communication included; the rest is what
  comes before the layers (embedding) and after them (head, loss). A second,
  unpriced build with dp = 2 gives the gradient buckets' collectives
  (`data-parallel`'s own buckets), re-priced by the collective engine for each
  point's dp group.
- A point is then a small event program run by the interpreter (the one the
  fast tier runs, `runtime.interpreter`): per stage, one compute event per
  item of `charon_ir.parallel.schedules.stage_order` with the probe's
  durations, waiting for its input (activations and gradients cross stages on
  the sender's send stream, priced by the collective engine on the link
  between the two stages); what a B runs before it needs the gradient (a
  recomputed layer's forward, `Phase.head`) runs while the gradient is on its
  way; the last backward of a chunk runs layer by layer, each layer's gradient buckets
  reduced on the stage's dp stream as it ends (the interpreter's overlap
  contention slowing both); the optimizer step (and under ZeRO-1/2 the
  all-gather of the updated shards) closes each stage. Long steps are
  simulated at two micro-batch counts and extrapolated, as the fast tier does.
- Memory is memory-analysis's own: its stage classes (saved bytes, forward and
  backward peaks, parameter and optimizer states) of a 4-stage split of the
  probe's step with 1, 1, 2 and L - 4 layers, moved along the per-layer slope
  to each virtual stage's layer count, walked through the point's schedule by
  `scheduled_activations`, ZeRO-sharded over dp.

It is an approximation of the fast tier (no bandwidth sharing between
concurrent collectives; an item but for a B's head starts only once its whole
input is there, where the fast tier starts each of its events once that
event's own inputs are); the
sweep uses it to rank, and re-times the top points and any point whose memory
is within `MEMORY_BAND` of the GPU with the fast tier. `bench/bench_sweep.py
--compare FILE` measures its error against the fast tier.

Points it does not model (context or expert parallelism, ZeRO-3/FSDP, models
with more than one kind of layer, gradients reduced after the whole backward
(`dp_overlap` false), the blocking collectives but pipeline sends, scatter/gather sends and
unfused optimizer of the Megatron-LM 2021 validation runs) return None: the
caller runs the fast tier. The kernel and tensor-parallel overlap settings
(`fuse_attention`, `attention_kernel`, `tp_comm_overlap`) are the probe's own
passes, and `dp_bucket_mb` its gradient buckets and the composed ZeRO gathers;
parameters gathered in the next forward (`dp_overlap_param_gather`, Megatron-
Core's default) delay each stage's first forward by the first bucket's gather
and run the rest beside it.
"""

from __future__ import annotations

import gc
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from math import ceil
from typing import Any, NamedTuple

import numpy as np

from xdsl.dialects.builtin import IntegerAttr

from charon_ir.api import imports_tensor_parallel, lowering_options, make_pass, overlap_model, pass_plan
from charon_ir.dialects import coll, event, sim
from charon_ir.engines.collectives import cached_plan
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import count_tokens, recomputed_flops
from charon_ir.memory.analysis import stage_class
from charon_ir.memory.liveness import PhaseMemory, layer_saved_values
from charon_ir.memory.schedule import scheduled_activations
from charon_ir.memory.states import DataParallel
from charon_ir.memory.tensors import value_bytes
from charon_ir.parallel.mesh import find_grid
from charon_ir.parallel.schedules import SPLIT_BACKWARD, mark_gradient_sync, stage_order
from charon_ir.passes.data_parallel import bucket_sizes
from charon_ir.passes import recompute as recompute_pass
from charon_ir.passes.pipeline import even_split
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.report.energy import nics_per_gpu, training_energy
from charon_ir.report.summary import utilization
from charon_ir.runtime.flatten import flatten_all
from charon_ir.runtime.interpreter import EventTables, OverlapModel
from charon_ir.runtime.interpreter import run as interpret
from charon_ir.runtime.program import KIND_COMM, KIND_COMPUTE, FlatProgram, ProgramInfo
from charon_ir.runtime.tiers import fold_points
from charon_ir.runtime.timeline import ANY_AXIS, stream_work
from charon_ir.target.cluster import load_cluster
from charon_ir.target.target import Target
from charon_ir.target.topology import group_ranks

PROBE_LAYERS = (4, 8)
"""Layer counts the probe is timed at: both fold in the fast tier (>= 3), and
their difference is one layer's cost times 4."""
MEMORY_BAND = (0.995, 1.005)
"""A composed peak between these fractions of the GPU's memory is decided by
the fast tier (memory-analysis on the point's own IR). Composed from
memory-analysis's own stage classes, the peak equals memory-analysis's to
rounding (+0.0 % over the 341 screened points of examples/sweeps/training.yaml
that fit, `bench/bench_sweep.py --compare`); the band covers the rounding."""
ROUGH_MEMORY_BAND = (0.90, 1.15)
"""... and for models of fewer than 5 layers, whose memory is cut by layers out
of the whole model's stage class (8.9 % under to 2.7 % over memory-analysis's
on the 48 points of the hand-written 2-layer step, test/unit/sweep/test_screen.py)."""


@dataclass(frozen=True)
class Phase:
    """One kind of item (forward F, backward B, weight gradients W) of a chunk:
    seconds before the layers, per layer and after them, on the compute stream
    (exposed tensor-parallel communication included, and counted apart)."""

    pre: float = 0.0
    layer: float = 0.0
    post: float = 0.0
    tp_pre: float = 0.0
    tp_layer: float = 0.0
    tp_post: float = 0.0
    head: float = 0.0
    """Seconds of the layers' work that does not wait for the item's input:
    under full recomputation a backward first re-runs its first layer's forward
    from the saved checkpoint, which runs while the gradient from the next
    stage is still on its way (the fast tier's folded loop head,
    `FlatProgram.folded_heads`: how much earlier the compute stream ends when
    the input comes late)."""

    def time(self, layers: int, first: bool, last: bool, backward: bool) -> float:
        # the embedding comes first in forward and last in backward
        head, tail = (last, first) if backward else (first, last)
        return self.pre * head + self.layer * layers + self.post * tail

    def exposed_tp(self, layers: int, first: bool, last: bool, backward: bool) -> float:
        head, tail = (last, first) if backward else (first, last)
        return self.tp_pre * head + self.tp_layer * layers + self.tp_post * tail


@dataclass(frozen=True)
class Collective:
    kind: str
    payload_bytes: float
    axes: tuple[str, ...]


@dataclass(frozen=True)
class GradientGroup:
    """Gradients data-parallel packs into buckets together (one layer's, or
    those reduced before or after the layers) and reduces over `axes`."""

    elements: int
    element_bytes: int
    axes: tuple[str, ...]

    def buckets(self, bucket_mb: int) -> list[Collective]:
        """Its all-reduces with buckets of `bucket_mb`, each padded for the
        probe's dp = 2 (as the probe's build padded them)."""
        sizes = bucket_sizes(self.elements, self.element_bytes, 2, bucket_mb * 2**20)
        return [Collective("all_reduce", float(n * self.element_bytes), self.axes) for n in sizes]


@dataclass
class Probe:
    """What every point of one layer class is composed from."""

    layers: int
    forward: Phase
    backward: Phase
    weight: Phase | None
    optimizer_s: float
    """The optimizer step over every parameter of the model on one rank."""
    flops_per_microbatch: float
    recomputed_per_microbatch: float
    """Of those, the FLOPs recompute spends re-running the forward (not model FLOPs)."""
    tokens_per_microbatch: int
    """Tokens one micro-batch carries, read off the IR as the fast tier reads them
    (`count_tokens`): a .mlir step's own shapes, whatever `seq_len` says."""
    activation_bytes: float
    """What a stage sends its neighbour per micro-batch (activations forward,
    their gradients backward)."""
    sizes: dict[str, int]
    """The mesh's axis sizes, in its order (dp, pp, tp)."""
    # gradient synchronisation: the groups the data-parallel pass buckets
    layer_grads: list[GradientGroup] = field(default_factory=list)
    pre_grads: list[GradientGroup] = field(default_factory=list)
    """What the backward reduces before its layers (the head)."""
    post_grads: list[GradientGroup] = field(default_factory=list)
    """... and after them (the embedding)."""
    # memory (bytes per rank, dp = 1)
    params_layer: float = 0.0
    params_first: float = 0.0
    params_last: float = 0.0
    saved_layer: float = 0.0
    saved_last: float = 0.0
    stage_memory: dict[str, Any] = field(default_factory=dict)
    """memory-analysis's own per-stage-class numbers (`memory.analysis.StageClass`): "whole"
    (the model on one stage) and, for models of >= 5 layers, "first" (1
    layer), "middle" (1 and 2 layers) and "last" (L - 4 layers) of a 4-stage
    split, from which any stage's are moved along the per-layer slope."""

    @property
    def params_total(self) -> float:
        return self.params_layer * self.layers + self.params_first + self.params_last

    def sync(self, bucket_mb: int) -> tuple[list[Collective], list[Collective], list[Collective]]:
        """The gradient reductions of one layer, before the layers and after
        them, in buckets of `bucket_mb` (a sweep's points share a probe
        whatever their bucket size)."""
        found = self._sync.get(bucket_mb)
        if found is None:
            found = self._sync[bucket_mb] = tuple(
                [c for g in groups for c in g.buckets(bucket_mb)]
                for groups in (self.layer_grads, self.pre_grads, self.post_grads))
        return found

    _sync: dict[int, tuple] = field(default_factory=dict, repr=False)
    _composed: OrderedDict[str, Composed] = field(default_factory=OrderedDict, repr=False)
    _timing: Callable[[], None] | None = field(default=None, repr=False)
    """What fills in the timing fields (forward, backward, weight, optimizer_s,
    flops and recomputed FLOPs per micro-batch) on first use (`timed`)."""

    _timing_error: Exception | None = field(default=None, repr=False)
    """What the timing raised: every later point of the class meets it too."""
    _timing_traceback: Any = field(default=None, repr=False)

    def timed(self) -> Probe:
        """The probe with its timing filled in: a layer class whose points all
        overflow memory never prices, lowers or runs its probe."""
        if self._timing_error is not None:
            # with its first traceback: raising the object again would append
            # every later point's frames (and keep their locals alive)
            raise self._timing_error.with_traceback(self._timing_traceback)
        timing = self._timing
        if timing is not None:
            self._timing = None
            try:
                with building():
                    timing()
            except Exception as e:
                # its module is half priced or lowered: never timed again
                self._timing_error, self._timing_traceback = e, e.__traceback__
                raise
        return self


@contextmanager
def building() -> Iterator[None]:
    """No cyclic garbage collection while passes run, then the youngest
    generation collected: the passes allocate many IR objects, and each full
    collection would walk every live module again (most of a build's time).
    A composition makes no cycles: collecting after each (the sweep composes
    hundreds) cost more than it freed."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect(0)
        if collecting:
            gc.enable()


def class_key(config: dict[str, Any]) -> tuple:
    """The settings a probe depends on: a point's layer, and whether its
    schedule splits the backward into B and W items. The memory limit is not
    one: the probe is analysed without a limit, each point against its own."""
    skip = {"pp", "vpp", "dp", "zero", "dp_overlap_param_gather", "schedule", "global_batch", "gpus",
            "memory_limit_gb", "framework", "dp_bucket_mb"}
    split = (config.get("schedule") or "") in SPLIT_BACKWARD
    return (("split", split), *sorted((k, str(v)) for k, v in config.items() if k not in skip))


RECOMPUTE_ORDER = tuple(sim.RecomputePolicy)
"""The order of a layer's recompute policies in the sweep (`class_order`): a
policy that rewrites nothing uses the probe without recomputation, built
first; the last takes the modules the layer's probes share
(`_last_policy`)."""
LAYER_SETTINGS = ("model", "seq_len", "micro_batch", "tp", "sequence_parallel")
"""What the passes before the pipeline depend on, in their order (import,
shard-tensor, sequence-parallel): `class_order` sorts by them first."""


def class_order(config: dict[str, Any]) -> tuple:
    """A sort key that puts the classes of one layer (those that differ only in
    their recomputation policy) together, their probes sharing every pass up to
    data-parallel (`_after`), and orders the layers so that neighbours share
    the passes before the pipeline (one import per micro-batch, one
    shard-tensor per tp with and without sequence parallelism). Its first
    entry is the layer."""
    layer = tuple(repr(config.get(k)) for k in LAYER_SETTINGS)
    recompute = str(config.get("recompute"))
    rank = RECOMPUTE_ORDER.index(recompute) if recompute in RECOMPUTE_ORDER else len(RECOMPUTE_ORDER)
    return ((layer, class_key({k: v for k, v in config.items() if k != "recompute"})), (rank, recompute))


def _last_policy(config) -> bool:
    """Whether `config`'s recompute policy comes last of its layer's
    (`RECOMPUTE_ORDER`): its probe takes the modules the layer's share instead
    of copying them (a later probe of the layer, out of this order, builds
    them again)."""
    return config.recompute == RECOMPUTE_ORDER[-1] and not config.recompute_modules


def screenable(config) -> bool:
    """Whether the screening tier models this TrainingConfig."""
    return (config.cp == 1 and config.ep == 1 and config.zero < 3 and not config.fsdp
            and config.dp_overlap
            # a blocking pp send is the step program's (`StepItems.blocking_sends`)
            and not set(getattr(config, "blocking_comm", ())) - {"pp"}
            and not getattr(config, "host_launch_s", 0.0)
            # a probe's layer class knows no CPU offload copies
            and not getattr(config, "cpu_offload_layers", 0)
            and not getattr(config, "pipeline_scatter_gather", False)
            and getattr(config, "optimizer", "fused") == "fused"
            and not getattr(config, "unfused_grad_accumulation", False)
            # a probe is one layer class on one GPU: stages on several node kinds are not
            and not (config.cluster and load_cluster(config.cluster).heterogeneous)
            # a probe imports the model whole (Megatron-Core's is imported at its tp)
            and not (config.tp > 1 and imports_tensor_parallel(config.model)))


# -- probes ---------------------------------------------------------------------


def without_recompute(config):
    """`config` with no recomputation, when the only pass it lacks is that one
    (its plan is the same otherwise); None when that is not so."""
    if config.recompute == sim.RecomputePolicy.NONE or config.recompute_modules:
        return None
    same = replace(config, recompute="none")
    return same if [s for s in pass_plan(config) if s[0] != "recompute"] == pass_plan(same) else None


Step = tuple[str, tuple[tuple[str, Any], ...]]
"""A pass and its options, hashable and ordered (`evaluate.training_steps`' form)."""


def pass_step(name: str, options: dict[str, Any]) -> Step:
    return name, tuple(sorted(options.items()))


def import_step(config) -> Step:
    """The import a probe starts from (a screened model is imported whole)."""
    return pass_step("import", {"model": config.model, "seq_len": config.seq_len, "batch": config.micro_batch})


PROBES_KEPT = 256
"""Probes kept per evaluator (LRU): a timed probe is a few dozen numbers
(examples/sweeps/training.yaml builds 34)."""
PREFIX_CACHE_SIZE = 16
"""Modules after a probe's shared passes kept per evaluator (LRU): after
shard-tensor (sequence parallelism on and off share it), and through
data-parallel for the probe and for its memory split, each shared by the
layer's recomputation policies (the sweep orders a layer's classes together,
`class_order`)."""
LAYERS_KEPT = 32
"""... and the modules before the pipeline (the layer: model, sequence,
micro-batch, tp, sequence parallelism, kernels), kept apart (LRU): the probe,
its memory split and the fast tier's builds of any point of the layer (the
best points, re-timed once the sweep is done) start from them."""
GRADIENTS_KEPT = 64
"""Gradient groups kept per evaluator (LRU), one per layer (model, sequence,
micro-batch, tp, sequence parallelism, kernels)."""
UNTIMED_PROBES = 32
"""Probes whose timing waits for a point that needs it, kept per evaluator with
their module (the rest are timed at once): a layer class whose points all
overflow the GPU's memory is never timed."""


def _lru_get(cache: OrderedDict, key):
    found = cache.get(key, _MISSING)
    if found is not _MISSING:
        cache.move_to_end(key)
    return found


def _lru_put(cache: OrderedDict, key, value, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


_MISSING = object()


@dataclass
class ProbeCache:
    """What an evaluator keeps of its probes' work, every part bounded (LRU)."""

    probes: OrderedDict[str, Probe | CharonError | None] = field(default_factory=OrderedDict)
    """By their one-rank configuration (`build_probe`'s base, repr); None: a
    layer the screen does not model; a CharonError: what a pass of the probe
    refused (every point of the class is refused the same way)."""
    prefixes: OrderedDict[tuple[Step, ...], Any] = field(default_factory=OrderedDict)
    """Modules after the steps of their key (`_after`): only read, callers clone."""
    layers: OrderedDict[tuple[Step, ...], Any] = field(default_factory=OrderedDict)
    """... those whose next step is the pipeline (`LAYERS_KEPT`)."""
    gradients: OrderedDict[tuple[Step, ...], tuple] = field(default_factory=OrderedDict)
    """`_gradient_groups` by the steps before data-parallel."""
    untimed: deque[Probe] = field(default_factory=deque)
    """Probes not timed yet, oldest first (`UNTIMED_PROBES`)."""

    def module(self, steps: tuple[Step, ...]):
        """The module after `steps`, or _MISSING."""
        found = _lru_get(self.layers, steps)
        return _lru_get(self.prefixes, steps) if found is _MISSING else found

    def keep(self, steps: tuple[Step, ...], module, layer: bool = False) -> None:
        """Keep `module` as the one after `steps` (`layer`: before the pipeline)."""
        if layer:
            _lru_put(self.layers, steps, module, LAYERS_KEPT)
        else:
            _lru_put(self.prefixes, steps, module, PREFIX_CACHE_SIZE)

    def forget(self, steps: tuple[Step, ...]) -> None:
        self.layers.pop(steps, None)
        self.prefixes.pop(steps, None)

    def clear(self) -> None:
        """Keep nothing: a timed probe holds prices of the engines, profile
        database and device of its sweep. In place: the tiers of one process
        share this object."""
        for part in (self.probes, self.prefixes, self.layers, self.gradients, self.untimed):
            part.clear()

    def shared_prefix(self, steps: tuple[Step, ...]) -> tuple[int, Any]:
        """(n, module) of the longest prefix of `steps` before their pipeline
        that a probe built (module None, n 0: none): a fast-tier build of the
        same layer starts from a clone of it."""
        end = next((i for i, (name, _) in enumerate(steps) if name == "pipeline"), len(steps))
        for n in range(end, 0, -1):
            module = self.module(steps[:n])
            if module is not _MISSING:
                return n, module
        return 0, None


def build_probe(evaluator, config) -> Probe | None:
    """The probe of `config`'s layer class, built with the evaluator's shared
    imports; None when the model is not one repeat of identical layers.

    A probe is a function of its one-rank `base` configuration: kept by it
    (`ProbeCache.probes`), and a recompute policy that rewrites nothing
    (`passes.recompute.rewrote_nothing`) gives the probe of no recomputation, built
    once for both. A pass that refuses the configuration raises its
    CharonError (the fast tier gives the point's own answer)."""
    split = (config.schedule or "") in SPLIT_BACKWARD
    # one rank reduces nothing: its bucket size is any, one for every probe; one
    # stage sends nothing, so whether sends are waited for is any too
    base = replace(config, pp=1, vpp=1, dp=1, zero=0, dp_overlap_param_gather=False, gpus=config.tp,
                   global_batch=config.micro_batch, schedule="zb-h1" if split else "1f1b",
                   memory_limit_gb=1e6, dp_bucket_mb=PROBE_BUCKET_MB, pp_send_overlap=True)
    cache: ProbeCache = evaluator.probes
    probe = _lru_get(cache.probes, repr(base))
    if probe is _MISSING:
        try:
            with building():
                probe = _build_probe(evaluator, config, base, split)
        except CharonError as refusal:
            # every point of the class meets the same refusal: kept, so that
            # they do not run the passes up to it again
            probe = refusal
        _lru_put(cache.probes, repr(base), probe, PROBES_KEPT)
    if isinstance(probe, CharonError):
        raise probe.with_traceback(None)
    return probe


def _build_probe(evaluator, config, base, split: bool) -> Probe | None:
    ctx = evaluator.ctx
    plan = pass_plan(base)
    # the passes up to data-parallel (tp, sequence parallelism, fusion, the
    # one-stage pipeline) are the same for every probe of one (model,
    # sequence, micro-batch, tp, SP, kernels, split backward): done once,
    # cloned by the probes of each recomputation, and the memory split shares
    # those before the pipeline
    at = next(i for i, (name, _) in enumerate(plan) if name == "data-parallel")
    groups = _gradient_groups(evaluator, config, plan[:at], plan[at][1])
    # the layer's last recompute policy (`class_order`) takes the shared module
    last = _last_policy(config)
    module = _after(evaluator, config, plan[: at + 1], take=last)
    module = module if last else module.clone()
    # pricing and what follows it time the probe: done once a point needs it
    priced = next(i for i, (name, _) in enumerate(plan) if name == "cost-annotate")
    for name, options in plan[at + 1 : priced]:
        if name == "memory-analysis":
            continue  # the probe's memory is read off its stage classes below
        make_pass(name, **options).apply(ctx, module)
        if name == "recompute" and recompute_pass.rewrote_nothing(module):
            if without_recompute(base) is not None:
                return build_probe(evaluator, replace(config, recompute="none"))
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    if len(stages) != 1:
        return None
    phases = sim.phases_of(stages[0].body.block)
    fwd_repeats = [op for op in phases[sim.PhaseKind.FORWARD].body.block.ops if isinstance(op, sim.RepeatOp)]
    if len(fwd_repeats) != 1:
        return None
    layers = fwd_repeats[0].trip_count
    out = fwd_repeats[0].outputs[0]
    activation_bytes = float(value_bytes(out))

    whole = _stage_classes(module, split, config)
    params_layer, params_first, params_last = _param_split(phases[sim.PhaseKind.FORWARD], fwd_repeats[0])
    saved_layer = float(sum(n for _, n in layer_saved_values(fwd_repeats[0])))
    probe = Probe(
        layers=layers,
        forward=Phase(), backward=Phase(), weight=None,
        optimizer_s=0.0, flops_per_microbatch=0.0,
        recomputed_per_microbatch=0.0,
        tokens_per_microbatch=count_tokens(stages[0]),
        activation_bytes=activation_bytes,
        sizes={},
        params_layer=params_layer,
        params_first=params_first,
        params_last=params_last,
        saved_layer=saved_layer,
        saved_last=max(float(whole[0].phases.saved) - layers * saved_layer, 0.0),
    )

    probe.stage_memory = {"whole": whole[0]}
    if layers >= 5:
        probe.stage_memory.update(_memory_split(evaluator, base, layers, split))
    probe.sizes, probe.layer_grads, probe.pre_grads, probe.post_grads = groups
    probe._timing = lambda: _time_probe(probe, ctx, module, config, plan[priced:])
    # the modules of probes not timed yet are kept: the oldest is timed (and
    # its module freed) once more than UNTIMED_PROBES wait
    untimed = evaluator.probes.untimed
    untimed.append(probe)
    while len(untimed) > UNTIMED_PROBES:
        oldest = untimed.popleft()
        try:
            oldest.timed()
        except Exception:  # noqa: BLE001 - kept by the probe: its own class's points meet it, not this one's
            pass
    return probe


def _time_probe(probe: Probe, ctx, module, config, steps: list[tuple[str, dict[str, Any]]]) -> None:
    """Fill in the probe's timing: its module priced (`steps`: cost-annotate),
    lowered and run at two layer counts."""
    for name, options in steps:
        if name != "memory-analysis":
            make_pass(name, **options).apply(ctx, module)
    stage = next(op for op in module.body.block.ops if isinstance(op, sim.StageOp))
    probe.recomputed_per_microbatch = recomputed_flops(sim.phases_of(stage.body.block).get(sim.PhaseKind.BACKWARD))
    layers = probe.layers

    # timing: the lowered probe at two layer counts
    make_pass("lower-to-events").apply(ctx, module)
    # the folded loops' summaries are the same at both counts (keyed by their
    # bodies, counts aside): simulated once, as the fast tier's two
    # micro-batch counts share them
    loops: dict = {}
    runs = [_run_items(ctx, module, config, n, loops) for n in PROBE_LAYERS]
    (a, b), k = runs, PROBE_LAYERS[1] - PROBE_LAYERS[0]
    n0 = PROBE_LAYERS[0]

    def phase(kind: str) -> Phase | None:
        if kind not in a:
            return None
        (pre_a, span_a, post_a, tp_a, head), (_, span_b, _, tp_b, _) = a[kind], b[kind]
        per_layer = (span_b - span_a) / k
        tp_layer = (tp_b["layer"] - tp_a["layer"]) / k
        # what the fold leaves beside the layers (a partial first layer) is the
        # layers' part: layer x n0 + (span_a - per_layer x n0)
        extra = span_a - per_layer * n0
        return Phase(pre=pre_a + extra / 2, layer=per_layer, post=post_a + extra / 2,
                     tp_pre=tp_a["pre"], tp_layer=tp_layer, tp_post=tp_a["post"], head=head)

    probe.forward = phase("F")  # pyright: ignore[reportAttributeAccessIssue]
    probe.backward = phase("B")  # pyright: ignore[reportAttributeAccessIssue]
    probe.weight = phase("W")
    probe.optimizer_s = a["optimizer"]
    probe.flops_per_microbatch = a["flops"] + (layers - n0) * (b["flops"] - a["flops"]) / k


MEMORY_SPLIT = (1, 1, 2)
"""First layer counts of the 4-stage split the memory probe analyses (the last
stage takes the rest)."""


def _stage_classes(module, split: bool, config) -> dict[int, Any]:
    """memory-analysis's stage classes of a built module, by virtual stage, with
    the point's gradient bytes, fp8 activations and kept stage outputs."""
    classes = {}
    for op in module.body.block.ops:
        if isinstance(op, sim.StageOp):
            fp8 = config.precision == "fp8"
            cls = stage_class(op.body.block, DataParallel(), config.grad_bytes, split, fp8,
                               fp8 and config.fp8_params, keep_stage_outputs=config.keep_stage_outputs)
            for v in op.stage_ids():
                classes[v] = cls
    return classes


PROBE_BUCKET_MB = 25
"""The probe's gradient bucket (it has one data-parallel rank: no bucket is
reduced, and the points price their own buckets, `Probe.sync`)."""


def _after(evaluator, config, steps: list[tuple[str, dict[str, Any]]], take: bool = False):
    """The imported module after `steps`, built once per evaluator from the
    longest prefix of them already built, and kept (`ProbeCache.prefixes`):
    callers clone it. `take`: the caller is its last user and gets the module
    itself (no longer kept) instead of a copy."""
    cache: ProbeCache = evaluator.probes
    path = (import_step(config), *(pass_step(name, options) for name, options in steps))
    done, module = 0, None
    for n in range(len(path), 0, -1):
        found = cache.module(path[:n])
        if found is not _MISSING:
            done, module = n, found
            break
    if module is not None and done == len(path):
        if take:
            cache.forget(path)
        return module
    if module is None:
        done, module = 1, evaluator.imported_model(config.model, config.seq_len, config.micro_batch)
    module = module.clone()
    for n in range(done, len(path)):
        name, options = steps[n - 1]
        if n > done and (name == "pipeline" or path[n - 1][0] == "shard-tensor"):
            # what the probe and its memory split (another pipeline) share, and
            # the fast tier's builds of the layer; and the tp split, which
            # sequence parallelism on and off share (not the prefix just found:
            # it is kept already; a fresh import, done 1, is kept by no step)
            cache.keep(path[:n], module.clone(), layer=name == "pipeline")
        make_pass(name, **options).apply(evaluator.ctx, module)
    if not take:
        cache.keep(path, module)
    return module


def _gradient_groups(evaluator, config, steps: list[tuple[str, dict[str, Any]]], options: dict[str, Any]):
    """(mesh sizes, a layer's, the pre-layer and the post-layer gradient groups):
    the data-parallel pass at dp = 2 (ZeRO-0: the buckets are those of every
    stage; what reduces them is per point) on the unpriced module after
    `steps`, once per evaluator and steps."""
    cache = evaluator.probes.gradients
    key = (import_step(config), *(pass_step(name, options) for name, options in steps))
    found = _lru_get(cache, key)
    if found is not _MISSING:
        return found
    synced = _after(evaluator, config, steps).clone()
    make_pass("data-parallel", **{**options, "dp": 2, "zero": 0}).apply(evaluator.ctx, synced)
    grid = find_grid(synced)
    sizes = dict(grid.axis_sizes()) if grid is not None else {}
    stage = next(op for op in synced.body.block.ops if isinstance(op, sim.StageOp))
    phases = sim.phases_of(stage.body.block)
    seen_repeat = False
    layer: list[GradientGroup] = []
    pre: list[GradientGroup] = []
    post: list[GradientGroup] = []
    for op in phases[sim.PhaseKind.BACKWARD].body.block.ops:
        if isinstance(op, sim.RepeatOp):
            seen_repeat = True
            layer += [g for c in op.body.walk() if (g := _gradient_group(c, coll, sim)) is not None]
        elif (g := _gradient_group(op, coll, sim)) is not None:
            (post if seen_repeat else pre).append(g)
    _lru_put(cache, key, (sizes, layer, pre, post), GRADIENTS_KEPT)
    return sizes, layer, pre, post


def _memory_split(evaluator, base, layers: int, split: bool) -> dict[str, Any]:
    """The stage classes of a 4-stage split with 1, 1, 2 and L - 4 layers."""
    config = replace(base, pp=4, gpus=4 * base.tp, global_batch=4 * base.micro_batch)
    counts = (*MEMORY_SPLIT, layers - sum(MEMORY_SPLIT))
    plan = [(name, {**options, "layers": counts} if name == "pipeline" else options)
            for name, options in pass_plan(config)]
    at = next(i for i, (name, _) in enumerate(plan) if name == "data-parallel")
    rest = []
    for name, options in plan[at + 1 :]:
        if name in ("memory-analysis", "cost-annotate"):
            break
        # set-target only names the target on the module (stages on node kinds
        # are not screened), which the stage classes do not read
        if name != "set-target":
            rest.append((name, options))
    # the shared module is only read, unless a pass changes it: then a copy,
    # or the module itself for the layer's last recompute policy
    module = _after(evaluator, config, plan[: at + 1], take=bool(rest) and _last_policy(base))
    if rest:
        if not _last_policy(base):
            module = module.clone()
        for name, options in rest:
            make_pass(name, **options).apply(evaluator.ctx, module)
    classes = _stage_classes(module, split, base)
    return {"first": classes[0], "middle": (classes[1], classes[2]), "last": classes[3]}


def _is_dp(op, coll) -> bool:
    return isinstance(op, coll.CollectiveOp) and "dp" in op.axis_names()


def _gradient_group(op, coll, sim) -> GradientGroup | None:
    """The gradients a `grad_bucket` pack of data-parallel gathers, with the
    axes its buckets are reduced over; None for any other op."""
    if not sim.is_generic(op, sim.GenericCallee.GRAD_BUCKET):
        return None
    reduce = next(use.operation for use in op.outputs[0].uses if _is_dp(use.operation, coll))
    elements = sum(sim.numel(v) for v in op.inputs)
    return GradientGroup(elements, int(sim.element_bytes(op.inputs[0].type.element_type)),
                         tuple(reduce.axis_names()))


def _param_split(forward, repeat) -> tuple[float, float, float]:
    """Parameter bytes per rank: of one layer, of what comes before the layers
    (first stage) and of what comes after them (last stage)."""
    block = forward.parent_block()
    params = [op for op in block.walk() if isinstance(op, sim.ParamOp)] if block else []
    by_value = {p.results[0]: float(value_bytes(p.results[0])) for p in params}
    stacked = {v for v in repeat.operands if v in by_value}
    layer = sum(by_value[v] for v in stacked) / max(repeat.trip_count, 1)
    before, after = 0.0, 0.0
    position = {op: i for i, op in enumerate(forward.body.block.ops)}
    rep_at = position[repeat]
    for v, n in by_value.items():
        if v in stacked:
            continue
        uses = [u.operation for u in v.uses]
        # the op of the forward phase that holds each use
        places = []
        for u in uses:
            op = u
            while op is not None and op.parent_op() is not forward:
                op = op.parent_op()
            if op is not None:
                places.append(position.get(op, rep_at))
        if any(p < rep_at for p in places):
            before += n
        if any(p > rep_at for p in places) or not places:
            after += n
    return layer, before, after


def _run_items(ctx, lowered, config, layers: int, loop_cache: dict | None = None) -> dict[str, Any]:
    """Run the lowered probe with its layer repeats at `layers`: per item kind
    (pre, layers, post, exposed tp, the layers' head: `Phase.head`) seconds, the
    optimizer's and the FLOPs (`loop_cache`: flatten's, shared by runs of this
    event IR)."""
    module = lowered  # only loop counts change, and each run sets them
    for op in module.walk():
        if isinstance(op, event.LoopOp) and op.is_layer_repeat():
            if op.count.value.data > 0:
                op.count = IntegerAttr(layers, 64)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    overlap = overlap_model(config, Target.from_module(module).gpu)
    flat = flatten_all(programs, fold=True, overlap=overlap, loop_cache=loop_cache)
    tl = interpret(flat, overlap)
    labels, start, end = flat.labels, tl.start, tl.end
    compute = {i for i, k in enumerate(flat.kind) if k == KIND_COMPUTE}
    out: dict[str, Any] = {"flops": float(flat.flops.sum())}
    t = 0.0
    item_start = 0.0
    current: list[int] = []
    for i in range(len(labels)):
        item = flat.item_ends.get(i)
        if item is not None:
            kind = item.value
            t_end = float(end[i])
            loop = [j for j in current if labels[j].startswith("repeat x") and j in compute]
            if loop:
                l0 = min(float(start[j]) for j in loop)
                l1 = max(float(end[j]) for j in loop)
            else:
                l0 = l1 = item_start
            tp = _exposed_tp(flat, tl, current, compute, item_start, l0, l1, t_end)
            head = sum(flat.folded_heads.get(j, 0.0) for j in loop)
            out[kind] = (l0 - item_start, l1 - l0, t_end - l1, tp, head)
            item_start, current = t_end, []
            t = t_end
        else:
            current.append(i)
    out["optimizer"] = float(end.max()) - t if len(end) else 0.0
    for i, label in enumerate(labels):
        if label == "optimizer_step":
            out["optimizer"] = float(end[i] - start[i])
    return out


def _exposed_tp(flat, tl, events, compute, t0, l0, l1, t1) -> dict[str, float]:
    """Seconds of [t0, t1) the compute stream idles (on one rank with one
    micro-batch: tp communication it waits for), split at the layers' span
    [l0, l1)."""
    busy = sorted((float(tl.start[j]), float(tl.end[j])) for j in events if j in compute)
    idle = {"pre": 0.0, "layer": 0.0, "post": 0.0}
    cursor = t0
    gaps = []
    for s, e in busy:
        if s > cursor:
            gaps.append((cursor, s))
        cursor = max(cursor, e)
    if t1 > cursor:
        gaps.append((cursor, t1))
    for s, e in gaps:
        for part, (a, b) in (("pre", (t0, l0)), ("layer", (l0, l1)), ("post", (l1, t1))):
            idle[part] += max(0.0, min(e, b) - max(s, a))
    # folded loops report their own exposed time
    for j in events:
        if j in compute and j in flat.folded_exposed:
            idle["layer"] += flat.folded_exposed[j].get(ANY_AXIS, 0.0)
    return idle


# -- composing a point ------------------------------------------------------------


@dataclass
class Composed:
    """A point's screened step: the fast tier's headline numbers."""

    iteration_time_s: float
    stage: int
    compute_s: float
    exposed: dict[str, float]
    bubble_s: float
    peaks: list[int]
    flops_per_gpu: float
    model_flops_per_gpu: float
    tokens: int
    """Tokens the step processes, over every data-parallel replica."""
    memory_band: tuple[float, float] = MEMORY_BAND
    timed: bool = True
    """False: a peak out of the GPU's memory beyond the band, decided before the
    step is simulated (its time fields are 0)."""


def _sync_time(collectives: list[Collective], sizes: dict[str, int], cluster, zero: int = 0) -> list[float]:
    """Seconds of each collective on the point's mesh; the probe's gradient
    all-reduces are reduce-scatters under ZeRO >= 1 (the same buckets)."""
    def kind(c: Collective) -> str:
        return "reduce_scatter" if zero >= 1 and c.kind == "all_reduce" else c.kind

    return [cached_plan(kind(c), c.payload_bytes, group_ranks(sizes, c.axes), cluster).time_s
            for c in collectives]


COMPOSED_KEPT = 256
"""Composed steps kept per probe (LRU): a probe several recompute policies
share (`build_probe`) composes each of their points once."""


def compose_shared(probe: Probe, config, cluster, capacity: float, overlap=None) -> Composed:
    """`compose`, once per point of the probe: the configurations that share a
    probe differ only in their recompute policy, which composing never reads
    (the cluster, capacity and overlap are the configuration's)."""
    key = repr(replace(config, recompute="none"))
    found = probe._composed.get(key)
    if found is None:
        found = probe._composed[key] = compose(probe, config, cluster, capacity, overlap)
        while len(probe._composed) > COMPOSED_KEPT:
            probe._composed.popitem(last=False)
    else:
        probe._composed.move_to_end(key)
    return found


def compose(probe: Probe, config, cluster, capacity: float, overlap=None) -> Composed:
    """The step of `config` (a TrainingConfig the probe's class holds); `overlap`
    (the interpreter's OverlapModel) prices the contention of the gradient
    reductions beside the compute, which the probe, one data-parallel rank, does
    not hold. A point whose composed peak exceeds `capacity` beyond its memory
    band is out of memory whatever its time: it is not simulated."""
    pp, vpp = config.pp, config.vpp
    dp = config.data_parallel()
    m = config.microbatches(dp)
    schedule = config.schedule or ("interleaved" if vpp > 1 else "1f1b")
    split = schedule in SPLIT_BACKWARD
    V = pp * vpp
    counts = even_split(probe.layers, V)
    peaks = compose_memory(probe, config, counts, dp, m, schedule)
    band = MEMORY_BAND if "middle" in probe.stage_memory or pp * vpp == 1 else ROUGH_MEMORY_BAND
    if max(peaks) > band[1] * capacity:
        return Composed(0.0, 0, 0.0, {}, 0.0, peaks, 0.0, 0.0, 0, band, timed=False)
    probe = probe.timed()
    sizes = {k: (dp if k == "dp" else pp if k == "pp" else v) for k, v in probe.sizes.items()}
    if "pp" not in sizes:
        sizes = {"dp": sizes.pop("dp", dp), "pp": pp, **sizes}

    # per virtual stage: item seconds
    def item(phase: Phase | None, v: int, backward: bool) -> float:
        if phase is None:
            return 0.0
        return phase.time(counts[v], v == 0, v == V - 1, backward)

    F = [item(probe.forward, v, False) for v in range(V)]
    B = [item(probe.backward, v, True) for v in range(V)]
    W = [item(probe.weight, v, True) for v in range(V)] if split else [0.0] * V
    tp_exposed = [probe.forward.exposed_tp(counts[v], v == 0, v == V - 1, False)
                  + probe.backward.exposed_tp(counts[v], v == 0, v == V - 1, True)
                  + (probe.weight.exposed_tp(counts[v], v == 0, v == V - 1, True) if split and probe.weight else 0.0)
                  for v in range(V)]
    # each stage's sends to its two neighbours (the last stage's next is the
    # first, interleaved): on one node or across nodes, each its own link
    send, send_back = [0.0] * pp, [0.0] * pp
    if pp > 1:
        ranks = group_ranks(sizes, ("pp",))

        def hop(a: int, b: int) -> float:
            return cached_plan("send", probe.activation_bytes, (ranks[a], ranks[b]), cluster).time_s

        send = [hop(s, (s + 1) % pp) for s in range(pp)]
        send_back = [hop(s, (s - 1) % pp) for s in range(pp)]
    layer_sync, pre_sync, post_sync = probe.sync(config.dp_bucket_mb)
    sync_layer = _sync_time(layer_sync, sizes, cluster, config.zero) if dp > 1 else []
    sync_post = _sync_time(post_sync, sizes, cluster, config.zero) if dp > 1 else []
    sync_pre = _sync_time(pre_sync, sizes, cluster, config.zero) if dp > 1 else []

    def stage_params(s: int) -> float:
        p = 0.0
        for c in range(vpp):
            v = c * pp + s
            p += probe.params_layer * counts[v]
            p += probe.params_first * (v == 0) + probe.params_last * (v == V - 1)
        return p

    share = [stage_params(s) / probe.params_total if probe.params_total else 1.0 / pp for s in range(pp)]
    opt = [probe.optimizer_s * share[s] / (dp if config.zero >= 1 else 1) for s in range(pp)]
    zero_gathers = dp > 1 and config.zero >= 1
    overlap_gathers = zero_gathers and config.dp_overlap_param_gather

    def gather_time(param_bytes: float) -> float:
        return sum(_sync_time(updated_gathers(param_bytes, dp, config.dp_bucket_mb), sizes, cluster))

    # --overlap-param-gather: each chunk's layers are gathered in its first
    # forward, each layer's just before it runs (data-parallel's per-layer
    # buckets); what lies outside the layers is still gathered after the step
    layer_gather = [gather_time(probe.params_layer) if overlap_gathers else None for _ in range(V)]
    if overlap_gathers:
        gathers = [gather_time(sum(probe.params_first * (c * pp + s == 0) + probe.params_last * (c * pp + s == V - 1)
                                   for c in range(vpp))) for s in range(pp)]
    else:
        gathers = [gather_time(stage_params(s)) if zero_gathers else 0.0 for s in range(pp)]

    items = StepItems(F, B, W, split, send, opt, send_back=send_back, reduce=dp > 1,
                      blocking_sends="pp" in lowering_options(config)["blocking"],
                      sync_phase=probe.backward if not split else probe.weight,
                      sync_layer=tuple(sync_layer), sync_pre=tuple(sync_pre), sync_post=tuple(sync_post),
                      gathers=gathers, layer_gather=layer_gather,
                      head=min(probe.backward.head, probe.backward.layer))

    def run(microbatches: int) -> StepRun:
        return run_step(schedule, pp, vpp, microbatches, counts, items, overlap)

    points = fold_points(schedule, pp, m)
    if points is None:
        t, stage, busy, dp_exposed = run(m)
    else:
        m_a, m_b = points
        ta, stage, busy_a, dpe_a = run(m_a)
        tb, _, busy_b, dpe_b = run(m_b)
        k = (m - m_a) / (m_b - m_a)
        t = ta + k * (tb - ta)
        busy = [x + k * (y - x) for x, y in zip(busy_a, busy_b)]
        dp_exposed = dpe_b
    # the stage the fast tier would report: the busiest
    stage = max(range(pp), key=lambda s: busy[s])
    tp_stage = sum(tp_exposed[c * pp + stage] for c in range(vpp)) * m
    compute = max(busy[stage] - tp_stage, 0.0)
    # waiting for a neighbour's send counts as bubble here (the fast tier
    # tells exposed pp communication apart)
    exposed = {"tp": tp_stage}
    if dp > 1:
        exposed["dp"] = dp_exposed[stage]
    bubble = max(t - busy[stage] - dp_exposed[stage], 0.0)
    flops = probe.flops_per_microbatch * m / pp
    model_flops = (probe.flops_per_microbatch - probe.recomputed_per_microbatch) * m / pp
    tokens = probe.tokens_per_microbatch * m * dp
    return Composed(t, stage, compute, exposed, bubble, peaks, flops, model_flops, tokens, band)


class StepItems(NamedTuple):
    """What a screened step's event program is built from: the probe's seconds
    for each item of each virtual stage, the sends between neighbour stages, the
    data-parallel collectives and each stage's optimizer step."""

    forward: list[float]
    """F of each virtual stage."""
    backward: list[float]
    """B of each virtual stage (under a split backward, its input gradients only)."""
    weight: list[float]
    """W of each virtual stage (split backward only)."""
    split: bool
    send: list[float]
    """Per physical stage, an activation sent to the next stage (its forward's
    output), on the sender's send stream."""
    optimizer: list[float]
    """Each physical stage's optimizer step."""
    send_back: list[float] | None = None
    """Per physical stage, a gradient sent to the previous stage (its backward's
    input gradients); None: as `send`."""
    reduce: bool = False
    """Gradients are reduced over data-parallel replicas (dp > 1)."""
    sync_phase: Phase | None = None
    """The item whose last run of a chunk in the step reduces its gradients as
    each of its layers ends: B, or W under a split backward."""
    sync_layer: tuple[float, ...] = ()
    """Seconds of one layer's gradient buckets ..."""
    sync_pre: tuple[float, ...] = ()
    """... of those reduced before the layers (the last virtual stage's head) ..."""
    sync_post: tuple[float, ...] = ()
    """... and after them (the embedding's and the head's, shared by the two
    ends of the pipeline)."""
    gathers: list[float] | None = None
    """Each physical stage's all-gathers of its updated shards after the
    optimizer step (ZeRO-1/2); None: none."""
    layer_gather: list[float | None] | None = None
    """Per virtual stage, one layer's parameter gather in its first forward
    (`--overlap-param-gather`); None: none."""
    head: float = 0.0
    """Seconds at the start of every B that do not wait for its input (the
    probe's `Phase.head`: a recomputed first layer's forward), run while the
    gradient is on its way; 0: none."""
    blocking_sends: bool = False
    """The stage's compute waits for each of its sends to complete (`blocking`
    `pp` of lower-to-events: Megatron-Core's non-interleaved 1F1B)."""


class StepRun(NamedTuple):
    """A screened step as the interpreter ran it."""

    time_s: float
    stage: int
    """The stage whose step ends last."""
    busy: list[float]
    """Seconds each stage's compute stream works."""
    dp_exposed: list[float]
    """Seconds each stage's data-parallel collectives run past its compute."""


STEP_STREAMS = ("compute", "comm_dp", "comm_pp_send")
"""A screened stage's streams: its schedule's items, its data-parallel
collectives and its sends, all of the stage's program as in the fast tier: a
collective or a send running slows the stage's compute, and it is slowed by it
(the interpreter's overlap contention)."""

STEP_STREAM_AXES = ("", "dp", "pp")
"""The axes each of STEP_STREAMS serves (`FlatProgram.stream_axes`)."""


class _StepShape(NamedTuple):
    """A screened step's event program without its durations: each event names
    the entry of the point's duration vector (`_durations`) it takes. Points
    of one shape (schedule, stages, micro-batches, layers per virtual stage and
    which collectives they run) differ only in that vector."""

    program: FlatProgram
    """Durations all zero."""
    takes: np.ndarray
    """Per event, its entry of the duration vector."""
    last_compute: list[int]
    last_dp: list[int]
    """Per stage: its last compute event, its last data-parallel one before the
    optimizer step (-1: none)."""
    ends: list[int]
    """Per stage: its step's last event."""
    tables: EventTables
    """The interpreter's tables of the program's structure, shared by every
    point of the shape."""


def _shape_key(schedule: str, pp: int, vpp: int, m: int, counts: list[int], items: StepItems) -> tuple:
    return (schedule, pp, vpp, m, tuple(counts), items.split, items.reduce,
            tuple(g is not None for g in items.layer_gather) if items.layer_gather else (),
            bool(items.sync_layer), bool(items.sync_pre), bool(items.sync_post), items.head > 0,
            items.blocking_sends)


STEP_SHAPES = 256
"""Step shapes kept (a sweep's points share a few dozen: examples/sweeps/training.yaml's
846 step programs have 66)."""
_SHAPES: OrderedDict[tuple, _StepShape] = OrderedDict()


def _durations(pp: int, vpp: int, counts: list[int], items: StepItems) -> np.ndarray:
    """The duration vector `_step_shape` indexes, its entries computed as the
    events' own seconds: F, B, W, the rest of each chunk's last backward past its
    layers and the first forward's per-layer part of each virtual stage (V
    each), the per-layer backward, one layer's, the head's and the
    embedding's (whole and half) gradient reductions, the last stage's
    pre-layer backward, 0, then the optimizer step and the gathers of each
    stage, one layer's parameter gather of each virtual stage, the B's head
    (`StepItems.head`), the first layer's backward after it and each virtual
    stage's B after it, then each stage's send to the next stage and to the
    previous one."""
    V = pp * vpp
    sync_phase = items.sync_phase
    per_layer = sync_phase.layer if sync_phase else 0.0
    pre_last = sync_phase.pre if sync_phase else 0.0
    backward = items.weight if items.split else items.backward
    rest = [max(backward[v] - (pre_last if v == V - 1 else 0.0) - per_layer * counts[v], 0.0) for v in range(V)]
    first_forward = [items.forward[v] / max(1, counts[v]) for v in range(V)]
    sync_post = sum(items.sync_post) if items.sync_post else 0.0
    layer_gather = items.layer_gather or [None] * V
    values = [*items.forward, *items.backward, *items.weight, *rest, *first_forward,
              per_layer,
              sum(items.sync_layer) if items.sync_layer else 0.0,
              sum(items.sync_pre) if items.sync_pre else 0.0,
              sync_post * 1.0, sync_post * 0.5, pre_last, 0.0,
              *items.optimizer, *(items.gathers or [0.0] * pp),
              *(0.0 if g is None else g for g in layer_gather),
              items.head, max(per_layer - items.head, 0.0),
              *(max(b - items.head, 0.0) for b in items.backward),
              *items.send, *(items.send if items.send_back is None else items.send_back)]
    return np.asarray(values, dtype=np.float64)


def _step_shape(schedule: str, pp: int, vpp: int, m: int, counts: list[int], items: StepItems) -> _StepShape:
    """See `step_program`; the entries of `_durations` each event takes."""
    V = pp * vpp
    F, B, W, REST, FIRST = 0, V, 2 * V, 3 * V, 4 * V
    PER_LAYER, SYNC_LAYER, SYNC_PRE, SYNC_POST, SYNC_POST_HALF, PRE_LAST, ZERO = range(5 * V, 5 * V + 7)
    OPT = 5 * V + 7
    GATHERS = OPT + pp
    LAYER_GATHER = GATHERS + pp
    HEAD, PER_LAYER_AFTER_HEAD, B_AFTER_HEAD = LAYER_GATHER + V, LAYER_GATHER + V + 1, LAYER_GATHER + V + 2
    SEND, SEND_BACK = B_AFTER_HEAD + V, B_AFTER_HEAD + V + pp
    split, reduce = items.split, items.reduce
    headed = items.head > 0
    layer_gather = items.layer_gather or [None] * V
    takes: list[int] = []
    stream: list[int] = []
    deps: list[list[int]] = []

    # a blocking send: the stage's next compute event waits for it, as the
    # fast tier's `comm_wait` after it
    unwaited_send = [-1] * pp

    def add(s: int, entry: int, after: list[int]) -> int:
        if s < pp and unwaited_send[s] >= 0:
            after = [*after, unwaited_send[s]]
            unwaited_send[s] = -1
        takes.append(entry)
        stream.append(s)
        deps.append(after)
        return len(takes) - 1

    # what each item's input is, filled in once every event exists
    output: dict[tuple[str, int, int], int] = {}
    waits: list[tuple[int, tuple[str, int, int] | None]] = []
    last_compute = [-1] * pp
    last_dp = [-1] * pp
    gathered: set[int] = set()
    for s in range(pp):
        dp_stream, send_stream = pp + s, 2 * pp + s
        order = stage_order(schedule, pp, vpp, m, s)
        if reduce:
            order = mark_gradient_sync(order)
        for kind, c, i in order:
            v = c * pp + s
            k = kind[0]
            if k == "F":
                needs = None if v == 0 else ("F", v - 1, i)
                d = F + v
            elif k == "B":
                needs = ("F!", v, i) if v == V - 1 else ("B", v + 1, i)
                d = B + v
                if headed and counts[v] > 0:
                    # what does not wait for the gradient (the recomputed forward
                    # of its first layer: none on a chunk of no layers) runs first,
                    # the rest of the B once it is there
                    add(s, HEAD, [])
                    d = B_AFTER_HEAD + v
            else:
                needs = ("W", v, i)
                d = W + v
            if k == "F" and v not in gathered and layer_gather[v] is not None:
                # the chunk's layers gathered from the step's start, each
                # layer of its first forward after its own
                gathered.add(v)
                first = -1
                for _ in range(max(1, counts[v])):
                    gather = add(dp_stream, LAYER_GATHER + v, [])
                    e = add(s, FIRST + v, [gather])
                    first = e if first < 0 else first
                    last_dp[s] = gather
                waits.append((first, needs))
            elif reduce and kind.endswith("+") and (k == "W" or not split):
                # the chunk's gradients, reduced as each layer's are done
                is_first, is_last = v == 0, v == V - 1
                e = add(s, PRE_LAST if is_last else ZERO, [])
                waits.append((e, needs))
                # one dp event per group of buckets: they run back to back on
                # the dp stream after the same compute, so one event of their
                # sum ends where the last of them would (contention included)
                if is_last and items.sync_pre:
                    last_dp[s] = add(dp_stream, SYNC_PRE, [e])
                for layer in range(counts[v]):
                    e = add(s, PER_LAYER_AFTER_HEAD if headed and k == "B" and layer == 0 else PER_LAYER, [e])
                    if items.sync_layer:
                        last_dp[s] = add(dp_stream, SYNC_LAYER, [e])
                e = add(s, REST + v, [e])
                # what the probe reduces after its layers is the embedding's
                # and the head's gradients together: half on each end of a
                # pipeline (equal for untied embeddings)
                if (is_first or is_last) and items.sync_post:
                    last_dp[s] = add(dp_stream, SYNC_POST if is_first and is_last else SYNC_POST_HALF, [e])
            else:
                e = add(s, d, [])
                waits.append((e, needs))
            last_compute[s] = e
            if k == "F":
                output[("F!", v, i)] = e
                output[("F", v, i)] = add(send_stream, SEND + s, [e]) if v < V - 1 else e
                if v < V - 1 and items.blocking_sends:
                    unwaited_send[s] = output[("F", v, i)]
            elif k == "B":
                output[("W", v, i)] = e
                if v > 0:
                    output[("B", v, i)] = add(send_stream, SEND_BACK + s, [e])
                    if items.blocking_sends:
                        unwaited_send[s] = output[("B", v, i)]
    for e, needs in waits:
        if needs is not None:
            deps[e].append(output[needs])
    ends = []
    for s in range(pp):
        step = add(s, OPT + s, [d for d in (last_compute[s], last_dp[s]) if d >= 0])
        ends.append(add(pp + s, GATHERS + s, [step]))
    n = len(takes)
    stream_kinds = [KIND_COMPUTE] * pp + [KIND_COMM] * (2 * pp)
    stream_program = list(range(pp)) * 3
    stream_of = np.asarray(stream, dtype=np.int64)
    program = FlatProgram(
        name="screen", ranks=1, streams=[f"{name}{s}" for name in STEP_STREAMS for s in range(pp)],
        stream_kinds=stream_kinds, stream_axes=[axes for axes in STEP_STREAM_AXES for _ in range(pp)], duration=np.zeros(n), stream=stream_of,
        kind=np.asarray(stream_kinds, dtype=np.int8)[stream_of], flops=np.zeros(n), bytes=np.zeros(n),
        labels=[""] * n, deps=deps,
        programs=[ProgramInfo(f"stage{s}", 1) for s in range(pp)],
        stream_program=stream_program, event_program=np.asarray(stream_program, dtype=np.int64)[stream_of],
    )
    return _StepShape(program, np.asarray(takes, dtype=np.int64), last_compute, last_dp, ends,
                      EventTables.of(program))


def step_program(schedule: str, pp: int, vpp: int, m: int, counts: list[int],
                 items: StepItems) -> tuple[FlatProgram, _StepShape]:
    """The screened step as a flat event program for the interpreter (and its
    shape: per stage its last compute event, its last data-parallel one before
    the optimizer step, its step's last event).

    One compute event per item of every stage's `stage_order`, waiting for its
    input (activations or gradients sent from the next or previous virtual
    stage). Each chunk's last backward (W under a split backward) runs layer by
    layer, each layer's gradient buckets reduced on the stage's dp stream as it
    ends. A virtual stage with a `layer_gather` time gathers each layer's
    updated parameters on the dp stream from the step's start, its first
    forward running layer by layer, each layer after its own. The optimizer
    step closes each stage, then its `gathers`.

    The events and their order depend on the step's shape only: built once per
    shape (`STEP_SHAPES` kept), each point's durations filled in."""
    key = _shape_key(schedule, pp, vpp, m, counts, items)
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _SHAPES[key] = _step_shape(schedule, pp, vpp, m, counts, items)
        while len(_SHAPES) > STEP_SHAPES:
            _SHAPES.popitem(last=False)
    else:
        _SHAPES.move_to_end(key)
    duration = _durations(pp, vpp, counts, items)[shape.takes]
    return replace(shape.program, duration=duration, busy=duration), shape


def run_step(schedule: str, pp: int, vpp: int, m: int, counts: list[int], items: StepItems,
             overlap: OverlapModel | None = None) -> StepRun:
    """`step_program` run by the interpreter; `overlap` prices the contention of
    the dp collectives beside each stage's compute."""
    flat, shape = step_program(schedule, pp, vpp, m, counts, items)
    timeline = interpret(flat, overlap or OverlapModel(), tables=shape.tables)
    busy = stream_work(timeline)[:pp]
    gathers = items.gathers or [0.0] * pp
    end = timeline.end.tolist()
    exposed = []
    for s in range(pp):
        compute_end = end[shape.last_compute[s]]
        last_dp = shape.last_dp[s]
        sync_end = max(compute_end, end[last_dp] if last_dp >= 0 else 0.0)
        exposed.append(sync_end - compute_end + gathers[s])
    finish = [end[e] for e in shape.ends]
    t = max(finish)
    return StepRun(t, finish.index(t), busy, exposed)


def updated_gathers(param_bytes: float, dp: int, bucket_mb: int, element_bytes: int = 2) -> list[Collective]:
    """ZeRO-1/2: the all-gathers of a stage's updated shards, as data-parallel
    buckets them: the parameters in buckets of `bucket_mb`, each gathered from
    its dp shards."""
    sizes = bucket_sizes(ceil(param_bytes / element_bytes), element_bytes, dp, bucket_mb * 2**20)
    return [Collective("all_gather", float(n * element_bytes), ("dp",)) for n in sizes]


def _shift(base, one, two, steps: float):
    """(PhaseMemory, params, grads, optimizer, comm buffers) of `base` moved by
    `steps` layers along the slope from stage class `one` (1 layer) to `two`
    (2 layers): memory-analysis's numbers are linear in a stage's layers."""
    def move(x: int, a: int, b: int) -> int:
        return int(round(x + steps * (b - a)))

    pb, p1, p2 = base.phases, one.phases, two.phases
    phases = PhaseMemory(
        saved=move(pb.saved, p1.saved, p2.saved),
        forward_peak=move(pb.forward_peak, p1.forward_peak, p2.forward_peak),
        backward_peak=move(pb.backward_peak, p1.backward_peak, p2.backward_peak),
        weight_grad_residual=move(pb.weight_grad_residual, p1.weight_grad_residual, p2.weight_grad_residual),
    )
    return (phases, move(base.params, one.params, two.params), move(base.grads, one.grads, two.grads),
            move(base.optimizer, one.optimizer, two.optimizer), base.comm_buffers)


def _virtual_memory(probe: Probe, n: int, first: bool, last: bool):
    """A virtual stage of n layers, first and/or last, as memory-analysis counts it."""
    mem = probe.stage_memory
    whole = mem["whole"]
    if first and last:
        return _shift(whole, whole, whole, 0.0)
    if "middle" not in mem:
        return _rough_virtual_memory(probe, whole, n, first, last)
    one, two = mem["middle"]
    if first:
        base, at = mem["first"], MEMORY_SPLIT[0]
    elif last:
        base, at = mem["last"], probe.layers - sum(MEMORY_SPLIT)
    else:
        base, at = one, MEMORY_SPLIT[1]
    return _shift(base, one, two, float(n - at))


def compose_memory(probe: Probe, config, counts: list[int], dp: int, m: int, schedule: str) -> list[int]:
    """Peak bytes per stage from memory-analysis's own stage-class numbers and
    its schedule walk (`scheduled_activations`), ZeRO-sharded over dp."""
    pp, vpp = config.pp, config.vpp
    V = pp * vpp
    peaks = []
    for s in range(pp):
        chunks = [_virtual_memory(probe, counts[c * pp + s], c * pp + s == 0, c * pp + s == V - 1)
                  for c in range(vpp)]
        acts = scheduled_activations([c[0] for c in chunks], schedule, pp, m, s)
        params = sum(c[1] for c in chunks)
        grads = sum(c[2] for c in chunks) / (dp if config.zero >= 2 else 1)
        optimizer = sum(c[3] for c in chunks) / (dp if config.zero >= 1 else 1)
        comm = 0.0
        if dp > 1:
            syncs = [c for group in probe.sync(config.dp_bucket_mb) for c in group]
            comm = max((c.payload_bytes for c in syncs), default=0.0)
            if config.zero >= 1:
                comm = max([comm, *(c.payload_bytes for c in updated_gathers(params, dp, config.dp_bucket_mb))])
        peaks.append(int(params + grads + optimizer + acts.peak + comm))
    return peaks


def _rough_virtual_memory(probe: Probe, whole, n: int, first: bool, last: bool):
    """A virtual stage of a model too short for the 4-stage split (< 5 layers):
    the whole model's stage class cut by layers (saved activations, parameters
    and their states per layer; the head's saved logits on the last stage; the
    same transient peaks beyond what is saved)."""
    w = whole.phases
    saved = int(probe.saved_layer * n + probe.saved_last * last)
    params = probe.params_layer * n + probe.params_first * first + probe.params_last * last
    share = params / probe.params_total if probe.params_total else 1.0
    phases = PhaseMemory(
        saved=saved,
        forward_peak=saved + max(w.forward_peak - w.saved, 0),
        backward_peak=saved + max(w.backward_peak - w.saved, 0),
        weight_grad_residual=int(w.weight_grad_residual * n / max(probe.layers, 1)),
    )
    return (phases, int(whole.params * share), int(whole.grads * share), int(whole.optimizer * share),
            whole.comm_buffers)


def point_target(config):
    """The Target set-target would attach to the point's module."""
    cluster = load_cluster(config.cluster) if config.cluster else None
    return SetTargetPass(hardware=config.hardware, gpus=config.gpus, gpus_per_node=config.gpus_per_node,
                         cluster=config.cluster).target(cluster)


def metrics(step: Composed, config, target) -> dict[str, Any]:
    """A screened point's record metrics, in the fast tier's form
    (`evaluate.summarise_training`)."""
    t = step.iteration_time_s
    tokens = step.tokens
    tflops = step.flops_per_gpu / t / 1e12 if t else 0.0
    peak = target.gpu.peak("bf16") / 1e12
    return {
        "tier": "screen",
        "iteration_time_s": t,
        "tokens_per_s": tokens / t if t and tokens else 0.0,
        "tflops_per_gpu": tflops,
        "mfu": utilization(step.model_flops_per_gpu, t, peak),
        "hfu": utilization(step.flops_per_gpu, t, peak),
        "peak_memory_bytes": step.peaks,
        "max_peak_memory_bytes": max(step.peaks),
        "breakdown": {"compute_s": step.compute_s, "exposed_comm_s": step.exposed,
                      "bubble_s": step.bubble_s, "stage": step.stage},
        "gpus": config.gpus,
        "engines": {},
        # the critical stage's split stands for every stage's
        **_energy(step, config, target),
    }


def _energy(step: Composed, config, target) -> dict[str, Any]:
    t = step.iteration_time_s
    report = {"iteration_time_s": t, "flops_per_gpu": step.flops_per_gpu, "gpus": config.gpus,
              "tokens_per_s": step.tokens / t if t and step.tokens else 0.0,
              "stages": [{"compute_s": step.compute_s, "bubble_s": step.bubble_s}]}
    energy = training_energy(report, target.gpu, nics_per_gpu(target.topology))
    return {"energy_j": energy["energy_j"], "tokens_per_joule": energy["tokens_per_joule"]}

