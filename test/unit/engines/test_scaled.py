"""The `scaled` engine: a measured kernel carried to another GPU by the roofline
of its bound, with the efficiency it reached."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from charon_ir.engines.compute_efficiency import KERNEL_FLOOR_S
from charon_ir.engines.scaled import roofline_s, scale_time
from charon_ir.target.hardware import load_gpu

H100 = load_gpu("H100")


def test_compute_bound_gemm_scales_by_the_peaks() -> None:
    b200 = load_gpu("B200")
    flops, nbytes = 2 * 8192.0**3, 3 * 2 * 8192.0**2
    t = scale_time(1e-3, H100, b200, "matmul", "bf16", flops, nbytes)
    fixed = KERNEL_FLOOR_S
    assert t == pytest.approx(fixed + (1e-3 - fixed) * H100.peak("bf16") / b200.peak("bf16"))


def test_memory_bound_op_scales_by_the_bandwidths() -> None:
    fast = load_gpu("H100:hbm_bw=6.7e12")
    t = scale_time(1e-3, H100, fast, "elementwise", "bf16", 1e6, 1e9)
    assert t == pytest.approx(KERNEL_FLOOR_S + (1e-3 - KERNEL_FLOOR_S) / 2)


def test_launch_bound_kernel_keeps_its_time() -> None:
    fast = load_gpu("H100:peak_flops_scale=4,hbm_bw=1.34e13")
    assert scale_time(2e-6, H100, fast, "elementwise", "bf16", 1e3, 1e4) == 2e-6


@settings(max_examples=80, deadline=None)
@given(t=st.floats(1e-7, 1.0), flops=st.floats(0, 1e15), nbytes=st.floats(0, 1e12),
       bw=st.floats(1.0, 4.0), fl=st.floats(1.0, 4.0), kind=st.sampled_from(["matmul", "elementwise"]))
# found by CI: a denormal byte count made the same GPU's roofline ratio 1.000003
@example(t=1.0, flops=0.0, nbytes=2.225073858507e-311, bw=1.0, fl=1.0, kind="matmul")
def test_scaling_is_identity_on_the_same_gpu_and_never_slower_on_a_faster_one(
        t: float, flops: float, nbytes: float, bw: float, fl: float, kind: str) -> None:
    assert scale_time(t, H100, H100, kind, "bf16", flops, nbytes) == pytest.approx(t)
    faster = load_gpu(f"H100:hbm_bw={3.35e12 * bw!r},peak_flops_scale={fl!r}")
    scaled = scale_time(t, H100, faster, kind, "bf16", flops, nbytes)
    assert scaled <= t * (1 + 1e-12)
    # never below the fixed cost nor the share the faster roofline allows
    assert scaled >= min(t, KERNEL_FLOOR_S) * (1 - 1e-12)
    r_a, r_b = (roofline_s(g, kind, "bf16", flops, nbytes) for g in (H100, faster))
    if r_a > 0:
        assert scaled >= t * min(1.0, r_b / r_a) * (1 - 1e-9)


def test_scaled_engine_prices_a_gpu_variant_from_the_h100_kernels(charon_cli) -> None:
    import json

    args = ("simulate", "--model", "llama-3.1-8b", "--gpus", "64", "--tp", "8", "--pp", "2",
            "--sequence-parallel", "--seq-len", "4096", "--global-batch", "256", "--json")
    run = charon_cli(*args, "--hardware", "H100:hbm_bw=6.7e12", "--engines", "db,predict,scaled,analytic")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["engines"].get("scaled", 0) > 300
    base = json.loads(charon_cli(*args, "--hardware", "H100", "--engines", "db,predict,analytic").stdout)
    # twice the HBM bandwidth: faster, by less than the memory-bound share
    assert 0.8 * base["iteration_time_s"] < report["iteration_time_s"] < base["iteration_time_s"]
    # where the target's own measurements exist, db prices them and scaled is not asked
    same = json.loads(charon_cli(*args, "--hardware", "H100", "--engines", "db,predict,scaled,analytic").stdout)
    assert same["iteration_time_s"] == base["iteration_time_s"] and "scaled" not in same["engines"]


def test_validation_table_beats_simai() -> None:
    """The shipped H100 <-> H200 kernels and the published best GEMMs: every set's
    mean absolute error under SimAI's 13-15 %."""
    from charon_ir.validation.scaled import table

    rows = table()
    overall = [r for r in rows if r["family"] in ("all",) or r["set"].startswith("published")]
    assert len(overall) == 3 and all(r["mape"] < 0.13 for r in overall), overall
    matmul = [r for r in rows if r["family"] == "matmul" and r["set"].startswith("shipped")]
    # small GEMMs, whose launch floor the roofline ratio does not scale, are in since
    # the H200 was re-timed as CUDA graphs (5.0 / 6.1 %)
    assert all(r["mape"] < 0.08 and r["n"] > 1000 for r in matmul), matmul
