"""The fast tier (layer loops folded) and the fine tier (every event) agree within
1% on every case both run."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from charon_ir.dialects import event
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.data_parallel import DataParallelPass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.recompute import RecomputePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.report.summary import summarize
from charon_ir.runtime.flatten import flatten_all
from charon_ir.runtime.interpreter import OverlapModel, run
from charon_ir.testing import make_context, parse_module


def tp_model(layers: int, tp: int, h: int = 4096, s: int = 4096) -> str:
    """Layers of a matmul followed by a tensor-parallel all_reduce, sized like
    a real model's (compute and communication of the same order)."""
    t = f"tensor<1x{s}x{h}xbf16>"
    w = f"tensor<{layers}x{h}x{h}xbf16>"
    acts = f"tensor<{layers}x1x{s}x{h}xbf16>"
    return f"""
    coll.grid @mesh(axes = ["tp"], shape = {tp})
    %x = sim.input "tokens" {{tokens}} : {t}
    %ws = sim.param "w" : {w}
    %f:2 = sim.phase "forward" -> {t}, {acts} {{
      %r:2 = sim.repeat {layers} iter(%x : {t}) slices(%ws : {w}) -> ({t}, {acts}) {{
      ^bb0(%a: {t}, %wi: tensor<{h}x{h}xbf16>):
        %y = sim.matmul %a, %wi : ({t}, tensor<{h}x{h}xbf16>) -> {t}
        %z = coll.all_reduce %y on @mesh ["tp"] : {t}
        %o = sim.elementwise "add" %z, %a : {t}, {t} -> {t}
        sim.yield %o, %a : {t}, {t}
      }}
      sim.yield %r#0, %r#1 : {t}, {acts}
    }}
    %b = sim.phase "backward" -> {w} {{
      %g = sim.elementwise "fill" %f#0 : {t} -> {t}
      %rb:2 = sim.repeat {layers} iter(%g : {t}) slices(%f#1, %ws : {acts}, {w}) {{reverse}} -> ({t}, {w}) {{
      ^bb0(%d: {t}, %a: {t}, %wi: tensor<{h}x{h}xbf16>):
        %dx = sim.matmul %d, %wi {{transpose_rhs}} : ({t}, tensor<{h}x{h}xbf16>) -> {t}
        %dxr = coll.all_reduce %dx on @mesh ["tp"] : {t}
        %dw = sim.matmul %a, %d {{transpose_lhs}} : ({t}, {t}) -> tensor<1x{h}x{h}xbf16>
        %dwv = sim.view %dw : tensor<1x{h}x{h}xbf16> -> tensor<{h}x{h}xbf16>
        sim.yield %dxr, %dwv : {t}, tensor<{h}x{h}xbf16>
      }}
      sim.yield %rb#1 : {w}
    }}
    sim.phase "optimizer" {{
      sim.optimizer_step "adamw"(%ws : {w}) grads(%b : {w})
      sim.yield
    }}
    """


