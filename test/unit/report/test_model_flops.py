"""MFU counts model FLOPs, HFU every FLOP executed: recompute re-runs forward
work, which costs time and hardware FLOPs but adds no model FLOPs."""

import io
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from charon_ir.api import build_training_module, configure, simulate
from charon_ir.dialects import sim
from charon_ir.report.table import print_report

TINY = str(Path(__file__).resolve().parents[3] / "examples/llama_tiny_config.json")


@settings(max_examples=6, deadline=None)
@given(pp=st.sampled_from([1, 2]), tier=st.sampled_from(["fast", "fine"]), microbatches=st.sampled_from([2, 4, 8]))
def test_recompute_adds_hardware_flops_not_model_flops(pp, tier, microbatches):
    options = dict(seq_len=256, gpus=pp, pp=pp, tier=tier, global_batch=microbatches, micro_batch=1)
    none = simulate(TINY, recompute="none", **options)
    full = simulate(TINY, recompute="full", **options)
    assert full["model_flops_per_gpu"] == pytest.approx(none["model_flops_per_gpu"], rel=1e-9)
    assert none["flops_per_gpu"] == pytest.approx(none["model_flops_per_gpu"], rel=1e-12)
    # the whole forward of the layers runs again: most of a third of the step
    assert 1.2 < full["flops_per_gpu"] / full["model_flops_per_gpu"] < 1.34
    # MFU falls with the step time; HFU does not fall as far
    assert full["mfu"] == pytest.approx(none["mfu"] * none["iteration_time_s"] / full["iteration_time_s"])
    assert full["mfu"] < full["hfu"]


@pytest.mark.parametrize("recompute", ["none", "selective-op", "full"])
def test_the_fast_tier_extrapolates_model_and_hardware_flops_as_the_fine_tier_counts_them(recompute):
    options = dict(seq_len=256, gpus=2, pp=2, global_batch=32, micro_batch=1, recompute=recompute)
    fast = simulate(TINY, **options)
    fine = simulate(TINY, tier="fine", **options)
    assert len(fast["microbatches_simulated"]) == 2  # two schedules, extrapolated to 32
    for key in ("mfu", "hfu", "model_flops_per_gpu", "flops_per_gpu"):
        assert fast[key] == pytest.approx(fine[key], rel=1e-3), key
    # without recompute the two are the same number, not two roundings of it
    assert (fast["mfu"] == fast["hfu"]) == (recompute == "none")


def test_the_table_shows_hfu_only_beside_recompute():
    for recompute, shown in (("none", False), ("full", True)):
        report = simulate(TINY, seq_len=256, gpus=2, pp=2, global_batch=32, recompute=recompute)
        out = io.StringIO()
        print_report(report, Console(file=out, width=100))
        assert ("HFU" in out.getvalue()) == shown


def test_selective_op_adds_exactly_its_rerun_ops_to_hardware_flops():
    """torchtitan's op-level checkpointing: hardware FLOPs = model FLOPs + the
    FLOPs of the ops the backward re-runs (each layer's), fewer than full's."""
    options = dict(seq_len=256, gpus=1, global_batch=2, micro_batch=1)
    none, op, full = (simulate(TINY, recompute=p, **options) for p in ("none", "selective-op", "full"))
    assert op["model_flops_per_gpu"] == pytest.approx(none["model_flops_per_gpu"], rel=1e-12)
    assert none["flops_per_gpu"] < op["flops_per_gpu"] < full["flops_per_gpu"]
    config, _ = configure(TINY, **options)
    _, module, _ = build_training_module(replace(config, recompute="selective-op"))
    rev = next(o for o in module.walk() if isinstance(o, sim.RepeatOp) and o.reverse)
    rerun = sum(o.flops() for o in rev.body.block.ops
                if isinstance(o, sim.ComputeOp) and sim.recompute_kind(o) == sim.RecomputeKind.SELECTIVE_OP)
    assert rerun > 0
    microbatches = 2
    assert op["flops_per_gpu"] - op["model_flops_per_gpu"] == pytest.approx(microbatches * rev.trip_count * rerun,
                                                                             rel=1e-9)
