"""sequence-parallel: Megatron-SP on top of shard-tensor.

Korthikanti et al. 2022 (Sec. 4.2.2): each all_reduce of a b*s*h activation becomes
a reduce_scatter and an all_gather on the sequence, which together move what the
all_reduce moved; the norms and the residual stream run on s/tp tokens, so the
work shard-tensor left replicated shrinks.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import coll, sim
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
    reduces = [op for op, _ in collective_calls(tp_only, coll.AllReduceOp, "tp") if op.payload_bytes() == hidden_bytes]
    # no all_reduce of an activation is left
    assert not [op for op, _ in collective_calls(sp, coll.AllReduceOp, "tp") if op.payload_bytes() == hidden_bytes]
    scatters = [op for op, _ in collective_calls(sp, coll.ReduceScatterOp, "tp")]
    assert len(scatters) == len(reduces) == 4
    for rs in scatters:
        assert rs.payload_bytes() == hidden_bytes
    # RS + AG move what the AR moved: ring bytes (tp-1)/tp * S each
    ar_bytes = sum(op.ring_bytes_per_rank() for op in reduces)
    assert 2 * sum(rs.ring_bytes_per_rank() for rs in scatters) == pytest.approx(ar_bytes)
    # every gather brings back a whole activation (what a scatter split); in the
    # forward, one before the attention block's and one before the MLP's matmuls
    gathers = [op for op, _ in collective_calls(sp, coll.AllGatherOp, "tp")]
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


# ---------------------------------------------------------------------------
# Imported models: the exact tp collectives of one layer (Korthikanti et al. 2022,
# Megatron-LM's sequence parallelism)

HEADS, HEAD_DIM, LAYERS, SEQ = 8, 16, 2, 32
SMALL = {
    # RMSNorm as elementwise ops + a mean (the frontend's decomposition)
    "llama-3.1-8b": dict(
        num_hidden_layers=LAYERS, hidden_size=HEADS * HEAD_DIM, num_attention_heads=HEADS,
        num_key_value_heads=4, head_dim=HEAD_DIM, intermediate_size=96, vocab_size=256,
    ),
    # LayerNorm: sim.norm + "layer_norm_stats" forward, aten.native_layer_norm_backward
    "gpt3-6.7b": dict(
        n_layer=LAYERS, num_hidden_layers=LAYERS, n_embd=HEADS * HEAD_DIM, hidden_size=HEADS * HEAD_DIM,
        n_head=HEADS, num_attention_heads=HEADS, num_key_value_heads=HEADS, head_dim=HEAD_DIM,
        n_inner=4 * HEADS * HEAD_DIM, intermediate_size=4 * HEADS * HEAD_DIM, vocab_size=256,
        n_positions=SEQ, n_ctx=SEQ, max_position_embeddings=SEQ,
    ),
}
NORM_GRAD_REDUCES = {"llama-3.1-8b": 2, "gpt3-6.7b": 4}
"""Per layer, the all_reduces of the norms' weight (and LayerNorm's bias) gradients,
sums over the split tokens (Megatron all-reduces these sequence-parallel grads)."""


def layer_collectives(module, kind):
    """Counter of (collective, payload bytes) -> calls per layer, inside the layers'
    sim.repeat of phase `kind` (forward / backward)."""
    from collections import Counter

    body = next(op for op in phase(module, kind).walk() if isinstance(op, sim.RepeatOp))
    count = Counter()
    for op, mult in collective_calls(module, axis="tp"):
        if body.is_ancestor(op):
            count[(op.op_kind(), int(op.payload_bytes()))] += mult // LAYERS
    return count


def readers_of(value):
    """The ops reading `value`, through views."""
    out = []
    for use in value.uses:
        if isinstance(use.operation, sim.ViewOp):
            out += readers_of(use.operation.results[0])
        else:
            out.append(use.operation)
    return out


@pytest.mark.parametrize("model", sorted(SMALL))
@pytest.mark.parametrize("tp", [2, 4])
def test_imported_layer_collectives_are_megatrons(import_config, model, tp):
    """Per layer, forward: 2 all_gathers (the norms' outputs, before the column-
    parallel GEMMs) + 2 reduce_scatters (the row-parallel outputs); backward: 2
    all_gathers of the incoming gradients of the row-parallel GEMMs, 2 re-gathers of
    the saved norm outputs for the weight gradients, 2 reduce_scatters, and the
    all_reduces of the norm weights' gradients. Nothing else: the norms, their
    backward and the residual path run on s/tp tokens."""

    module = apply_pipeline(import_config(model, SEQ, **SMALL[model]), f"shard-tensor{{tp={tp}}},sequence-parallel")
    h = HEADS * HEAD_DIM
    act, vec = 2 * SEQ * h, 2 * h  # bf16 b*s*h activation, h-vector
    assert layer_collectives(module, "forward") == {("all_gather", act): 2, ("reduce_scatter", act): 2}
    assert layer_collectives(module, "backward") == {
        ("all_gather", act): 4, ("reduce_scatter", act): 2, ("all_reduce", vec): NORM_GRAD_REDUCES[model],
    }
    # ring bytes per layer: Korthikanti's 4 + 4 collectives of (tp-1)/tp * 2bsh, plus
    # the backward's 2 re-gathers
    ring = {
        kind: sum(op.ring_bytes_per_rank() * m / LAYERS for op, m in collective_calls(module, axis="tp")
                  if op.payload_bytes() == act and next(
                      r for r in phase(module, kind).walk() if isinstance(r, sim.RepeatOp)).is_ancestor(op))
        for kind in ("forward", "backward")
    }
    assert ring["forward"] == pytest.approx(4 * (tp - 1) / tp * act)
    assert ring["backward"] == pytest.approx(6 * (tp - 1) / tp * act)
    # every layer all_gather feeds GEMMs (and, in GPT, the sum over tokens that is
    # the row-parallel bias gradient), never a norm, its backward or the residual
    # path; every norm (and its backward) runs on s/tp tokens
    for kind in ("forward", "backward"):
        body = next(op for op in phase(module, kind).walk() if isinstance(op, sim.RepeatOp))
        for op in body.walk():
            if isinstance(op, coll.AllGatherOp):
                readers = readers_of(op.result)
                assert any(isinstance(r, sim.MatmulOp) for r in readers), (kind, readers)
                assert all(isinstance(r, (sim.MatmulOp, sim.ReduceOp)) for r in readers), (kind, readers)
    for op in module.walk():
        if isinstance(op, sim.NormOp) or (
            isinstance(op, sim.GenericOp) and "layer_norm" in op.callee.data
        ):
            assert sim.shape_of(op.operands[0])[1] == SEQ // tp, op
