"""fuse: a fusion changes bytes moved, never the model's FLOPs; the backward's
recomputation of what the fused kernels no longer save is marked as such."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import sim
from charon_ir.memory import layer_saved_values
from charon_ir.memory.liveness import Roots
from charon_ir.memory.tensors import saved_source
from charon_ir.parallel.accounting import total_bytes_moved, total_flops
from charon_ir.passes.fuse import RECOMPUTE_SUFFIX, recomputed_flops
from charon_ir.parallel.examples import apply_pipeline, llama_layer, parse


@settings(max_examples=15, deadline=None)
@given(
    tokens=st.sampled_from([16, 64]),
    hidden=st.sampled_from([64, 128]),
    heads=st.sampled_from([2, 4]),
    options=st.sampled_from(["", "{norm=false}", "{attention=false}", "{rope=false bias-act=false}",
                             "{backward=true}", "{backward=true norm=false}", "{backward=true rope=false}"]),
)
def test_flops_kept_bytes_reduced(tokens, hidden, heads, options):
    text = llama_layer(tokens, hidden, heads, heads, 16, 96)
    before = parse(text)
    module = apply_pipeline(parse(text), f"fuse{options}")
    assert total_flops(module) - recomputed_flops(module) == total_flops(before)
    assert total_bytes_moved(module) <= total_bytes_moved(before)
    attention = [op for op in module.walk() if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp))]
    assert all((op.flash is not None) == ("attention=false" not in options) for op in attention)
    if "attention=false" not in options:
        assert total_bytes_moved(module) < total_bytes_moved(before)


def test_swiglu_fused():
    module = apply_pipeline(parse(llama_layer(16, 64, 4, 4, 16, 96)), "fuse{attention=false}")
    fused = [op for op in module.walk() if isinstance(op, sim.GenericOp) and op.callee.data == "fused.swiglu"]
    assert len(fused) == 1
    # silu (4 FLOPs an element) and mul (1); reads g and u, writes the product
    # only (the backward recomputes silu(g) from g)
    assert fused[0].flop_count.value.data == pytest.approx(5 * 16 * 96)
    assert fused[0].byte_count.value.data == 3 * 2 * 16 * 96


TINY_LLAMA = Path(__file__).parents[2] / "lit/passes/Inputs/models/tiny-llama.mlir"


def test_layer_saves_the_fused_kernels_inputs():
    """On a Llama as the frontend imports it, the RMSNorms save their input and
    rstd (not an fp32 copy and x * rstd), the SwiGLU its gate and up inputs (not
    silu(g)): a layer saves Korthikanti's Llama count (norm 1 input and output,
    q, k, v, attention output, norm 2 input and output, gate, up and their
    product) plus the flash log-sum-exp and the two rstd."""
    t, h, heads, kv, d, f = 24, 64, 4, 2, 16, 128
    module = apply_pipeline(parse(TINY_LLAMA.read_text()), "fuse")
    rep = next(op for op in module.walk() if isinstance(op, sim.RepeatOp) and not op.reverse)
    saved = sum(n for _, n in layer_saved_values(rep))
    bf16 = 2 * t * (4 * h + 2 * heads * d + 2 * kv * d + 3 * f)
    assert saved == bf16 + 4 * t * heads + 2 * 4 * t
    recomputes = sorted(
        op.callee.data for op in module.walk()
        if isinstance(op, sim.GenericOp) and op.callee.data.endswith(RECOMPUTE_SUFFIX)
    )
    # two norms and the SwiGLU per layer (one layer body), the final norm
    assert recomputes == ["fused.rms_norm.recompute"] * 3 + ["fused.swiglu.recompute"]


TINY_GPT_OSS = Path(__file__).parents[2] / "lit/passes/Inputs/models/tiny-gpt-oss.mlir"


def test_gpt_oss_clamped_swiglu_saves_its_input():
    """GPT-OSS's clamped SwiGLU on the stacked experts ([4, 64, 128] GEMM output
    plus a [4, 1, 128] bias, 4 experts x 64 rows, expert ffn 64) is one fused
    kernel: FLOPs kept, and a layer saves the GEMM output in place of the
    clamps', the sigmoid's and the products' outputs."""
    before = parse(TINY_GPT_OSS.read_text())
    module = apply_pipeline(parse(TINY_GPT_OSS.read_text()), "fuse")
    assert total_flops(module) - recomputed_flops(module) == pytest.approx(total_flops(before), rel=1e-12)
    fused = [op for op in module.walk() if isinstance(op, sim.GenericOp) and op.callee.data == "fused.bias_act"
             and sim.shape_of(op.operands[1]) == (4, 1, 128)]
    assert len(fused) == 2  # the sliding-window and the full-attention layer of the repeated pair
    assert not [op for op in module.walk() if isinstance(op, sim.ElementwiseOp) and op.kind.data == "clamp"]

    def layer_saved(m):
        rep = next(op for op in m.walk() if isinstance(op, sim.RepeatOp) and not op.reverse)
        return sum(n for _, n in layer_saved_values(rep))

    # per layer of the pair, at least three [4, 64, 64] bf16 pieces fewer (of the
    # clamped gate and up, the sigmoid, the gated product, up + 1, which only the
    # backward read) beside the norms' savings
    assert layer_saved(before) - layer_saved(module) >= 2 * 3 * (2 * 4 * 64 * 64)


