"""`charon calibrate` prints the per-record error; --refit reproduces the
constants shipped in the engine modules."""

import json

import pytest
from typer.testing import CliRunner

from charon_ir.cli import app
from charon_ir.engines import collectives, compute_efficiency
from charon_ir.validation import calibration


def test_calibrate_json():
    result = CliRunner().invoke(app, ["calibrate", "--json", "--only", "nccl"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {r["group"] for r in out["records"]} == {"nccl"}
    assert out["max_abs_error"]["nccl"] <= 0.10


def test_calibrate_table():
    result = CliRunner().invoke(app, ["calibrate"])
    assert result.exit_code == 0, result.output
    assert "MAPE" in result.output and "mamf_NVIDIA_H100_SXM" in result.output


def test_refit_reproduces_the_shipped_constants():
    fitted = calibration.refit()
    for name, value in fitted["GEMM_MAX"].items():
        if name in compute_efficiency.GEMM_MAX:
            assert value == pytest.approx(compute_efficiency.GEMM_MAX[name], rel=0.02)
    for key, consts in fitted["ATTENTION"].items():
        shipped = compute_efficiency.ATTENTION[key]
        assert consts.fwd_max == pytest.approx(shipped.fwd_max, rel=0.05)
    k = fitted["collectives"]
    assert k.scale_up_efficiency == pytest.approx(
        collectives.DEFAULT_CONSTANTS.scale_up_efficiency, rel=0.02
    )
    assert k.nvls_efficiency == pytest.approx(collectives.DEFAULT_CONSTANTS.nvls_efficiency, rel=0.05)
    for gpu, consts in fitted["collectives_by_gpu"].items():
        shipped = collectives.CONSTANTS[gpu]
        assert consts.nvls_efficiency == pytest.approx(shipped.nvls_efficiency, rel=0.02)
        assert consts.nvls_fill_s == pytest.approx(shipped.nvls_fill_s, rel=0.05)
        assert consts.nvls_latency_s == shipped.nvls_latency_s


def test_calibrate_layers():
    result = CliRunner().invoke(app, ["calibrate", "--json", "--only", "layer"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    primary = [r for r in out["records"] if r["primary"]]
    assert len(primary) == 5 and {r["group"] for r in out["records"]} == {"layer"}
    assert out["max_abs_error"]["layer"] <= calibration.KERNEL_TOLERANCE


def test_bad_only_is_one_line(charon_fails):
    assert charon_fails("calibrate", "--only", "everything") == (
        "error: --only 'everything': expected gemm, attention, nccl or layer")
    # an empty value is a choice like any other, not "all groups"
    assert charon_fails("calibrate", "--only", "") == (
        "error: --only '': expected gemm, attention, nccl or layer")


def test_calibrate_table_labels_its_units():
    # the values mix TFLOP/s (kernels) and GB/s (collectives): each row names its unit
    result = CliRunner().invoke(app, ["calibrate", "--only", "nccl"])
    header, first = result.output.splitlines()[:2]
    assert header.split()[:6] == ["record", "gpu", "measured", "predicted", "unit", "error"]
    assert first.split()[4] == "GB/s"
