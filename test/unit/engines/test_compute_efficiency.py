"""Efficiency curves: bounded, saturating, quantised the way GPUs are."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, bf16

from charon_ir.dialects import sim
from charon_ir.engines.analytic import AnalyticEngine, attention_time_s, matmul_time_s
from charon_ir.engines.compute_efficiency import (
    KERNEL_FLOOR_S,
    attention_efficiency,
    gemm_efficiency,
    gemm_max,
    gemm_max_fp8,
    memory_efficiency,
)
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target

H100 = load_gpu("H100")
A100 = load_gpu("A100")
dims = st.integers(min_value=1, max_value=32768)


@settings(max_examples=200, deadline=None)
@given(dims, dims, dims, st.sampled_from([H100, A100, load_gpu("B200"), load_gpu("MI300X")]))
def test_gemm_efficiency_is_a_fraction(m, n, k, gpu):
    assert 0.0 < gemm_efficiency(gpu, 1, m, n, k) < 1.0


def test_gemm_efficiency_grows_with_size_and_sees_waves():
    small = gemm_efficiency(H100, 1, 256, 256, 256)
    big = gemm_efficiency(H100, 1, 8192, 8192, 8192)
    assert small < 0.5 < big
    # 132 SMs: 132 tiles of 128x256 fill one wave exactly, 133 need two
    full = gemm_efficiency(H100, 1, 128 * 132, 256, 4096)
    spill = gemm_efficiency(H100, 1, 128 * 133, 256, 4096)
    assert spill < full
    assert gemm_efficiency(H100, 1, 8192, 8192, 64) < gemm_efficiency(H100, 1, 8192, 8192, 4096)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.sampled_from([1, 8, 16, 32, 64]), st.integers(1, 32768),
       st.sampled_from([64, 128, 256]), st.booleans(), st.booleans())
def test_attention_efficiency_is_a_fraction(b, h, s, d, causal, backward):
    assert 0.0 < attention_efficiency(H100, b, h, s, s, d, causal, backward) < 1.0


def test_attention_saturates_in_sequence_and_head_dim():
    e = [attention_efficiency(H100, 16384 // s, 16, s, s, 128, False) for s in (512, 2048, 16384)]
    assert e[0] < e[1] < e[2]
    assert attention_efficiency(H100, 8, 32, 2048, 2048, 64, False) < e[1]
    causal = attention_efficiency(H100, 32, 16, 512, 512, 128, True)
    assert causal < e[0]  # the diagonal tiles are computed in full
    assert attention_efficiency(H100, 8, 16, 2048, 2048, 128, False, kernel="flash3") > e[1]


def test_memory_efficiency_saturates():
    assert memory_efficiency(1e3) < memory_efficiency(1e6) < memory_efficiency(1e9) < 0.9


def test_engine_uses_the_shared_functions():
    t = TensorType(bf16, (4096, 4096))
    a, b = sim.InputOp("a", t), sim.ParamOp("b", t)
    mm = sim.MatmulOp(a.result, b.result, t)
    target = Target(H100, 1, 8)
    cost = AnalyticEngine().price(mm, target)
    assert cost.time_s == matmul_time_s(H100, "bf16", 1, 4096, 4096, 4096, mm.bytes_moved())
    assert cost.time_s > mm.flops() / H100.peak("bf16")

    q = TensorType(bf16, (2, 4096, 32, 128))
    kv = TensorType(bf16, (2, 4096, 8, 128))
    qi, ki, vi = sim.InputOp("q", q), sim.InputOp("k", kv), sim.InputOp("v", kv)
    attn = sim.AttentionOp(qi.result, ki.result, vi.result, q, causal=True, flash=True)
    cost = AnalyticEngine().price(attn, target)
    want = attention_time_s(H100, "bf16", 2, 32, 4096, 4096, 128, attn.flops(),
                            attn.bytes_moved(), causal=True, backward=False, group=4)
    assert cost.time_s == want


def test_tiny_kernels_hit_the_floor():
    t = TensorType(bf16, (8, 8))
    x = sim.InputOp("x", t)
    add = sim.ElementwiseOp("add", [x.result, x.result], t)
    assert AnalyticEngine().price(add, Target(H100, 1, 8)).time_s == KERNEL_FLOOR_S


def test_decode_attention_is_memory_bound():
    """One new token against a 4k-token KV cache (GQA 32/8): reading the cache
    dominates, so the time is the memory time, not a wasted-tile compute time."""
    q = TensorType(bf16, (1, 1, 32, 128))
    kv = TensorType(bf16, (1, 4096, 8, 128))
    qi, ki, vi = sim.InputOp("q", q), sim.InputOp("k", kv), sim.InputOp("v", kv)
    attn = sim.AttentionOp(qi.result, ki.result, vi.result, q, causal=True, flash=True)
    cost = AnalyticEngine().price(attn, Target(H100, 1, 8))
    memory = attn.bytes_moved() / (H100.hbm_bandwidth * memory_efficiency(attn.bytes_moved()))
    assert cost.time_s == max(memory, KERNEL_FLOOR_S)


def test_no_gemm_shape_beats_the_best_measured_one():
    """A mamf record is the best shape of a sweep over M, N, K up to 16384: no
    shape of that sweep may be priced above the best record of its GPU type, and
    the best of them reaches it (GEMM_MAX is that ceiling)."""
    from charon_ir.validation import calibration
    from charon_ir.target.hardware import load_gpu

    measured: dict[str, float] = {}
    for r in calibration.kernel_records():
        if r["metric"] != "attention_tflops":
            name = calibration.record_gpu(r)
            measured[name] = max(measured.get(name, 0.0), float(r["value"]))
    for name, value in measured.items():
        gpu = load_gpu(name)
        best = max(
            gemm_efficiency(gpu, 1, m, n, k)
            for m in range(1024, 16385, 1024)
            for n in (4096, 8192, 16384)
            for k in (2048, 8192, 16384)
        )
        assert best * gpu.peak("bf16") / 1e12 <= value * 1.001, name
        assert best * gpu.peak("bf16") / 1e12 >= value * 0.99, name


def test_flash3_runs_on_hopper_only():
    """It was priced as FlashAttention-2 on an A100 without a word."""
    from charon_ir.errors import CharonError
    from charon_ir.target.hardware import load_gpu

    assert attention_efficiency(load_gpu("H200"), 8, 16, 2048, 2048, 128, False, kernel="flash3") > 0
    with pytest.raises(CharonError, match=r"^attention kernel 'flash3' \(FlashAttention-3\) runs on Hopper "
                                          r"GPUs only; A100-SXM4-80GB is Ampere \(GA100\)$"):
        attention_efficiency(load_gpu("A100-SXM4-80GB"), 8, 16, 2048, 2048, 128, False, kernel="flash3")


def test_h200_fp8_gemms_take_the_h100_fp8_ceiling_and_keep_their_own_bf16_one():
    """The H200 has no fp8 sweep of its own; its fp8 tensor cores are the H100's
    (SAME_FP8_TENSOR_CORES), its bf16 ceiling its own record's."""
    h100, h200 = load_gpu("H100-SXM5-80GB"), load_gpu("H200-SXM-141GB")
    assert gemm_max_fp8(h200) == gemm_max_fp8(h100) < gemm_max(h100) < gemm_max(h200)