def both_tiers(layers, tp, pp, dp, m, zero, overlap, recompute="none", param_gather=False):
    ctx = make_context()
    module = parse_module(tp_model(layers, tp), ctx)
    PipelinePass(pp=pp, microbatches=m).apply(ctx, module)
    DataParallelPass(dp=dp, zero=zero, overlap_param_gather=param_gather).apply(ctx, module)
    if recompute != "none":
        RecomputePass(policy=recompute).apply(ctx, module)
    SetTargetPass(hardware="H100", gpus=tp * pp * dp).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass().apply(ctx, module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    from charon_ir.target.target import Target

    target = Target.from_module(module)
    out = {}
    for tier in ("fast", "fine"):
        flat = flatten_all(programs, fold=tier == "fast", overlap=overlap)
        out[tier] = (summarize(run(flat, overlap), target), flat.num_events)
    return out


@settings(max_examples=25, deadline=None)
@given(
    st.integers(8, 16),
    st.sampled_from([2, 8]),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 4]),
    st.integers(0, 3),
    st.sampled_from([0, 1]),
    st.sampled_from([OverlapModel(), OverlapModel(0.15, 0.1)]),
    st.sampled_from(["none", "full"]),
    st.booleans(),
)
# ZeRO-1's next-step gathers run ahead of the layers on a lane that shares NVLink with the
# tensor-parallel all-reduces: a folded loop saw their overlap as the same in every layer
# (its streams 1.0 % under the fine tier's; found by a CI run)
@example(13, 2, 1, 4, 0, 1, OverlapModel(), "none", True)
def test_fast_and_fine_tiers_agree_within_one_percent(layers, tp, pp, dp, extra_mb, zero, overlap, recompute,
                                                      param_gather):
    layers = layers * pp  # layers per stage, as in real models: 8 and more
    param_gather = param_gather and zero == 1
    res = both_tiers(layers, tp, pp, dp, pp + extra_mb, zero, overlap, recompute, param_gather)
    (fast, n_fast), (fine, n_fine) = res["fast"], res["fine"]
    # loops with collectives on the NICs run event by event: one micro-batch whose
    # forward gathers over dp and whose backward reduces over it leaves none to fold
    assert n_fast < n_fine or (param_gather and dp > 1 and extra_mb == 0 and pp == 1)
    assert fast["iteration_time_s"] == pytest.approx(fine["iteration_time_s"], rel=0.01)
    assert fast["flops_per_gpu"] == pytest.approx(fine["flops_per_gpu"], rel=1e-9)
    step = fine["iteration_time_s"]
    for fs, ns in zip(fast["stages"], fine["stages"]):
        assert fs["compute_s"] == pytest.approx(ns["compute_s"], rel=0.01)
        # Exposed communication per axis is not compared: a folded loop charges
        # its inner exposure from its two-layer simulation (README: fast tier).
        # The bubble is the time nothing runs: makespan - compute - exposed of all
        # axes at once (a folded loop's inner exposure counted once, not per axis)
        assert fs["bubble_s"] == pytest.approx(ns["bubble_s"], abs=0.03 * step)
    # with overlap slowdowns a stream's busy time stretches with whatever else
    # runs beside it, which a folded loop sees only inside itself
    tolerance = 0.01 if overlap == OverlapModel() else 0.05
    for name, stream in fine["streams"].items():
        # a pipeline send stretched by the comm slowdown beside the compute of a
        # folded loop may miss that whole stretch (5.1 % of a send that is 5 % of
        # the step: 16 layers, tp 8, pp 2, full recomputation)
        rel = max(tolerance, overlap.comm_slowdown) if "comm_pp" in name else tolerance
        assert fast["streams"][name]["busy_s"] == pytest.approx(stream["busy_s"], rel=rel, abs=2e-3 * step)


@pytest.mark.parametrize("pp, m", [(2, 2), (4, 8)])
def test_recomputed_forward_runs_before_the_gradient_arrives(pp, m):
    """With full recomputation a backward layer first recomputes its forward from
    the saved checkpoint: in the fine tier the first layer's recomputation runs
    while the gradient from the next stage is in flight. A folded backward loop
    that waited for the gradient before all of its work was 2.6% (pp=2) and 5.4%
    (pp=4) slower than the fine tier here (and +1.28% on the README's 405B case);
    the fold now starts that work without the gradient (flatten: loop heads)."""
    res = both_tiers(16, 8, pp, 1, m, 0, OverlapModel(), recompute="full")
    (fast, n_fast), (fine, n_fine) = res["fast"], res["fine"]
    assert n_fast < n_fine
    assert fast["iteration_time_s"] == pytest.approx(fine["iteration_time_s"], rel=1e-6)
    for name, stream in fine["streams"].items():
        assert fast["streams"][name]["busy_s"] == pytest.approx(stream["busy_s"], rel=1e-6)


