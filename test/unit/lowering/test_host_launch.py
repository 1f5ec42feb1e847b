"""`lower-to-events{host-launch=...}`: the host issues every kernel and collective;
the GPU cannot run one before it is issued."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context, parse_module

# a layer loop of one GEMM, its tp all-reduce and an element-wise add: 3 launches
# an iteration, the GEMM's size set per test
LOOP = """
builtin.module {{
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %g = sim.input "grad" : tensor<{n}x1024xbf16>
  %ws = sim.param "w" : tensor<{layers}x1024x1024xbf16>
  %out = sim.phase "forward" -> tensor<{n}x1024xbf16> {{
    %r = sim.repeat {layers} iter(%g : tensor<{n}x1024xbf16>) slices(%ws : tensor<{layers}x1024x1024xbf16>) -> (tensor<{n}x1024xbf16>) {{
    ^bb0(%h: tensor<{n}x1024xbf16>, %w: tensor<1024x1024xbf16>):
      %y = sim.matmul %h, %w : (tensor<{n}x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<{n}x1024xbf16>
      %ar = coll.all_reduce %y on @mesh ["tp"] : tensor<{n}x1024xbf16>
      %s = sim.elementwise "add" %ar, %h : tensor<{n}x1024xbf16>, tensor<{n}x1024xbf16> -> tensor<{n}x1024xbf16>
      sim.yield %s : tensor<{n}x1024xbf16>
    }}
    sim.yield %r : tensor<{n}x1024xbf16>
  }}
}}
"""


def simulate(layers: int, n: int, host_launch: float, tier: str = "fine") -> dict:
    ctx = make_context()
    module = parse_module(LOOP.format(layers=layers, n=n), ctx)
    SetTargetPass(hardware="H100-SXM5-80GB", gpus=8).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass(host_launch=host_launch).apply(ctx, module)
    module.verify()
    return simulate_module(ctx, module, tier=tier)


def test_off_changes_nothing():
    off = simulate(4, 4096, 0.0)
    assert "host" not in off["streams"]


def test_small_kernels_are_bound_by_their_launches():
    """Kernels of ~1-10 us launched every 100 us: the step is the host's
    3 x layers launches plus the last kernels after the last launch."""
    step = simulate(8, 64, 1e-4)
    launches = 3 * 8
    assert step["streams"]["host"]["busy_s"] == pytest.approx(launches * 1e-4)
    assert launches * 1e-4 < step["iteration_time_s"] < launches * 1e-4 + 1e-4


def test_long_kernels_hide_their_launches():
    """A GEMM and all-reduce of many milliseconds: the host runs ahead and only
    the first launch shows."""
    free = simulate(8, 262144, 0.0)["iteration_time_s"]
    assert simulate(8, 262144, 1e-5)["iteration_time_s"] == pytest.approx(free + 1e-5, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 6), n=st.sampled_from([64, 1024, 16384, 131072]),
       us=st.floats(0.0, 200.0, allow_nan=False))
def test_the_step_is_at_least_the_gpus_and_at_least_the_hosts(layers, n, us):
    """Launches only delay kernels: the step is no shorter than without them, nor
    than the host's own launches; and no longer than both one after the other."""
    h = us * 1e-6
    free = simulate(layers, n, 0.0)["iteration_time_s"]
    step = simulate(layers, n, h)["iteration_time_s"]
    launches = 3 * layers
    assert step >= free * (1 - 1e-12)
    assert step >= launches * h * (1 - 1e-12)
    assert step <= free + launches * h + 1e-12


def test_the_fast_tier_times_it_as_the_fine():
    """Folding would lose the host's lead across loop boundaries: with launches
    modelled the training tiers run every event (`runtime.tiers`)."""
    from charon_ir import api

    a = api.simulate("examples/llama_tiny_config.json", framework="none", seq_len=128, global_batch=8,
                     gpus=2, pp=2, host_launch_s=3e-5, tier="fast")
    b = api.simulate("examples/llama_tiny_config.json", framework="none", seq_len=128, global_batch=8,
                     gpus=2, pp=2, host_launch_s=3e-5, tier="fine")
    base = api.simulate("examples/llama_tiny_config.json", framework="none", seq_len=128, global_batch=8,
                        gpus=2, pp=2, tier="fine")
    assert a["iteration_time_s"] == b["iteration_time_s"] > base["iteration_time_s"]


def test_negative_is_one_line():
    with pytest.raises(CharonError, match="option 'host-launch' must be a number of seconds >= 0, got -1"):
        simulate(1, 64, -1.0)


MOE_LAYER = "test/lit/lowering/Inputs/moe_layer.mlir"


def simulate_moe(host_launch: float, expert_launches: float = 0.0, sync: bool = False) -> dict:
    from charon_ir.passes.shard_expert import ShardExpertPass

    ctx = make_context()
    with open(MOE_LAYER) as f:
        module = parse_module(f.read(), ctx)
    ShardExpertPass(ep=4).apply(ctx, module)
    SetTargetPass(hardware="H100-SXM5-80GB", gpus=4).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass(host_launch=host_launch, expert_launches=expert_launches,
                      moe_host_sync=sync).apply(ctx, module)
    module.verify()
    return simulate_module(ctx, module, tier="fine")


def test_expert_gemms_launch_per_local_expert():
    """The tiny MoE layer (ep 4: 2 local experts) runs 6 expert GEMM ops among
    its 28 priced ops (the optimizer step one): at e launches an expert each, the host issues
    28 - 6 + 6 x 2 x e launches."""
    for e in (1.0, 3.0):
        step = simulate_moe(1e-4, e)
        assert step["streams"]["host"]["busy_s"] == pytest.approx((28 - 6 + 12 * e) * 1e-4)
    assert simulate_moe(1e-4, 0.0)["streams"]["host"]["busy_s"] == pytest.approx(28 * 1e-4)


@settings(max_examples=15, deadline=None)
@given(e=st.floats(0.0, 8.0, allow_nan=False), sync=st.booleans())
def test_expert_launches_and_the_sync_only_delay(e, sync):
    """Without a host cost they change nothing; with one, more launches an expert
    and the dispatch sync never make the step shorter."""
    assert simulate_moe(0.0, e, sync)["iteration_time_s"] == simulate_moe(0.0)["iteration_time_s"]
    plain = simulate_moe(2e-5)["iteration_time_s"]
    assert simulate_moe(2e-5, e, sync)["iteration_time_s"] >= plain * (1 - 1e-12)
    assert simulate_moe(2e-5, max(e, 1.0) + 1.0, sync)["iteration_time_s"] >= \
        simulate_moe(2e-5, max(e, 1.0), sync)["iteration_time_s"] * (1 - 1e-12)
