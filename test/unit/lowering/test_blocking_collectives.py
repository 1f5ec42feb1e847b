"""`lower-to-events{blocking=...}`: collectives a framework waits on overlap nothing."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.pipeline import PipelinePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context, parse_module

LIT = Path(__file__).resolve().parents[2] / "lit" / "lowering" / "blocking_collectives.mlir"
EIGHT_LAYERS = (Path(__file__).resolve().parents[2] / "lit" / "lowering" / "Inputs" / "eight_layers.mlir").read_text()

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


def pipelined(pp: int, vpp: int, microbatches: int, blocking=(), gpus_per_node: int = 8):
    """The eight-layer step over `pp` stages, lowered and simulated."""
    ctx = make_context()
    module = parse_module(EIGHT_LAYERS, ctx)
    PipelinePass(pp=pp, vpp=vpp, schedule="interleaved" if vpp > 1 else "1f1b",
                 microbatches=microbatches).apply(ctx, module)
    SetTargetPass(hardware="A100-SXM4-80GB", gpus_per_node=gpus_per_node).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass(blocking=blocking).apply(ctx, module)
    module.verify()
    return module, simulate_module(ctx, module)


def send_busy(result: dict) -> float:
    return sum(v["busy_s"] for k, v in result["streams"].items() if k.endswith("comm_pp_send"))


def test_a_blocking_pipeline_send_holds_the_stage_compute():
    """Megatron-Core's non-interleaved 1F1B: each send is followed on the stage's
    compute stream by a wait for it (and nothing else is waited for: no
    `comm_issue`, the receives are data dependences)."""
    module, _ = pipelined(4, 1, 8, ("pp",))
    free, _ = pipelined(4, 1, 8)
    for program in (o for o in module.walk() if isinstance(o, event.ProgramOp)):
        ops = list(program.walk())
        sends = [o for o in ops if isinstance(o, event.CommOp) and o.label.data == "send"]
        assert sends
        for send in sends:
            waits = [u.operation for u in send.results[0].uses]
            assert any(isinstance(w, event.ComputeOp) and w.label.data == "comm_wait" for w in waits)
        assert not any(isinstance(o, event.ComputeOp) and o.label.data == "comm_issue" for o in ops)
    assert not any(isinstance(o, event.ComputeOp) and o.label.data == "comm_wait" for o in free.walk())


@settings(max_examples=12, deadline=None)
@given(pp=st.sampled_from([2, 4]), vpp=st.sampled_from([1, 2]), k=st.integers(1, 3),
       gpus_per_node=st.sampled_from([8, 2]))
def test_waiting_for_the_sends_never_makes_a_step_faster(pp, vpp, k, gpus_per_node):
    """A waited-for send only adds a dependence: the step is no faster, and slower
    by at most the sends' own time (across nodes the sends are longer)."""
    _, free = pipelined(pp, vpp, pp * k, gpus_per_node=gpus_per_node)
    _, waited = pipelined(pp, vpp, pp * k, ("pp",), gpus_per_node=gpus_per_node)
    assert waited["iteration_time_s"] >= free["iteration_time_s"] * (1 - 1e-12)
    assert waited["iteration_time_s"] - free["iteration_time_s"] <= send_busy(waited) * (1 + 1e-9)
