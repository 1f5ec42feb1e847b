"""The frontend's one reading of parameter names: each family's weights get the
role and tensor-parallel split the passes act on (`#sim.role`, `#sim.split`)."""

from __future__ import annotations

import pytest

from charon_ir.dialects.sim import ParamRole as R
from charon_ir.dialects.sim import WeightSplit as S
from charon_ir.frontend.roles import param_role, weight_split

CASES = [
    # Llama-likes (stacked over 32 layers: a leading dim)
    ("model.embed_tokens.weight", 2, R.EMBEDDING, None),
    ("lm_head.weight", 2, R.HEAD, None),
    ("model.norm.weight", 1, R.NORM, None),
    ("model.layers[0:32].input_layernorm.weight", 2, R.NORM, None),
    ("model.layers[0:32].self_attn.q_proj.weight", 3, R.ATTENTION, S.COLUMN),
    ("model.layers[0:32].self_attn.k_proj.weight", 3, R.ATTENTION, S.KV),
    ("model.layers[0:32].self_attn.v_proj.bias", 2, R.ATTENTION, S.KV),
    ("model.layers[0:32].self_attn.o_proj.weight", 3, R.ATTENTION, S.ROW),
    ("model.layers[0:32].self_attn.q_norm.weight", 2, R.NORM, None),
    ("model.layers[0:32].mlp.gate_proj.weight", 3, R.MLP, S.COLUMN),
    ("model.layers[0:32].mlp.down_proj.weight", 3, R.MLP, S.ROW),
    # GPT-2: Conv1D modules, a learned position table that nothing splits
    ("transformer.wte.weight", 2, R.EMBEDDING, None),
    ("transformer.wpe.weight", 2, R.OTHER, None),
    ("transformer.h[0:12].ln_1.weight", 2, R.NORM, None),
    ("transformer.h[0:12].attn.c_attn.weight", 3, R.ATTENTION, S.COLUMN),
    ("transformer.h[0:12].attn.c_proj.weight", 3, R.ATTENTION, S.ROW),
    ("transformer.h[0:12].mlp.c_fc.bias", 2, R.MLP, S.COLUMN),
    ("transformer.h[0:12].mlp.c_proj.weight", 3, R.MLP, S.ROW),
    ("transformer.h[0:12].mlp.c_proj.bias", 2, R.MLP, None),  # added after the all-reduce
    # MoE: Mixtral / GPT-OSS / DeepSeek / Qwen / Llama 4
    ("model.layers[0:32].mlp.gate.weight", 3, R.ROUTER, None),
    ("model.layers[0:24].mlp.router.bias", 2, R.ROUTER, None),
    ("model.layers[3:61].mlp.gate.e_score_correction_bias", 2, R.ROUTER, None),
    ("model.layers[0:32].mlp.experts.gate_up_proj", 4, R.EXPERT, S.COLUMN),
    ("model.layers[0:32].mlp.experts.down_proj", 4, R.EXPERT, S.ROW),
    ("model.layers[0:24].mlp.experts.gate_up_proj_bias", 3, R.EXPERT, S.COLUMN),
    ("model.layers[0:24].mlp.experts.down_proj_bias", 3, R.EXPERT, S.ROW),
    ("model.layers[3:61].mlp.shared_experts.gate_proj.weight", 3, R.SHARED_EXPERT, S.COLUMN),
    ("model.layers[0:24].mlp.shared_expert_gate.weight", 3, R.SHARED_EXPERT, None),
    ("model.layers[0:48].feed_forward.router.weight", 3, R.ROUTER, None),
    # DeepSeek's MLA: the low-rank projections stay whole
    ("model.layers[0:61].self_attn.q_a_proj.weight", 3, R.ATTENTION, None),
    ("model.layers[0:61].self_attn.kv_b_proj.weight", 3, R.ATTENTION, S.COLUMN),
    # GPT-NeoX, Bloom / Falcon
    ("gpt_neox.embed_in.weight", 2, R.EMBEDDING, None),
    ("embed_out.weight", 2, R.HEAD, None),
    ("transformer.h[0:30].self_attention.query_key_value.weight", 3, R.ATTENTION, S.COLUMN),
    ("transformer.h[0:30].self_attention.dense.weight", 3, R.ATTENTION, S.ROW),
    ("transformer.h[0:30].mlp.dense_4h_to_h.weight", 3, R.MLP, S.ROW),
    # Megatron-Core (its layers' linear modules carry no split yet: see the report of #29)
    ("model.embedding.word_embeddings.weight", 2, R.EMBEDDING, None),
    ("model.output_layer.weight", 2, R.HEAD, None),
    ("model.decoder.final_layernorm.weight", 1, R.NORM, None),
    ("model.decoder.layers[0:4].self_attention.linear_qkv.weight", 3, R.ATTENTION, None),
    # names it does not know
    ("w_in", 2, R.OTHER, None),
    ("blocks.0.scale", 1, R.OTHER, None),
]


@pytest.mark.parametrize("name, rank, role, split", CASES, ids=[c[0] for c in CASES])
def test_each_family_weight_gets_its_role_and_split(name, rank, role, split):
    assert (param_role(name, rank), weight_split(name, rank)) == (role, split)


def test_a_table_or_an_expert_needs_two_dims():
    """The verifier's rule (`sim.param`): a one-dim parameter is never given a
    role that needs a table or an experts dim."""
    assert param_role("model.embed_tokens.weight", 1) == R.OTHER
    assert param_role("model.mlp.experts.gate_up_proj", 2) != R.EXPERT