def test_loop_results_ready_before_the_compute_stream_ends():
    """With data parallelism a backward layer ends with a gradient bucket that
    its result does not wait for: the next stage may read the loop's output
    while the compute stream still buckets the last layer, after the
    communication lane is done. A folded loop whose result waited for the
    communication lane only (ending earlier) was 0.2% fast here (0.5% on the
    405B command of the issue, no recomputation); it is now ready exactly where
    its two- and three-layer simulations say."""
    res = both_tiers(16, 2, 2, 4, 4, 0, OverlapModel())
    (fast, n_fast), (fine, n_fine) = res["fast"], res["fine"]
    assert n_fast < n_fine
    assert fast["iteration_time_s"] == pytest.approx(fine["iteration_time_s"], rel=1e-9)


@pytest.mark.parametrize("pp", [1, 2])
def test_overlapped_param_gather_hides_behind_the_first_forward(pp):
    """`data-parallel{overlap-param-gather}`: the gathers that ZeRO-1 runs after
    the step, on nothing but the dp stream, run beside the first forward instead;
    the step saves at most what they took."""
    plain = both_tiers(16, 8, pp, 4, 4, 1, OverlapModel())["fine"][0]
    overlapped = both_tiers(16, 8, pp, 4, 4, 1, OverlapModel(), param_gather=True)["fine"][0]
    saved = plain["iteration_time_s"] - overlapped["iteration_time_s"]
    assert saved > 0
    dp_busy = max(s["busy_s"] for name, s in plain["streams"].items() if name.endswith("comm_dp"))
    assert saved <= dp_busy


def test_charon_opt_simulate_defaults_to_the_calibrated_contention():
    """`-t simulate` without slowdowns uses the target GPU type's calibrated one
    (an A100's backward all-reduces beside weight-gradient GEMMs slow both)."""
    import io
    import json

    from charon_ir.engines.compute_efficiency import OVERLAP_SLOWDOWN
    from charon_ir.runtime.simulate_target import SimulateTarget

    def step_time(**options) -> float:
        ctx = make_context()
        module = parse_module(tp_model(4, 8), ctx)
        SetTargetPass(hardware="A100-SXM4-80GB", gpus=8).apply(ctx, module)
        out = io.StringIO()
        SimulateTarget(**options).emit(ctx, module, out)
        return json.loads(out.getvalue())["iteration_time_s"]

    calibrated = OVERLAP_SLOWDOWN["A100-SXM4-80GB"]
    default = step_time()
    assert default == step_time(compute_slowdown=calibrated, comm_slowdown=calibrated)
    assert default > step_time(compute_slowdown=0.0, comm_slowdown=0.0)


@pytest.mark.parametrize("hardware, dp", [("H100", 4), ("MI300X", 4), ("MI300X", 2)])
def test_the_bubble_is_what_nothing_runs_in_both_tiers(hardware, dp):
    """Stage breakdowns of a pipeline with data parallelism: the fast tier's bubble
    subtracted each axis's exposure inside a folded loop (their sum) and the dp
    tail twice, 5 % of the step under the fine tier's."""
    from pathlib import Path

    from charon_ir.api import simulate

    step = str(Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir")
    options = dict(hardware=hardware, gpus=2 * dp, pp=2, dp=dp, global_batch=4 * dp, framework="none")
    fast, fine = (simulate(step, tier=tier, **options) for tier in ("fast", "fine"))
    t = fine["iteration_time_s"]
    for f, n in zip(fast["stages"], fine["stages"]):
        assert f["bubble_s"] == pytest.approx(n["bubble_s"], abs=0.04 * t)
        # compute, the bubble and the longest axis's exposure fit in the step
        longest = max(n["exposed_comm_s"].values())
        assert n["compute_s"] + n["bubble_s"] + longest <= t * (1 + 1e-9)