def test_fused_cross_entropy_keeps_flops_and_saves_no_fp32_logits():
    """fuse{loss}: the model's FLOPs kept (the backward's recompute apart), and
    the forward phase no longer saves a vocabulary-sized fp32 tensor (24 tokens x
    256 x 4 bytes) but the bf16 logits."""
    before = parse(TINY_LLAMA.read_text())
    module = apply_pipeline(parse(TINY_LLAMA.read_text()), "fuse{loss=true}")
    plain = apply_pipeline(parse(TINY_LLAMA.read_text()), "fuse")
    assert total_flops(module) - recomputed_flops(module) == pytest.approx(total_flops(before), rel=1e-12)

    def forward_outputs(m):
        phase = next(op for op in m.body.block.ops if isinstance(op, sim.PhaseOp) and op.kind.data == "forward")
        return [sim.shape_of(r) + (str(r.type.element_type),) for r in phase.results]

    assert (24, 256, "f32") in forward_outputs(plain)
    assert (24, 256, "f32") not in forward_outputs(module)
    assert (1, 24, 256, "bf16") in forward_outputs(module)


def _backward_ops(module):
    phase = next(op for op in module.body.block.ops if isinstance(op, sim.PhaseOp) and op.kind.data == "backward")
    return list(phase.walk())


@pytest.mark.parametrize("model", [TINY_LLAMA, TINY_GPT_OSS], ids=["llama", "gpt-oss"])
def test_fused_backward_keeps_flops_and_moves_less(model):
    """fuse{backward}: each fused kernel's backward pieces become one kernel:
    the model's FLOPs kept (the recompute ops apart, as without it), fewer bytes
    moved in the backward, and no pointwise op left that reads what a fused
    kernel's recompute op made (its pieces went into its backward kernel)."""
    before = parse(model.read_text())
    pieces = apply_pipeline(parse(model.read_text()), "fuse")
    module = apply_pipeline(parse(model.read_text()), "fuse{backward=true}")
    assert total_flops(module) - recomputed_flops(module) == pytest.approx(total_flops(before), rel=1e-12)
    assert recomputed_flops(module) == pytest.approx(recomputed_flops(pieces), rel=1e-12)

    def moved(m):
        return sum(op.bytes_moved() for op in _backward_ops(m) if isinstance(op, sim.ComputeOp))

    assert moved(module) < moved(pieces)
    grads = [op for op in _backward_ops(module) if isinstance(op, sim.GenericOp) and op.callee.data.endswith("_grad")
             and op.callee.data.startswith("fused.")]
    assert grads
    for op in _backward_ops(module):
        if isinstance(op, (sim.ElementwiseOp, sim.ReduceOp)):
            makers = [v.owner for v in op.operands if isinstance(v.owner, sim.GenericOp)]
            assert not any(m.callee.data.endswith(RECOMPUTE_SUFFIX) for m in makers), op


def test_fused_backward_kernel_reads_one_gradient():
    """Each backward kernel reads one activation besides what the forward saved
    and the parameters: its output gradient. The sum of two gradient streams (a
    residual's, the projections') stays autograd's own add."""
    module = apply_pipeline(parse(TINY_LLAMA.read_text()), "fuse{backward=true}")
    roots = Roots()
    for op in _backward_ops(module):
        if isinstance(op, sim.GenericOp) and op.callee.data in (
                "fused.rms_norm_grad", "fused.swiglu_grad", "fused.rope_grad"):
            activations = {saved_source(v) for v in op.operands
                           if not roots.is_parameter(v) and sim.phase_kind(saved_source(v).owner) != "forward"
                           and not (isinstance(v.owner, sim.GenericOp) and v.owner.callee.data.endswith(RECOMPUTE_SUFFIX))}
            assert len(activations) == 1, (op.callee.data, activations)
    adds = [op for op in _backward_ops(module) if isinstance(op, sim.ElementwiseOp) and op.kind.data == "add"]
    assert adds  # the residual and projection-gradient sums
