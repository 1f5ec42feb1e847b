"""lower-to-events' CPU activation offload copies (`offload-activations`): the
device-to-host copies after the offloaded layers' forward and the host-to-device
copies before their backward, on copy streams beside the compute, waited for
where Transformer Engine's AsyncDoubleBufferGroupOffloadHandler waits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import event, sim
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.memory.liveness import Roots, offloaded_layer_bytes
from charon_ir.memory.megatron_reference import GptShape, gpt_module
from charon_ir.memory import analyze_memory
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.memory_analysis import MemoryAnalysisPass
from charon_ir.passes.offload_activations import OffloadActivationsPass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.interpreter import OverlapModel
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context

SHAPE = GptShape(s=1024, b=2, h=1024, a=8, layers=8)


def lowered(shape: GptShape, offload: int, bandwidth: float | None = None, fp8: bool = False):
    ctx = make_context()
    module = gpt_module(shape)
    OffloadActivationsPass(layers=offload).apply(ctx, module)
    SetTargetPass(hardware="H100-SXM5-80GB", gpus=1).apply(ctx, module)
    MemoryAnalysisPass(fp8=fp8).apply(ctx, module)
    CostAnnotatePass(fp8_gemms=fp8, fp8_casts=fp8).apply(ctx, module)
    LowerToEventsPass(**({} if bandwidth is None else {"host_bandwidth": bandwidth})).apply(ctx, module)
    module.verify()
    return ctx, module


def step(shape: GptShape, offload: int, bandwidth: float | None = None, tier: str = "fine",
         overlap: OverlapModel = OverlapModel()) -> dict:
    ctx, module = lowered(shape, offload, bandwidth)
    return simulate_module(ctx, module, overlap, tier=tier)


def layer_bytes(shape: GptShape) -> int:
    ((forward, _),) = sim.layer_repeat_pairs(gpt_module(shape).body.block)
    return offloaded_layer_bytes(forward, Roots())


def exposed_copies(report: dict) -> float:
    return report["breakdown"]["exposed_comm_s"].get("host", 0.0)


def events(module, kind: str) -> list:
    return [op for op in module.walk() if isinstance(op, event.EventOpBase) and op.label.data == kind]


@pytest.mark.parametrize("offload", [1, 3, 7])
def test_one_copy_out_and_one_back_per_offloaded_layer(offload):
    _, module = lowered(SHAPE, offload)
    out, back = events(module, "offload"), events(module, "reload")
    assert len(out) == len(back) == offload
    assert all(op.byte_count() == layer_bytes(SHAPE) for op in out + back)
    # the compute waits for each copy out (after layer_window_map[k]) and for the
    # reloads at the next window and before layer 0's backward
    assert len(events(module, "offload_wait")) == offload
    assert len(events(module, "reload_wait")) == offload


def test_copies_overlap_the_compute():
    """On a fast host link the copies hide behind the layers: the step is the step
    without offloading, and no copy time is exposed."""
    plain = step(SHAPE, 0)
    fast = step(SHAPE, 4, bandwidth=1e15)
    assert fast["iteration_time_s"] == pytest.approx(plain["iteration_time_s"], rel=1e-9)
    assert exposed_copies(fast) == pytest.approx(0.0, abs=1e-12)
    assert fast["streams"]["comm_host_d2h"]["busy_s"] > 0


def test_a_slow_host_link_exposes_the_copies():
    """Copies far longer than the layers: the handler waits for copy k before it
    starts copy k + 1 and for each reload before the next, so the N copies out
    and the N back run one after another on the critical path."""
    plain = step(SHAPE, 0)
    n, bandwidth = 3, 1e8
    copy_s = layer_bytes(SHAPE) / bandwidth
    slow = step(SHAPE, n, bandwidth=bandwidth)
    assert slow["iteration_time_s"] >= 2 * n * copy_s
    assert slow["iteration_time_s"] <= plain["iteration_time_s"] + 2 * n * copy_s + 1e-9
    assert exposed_copies(slow) == pytest.approx(slow["iteration_time_s"] - plain["iteration_time_s"], rel=0.05)


@settings(max_examples=10, deadline=None)
@given(layers=st.integers(2, 8), data=st.data(), bandwidth=st.sampled_from([1e8, 1e10, 25e9, 1e13]))
def test_offloading_never_speeds_the_step_nor_adds_flops(layers, data, bandwidth):
    shape = GptShape(s=256, b=1, h=512, a=8, layers=layers)
    n = data.draw(st.integers(1, layers - 1))
    plain, offloaded = step(shape, 0), step(shape, n, bandwidth)
    assert offloaded["iteration_time_s"] >= plain["iteration_time_s"] * (1 - 1e-12)
    assert offloaded["flops_per_gpu"] == plain["flops_per_gpu"]


def test_the_fast_tier_times_it_as_the_fine():
    fine, fast = step(SHAPE, 5, 1e10, "fine"), step(SHAPE, 5, 1e10, "fast")
    assert fast["iteration_time_s"] == pytest.approx(fine["iteration_time_s"], rel=1e-6)


def test_without_the_mark_nothing_changes():
    _, module = lowered(SHAPE, 0)
    assert not events(module, "offload") and not events(module, "reload")
    assert not any(isinstance(op, event.StreamOp) and op.sym_name.data.startswith("comm_host")
                   for op in module.walk())


@pytest.mark.parametrize("bandwidth", [0, -1.0, float("nan")])
def test_a_bad_host_bandwidth_is_one_line(bandwidth):
    with pytest.raises(CharonError, match="option 'host-bandwidth' must be a number of bytes/s > 0"):
        lowered(SHAPE, 1, bandwidth)


def test_the_windows_decide_where_the_loops_split():
    """L = 8, N = 3: layer_window_map = [2, 5, 7] (8 // 3 = 2 a group, the first
    8 % 3 = 2 groups one layer later); the forward loop splits after layers 0, 2
    and 5 (and ends at 7), the backward before 7, 5, 2 and 0."""
    assert sim.offload_windows(8, 3) == [2, 5, 7]
    _, module = lowered(SHAPE, 3)
    counts = [op.count.value.data for op in module.walk()
              if isinstance(op, event.LoopOp) and op.label is not None and op.label.data == event.LAYER_REPEAT]
    assert counts == [1, 2, 3, 2, 2, 3, 2, 1]


def test_the_copy_engines_take_no_sms():
    """A copy runs on a `copy` stream: where a collective beside a kernel slows both
    (the GPU type's overlap slowdown), a copy slows neither."""
    _, module = lowered(SHAPE, 2)
    kinds = {op.sym_name.data: op.kind.data for op in module.walk() if isinstance(op, event.StreamOp)}
    assert kinds["comm_host_d2h"] == kinds["comm_host_h2d"] == event.StreamKind.COPY
    contended = OverlapModel(compute_slowdown=1.0, comm_slowdown=1.0)
    plain = step(SHAPE, 0, overlap=contended)
    hidden = step(SHAPE, 2, bandwidth=1e12, overlap=contended)
    assert hidden["streams"]["comm_host_d2h"]["busy_s"] > 0
    assert hidden["iteration_time_s"] == pytest.approx(plain["iteration_time_s"], rel=1e-9)


@pytest.mark.parametrize("fp8", [False, True])
def test_the_copies_move_exactly_the_host_bytes(fp8):
    """Each copy out and back moves what memory-analysis keeps on the host for its
    layer: under fp8 the GEMM inputs Transformer Engine saves as their fp8 cast
    (the tensors its handler offloads), one byte an element."""
    shape, n = GptShape(layers=4), 2
    module = gpt_module(shape)
    OffloadActivationsPass(layers=n).apply(make_context(), module)
    (mem,) = analyze_memory(module, fp8=fp8)
    _, lowered_module = lowered(shape, n, fp8=fp8)
    copies = events(lowered_module, "offload") + events(lowered_module, "reload")
    assert len(copies) == 2 * n
    assert all(op.byte_count() * n == mem.host_activations for op in copies)


def test_fp8_copies_are_smaller():
    bf16 = events(lowered(GptShape(layers=4), 2)[1], "offload")[0].byte_count()
    fp8 = events(lowered(GptShape(layers=4), 2, fp8=True)[1], "offload")[0].byte_count()
    assert fp8 < bf16


def test_lowering_without_memory_analysis_is_one_line():
    ctx = make_context()
    module = gpt_module(SHAPE)
    OffloadActivationsPass(layers=2).apply(ctx, module)
    SetTargetPass(hardware="H100-SXM5-80GB", gpus=1).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    with pytest.raises(CharonError, match="run memory-analysis after offload-activations and before lower-to-events"):
        LowerToEventsPass().apply(ctx, module)
