"""A stage's allocation sequence (`charon_ir.memory.allocations`) against
memory-analysis's own count, and its replay through the caching allocator
(`analyze_memory(replay=True)`)."""

from __future__ import annotations

from collections.abc import Callable

import json
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import charon_ir.memory.analysis as analysis
from charon_ir.memory import analyze_memory
from charon_ir.memory.analysis import stage_class
from charon_ir.memory.allocations import ALL_GATHER_STREAM, COMPUTE_STREAM, ChunkProgram, stage_events
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
    """The events each replayed stage made, with the bytes of its held blocks
    (those made before the first step and the optimizer's moments)."""
    calls: list[tuple[list[Event], int]] = []
    real = analysis.stage_events

    def record(*args, **kwargs):
        events = real(*args, **kwargs)
        calls.append((events, sum(n for n, _ in [*kwargs["held"], *kwargs["at_first_step"]])))
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


@pytest.mark.parametrize("zero, fp32_shards", [(1, False), (3, False), (3, True)])
def test_model_states_are_allocated_as_the_framework_does(zero: int, fp32_shards: bool):
    """ZeRO-1 (Megatron-Core's distributed optimizer): one buffer each for the
    parameters and gradients, then an fp32 master shard per parameter (per
    layer), all before the first step; FSDP2 (ZeRO-3): a shard and a gradient per
    parameter of each layer, and the master copy there too unless the shard is
    it. Adam's two moments are one tensor per parameter each, made at the first
    step (torch.optim's lazy state). The tensors add up to the states the
    analysis counts (to a byte per tensor of rounding)."""
    module = gpt_module(SHAPE)
    DataParallelPass(dp=4, zero=zero).apply(Context(), module)
    cls = stage_class(module.body.block, DataParallel.from_module(module), 2, fp32_param_shards=fp32_shards)
    tensors = cls.state_tensors
    start, first_step = tensors.at_start, tensors.at_first_step
    total = cls.params + cls.grads + cls.optimizer
    everything = start + first_step
    assert total <= sum(everything) < total + len(everything)
    assert len(first_step) % 2 == 0 and len(first_step) >= 2 * 4 * SHAPE.layers  # m and v per weight and layer
    if zero == 1:
        # the two buffers, then one master shard per moment pair
        assert start[:2] == [cls.params, cls.grads]
        assert sorted(start[2:]) == sorted(first_step[::2])
    # the moments are two thirds of Adam's states; all of them where the shard is the master
    share = 1.0 if fp32_shards else 2 / 3
    assert abs(sum(first_step) - share * cls.optimizer) <= len(everything)


def test_the_moments_are_allocated_once_after_the_first_steps_backward():
    """`at_first_step` blocks come once, between the first step's events and the
    second's (the optimizer step follows the backward), and stay to the end."""
    module = gpt_module(SHAPE)
    cls = stage_class(module.body.block, DataParallel(), 2)
    program = ChunkProgram(cls.block, cls.roots, cls.gathered_layer)
    held = [(1000, COMPUTE_STREAM)]
    moment = (123457, COMPUTE_STREAM)  # a size no tensor of the step has
    events = stage_events([program], "gpipe", 1, 1, 0, held=held, at_first_step=[moment, moment])
    without = stage_events([program], "gpipe", 1, 1, 0, held=held)
    at = [i for i, e in enumerate(events) if e[0] == ALLOC and e[2] == moment[0]]
    per_step = (len(without) - len(held)) // 2
    assert at == [len(held) + per_step, len(held) + per_step + 1]
    assert events[:at[0]] == without[:at[0]]
    keys = {events[i][1] for i in at}
    assert not any(e[0] != ALLOC and e[1] in keys for e in events)


def test_a_replay_past_the_capacity_does_not_fit():
    """A replay whose segments cannot stay under `capacity` even with the cache
    released says so (`reserved_fits`), where PyTorch runs out of memory; one
    with room fits; without a replay it is not known."""
    module = gpt_module(SHAPE)
    (roomy,) = analyze_memory(module, replay=True)
    assert roomy.reserved_fits is True and roomy.reserved is not None
    (tight,) = analyze_memory(module, replay=True, capacity=roomy.reserved - (1 << 20))
    assert tight.reserved_fits is False
    (exact,) = analyze_memory(module, replay=True, capacity=roomy.reserved)
    assert exact.reserved_fits is True
    (plain,) = analyze_memory(module)
    assert plain.reserved_fits is None


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


TINY = Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json"
TIGHT_HBM = "H100-SXM5-80GB:hbm=99e6"
"""A GPU of 94.4 MiB: the tiny Llama's tensors (90.6 MiB at their peak) fit,
its replayed reserved bytes (102 MiB) do not, even with the cache released."""


