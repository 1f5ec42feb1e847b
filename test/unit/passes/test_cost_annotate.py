"""cost-annotate{fp8-gemms}: the GEMMs, and only they, are priced on the fp8
tensor cores; with fp8-casts each also carries its operands' cast kernels."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.dialects import sim
from charon_ir.dialects.sim import COST_ATTR
from charon_ir.engines.compute_efficiency import KERNEL_FLOOR_S, gemm_max, gemm_max_fp8, memory_efficiency
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.target.hardware import load_gpu
from charon_ir.testing import make_context, parse_module


def layer_gemm_module(m: int, n: int, k: int):
    """(context, module) of one [m x k] x [n x k]^T GEMM inside a one-layer `sim.repeat`."""
    ctx = make_context()
    a, w, y = f"tensor<{m}x{k}xbf16>", f"tensor<{n}x{k}xbf16>", f"tensor<{m}x{n}xbf16>"
    module = parse_module(
        f"""
        %a = sim.input "a" : {a}
        %ws = sim.param "w" : tensor<1x{n}x{k}xbf16>
        %r:2 = sim.repeat 1 iter(%a : {a}) slices(%ws : tensor<1x{n}x{k}xbf16>) -> ({a}, tensor<1x{m}x{n}xbf16>) {{
        ^bb0(%x: {a}, %w: {w}):
          %y = sim.matmul %x, %w {{transpose_rhs}} : ({a}, {w}) -> {y}
          sim.yield %x, %y : {a}, {y}
        }}
        """,
        ctx,
    )
    return ctx, module


def gemm_time(m: int, n: int, k: int, fp8: bool, casts: bool = False) -> float:
    """One GEMM's priced time; a layer's (inside a `sim.repeat`), as
    Transformer Engine's fp8 training (fp8-casts) tells them from the output layer."""
    ctx, module = layer_gemm_module(m, n, k)
    SetTargetPass(hardware="H100-SXM5-80GB").apply(ctx, module)
    CostAnnotatePass(fp8_gemms=fp8, fp8_casts=casts).apply(ctx, module)
    matmul = next(op for op in module.walk() if isinstance(op, sim.MatmulOp))
    return matmul.attributes[COST_ATTR].time_s.data


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 16384), st.integers(1, 16384), st.integers(1, 16384))
def test_an_fp8_gemm_takes_half_the_bf16_time_down_to_the_kernel_floor(m, n, k):
    """The rate (H100: 1978.9 against 989.4 TFLOP/s) and, for one-byte operands,
    the bandwidth double: the compute bound scales by the rates' ratio and the
    ceilings' (fp8's best matmul reaches 71 % of its peak, bf16's 80 %), the memory
    bound by exactly 1/2, neither below the kernel floor."""
    gpu = load_gpu("H100-SXM5-80GB")
    ratio = gpu.peak_flops["bf16"] / gpu.peak_flops["f8"] * gemm_max(gpu) / gemm_max_fp8(gpu)
    assert 1.12 < gemm_max(gpu) / gemm_max_fp8(gpu) < 1.14
    bf16, fp8 = gemm_time(m, n, k, False), gemm_time(m, n, k, True)
    bounds = sorted(max(bf16 * r, KERNEL_FLOOR_S) for r in (ratio, 0.5))
    assert bounds[0] * (1 - 1e-9) <= fp8 <= bounds[1] * (1 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 16384), st.integers(1, 16384), st.integers(1, 16384))
def test_fp8_casts_add_two_bytes_per_operand_element(m, n, k):
    """Transformer Engine casts a linear layer's input, weight and output gradient
    once each, with their transposes (read 2, write 1 + 1 bytes per element), and
    each feeds two of the layer's three GEMMs: 2 bytes per operand element of
    memory-bound kernel time on the 16-bit bandwidth, at least one kernel."""
    gpu = load_gpu("H100-SXM5-80GB")
    nbytes = 2.0 * (m * k + n * k)
    cast = max(nbytes / (gpu.hbm_bandwidth * memory_efficiency(nbytes)), KERNEL_FLOOR_S)
    assert gemm_time(m, n, k, True, casts=True) == pytest.approx(gemm_time(m, n, k, True) + cast,
                                                                  rel=1e-12)


def _kind(op) -> str:
    if not isinstance(op, sim.MatmulOp):
        return "not a GEMM"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, sim.RepeatOp):
        parent = parent.parent_op()
    return "layer GEMM" if parent is not None else "other GEMM"


