"""Whatever efficiency model the analytic engine uses, it never beats the roofline."""

from xdsl.dialects.builtin import TensorType, bf16

from charon_ir.dialects import sim
from charon_ir.engines.analytic import AnalyticEngine
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target


def test_8192_cubed_bf16_matmul_on_h100_is_at_least_flops_over_peak():
    t = TensorType(bf16, (8192, 8192))
    a, b = sim.InputOp("a", t), sim.ParamOp("b", t)
    mm = sim.MatmulOp(a.result, b.result, t)
    target = Target(load_gpu("H100-SXM5-80GB"), gpus=1, gpus_per_node=8)
    cost = AnalyticEngine().price(mm, target)
    assert cost is not None and cost.engine == "analytic"
    flops = 2 * 8192**3
    assert cost.flops == flops
    assert cost.time_s >= flops / 989.4e12
    assert cost.time_s >= cost.bytes / 3.35e12


def test_a_view_costs_nothing():
    """A `sim.generic` of no FLOPs and no bytes is a view kept for data flow: no
    kernel runs, so no launch floor either (the `db` engine prices it 0 too)."""
    t = TensorType(bf16, (64, 64))
    a = sim.InputOp("a", t)
    view = sim.GenericOp("aten.view", [a.result], [t], 0.0, 0.0)
    copy = sim.GenericOp("aten.clone", [a.result], [t], 0.0, 2.0 * 64 * 64 * 2)
    target = Target(load_gpu("H100-SXM5-80GB"), gpus=1, gpus_per_node=8)
    assert AnalyticEngine().price(view, target).time_s == 0.0
    assert AnalyticEngine().price(copy, target).time_s > 0.0