def test_a_replay_past_the_gpus_memory_is_reported_not_refused():
    """The replay runs on the GPU's memory; a replay past it is reported beside
    the time (`reserved_fits` false, the diagnostic under `reserved_oom`), and
    `fits` stays the allocated peak's: the replay would refuse a published run
    that ran (docs/calibration.md, "The caching allocator's reserved bytes"). Without the replay neither
    key is there."""
    from charon_ir.api import simulate

    report = simulate(str(TINY), hardware=TIGHT_HBM, gpus=1)
    assert report["fits"] is True and report["reserved_fits"] == [False]
    over = report["reserved_oom"]
    assert over["reserved"] is True and "the replay runs out of memory" in over["message"]
    assert over["reserved_bytes"] > over["capacity_bytes"] >= over["peak_bytes"]
    assert report["peak_reserved_bytes"][0] > 99e6 > report["peak_memory_bytes"][0]
    quiet = simulate(str(TINY), hardware=TIGHT_HBM, gpus=1, reserved=False)
    assert quiet["fits"] is True and "reserved_fits" not in quiet and "reserved_oom" not in quiet


def test_the_replay_runs_on_the_memory_limit_when_given():
    """`memory_limit_gb` is the replay's capacity as it is memory-analysis's:
    94.4 MiB on an 80 GB GPU is past the replay, the GPU's own memory is not."""
    from charon_ir.api import simulate

    assert simulate(str(TINY), gpus=1)["reserved_fits"] == [True]
    report = simulate(str(TINY), gpus=1, memory_limit_gb=99e6 / 2**30)
    assert report["reserved_fits"] == [False] and report["reserved_oom"]["capacity_bytes"] == int(99e6)
    assert "reserved of 94.41 MiB" in report["reserved_oom"]["message"] and report["fits"] is True
    # an infinite limit (time whatever the memory) replays on the GPU's memory, as memory-analysis' does
    roomy = simulate(str(TINY), hardware=TIGHT_HBM, gpus=1, memory_limit_gb=float("inf"))
    assert roomy["reserved_fits"] == [False] and roomy["reserved_oom"]["capacity_bytes"] == int(99e6)


def test_the_command_line_reports_a_replay_past_the_gpu(charon_cli):
    """`charon simulate` times a run whose replay does not fit and says so (the
    table's "reserved past the memory" row, `--json`'s `reserved_oom`), exit 0;
    `--no-reserved` skips the replay."""
    table = charon_cli("simulate", "--model", str(TINY), "--gpus", "1", "--hardware", TIGHT_HBM)
    assert table.returncode == 0, table.stderr
    assert "reserved past the memory" in table.stdout and "of 94.4 MiB (stage 0)" in table.stdout
    result = charon_cli("simulate", "--model", str(TINY), "--gpus", "1", "--hardware", TIGHT_HBM, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["fits"] is True and report["reserved_oom"]["reserved"] is True
    result = charon_cli("simulate", "--model", str(TINY), "--gpus", "1", "--hardware", TIGHT_HBM, "--json",
                        "--no-reserved")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["fits"] is True and "peak_reserved_bytes" not in report
    table = charon_cli("simulate", "--model", str(TINY), "--gpus", "1")
    assert table.returncode == 0 and "peak reserved per GPU" in table.stdout
    assert "peak reserved" not in charon_cli("simulate", "--model", str(TINY), "--gpus", "1", "--no-reserved").stdout


def test_each_stage_replays_on_its_own_capacity():
    """A capacity per physical stage: the tight one's replay does not fit, the
    roomy one's does."""
    module = gpt_module(SHAPE)
    PipelinePass(pp=2, microbatches=4, schedule="1f1b").apply(Context(), module)
    roomy = analyze_memory(module, replay=True)
    tight = [s.reserved - (1 << 20) for s in roomy]
    stages = analyze_memory(module, replay=True, capacity=[2 * roomy[0].reserved, tight[1]])
    assert [s.reserved_fits for s in stages] == [True, False]


def test_a_stage_on_a_gpu_of_another_kind_replays_on_its_memory(tmp_path, monkeypatch):
    """On a cluster of two node kinds each stage's replay runs on its own GPU's
    memory, as the allocated peak is checked against it (`api.out_of_memory`)."""
    import charon_ir.api as api

    cluster = tmp_path / "two.cluster"
    cluster.write_text('name = "two"\nnode big { gpu = H100-SXM5-80GB  gpus = 1  nodes = 1 }\n'
                       f'node small {{ gpu = "{TIGHT_HBM}"  gpus = 1  nodes = 1 }}\n')
    seen = []
    real = api.analyze_memory
    monkeypatch.setattr(api, "analyze_memory", lambda *a, **k: seen.append(k["capacity"]) or real(*a, **k))
    report = api.simulate(str(TINY), cluster=str(cluster), gpus=2, pp=2, global_batch=4, allow_oom=True)
    assert seen[-1] == [80 * 2**30, int(99e6)]
    assert len(report["reserved_fits"]) == 2 and report["reserved_fits"][0] is True
