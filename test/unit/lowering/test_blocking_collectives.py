"""`lower-to-events{blocking=...}`: collectives a framework waits on overlap nothing."""

from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context, parse_module

LIT = Path(__file__).resolve().parents[2] / "lit" / "lowering" / "blocking_collectives.mlir"

LOOP = """
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %g = sim.input "grad" : tensor<4096x1024xbf16>
  %ws = sim.param "w" : tensor<4x1024x1024xbf16>
  %out = sim.phase "forward" -> tensor<4096x1024xbf16> {
    %r = sim.repeat 4 iter(%g : tensor<4096x1024xbf16>) slices(%ws : tensor<4x1024x1024xbf16>) -> (tensor<4096x1024xbf16>) {
    ^bb0(%h: tensor<4096x1024xbf16>, %w: tensor<1024x1024xbf16>):
      %gi = sim.matmul %h, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
      %ar = coll.all_reduce %gi on @mesh ["tp"] : tensor<4096x1024xbf16>
      %gw = sim.matmul %h, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
      %s = sim.elementwise "add" %ar, %gw : tensor<4096x1024xbf16>, tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
      sim.yield %s : tensor<4096x1024xbf16>
    }
    sim.yield %r : tensor<4096x1024xbf16>
  }
}
"""


def simulate(text: str, blocking=()) -> dict:
    ctx = make_context()
    module = parse_module(text, ctx)
    SetTargetPass(hardware="A100-SXM4-80GB", gpus=8).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass(blocking=blocking).apply(ctx, module)
    module.verify()
    return simulate_module(ctx, module)


@pytest.mark.parametrize("text", [LIT.read_text(), LOOP], ids=["straight", "loop"])
def test_blocking_collectives_overlap_nothing(text):
    free = simulate(text)
    blocked = simulate(text, ("tp",))
    busy = blocked["streams"]["comm_tp"]["busy_s"]
    assert busy == pytest.approx(free["streams"]["comm_tp"]["busy_s"])
    # the all-reduce ran beside the weight-gradient GEMM; blocking, all of it shows
    assert free["breakdown"]["exposed_comm_s"]["tp"] < busy
    assert blocked["breakdown"]["exposed_comm_s"]["tp"] == pytest.approx(busy)
    compute = blocked["streams"]["compute"]["busy_s"]
    assert blocked["iteration_time_s"] == pytest.approx(compute + busy)
    assert free["iteration_time_s"] < blocked["iteration_time_s"]


def test_blocking_other_axes_changes_nothing():
    assert simulate(LOOP, ("dp",)) == simulate(LOOP)


def test_unknown_axis_is_one_line():
    with pytest.raises(CharonError, match="unknown axis 'xx'"):
        LowerToEventsPass(blocking=("xx",)).blocking_axes()
