"""shard-expert: expert parallelism on the routed experts of an MoE layer.

Each all_to_all (dispatch and combine, forward and backward) carries the k copies
of the rank's tokens: tokens * top_k * h * 2 bytes (bf16), of which (ep-1)/ep leave
the rank. Dropless routing keeps each rank's FLOPs: the ep ranks bring their own
tokens, so the group does what ep unsharded ranks do (reported work: only the
optimizer of the experts a rank no longer holds, negative, and capacity padding).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import collective_calls, replicated_flops, total_flops
from charon_ir.parallel.examples import apply_pipeline, moe_layer, parse


@settings(max_examples=25, deadline=None)
@given(
    ep=st.sampled_from([2, 4, 8]),
    experts_per_rank=st.integers(1, 4),
    top_k=st.sampled_from([1, 2, 4]),
    hidden=st.sampled_from([32, 64]),
    tokens_per_expert=st.integers(1, 6),
)
def test_all_to_all_bytes_and_flops(ep, experts_per_rank, top_k, hidden, tokens_per_expert):
    experts = ep * experts_per_rank
    top_k = min(top_k, experts)
    tokens = experts * tokens_per_expert  # balanced routing: tokens*k/E rows per expert
    text = moe_layer(tokens, hidden, experts, top_k, 48)
    before = parse(text)
    module = apply_pipeline(parse(text), f"shard-expert{{ep={ep}}}")
    calls = [op for op, _ in collective_calls(module, "all_to_all", "ep")]
    assert len(calls) == 4  # dispatch, combine; and both again in the backward
    for op in calls:
        assert op.payload_bytes() == tokens * top_k * hidden * 2
        assert op.ring_bytes_per_rank() == pytest.approx(tokens * top_k * hidden * 2 * (ep - 1) / ep)
    # experts split, per-rank compute of the routed tokens unchanged
    flops = lambda m: sum(op.flops() for op in m.walk() if isinstance(op, sim.ComputeOp) and not isinstance(op, sim.OptimizerStepOp))
    assert flops(module) == pytest.approx(flops(before), rel=1e-12)
    rep = replicated_flops(module)["shard-expert"]
    assert ep * total_flops(module) == pytest.approx(ep * total_flops(before) + rep, rel=1e-12)
    params = {op.sym_name.data: sim.shape_of(op.result) for op in module.walk() if isinstance(op, sim.ParamOp)}
    assert params["mlp.experts.gate_up_proj"][0] == experts // ep
    assert params["mlp.gate.weight"][0] == experts  # the router stays whole


def test_capacity_factor_pads_and_reports():
    text = moe_layer(64, 32, 8, 2, 48)
    before = parse(text)
    module = apply_pipeline(parse(text), "shard-expert{ep=4 capacity-factor=1.5}")
    dispatch = next(op for op in module.walk() if isinstance(op, sim.MoeDispatchOp))
    assert sim.shape_of(dispatch.result) == (8, 24, 32)  # ceil(1.5 * 64 * 2 / 8)
    rep = replicated_flops(module)["shard-expert"]
    assert rep > 0
    assert 4 * total_flops(module) == pytest.approx(4 * total_flops(before) + rep, rel=1e-12)


def test_expert_tensor_parallel():
    module = apply_pipeline(parse(moe_layer(64, 32, 8, 2, 48)), "shard-expert{ep=2 etp=2}")
    params = {op.sym_name.data: sim.shape_of(op.result) for op in module.walk() if isinstance(op, sim.ParamOp)}
    assert params["mlp.experts.gate_up_proj"] == (4, 48, 32)
    assert params["mlp.experts.down_proj"] == (4, 32, 24)
    reduces = [op for op, _ in collective_calls(module, "all_reduce", "tp")]
    assert reduces  # the row-parallel down projection's partial sums


def test_ep_not_dividing_experts():
    with pytest.raises(CharonError) as err:
        apply_pipeline(parse(moe_layer(64, 32, 8, 2, 48)), "shard-expert{ep=3}")
    assert str(err.value) == "shard-expert: option 'ep' (3) does not divide the experts (8)"


def test_needs_experts():
    from charon_ir.parallel.examples import llama_layer

    with pytest.raises(CharonError, match=r"^shard-expert: the module has no sim.moe_dispatch"):
        apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "shard-expert{ep=2}")
