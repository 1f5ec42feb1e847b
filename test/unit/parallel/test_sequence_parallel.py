"""sequence-parallel: Megatron-SP on top of shard-tensor.

Korthikanti et al. 2022 (Sec. 4.2.2): each all_reduce of a b*s*h activation becomes
a reduce_scatter and an all_gather on the sequence, which together move what the
all_reduce moved; the norms and the residual stream run on s/tp tokens, so the
work shard-tensor left replicated shrinks.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import collective_calls, replicated_flops, total_flops
from charon_ir.parallel.examples import apply_pipeline, llama_layer, parse


def phase(module, kind):
    return next(p for p in module.walk() if isinstance(p, sim.PhaseOp) and p.kind.data == kind)


@settings(max_examples=20, deadline=None)
@given(
    tp=st.sampled_from([2, 4, 8]),
    hidden=st.sampled_from([64, 128]),
    head_dim=st.sampled_from([16, 32]),
    kv_heads=st.sampled_from([1, 2, 8]),
    tokens_per_rank=st.integers(3, 9),
)
def test_same_bytes_as_all_reduce(tp, hidden, head_dim, kv_heads, tokens_per_rank):
    tokens = tp * tokens_per_rank
    heads = 8
    text = llama_layer(tokens, hidden, heads, kv_heads, head_dim, 4 * tp * 8)
    unsharded = parse(text)
    tp_only = apply_pipeline(parse(text), f"shard-tensor{{tp={tp}}}")
    sp = apply_pipeline(parse(text), f"shard-tensor{{tp={tp}}},sequence-parallel")

    hidden_bytes = 2 * tokens * hidden
    reduces = [op for op, _ in collective_calls(tp_only, "all_reduce", "tp") if op.payload_bytes() == hidden_bytes]
    # no all_reduce of an activation is left
    assert not [op for op, _ in collective_calls(sp, "all_reduce", "tp") if op.payload_bytes() == hidden_bytes]
    scatters = [op for op, _ in collective_calls(sp, "reduce_scatter", "tp")]
    assert len(scatters) == len(reduces) == 4
    for rs in scatters:
        assert rs.payload_bytes() == hidden_bytes
    # RS + AG move what the AR moved: ring bytes (tp-1)/tp * S each
    ar_bytes = sum(op.ring_bytes_per_rank() for op in reduces)
    assert 2 * sum(rs.ring_bytes_per_rank() for rs in scatters) == pytest.approx(ar_bytes)
    # every gather brings back a whole activation (what a scatter split); in the
    # forward, one before the attention block's and one before the MLP's matmuls
    gathers = [op for op, _ in collective_calls(sp, "all_gather", "tp")]
    assert all(op.payload_bytes() == hidden_bytes for op in gathers)
    fwd = phase(sp, "forward")
    assert len([op for op in scatters if fwd.is_ancestor(op)]) == 2
    assert len([op for op in gathers if fwd.is_ancestor(op)]) <= 2

    # norms on 1/tp of the tokens; FLOPs conserved with the reported work
    norms = [op for op in sp.walk() if isinstance(op, sim.NormOp)]
    assert norms and all(sim.shape_of(op.input)[0] == tokens // tp for op in norms)
    rep = sum(replicated_flops(sp).values())
    assert tp * total_flops(sp) == pytest.approx(total_flops(unsharded) + rep, rel=1e-12)
    assert replicated_flops(sp)["sequence-parallel"] < 0
    assert sum(replicated_flops(sp).values()) < replicated_flops(tp_only)["shard-tensor"]


def test_needs_tensor_parallelism():
    with pytest.raises(CharonError, match=r"^sequence-parallel: needs tensor parallelism"):
        apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "sequence-parallel")


def test_tp_not_dividing_sequence():
    with pytest.raises(CharonError) as err:
        apply_pipeline(parse(llama_layer(30, 64, 4, 4, 16, 128)), "shard-tensor{tp=4},sequence-parallel")
    assert str(err.value) == "sequence-parallel: the tp axis (4) does not divide the sequence length (30)"


def test_saved_activations_stay_split():
    module = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "shard-tensor{tp=2},sequence-parallel")
    fwd = phase(module, "forward")
    shapes = [sim.shape_of(r) for r in fwd.results]
    # the residual stream (x + attention) and the layer output are kept as 16 of 32 tokens
    assert shapes[6] == (16, 64) and shapes[11] == (16, 64)
