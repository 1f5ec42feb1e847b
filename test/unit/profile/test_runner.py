"""Running each sim op kind with torch on the CPU, on small shapes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from charon_ir.dialects.sim import ComputeOp  # noqa: E402
from charon_ir.profile.collect import parse_module_text  # noqa: E402
from charon_ir.profile.runner import NotRunnable, prepare, time_call  # noqa: E402

OPS = """
builtin.module {
  %x = sim.input "x" : tensor<64x32xbf16>
  %w = sim.param "w" : tensor<48x32xbf16>
  %wt = sim.param "wt" : tensor<64x48xbf16>
  %b3 = sim.input "b3" : tensor<2x64x32xf32>
  %n = sim.param "n" : tensor<32xbf16>
  %col = sim.input "col" : tensor<64x1xbf16>
  %ids = sim.input "ids" : tensor<64xi64>
  %table = sim.param "table" : tensor<100x32xbf16>
  %q = sim.input "q" : tensor<2x16x4x8xf32>
  %kv = sim.input "kv" : tensor<2x16x2x8xf32>
  %q1 = sim.input "q1" : tensor<2x1x4x8xf32>
  %cond = sim.input "cond" : tensor<64x32xi1>
  %logits = sim.input "logits" : tensor<64x100xf32>
  %scalar = sim.input "scalar" : tensor<f32>
  %half = sim.input "half" : tensor<2x16x2x4xbf16>
  %m1 = sim.matmul %x, %w {transpose_rhs} : (tensor<64x32xbf16>, tensor<48x32xbf16>) -> tensor<64x48xbf16>
  %m2 = sim.matmul %x, %wt {transpose_lhs} : (tensor<64x32xbf16>, tensor<64x48xbf16>) -> tensor<32x48xbf16>
  %m3 = sim.matmul %b3, %b3 {transpose_rhs} : (tensor<2x64x32xf32>, tensor<2x64x32xf32>) -> tensor<2x64x64xf32>
  %m4 = sim.matmul %b3, %b3 {transpose_rhs, grouped} : (tensor<2x64x32xf32>, tensor<2x64x32xf32>) -> tensor<2x64x64xf32>
  %a = sim.attention %q, %kv, %kv {causal, flash} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>) -> tensor<2x16x4x8xf32>
  %a1 = sim.attention %q1, %kv, %kv {causal} : (tensor<2x1x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>) -> tensor<2x1x4x8xf32>
  %gq, %gk, %gv = sim.attention_grad %q, %kv, %kv, %q, %q {causal, flash} : (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x16x2x8xf32>, tensor<2x16x2x8xf32>)
  %e = sim.embedding %table, %ids : (tensor<100x32xbf16>, tensor<64xi64>) -> tensor<64x32xbf16>
  %r = sim.norm "rms" %x, %n : tensor<64x32xbf16>, tensor<32xbf16>
  %l = sim.norm "layer" %x, %n : tensor<64x32xbf16>, tensor<32xbf16>
  %s1 = sim.elementwise "silu" %x : tensor<64x32xbf16> -> tensor<64x32xbf16>
  %s2 = sim.elementwise "mul" %x, %col : tensor<64x32xbf16>, tensor<64x1xbf16> -> tensor<64x32xbf16>
  %s3 = sim.elementwise "silu_grad" %x, %x : tensor<64x32xbf16>, tensor<64x32xbf16> -> tensor<64x32xbf16>
  %s4 = sim.elementwise "cast" %x : tensor<64x32xbf16> -> tensor<64x32xf32>
  %s5 = sim.elementwise "where" %cond, %x, %x : tensor<64x32xi1>, tensor<64x32xbf16>, tensor<64x32xbf16> -> tensor<64x32xbf16>
  %s6 = sim.elementwise "pow" %x : tensor<64x32xbf16> -> tensor<64x32xbf16>
  %s7 = sim.elementwise "cos" %x : tensor<64x32xbf16> -> tensor<64x32xbf16>
  %s8 = sim.elementwise "fill" %x : tensor<64x32xbf16> -> tensor<64x32xbf16>
  %red = sim.reduce "mean" %x [1] : tensor<64x32xbf16> -> tensor<64x1xbf16>
  %red2 = sim.reduce "max" %x [0] : tensor<64x32xbf16> -> tensor<32xbf16>
  %sm = sim.softmax %x dim 1 : tensor<64x32xbf16>
  %cat = sim.generic "aten.cat"(%half, %half) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<2x16x2x4xbf16>, tensor<2x16x2x4xbf16>) -> tensor<2x16x2x8xbf16>
  %ls = sim.generic "aten._log_softmax"(%logits) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<64x100xf32>) -> tensor<64x100xf32>
  %nll, %tw = sim.generic "aten.nll_loss_forward"(%ls, %ids) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<64x100xf32>, tensor<64xi64>) -> (tensor<f32>, tensor<f32>)
  %dnll = sim.generic "aten.nll_loss_backward"(%scalar, %ls, %ids, %tw) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<f32>, tensor<64x100xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x100xf32>
  %dls = sim.generic "aten._log_softmax_backward_data"(%dnll, %ls) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<64x100xf32>, tensor<64x100xf32>) -> tensor<64x100xf32>
  %sb = sim.generic "aten.slice_backward"(%half) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<2x16x2x4xbf16>) -> tensor<2x16x2x8xbf16>
  %eb = sim.generic "aten.embedding_dense_backward"(%e, %ids) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<64x32xbf16>, tensor<64xi64>) -> tensor<100x32xbf16>
  sim.optimizer_step "adamw" (%w, %n : tensor<48x32xbf16>, tensor<32xbf16>) grads (%w, %n : tensor<48x32xbf16>, tensor<32xbf16>)
  sim.optimizer_step "sgd" (%w : tensor<48x32xbf16>) grads (%w : tensor<48x32xbf16>)
  %odd = sim.generic "aten.sort"(%x) {flop_count = 1.0 : f64, byte_count = 1.0 : f64} : (tensor<64x32xbf16>) -> tensor<64x32xbf16>
}
"""

CPU = torch.device("cpu")


def compute_ops() -> list[ComputeOp]:
    module = parse_module_text(OPS, "ops")
    return [op for op in module.walk() if isinstance(op, ComputeOp)]


@pytest.mark.parametrize("op", compute_ops()[:-1], ids=lambda op: f"{op.name}:{op.op_kind()}")
def test_every_kind_runs_and_times(op: ComputeOp):
    fn = prepare(op, CPU)
    out = fn()
    if isinstance(out, list):  # a grouped matmul: one GEMM per expert
        out = torch.stack(out)
    if op.results and op.op_kind() not in ("attention_grad", "aten.nll_loss_forward"):
        first = out[0] if isinstance(out, tuple) else out
        assert tuple(first.shape) == tuple(op.results[0].type.get_shape())  # pyright: ignore
    timing = time_call(fn, CPU, warmup=1, repeats=3, min_sample_s=1e-5)
    assert timing.time_s > 0 and timing.samples == 3


def test_generic_without_runner_is_not_runnable():
    with pytest.raises(NotRunnable, match="aten.sort"):
        prepare(compute_ops()[-1], CPU)


@pytest.mark.parametrize("op", compute_ops()[:-1], ids=lambda op: f"{op.name}:{op.op_kind()}")
def test_inputs_come_from_the_runners_own_generator(op: ComputeOp):
    """torch's default generator is left as found: on a GPU a failed graph capture
    can leave it unusable ("Offset increment outside graph capture"), so inputs
    must not be drawn from it."""
    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    prepare(op, CPU)
    assert torch.equal(torch.rand(4), expected)


def test_graphs_only_on_cuda():
    """On a CPU the calls run eagerly: `graphed` returns the closure itself."""
    from charon_ir.profile.runner import graphed

    fn = prepare(compute_ops()[0], CPU)
    assert graphed(fn, CPU, 4) is fn


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_graphed_small_kernel_times_the_gpu_not_the_launches():
    """A small element-wise kernel runs in ~2 us on an H100; eager launches come
    every ~8 us, so the graph's replay must be the faster of the two."""
    from charon_ir.profile.runner import Graphed, _sample, graphed

    dev = torch.device("cuda")
    x = torch.randn(1024, device=dev)
    fn = lambda: torch.mul(x, 2)  # noqa: E731
    g = graphed(fn, dev, 64)
    assert isinstance(g, Graphed)
    assert min(_sample(g, 64, dev) for _ in range(5)) < min(_sample(fn, 64, dev) for _ in range(5))
