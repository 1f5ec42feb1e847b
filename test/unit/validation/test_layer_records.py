"""Korthikanti et al. 2022, Table 4: one simulated layer against the measured one,
and the overlap contention those rows calibrate (compute_efficiency.OVERLAP_SLOWDOWN)."""

from __future__ import annotations

import pytest

from charon_ir.engines import compute_efficiency
from charon_ir.validation import calibration
from charon_ir.target.hardware import load_gpu
from charon_ir.validation.layers import LayerCase, layer_case, layer_times
from charon_ir.validation.runner import cache_directory
from charon_ir.validation.training import Unsupported

CASES: list[LayerCase] = [layer_case(r) for r in calibration.layer_records()]


@pytest.fixture(scope="module")
def directory() -> str:
    return str(cache_directory())


def test_every_per_layer_record_is_a_case():
    assert len(CASES) == 5 and {c.gpu for c in CASES} == {"A100-SXM4-80GB"}


def test_the_layers_are_within_the_kernel_target():
    rows = [r for r in calibration.layer_comparisons() if r.primary]
    assert len(rows) == len(CASES)
    assert all(abs(r.error) <= calibration.KERNEL_TOLERANCE for r in rows)
    assert calibration.mape(rows) < 0.05


def test_only_the_backward_depends_on_the_slowdown(directory):
    # the forward's collectives feed the next op (a few us of a sequence-parallel
    # gather overlap); the backward's all-reduces run beside weight-gradient
    # GEMMs, so the backward grows with the contention
    for case in CASES:
        times = [layer_times(case, s, directory) for s in (0.0, 0.5, 1.0)]
        forwards = [f for f, _ in times]
        backwards = [b for _, b in times]
        assert max(forwards) - min(forwards) < 1e-3 * forwards[0]
        assert backwards[0] < backwards[1] < backwards[2]


def test_refit_reproduces_the_shipped_slowdown():
    fitted = calibration._refit_overlap_slowdown()
    assert fitted == pytest.approx(compute_efficiency.OVERLAP_SLOWDOWN, abs=0.02)


def test_calibrated_slowdown_per_gpu_type():
    assert compute_efficiency.overlap_slowdown(load_gpu("A100-SXM4-40GB")) == (
        compute_efficiency.OVERLAP_SLOWDOWN["A100-SXM4-80GB"])
    assert compute_efficiency.overlap_slowdown(load_gpu("H100-SXM5-80GB")) == 0.0


def test_a_record_without_the_split_is_unsupported():
    record = dict(calibration.layer_records()[0], other_metrics={"forward_ms": 7.7})
    with pytest.raises(Unsupported, match="forward_ms / backward_ms"):
        layer_case(record)


def test_a_data_parallel_layer_record_is_one_micro_batch_per_rank():
    record = dict(calibration.layer_records()[0])
    record["hardware"] = dict(record["hardware"], num_gpus=16)
    case = layer_case(record)
    assert [step.options["dp"] for step in case.steps] == [2, 2]
    assert [step.options["global_batch"] for step in case.steps] == [8, 8]


def test_a_pipelined_layer_record_is_unsupported():
    record = dict(calibration.layer_records()[0])
    record["strategy"] = dict(record["strategy"], pp=2)
    with pytest.raises(Unsupported, match="pp must be 1, got 2"):
        layer_case(record)


def test_the_output_says_where_the_slowdown_was_fitted():
    from charon_ir.validation.runner import run_layers

    shipped = calibration.layer_records()[0]
    h100 = dict(shipped, id="h100", hardware=dict(shipped["hardware"], gpu="NVIDIA H100-SXM5-80GB"))
    a100, other = run_layers([shipped, h100])
    assert a100.status == other.status == "ok"
    fitted = compute_efficiency.OVERLAP_SLOWDOWN["A100-SXM4-80GB"]
    assert f"overlap slowdown {fitted:g} (fitted to the shipped per-layer rows' backward)" in a100.note
    assert "overlap slowdown 0 (not calibrated for this GPU type)" in other.note
