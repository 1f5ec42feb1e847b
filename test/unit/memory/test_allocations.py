"""A stage's allocation sequence (`charon_ir.memory.allocations`) against
memory-analysis's own count, and its replay through the caching allocator
(`analyze_memory(replay=True)`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import charon_ir.memory.analysis as analysis
from charon_ir.memory import analyze_memory
from charon_ir.memory.analysis import stage_class
from charon_ir.memory.allocations import ALL_GATHER_STREAM, COMPUTE_STREAM
from charon_ir.memory.allocator import ALLOC, Event
from charon_ir.memory.megatron_reference import GptShape, gpt_module
from charon_ir.memory.states import DataParallel
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.offload_activations import OffloadActivationsPass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.recompute import RecomputePass

SHAPE = GptShape(s=256, b=1, h=512, a=8, layers=8)

BUILDS: dict[str, Callable[[ModuleOp], None]] = {
    "plain": lambda m: None,
    "zero1": lambda m: DataParallelPass(dp=4, zero=1).apply(Context(), m),
    "zero3": lambda m: DataParallelPass(dp=4, zero=3).apply(Context(), m),
    "full recompute": lambda m: RecomputePass(policy="full").apply(Context(), m),
    "1f1b": lambda m: PipelinePass(pp=2, microbatches=4, schedule="1f1b").apply(Context(), m),
    "interleaved": lambda m: PipelinePass(pp=2, vpp=2, microbatches=4, schedule="interleaved").apply(Context(), m),
    "zb-h1": lambda m: PipelinePass(pp=2, microbatches=4, schedule="zb-h1").apply(Context(), m),
    "cpu offload": lambda m: OffloadActivationsPass(layers=3).apply(Context(), m),
}


def live_bytes(events: list[Event]) -> tuple[int, int]:
    """(most bytes requested and not yet freed at once, bytes still live at the end)."""
    sizes: dict[int, int] = {}
    current = peak = 0
    for kind, key, nbytes, _ in events:
        if kind == ALLOC:
            sizes[key] = nbytes
            current += nbytes
            peak = max(peak, current)
        else:
            current -= sizes.pop(key)
    return peak, current


@pytest.fixture
def recorded(monkeypatch) -> list[tuple[list[Event], int]]:
    """The events each replayed stage made, with the bytes of its held blocks."""
    calls: list[tuple[list[Event], int]] = []
    real = analysis.stage_events

    def record(*args, **kwargs):
        events = real(*args, **kwargs)
        calls.append((events, sum(n for n, _ in kwargs["held"])))
        return events

    monkeypatch.setattr(analysis, "stage_events", record)
    return calls


@pytest.mark.parametrize("build", list(BUILDS))
def test_the_sequence_holds_what_the_analysis_counts(build: str, recorded):
    """The sequence's most live bytes is the analysis's peak, less at most the
    communication buffers the analysis holds through the step (the sequence
    holds gathered layers only while the layers run) and a few hundred KiB of
    order; after two steps only the held blocks (model states, buffers) remain;
    the replayed reserved peak covers the live bytes."""
    module = gpt_module(SHAPE)
    BUILDS[build](module)
    stages = analyze_memory(module, replay=True)
    assert len(recorded) == len(stages)
    for stage, (events, held) in zip(stages, recorded, strict=True):
        peak, end = live_bytes(events)
        assert stage.peak - stage.comm_buffers - (1 << 20) <= peak <= stage.peak, (build, stage.stage)
        assert end == held
        assert stage.reserved is not None and stage.reserved >= peak


def test_offloaded_layers_leave_the_gpu_and_come_back():
    """Under offload-activations the sequence frees an offloaded layer's saved
    blocks at its copy's window and allocates them again before its backward:
    its most live bytes fall as the analysis's peak does, and it allocates the
    offloaded blocks again."""
    counts, peaks = [], []
    for layers in (0, 3):
        module = gpt_module(SHAPE)
        if layers:
            OffloadActivationsPass(layers=layers).apply(Context(), module)
        real = analysis.stage_events
        seen: list[list[Event]] = []
        analysis.stage_events = lambda *a, **k: seen.append(real(*a, **k)) or seen[-1]
        try:
            (stage,) = analyze_memory(module, replay=True)
        finally:
            analysis.stage_events = real
        counts.append(sum(1 for e in seen[0] if e[0] == ALLOC))
        peaks.append((live_bytes(seen[0])[0], stage.peak, stage.host_activations))
    (plain, plain_peak, _), (offloaded, offloaded_peak, host) = peaks
    assert host > 0 and offloaded < plain
    # the sequence's saving is the analysis's (to a few hundred KiB of order)
    assert abs((plain - offloaded) - (plain_peak - offloaded_peak)) < 1 << 20
    assert counts[1] > counts[0]


def test_without_replay_reserved_is_not_computed():
    (stage,) = analyze_memory(gpt_module(SHAPE))
    assert stage.reserved is None


def test_repeats_are_replayed_per_iteration_not_materialised(recorded):
    """The allocations grow by the same count per layer added (the body's,
    replayed per iteration), and the IR keeps one layer body."""
    counts = []
    for layers in (2, 4, 8):
        module = gpt_module(GptShape(s=256, b=1, h=512, a=8, layers=layers))
        ops_before = sum(1 for _ in module.walk())
        analyze_memory(module, replay=True)
        assert sum(1 for _ in module.walk()) == ops_before
        events, _ = recorded[-1]
        counts.append(sum(1 for e in events if e[0] == ALLOC))
    assert counts[2] - counts[1] == 2 * (counts[1] - counts[0]) > 0


def test_zero3_gathers_on_the_all_gather_stream(recorded):
    """FSDP's gathered layers are allocated on their own stream, two at most at
    once (the running layer and the prefetched one)."""
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=3).apply(Context(), module)
    analyze_memory(module, replay=True)
    (events, _), = recorded
    gathered = [e for e in events if e[0] == ALLOC and e[3] == ALL_GATHER_STREAM]
    # per layer, forward and backward, two steps
    assert len(gathered) == 2 * 2 * SHAPE.layers
    keys = {e[1] for e in gathered}
    live = most = 0
    for kind, key, _, _ in events:
        if key in keys:
            live += 1 if kind == ALLOC else -1
            most = max(most, live)
    assert most == 2
    assert all(e[3] == COMPUTE_STREAM for e in events if e[0] == ALLOC and e[1] not in keys)


@pytest.mark.parametrize("zero", [1, 3])
def test_model_states_are_allocated_as_the_framework_does(zero: int):
    """FSDP2 (ZeRO-3) keeps a sharded tensor per parameter of each layer, and a
    gradient and optimizer states per parameter; ZeRO-1 (Megatron-Core's
    distributed optimizer) one buffer each. The tensors add up to the states
    the analysis counts (to a byte per tensor of rounding)."""
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=zero).apply(Context(), module)
    cls = stage_class(module.body.block, DataParallel.from_module(module), 2)
    total = cls.params + cls.grads + cls.optimizer
    if zero == 1:
        assert cls.state_tensors == [cls.params, cls.grads, cls.optimizer]
    else:
        # per layer: its weights' shards, their gradients, Adam's three states
        assert len(cls.state_tensors) > 5 * SHAPE.layers
    assert total <= sum(cls.state_tensors) < total + len(cls.state_tensors)


def test_a_replay_is_the_same_twice():
    module = gpt_module(SHAPE)
    PipelinePass(pp=2, vpp=2, microbatches=4, schedule="interleaved").apply(Context(), module)
    first = [s.reserved for s in analyze_memory(module, replay=True)]
    assert first == [s.reserved for s in analyze_memory(module, replay=True)]


def test_simulate_reports_the_reserved_peak_beside_the_allocated_one():
    """`charon simulate`'s report: `peak_reserved_bytes` per stage, each at least
    what the stage's tensors hold at their peak; `reserved=False` leaves it out."""
    from pathlib import Path

    from charon_ir.api import simulate

    mlir = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
    report = simulate(str(mlir), framework="none", hardware="H100-SXM5-80GB", gpus=1)
    assert len(report["peak_reserved_bytes"]) == len(report["peak_memory_bytes"]) == 1
    # 2.8 MiB of tensors: a 20 MiB large-pool segment and a 2 MiB small one
    assert report["peak_reserved_bytes"][0] >= report["peak_memory_bytes"][0]
    quiet = simulate(str(mlir), framework="none", hardware="H100-SXM5-80GB", gpus=1, reserved=False)
    assert "peak_reserved_bytes" not in quiet
    assert quiet["peak_memory_bytes"] == report["peak_memory_bytes"]
