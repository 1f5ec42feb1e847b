"""shard-tensor: Megatron tensor parallelism on a Llama layer of random legal shape.

Properties (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", Sec. 4): per layer and micro-batch the forward has two
all_reduces of b*s*h elements (after the attention output projection and after the
MLP down projection), 2*b*s*h bytes in bf16 each, and so has the backward (the
input gradients of the column-parallel q/k/v and gate/up projections); the FLOPs
summed over the tp group equal the unsharded FLOPs plus the replicated work the
pass reports, and the matmuls and attention are split exactly.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import collective_calls, replicated_flops, total_flops
from charon_ir.parallel.examples import apply_pipeline, llama_layer, parse


def flops_of(module, kinds):
    return sum(op.flops() for op in module.walk() if isinstance(op, kinds))


@st.composite
def tp_layers(draw):
    tp = draw(st.sampled_from([2, 4, 8]))
    kv_heads = draw(st.sampled_from([1, 2, 4, 8]))
    group = draw(st.sampled_from([1, 2, 4]))
    heads = kv_heads * group
    if heads % tp:
        heads = tp * kv_heads if kv_heads % tp == 0 or tp % kv_heads == 0 else heads * tp
    if kv_heads % tp and tp % kv_heads:
        kv_heads = tp
        heads = tp * group
    head_dim = draw(st.sampled_from([8, 16, 32]))
    hidden = draw(st.sampled_from([64, 128, 256]))
    ffn = tp * draw(st.integers(4, 24))
    tokens = draw(st.sampled_from([24, 40, 48]))
    return tp, tokens, hidden, heads, kv_heads, head_dim, ffn


@settings(max_examples=25, deadline=None)
@given(tp_layers())
def test_flops_and_all_reduce_bytes(case):
    tp, tokens, hidden, heads, kv_heads, head_dim, ffn = case
    text = llama_layer(tokens, hidden, heads, kv_heads, head_dim, ffn)
    before = parse(text)
    module = apply_pipeline(parse(text), f"shard-tensor{{tp={tp}}}")

    # FLOPs over the group = unsharded FLOPs + reported replicated work
    rep = replicated_flops(module)["shard-tensor"]
    assert tp * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    assert rep >= 0
    # attention is split exactly; the matmuls too unless kv heads are shared
    kinds = (sim.AttentionOp, sim.AttentionGradOp)
    assert tp * flops_of(module, kinds) == flops_of(before, kinds)
    mm_before, mm_after = flops_of(before, sim.MatmulOp), flops_of(module, sim.MatmulOp)
    if kv_heads % tp == 0:
        assert tp * mm_after == mm_before
    else:
        assert tp * mm_after > mm_before

    # two all_reduces of b*s*h bf16 elements per phase: 2*b*s*h bytes per call
    for phase in ("forward", "backward"):
        body = next(p for p in module.walk() if isinstance(p, sim.PhaseOp) and p.kind.data == phase)
        hidden_reduces = [
            op for op, _ in collective_calls(module, coll.AllReduceOp, "tp")
            if body.is_ancestor(op) and sim.shape_of(op.input) == (tokens, hidden)
        ]
        assert len(hidden_reduces) == 2
        for op in hidden_reduces:
            assert op.payload_bytes() == 2 * tokens * hidden
            assert op.ring_bytes_per_rank() == 2 * (tp - 1) / tp * 2 * tokens * hidden


def test_weights_split_column_and_row():
    module = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "shard-tensor{tp=2}")
    shapes = {op.sym_name.data: sim.shape_of(op.result) for op in module.walk() if isinstance(op, sim.ParamOp)}
    assert shapes["self_attn.q_proj.weight"] == (32, 64)
    assert shapes["self_attn.k_proj.weight"] == (16, 64)
    assert shapes["self_attn.o_proj.weight"] == (64, 32)
    assert shapes["mlp.gate_proj.weight"] == (64, 64)
    assert shapes["mlp.down_proj.weight"] == (64, 64)
    assert shapes["input_layernorm.weight"] == (64,)
    grid = next(op for op in module.walk() if isinstance(op, coll.GridOp))
    assert grid.axis_sizes() == {"tp": 2}


def test_gqa_replicates_kv_heads():
    # 2 kv heads on 4 ranks: each rank keeps one kv head, twice the k/v work
    module = apply_pipeline(parse(llama_layer(32, 64, 8, 2, 16, 128)), "shard-tensor{tp=4}")
    att = next(op for op in module.walk() if isinstance(op, sim.AttentionOp))
    assert sim.shape_of(att.q) == (1, 32, 2, 16)
    assert sim.shape_of(att.k) == (1, 32, 1, 16)
    assert replicated_flops(module)["shard-tensor"] > 0


@pytest.mark.parametrize(
    "tp, message",
    [
        (3, "shard-tensor: option 'tp' (3) does not divide the attention heads (4)"),
        (8, "shard-tensor: option 'tp' (8) does not divide the attention heads (4)"),
    ],
)
def test_tp_not_dividing_heads(tp, message):
    with pytest.raises(CharonError) as err:
        apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), f"shard-tensor{{tp={tp}}}")
    assert str(err.value) == message


def test_tp_not_dividing_ffn():
    with pytest.raises(CharonError, match=r"shard-tensor: option 'tp' \(4\) does not divide the ffn hidden size \(130\) of 'mlp.gate_proj.weight'"):
        apply_pipeline(parse(llama_layer(32, 64, 4, 4, 16, 130)), "shard-tensor{tp=4}")


def test_reproduces_the_hand_written_tp8_layer():
    """shard-tensor{tp=8} on the unsharded Llama-3-70B layer gives
    examples/transformer_layer.mlir (a hand-written Megatron TP=8 rank), op for op
    and type for type, names aside."""
    from pathlib import Path

    example = Path(__file__).parents[3] / "examples" / "transformer_layer.mlir"
    expected = parse(example.read_text())
    module = apply_pipeline(parse(llama_layer(4096, 8192, 64, 8, 128, 28672)), "shard-tensor{tp=8}")

    def signature(m):
        return [
            (op.name, getattr(op, "kind", None) and op.kind.data, tuple(str(r.type) for r in op.results),
             tuple(str(v.type) for v in op.operands))
            for op in m.walk()
            if op.name not in ("builtin.module",)
        ]

    assert signature(module) == signature(expected)
