"""`lower-to-events{sync-expert-a2a=true}`: the expert-parallel dispatch and
combine all_to_alls block the compute stream; the other collectives over the
same axes (the dense gradients' reductions over dp x ep) do not."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import event
from charon_ir.lowering.lower_to_events import LowerToEventsPass, is_expert_a2a
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.passes.shard_expert import ShardExpertPass
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context, parse_module

MOE_LAYER = Path(__file__).resolve().parents[2] / "lit" / "lowering" / "Inputs" / "moe_layer.mlir"

# a GEMM whose output is all-to-all'd over ep and reduced over dp x ep, and a
# GEMM that needs neither: only the all_to_all is waited for when synchronous
SIZED = """
builtin.module {{
  coll.grid @mesh(axes = ["dp", "ep"], shape = 2x4)
  %x = sim.input "x" : tensor<8x{m}x{k}xbf16>
  %w = sim.param "w" : tensor<{k}x{n}xbf16>
  %out:2 = sim.phase "backward" -> tensor<8x{m}x{n}xbf16>, tensor<8x{m}x{n}xbf16> {{
    %y = sim.matmul %x, %w : (tensor<8x{m}x{k}xbf16>, tensor<{k}x{n}xbf16>) -> tensor<8x{m}x{n}xbf16>
    %a = coll.all_to_all %y on @mesh ["ep"] split 0 concat 1 : tensor<8x{m}x{n}xbf16> -> tensor<2x{m4}x{n}xbf16>
    %r = coll.all_reduce %y on @mesh ["dp", "ep"] : tensor<8x{m}x{n}xbf16>
    %z = sim.matmul %x, %w : (tensor<8x{m}x{k}xbf16>, tensor<{k}x{n}xbf16>) -> tensor<8x{m}x{n}xbf16>
    sim.yield %r, %z : tensor<8x{m}x{n}xbf16>, tensor<8x{m}x{n}xbf16>
  }}
}}
"""

TWO_AXES = """
builtin.module {
  coll.grid @mesh(axes = ["dp", "ep"], shape = 2x4)
  %x = sim.input "x" : tensor<8x2048x4096xbf16>
  %w = sim.param "w" : tensor<4096x4096xbf16>
  %out:2 = sim.phase "backward" -> tensor<8x2048x4096xbf16>, tensor<8x2048x4096xbf16> {
    %y = sim.matmul %x, %w : (tensor<8x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8x2048x4096xbf16>
    %a = coll.all_to_all %y on @mesh ["ep"] split 0 concat 1 : tensor<8x2048x4096xbf16> -> tensor<2x8192x4096xbf16>
    %r = coll.all_reduce %y on @mesh ["dp", "ep"] : tensor<8x2048x4096xbf16>
    %z = sim.matmul %x, %w : (tensor<8x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8x2048x4096xbf16>
    sim.yield %r, %z : tensor<8x2048x4096xbf16>, tensor<8x2048x4096xbf16>
  }
}
"""


def lowered(text: str, sync: bool, ep: int = 0):
    ctx = make_context()
    module = parse_module(text, ctx)
    if ep:
        ShardExpertPass(ep=ep).apply(ctx, module)
    SetTargetPass(hardware="H100-SXM5-80GB", gpus=8 if not ep else ep).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass(sync_expert_a2a=sync).apply(ctx, module)
    module.verify()
    return ctx, module


def waits(module) -> list[str]:
    """The kinds of the comm events the compute stream waits for."""
    comms = {op.token: op for op in module.walk() if isinstance(op, event.CommOp)}
    kinds = []
    for op in module.walk():
        if isinstance(op, event.ComputeOp) and op.label.data == "comm_wait":
            kinds += [comms[d].label.data for d in op.deps if d in comms]
    return kinds


def test_only_the_all_to_all_is_waited_for():
    _, free = lowered(TWO_AXES, sync=False)
    assert waits(free) == []
    _, sync = lowered(TWO_AXES, sync=True)
    assert waits(sync) == ["all_to_all"]


def test_a_synchronous_all_to_all_overlaps_nothing():
    """Free, the all_to_all runs beside the second GEMM; synchronous, the step is
    the compute plus every all_to_all."""
    ctx, free = lowered(TWO_AXES, sync=False)
    free_report = simulate_module(ctx, free)
    ctx, sync = lowered(TWO_AXES, sync=True)
    sync_report = simulate_module(ctx, sync)
    a2a = sync_report["streams"]["comm_ep"]["busy_s"]
    assert a2a == pytest.approx(free_report["streams"]["comm_ep"]["busy_s"])
    assert free_report["breakdown"]["exposed_comm_s"].get("ep", 0.0) < a2a
    assert sync_report["breakdown"]["exposed_comm_s"]["ep"] == pytest.approx(a2a)
    assert sync_report["iteration_time_s"] > free_report["iteration_time_s"]


def test_moe_layer_dispatch_and_combine_are_all_waited_for():
    """The MoE layer's four all_to_alls (dispatch and combine, forward and
    backward) after shard-expert: each is followed by a comm_wait."""
    _, free = lowered(MOE_LAYER.read_text(), sync=False, ep=4)
    _, sync = lowered(MOE_LAYER.read_text(), sync=True, ep=4)
    a2a = [op for op in sync.walk() if isinstance(op, event.CommOp) and op.label.data == "all_to_all"]
    assert len(a2a) == 4
    assert waits(sync) == ["all_to_all"] * 4
    assert waits(free) == []


def test_expert_a2a_is_an_all_to_all_over_ep():
    ctx = make_context()
    module = parse_module(TWO_AXES, ctx)
    kinds = {op.name: is_expert_a2a(op) for op in module.walk() if op.name.startswith("coll.")
             and op.name != "coll.grid"}
    assert kinds == {"coll.all_to_all": True, "coll.all_reduce": False}


@settings(max_examples=25, deadline=None)
@given(m=st.sampled_from([16, 256, 2048, 8192]), n=st.sampled_from([64, 1024, 4096]),
       k=st.sampled_from([64, 1024, 8192]))
def test_waiting_never_speeds_a_step_and_exposes_every_all_to_all(m, n, k):
    """Whatever the sizes: a synchronous all_to_all is exposed whole, the step is
    no faster than with the free overlap, and the dp x ep reduction is never
    waited for."""
    text = SIZED.format(m=m, n=n, k=k, m4=4 * m)
    ctx, free = lowered(text, sync=False)
    free_report = simulate_module(ctx, free)
    ctx, sync = lowered(text, sync=True)
    sync_report = simulate_module(ctx, sync)
    a2a = sync_report["streams"]["comm_ep"]["busy_s"]
    assert sync_report["breakdown"]["exposed_comm_s"]["ep"] == pytest.approx(a2a)
    assert sync_report["iteration_time_s"] >= free_report["iteration_time_s"] * (1 - 1e-12)
    assert waits(sync) == ["all_to_all"]