def test_fp8_training_reprices_the_layer_gemms_only():
    costs = {}
    for precision in ("bf16", "fp8"):
        _, module, _ = build_training_module(
            TrainingConfig(model="llama-3.1-8b", gpus=8, tp=8, sequence_parallel=True, precision=precision)
        )
        costs[precision] = [
            (_kind(op), op.attributes[COST_ATTR].time_s.data)
            for op in module.walk() if COST_ATTR in op.attributes
        ]
    pairs = list(zip(costs["bf16"], costs["fp8"], strict=True))
    layers = [(b, f) for (kind, b), (_, f) in pairs if kind == "layer GEMM"]
    # every layer GEMM changes (the fp8 rate, plus its casts), and together they
    # get faster, the casts included; the output layer (not a TE module) and
    # everything else keep their 16-bit price
    assert layers and all(f != b for b, f in layers)
    assert sum(f for _, f in layers) < sum(b for b, _ in layers)
    assert all(b == f for (kind, b), (_, f) in pairs if kind != "layer GEMM")
    assert any(kind == "other GEMM" for kind, _ in costs["fp8"])


def test_overlapped_collectives_are_timed_against_the_gemms_as_priced():
    """--tp-comm-overlap with fp8: a sequence-parallel all-gather or
    reduce-scatter hides behind its GEMMs' fp8 times (cast kernels included), not
    their bf16 ones: cost-annotate prices the compute first."""
    from charon_ir.dialects.coll import CollectiveOp
    from charon_ir.engines.analytic import (
        AnalyticEngine,
        collective_plan_of,
        overlapped_comm_time_s,
        overlapped_gemms,
        tp_comm_overlap_enabled,
    )
    from charon_ir.target.target import Target

    _, module, _ = build_training_module(TrainingConfig(
        model="llama-3.1-8b", gpus=8, tp=8, sequence_parallel=True, tp_comm_overlap=True,
        precision="fp8"))
    target = Target.from_module(module)
    checked = differs = 0
    for op in module.walk():
        if not isinstance(op, CollectiveOp) or not tp_comm_overlap_enabled(op):
            continue
        gemms = overlapped_gemms(op)
        if not gemms:
            continue
        comm = collective_plan_of(op, target).time_s
        priced = sum(g.attributes[COST_ATTR].time_s.data for g in gemms)
        bf16 = sum(AnalyticEngine().price_compute(g, target).time_s for g in gemms)
        assert op.attributes[COST_ATTR].time_s.data == pytest.approx(
            overlapped_comm_time_s(comm, priced, 8), rel=1e-12)
        checked += 1
        differs += overlapped_comm_time_s(comm, bf16, 8) != overlapped_comm_time_s(comm, priced, 8)
    assert checked and differs


def layer_gemm_bytes(m: int, n: int, k: int, weight_casts: str, microbatches: int = 0) -> float:
    """The priced bytes of one layer GEMM under fp8 training (casts included),
    in a module whose `#sim.pipeline` runs `microbatches` (0: none)."""
    ctx, module = layer_gemm_module(m, n, k)
    if microbatches:
        module.attributes[sim.PIPELINE_ATTR] = sim.PipelineAttr(1, 1, "1f1b", microbatches, [1])
    SetTargetPass(hardware="H100-SXM5-80GB").apply(ctx, module)
    CostAnnotatePass(fp8_gemms=True, fp8_casts=True, fp8_weight_casts=weight_casts).apply(ctx, module)
    matmul = next(op for op in module.walk() if isinstance(op, sim.MatmulOp))
    return matmul.attributes[COST_ATTR].bytes.data


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8192), st.integers(1, 8192), st.integers(1, 8192), st.integers(1, 64))
def test_a_weight_cast_is_paid_per_run_once_per_step_or_never(m, n, k, microbatches):
    """The weight operand's 2 bytes per element: every run (TE without
    is_first_microbatch), 1 / microbatches of it (Megatron-Core: cast on a chunk's
    first micro-batch, cached after), none (weights kept in fp8); the activation's
    cast is paid every run either way."""
    every = layer_gemm_bytes(m, n, k, "every", microbatches)
    none = layer_gemm_bytes(m, n, k, "none", microbatches)
    first = layer_gemm_bytes(m, n, k, "first-microbatch", microbatches)
    assert every - none == pytest.approx(2.0 * n * k, rel=1e-9)
    assert first - none == pytest.approx(2.0 * n * k / microbatches, rel=1e-9)
    # no #sim.pipeline: one micro-batch
    assert layer_gemm_bytes(m, n, k, "first-microbatch") == pytest.approx(every, rel=1e-12)
