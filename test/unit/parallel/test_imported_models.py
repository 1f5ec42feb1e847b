"""The parallelism passes on modules imported by the torch frontend: small random
Llama and Mixtral configs (two layers in a `sim.repeat`, embedding, LM head and
cross-entropy), forward, backward and optimizer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from charon_ir.dialects import coll, sim  # noqa: E402
from charon_ir.parallel.accounting import (  # noqa: E402
    collective_calls,
    multiplicity,
    replicated_flops,
    total_bytes_moved,
    total_flops,
)
from charon_ir.parallel.examples import apply_pipeline  # noqa: E402

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def llama(heads, kv_heads, head_dim=16, layers=2):
    return dict(
        num_hidden_layers=layers, hidden_size=heads * head_dim, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=96, vocab_size=256,
    )


def phase_of(op):
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, sim.PhaseOp):
        parent = parent.parent_op()
    return parent.kind.data if parent is not None else None


@SETTINGS
@given(
    tp=st.sampled_from([2, 4]),
    heads=st.sampled_from([4, 8]),
    kv_div=st.sampled_from([1, 2, 4]),
    seq=st.sampled_from([24, 40]),
)
def test_tensor_and_sequence_parallel(import_config, tp, heads, kv_div, seq):
    kv_heads = heads // kv_div
    before = import_config("llama-3.1-8b", seq, **llama(heads, kv_heads))
    hidden = heads * 16
    tp_mod = apply_pipeline(before.clone(), f"shard-tensor{{tp={tp}}}")
    rep = replicated_flops(tp_mod)["shard-tensor"]
    assert tp * total_flops(tp_mod) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    # Korthikanti: per layer, 2 forward and 2 backward all_reduces of 2*b*s*h bytes
    layer_reduces = [
        (op, mult) for op, mult in collective_calls(tp_mod, coll.AllReduceOp, "tp")
        if mult == 2 and op.payload_bytes() == 2 * seq * hidden
    ]
    assert sum(m for op, m in layer_reduces if phase_of(op) == "forward") == 2 * 2
    assert sum(m for op, m in layer_reduces if phase_of(op) == "backward") == 2 * 2
    # the vocabulary-parallel embedding: one more forward all_reduce
    stem = [op for op, m in collective_calls(tp_mod, coll.AllReduceOp, "tp") if m == 1 and phase_of(op) == "forward"
            and op.payload_bytes() == 2 * seq * hidden]
    assert len(stem) == 1
    # and the cross-entropy: max, sum of exponentials, target logit (fp32 per token)
    stats = [op for op, _ in collective_calls(tp_mod, coll.AllReduceOp, "tp") if op.payload_bytes() == 4 * seq]
    assert len(stats) == 3

    sp_mod = apply_pipeline(tp_mod.clone(), "sequence-parallel")
    ar_bytes = sum(op.ring_bytes_per_rank() * m for op, m in collective_calls(tp_mod, coll.AllReduceOp, "tp")
                   if op.payload_bytes() == 2 * seq * hidden)
    rs_bytes = sum(op.ring_bytes_per_rank() * m for op, m in collective_calls(sp_mod, coll.ReduceScatterOp, "tp"))
    assert 2 * rs_bytes == pytest.approx(ar_bytes)
    # Megatron's backward per layer gathers the incoming gradient before each
    # block's column-parallel GEMMs and the saved normed input once per block for
    # its weight gradients: 4 all_gathers of b*s*h (not one per projection)
    gathers = [
        (op, m) for op, m in collective_calls(sp_mod, coll.AllGatherOp, "tp")
        if m == 2 and phase_of(op) == "backward" and op.payload_bytes() == 2 * seq * hidden
    ]
    assert sum(m for _, m in gathers) == 2 * 4
    rep = sum(replicated_flops(sp_mod).values())
    assert tp * total_flops(sp_mod) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    assert rep < replicated_flops(tp_mod)["shard-tensor"]


@pytest.mark.parametrize("tp", [2, 4])
def test_sequence_as_long_as_the_heads_shards_the_same(import_config, tp):
    """seq == heads (405B's 128 heads on a 128-token prefill): a view that
    transposes [b, s, h, d] -> [b, h, s, d] keeps its shape, so only the dims the
    frontend records tell it from a reshape. Tensor parallelism must move the same
    collectives as with any other length, and nothing else."""
    heads = 8

    def kinds(seq):
        module = apply_pipeline(import_config("llama-3.1-8b", seq, **llama(heads, 2)), f"shard-tensor{{tp={tp}}}")
        count = {}
        for op, mult in walk_collectives(module):
            count[op.name] = count.get(op.name, 0) + mult
        return count

    assert kinds(heads) == kinds(3 * heads)
    assert set(kinds(heads)) == {"coll.all_reduce"}


@pytest.mark.parametrize("seq", [8, 128, 40])
def test_attention_is_split_over_the_heads_whatever_the_length(import_config, seq):
    """seq == heads (8), seq == hidden (8 heads x 16 = 128: llama-3.1-8b at 4096),
    and neither: every rank runs 1/tp of the attention, never all of it."""
    tp = 4
    before = import_config("llama-3.1-8b", seq, **llama(8, 2))
    after = apply_pipeline(before.clone(), f"shard-tensor{{tp={tp}}}")

    def attention(module):
        return sum(
            op.flops() * m for op, m in walk_with_multiplicity(module)
            if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp))
        )

    assert attention(after) * tp == pytest.approx(attention(before), rel=1e-9)


from charon_ir.parallel.accounting import walk_with_multiplicity  # noqa: E402


def walk_collectives(module):
    return [(op, m) for op, m in walk_with_multiplicity(module) if isinstance(op, coll.CollectiveOp)]


@SETTINGS
@given(cp=st.sampled_from([2, 4]), mode=st.sampled_from(["ring", "ulysses"]), kv_heads=st.sampled_from([2, 4]))
def test_context_parallel(import_config, cp, mode, kv_heads):
    seq = 48
    before = import_config("llama-3.1-8b", seq, **llama(4, kv_heads))
    module = apply_pipeline(before.clone(), f"shard-context{{cp={cp} mode={mode}}}")
    att = lambda m: sum(op.flops() * multiplicity(op) for op in m.walk() if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)))
    assert cp * att(module) == pytest.approx(att(before), rel=1e-12)
    rep = replicated_flops(module)["shard-context"]
    assert cp * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    if mode == "ring":
        sends = [(op, m) for op, m in collective_calls(module, coll.SendOp, "cp") if phase_of(op) == "forward"]
        block = 2 * (seq // cp) * kv_heads * 16
        assert sum(op.ring_bytes_per_rank() * m for op, m in sends) == 2 * (cp - 1) * 2 * block


@pytest.mark.parametrize("mode", ["ring", "ulysses"])
def test_embedding_gradient_is_a_partial_sum_when_the_sequence_is_as_long_as_hidden(import_config, mode):
    """The embedding table's gradient sums the tokens away: split on the sequence
    it is a partial sum, reduced with the other gradients, even when its hidden
    dim has the sequence's size (hidden 64 at sequence 64), not a split of the
    hidden dim gathered over cp."""
    before = import_config("llama-3.1-8b", 64, **llama(4, 4))
    module = apply_pipeline(before.clone(), f"shard-context{{cp=2 mode={mode}}},data-parallel{{dp=1}}")
    assert not collective_calls(module, coll.AllGatherOp, "cp")
    table = next(op for op in module.walk() if isinstance(op, sim.GenericOp)
                 and op.callee.data == "aten.embedding_dense_backward")
    assert tuple(sim.shape_of(table.outputs[0])) == (256, 64)


@pytest.mark.parametrize("passes", ["shard-context{cp=2}", "shard-context{cp=2},shard-expert{ep=2}"])
def test_moe_under_context_parallelism_gathers_nothing_over_cp(import_config, passes):
    """The combine's routing-weight gradient reads each token's own expert rows:
    split on the sequence, the expert buffers stay split on their capacity (they
    were all-gathered over cp, a [experts, capacity, h] buffer per layer)."""
    config = llama(4, 2)
    config.update(num_local_experts=4, num_experts_per_tok=2)
    before = import_config("mixtral-8x7b", 32, **config)
    module = apply_pipeline(before.clone(), passes)
    assert not collective_calls(module, coll.AllGatherOp, "cp")
    if "shard-expert" not in passes:  # cp alone: each rank 1/cp of the work
        rep = replicated_flops(module)["shard-context"]
        assert 2 * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)


@SETTINGS
@given(ep=st.sampled_from([2, 4]), top_k=st.sampled_from([1, 2]))
def test_expert_parallel(import_config, ep, top_k):
    seq = 40
    config = llama(4, 2)
    config.update(num_local_experts=4, num_experts_per_tok=top_k)
    before = import_config("mixtral-8x7b", seq, **config)
    module = apply_pipeline(before.clone(), f"shard-expert{{ep={ep}}}")
    calls = collective_calls(module, coll.AllToAllOp, "ep")
    assert sum(m for _, m in calls) == 4 * 2  # dispatch and combine, fwd and bwd, 2 layers
    for op, _ in calls:
        assert op.payload_bytes() == seq * top_k * 64 * 2
    # dropless: nothing replicated; the group updates each expert once, on its owner
    assert replicated_flops(module)["shard-expert"] == 0
    experts = sum(sim.numel(op.result) for op in before.walk()
                  if isinstance(op, sim.ParamOp) and ".experts." in op.sym_name.data)
    adamw = sim.OptimizerStepOp.KINDS["adamw"]
    assert ep * total_flops(module) == pytest.approx(
        ep * total_flops(before) - (ep - 1) * adamw * experts, rel=1e-12)


@SETTINGS
@given(ep=st.sampled_from([2, 4]), top_k=st.sampled_from([1, 2]))
def test_expert_tensor_parallel_fold(import_config, ep, top_k):
    """etp 1 under tp 2 (Megatron-Core's MoE parallel folding) against etp = tp: per
    rank the same token FLOPs and the same replicated work; the all_to_alls over
    ["ep", "tp"] carry the rank's own half of the rows; the mesh's ep axis ep / 2."""
    seq = 40
    config = llama(4, 2)
    config.update(num_local_experts=4, num_experts_per_tok=top_k)
    before = import_config("mixtral-8x7b", seq, **config)
    split = apply_pipeline(before.clone(), f"shard-tensor{{tp=2}},sequence-parallel,shard-expert{{ep={ep}}}")
    folded = apply_pipeline(before.clone(),
                            f"shard-tensor{{tp=2 experts=false}},sequence-parallel,shard-expert{{ep={ep} etp=1}}")
    assert folded.attributes["sim.expert_tp"].value.data == 1

    def token_flops(m):
        return sum(op.flops() * k for op, k in walk_with_multiplicity(m)
                   if isinstance(op, sim.ComputeOp) and not isinstance(op, sim.OptimizerStepOp))

    assert token_flops(folded) == pytest.approx(token_flops(split), rel=1e-12)
    assert replicated_flops(folded) == pytest.approx(replicated_flops(split), rel=1e-12)
    calls = collective_calls(folded, coll.AllToAllOp)
    assert sum(m for _, m in calls) == 4 * 2 and all(op.axis_names() == ["ep", "tp"] for op, _ in calls)
    for op, _ in calls:
        assert op.payload_bytes() == seq * top_k * 64 * 2 / 2


def test_gpt_conv1d_and_padded_vocabulary(import_config):
    """GPT-2/3 keep their linear weights as [in, out] (Conv1D) and a vocabulary of
    50257; Megatron pads the vocabulary to a multiple of 128 * tp."""
    gpt = dict(
        n_layer=2, num_hidden_layers=2, n_embd=64, hidden_size=64, n_head=4, num_attention_heads=4,
        num_key_value_heads=4, n_inner=256, intermediate_size=256, vocab_size=257, head_dim=16,
        n_positions=64, max_position_embeddings=64, n_ctx=64,
    )
    before = import_config("gpt3-13b", 24, **gpt)
    module = apply_pipeline(before.clone(), "shard-tensor{tp=2}")
    params = {op.sym_name.data: sim.shape_of(op.result) for op in module.walk() if isinstance(op, sim.ParamOp)}
    assert params["transformer.wte.weight"] == (256, 64)  # 257 -> 512 rows, 256 a rank
    assert params["transformer.wpe.weight"] == (64, 64)  # positions stay whole
    assert params["transformer.h[0:2].attn.c_attn.weight"] == (2, 64, 96)  # [in, out/2]
    assert params["transformer.h[0:2].attn.c_proj.weight"] == (2, 32, 64)  # [in/2, out]
    assert not collective_calls(module, coll.AllGatherOp)
    rep = replicated_flops(module)["shard-tensor"]
    assert 2 * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)

    # LayerNorm + bias and bias + GELU (imported as its tanh form) fuse; the model's
    # FLOPs kept, the backward recomputes GeLU's pieces from the saved input
    from charon_ir.passes.fuse import recomputed_flops

    fused = apply_pipeline(before.clone(), "fuse")
    callees = {op.callee.data for op in fused.walk() if isinstance(op, sim.GenericOp)}
    assert {"fused.layer_norm", "fused.bias_act", "fused.bias_act.recompute"} <= callees
    assert total_flops(fused) - recomputed_flops(fused) == total_flops(before)
    assert total_bytes_moved(fused) < total_bytes_moved(before)
