"""Every supported Hugging Face family, imported from a tiny config (2 layers,
hidden 64, vocabulary 256): the IR holds exactly the parameters transformers
builds from the same config, its forward FLOPs are the closed form's, the
backward does twice the forward's matmuls, serving imports, and tensor (and
expert) parallelism find the family's weights by their names."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from charon_ir.dialects import sim  # noqa: E402
from charon_ir.errors import CharonError  # noqa: E402
from charon_ir.frontend import forward_flops, import_model, mtp_param_count, param_count  # noqa: E402
from charon_ir.frontend.metrics import phase_flops  # noqa: E402
from charon_ir.frontend.configs import SUPPORTED_MODEL_TYPES  # noqa: E402
from charon_ir.parallel.accounting import replicated_flops, total_flops, walk_with_multiplicity  # noqa: E402
from charon_ir.parallel.examples import apply_pipeline  # noqa: E402

SEQ = 64  # tokens * top_k is a multiple of every tiny MoE's experts: no capacity rounding
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 64, 4, 2, 16, 128, 256

BASE = dict(
    hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
    head_dim=HEAD_DIM, intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=512,
)
MOE = dict(num_experts_per_tok=2, moe_intermediate_size=32)

TINY: dict[str, dict] = {
    "llama": BASE,
    "mistral": BASE,
    "mixtral": dict(BASE, num_local_experts=8, num_experts_per_tok=2),
    "qwen2": BASE,
    "qwen2_moe": dict(BASE, **MOE, num_experts=8, shared_expert_intermediate_size=64),
    "qwen3": BASE,
    "qwen3_moe": dict(BASE, **MOE, num_experts=8),
    "deepseek_v2": dict(
        BASE, **MOE, n_routed_experts=8, n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=None,
        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, num_key_value_heads=HEADS, head_dim=8,
    ),
    "deepseek_v3": dict(
        BASE, **MOE, n_routed_experts=8, n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32,
        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, num_key_value_heads=HEADS, head_dim=8,
        n_group=2, topk_group=1, num_nextn_predict_layers=1,
    ),
    "gemma2": BASE,
    "gemma3_text": dict(BASE, layer_types=["sliding_attention", "full_attention"], sliding_window=32),
    "phi3": dict(BASE, pad_token_id=0),
    "olmo2": BASE,
    "olmoe": dict(BASE, num_experts=8, num_experts_per_tok=2),
    "granite": dict(BASE, embedding_multiplier=12.0, logits_scaling=8.0),
    "cohere": BASE,
    "starcoder2": BASE,
    "nemotron": dict(BASE, partial_rotary_factor=0.5),
    "gpt_oss": dict(
        BASE, num_local_experts=8, num_experts_per_tok=2, layer_types=["sliding_attention", "full_attention"],
        sliding_window=32,
    ),
    "llama4_text": dict(
        BASE, num_local_experts=8, num_experts_per_tok=2, intermediate_size=32, intermediate_size_mlp=FFN,
        interleave_moe_layer_step=2, no_rope_layer_interval=2, attention_chunk_size=32,
    ),
    "gpt_neox": dict(BASE, rotary_pct=0.25),
    "falcon": {**{k: v for k, v in BASE.items() if k != "head_dim"}, "new_decoder_architecture": True,
               "num_kv_heads": KV_HEADS, "bias": False},
    "gpt2": dict(n_embd=HIDDEN, n_layer=2, n_head=HEADS, n_inner=FFN, n_positions=512, vocab_size=VOCAB),
}
"""A tiny config per supported model_type, with the fields that make the family itself
(MoE, MLA, alternating attention kinds, partial rotary, scaled logits; Llama 4: a
chunked dense layer, then a NoPE MoE layer with a shared expert)."""

MOE_TYPES = sorted(t for t, c in TINY.items() if any(k in c for k in ("num_local_experts", "num_experts", "n_routed_experts")))

_IMPORTS: dict[tuple[str, str], object] = {}
_HF_MODELS: dict[str, object] = {}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """imported(model_type, mode) -> the IR of its tiny config, memoised."""
    folder = tmp_path_factory.mktemp("families")

    def get(model_type: str, mode: str = "train"):
        if (model_type, mode) not in _IMPORTS:
            path = folder / f"{model_type}.json"
            path.write_text(json.dumps(dict(TINY[model_type], model_type=model_type)))
            _IMPORTS[model_type, mode] = import_model(path, seq_len=SEQ, batch=1, mode=mode, use_cache=False)
        return _IMPORTS[model_type, mode]

    return get


def hf_model(model_type: str):
    """The model transformers itself builds from the tiny config, on the meta device
    (its own attention and experts, nothing of ours)."""
    if model_type not in _HF_MODELS:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.for_model(model_type, **TINY[model_type])
        with torch.device("meta"):
            _HF_MODELS[model_type] = AutoModelForCausalLM.from_config(config)
    return _HF_MODELS[model_type]


def closed_form_flops_per_token(model_type: str) -> float:
    """2 x the parameters a token multiplies (routed experts scaled by top_k /
    experts; untied input embeddings are only looked up) + causal attention:
    per layer 2 * heads * (qk_dim + v_dim) * (SEQ + 1) / 2, or the keys of a
    query's chunk in a chunked layer (Llama 4)."""
    model = hf_model(model_type)
    config = model.config
    cfg = TINY[model_type]
    experts = next(cfg[k] for k in ("num_local_experts", "num_experts", "n_routed_experts") if k in cfg) \
        if model_type in MOE_TYPES else 0
    multiplied = 0.0
    embedding = model.get_input_embeddings().weight
    for name, p in model.named_parameters():
        if p is embedding and not getattr(config, "tie_word_embeddings", False):
            continue
        if "wpe" in name or p.dim() < 2 and "experts" not in name:
            continue  # positions looked up; norms and biases are not multiplied
        if ".experts." in name or name.endswith(".experts.gate_up_proj_bias"):
            multiplied += p.numel() * cfg["num_experts_per_tok"] / experts
        elif p.dim() >= 2:
            multiplied += p.numel()
    if "qk_nope_head_dim" in cfg:
        qk, v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    else:
        qk = v = HEAD_DIM
    layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    chunk = cfg.get("attention_chunk_size", 0)
    kinds = getattr(config, "layer_types", None) or ["full_attention"] * layers
    keys = sum(mean_keys_in_chunks(SEQ, chunk if kind == "chunked_attention" else 0) for kind in kinds[:layers])
    depth = cfg.get("num_nextn_predict_layers", 0)
    mtp = depth * mtp_closed_form_flops_per_token(model_type) if depth else 0.0
    return 2 * multiplied + 2 * HEADS * (qk + v) * keys + mtp


def mtp_closed_form_flops_per_token(model_type: str) -> float:
    """One multi-token-prediction module (DeepSeek-V3): 2 x the weights a token
    multiplies in its projection (2h -> h), its block (the shape of the model's
    last layer, routed experts scaled by top_k / experts) and the shared LM head,
    plus one layer's causal attention."""
    model, cfg = hf_model(model_type), TINY[model_type]
    multiplied = 2 * HIDDEN * HIDDEN + model.lm_head.weight.numel()
    for name, p in model.model.layers[-1].named_parameters():
        if ".experts." in f".{name}":
            multiplied += p.numel() * cfg["num_experts_per_tok"] / cfg["n_routed_experts"]
        elif p.dim() >= 2:
            multiplied += p.numel()
    qk, v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    return 2 * multiplied + 2 * HEADS * (qk + v) * (SEQ + 1) / 2


def mean_keys_in_chunks(seq: int, chunk: int) -> float:
    """Keys a causal query sees on average, each query only its own chunk's
    when `chunk` > 0 (counted one query at a time)."""
    return sum(p % chunk + 1 if chunk else p + 1 for p in range(seq)) / seq


def test_every_supported_family_is_in_the_matrix():
    assert set(TINY) == set(SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_parameter_count_is_transformers_own(imported, model_type):
    expected = sum(p.numel() for p in hf_model(model_type).parameters())
    # DeepSeek-V3's multi-token-prediction module: trained, not built by transformers
    assert param_count(imported(model_type)) - mtp_param_count(imported(model_type)) == expected


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_forward_flops_match_closed_form(imported, model_type):
    per_token = forward_flops(imported(model_type)) / SEQ
    # tiny widths: norms, rotary and softmax are ~10 % of the FLOPs the matmuls do
    assert per_token == pytest.approx(closed_form_flops_per_token(model_type), rel=0.15)
    assert per_token >= closed_form_flops_per_token(model_type)


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_backward_multiplies_twice_the_forward(imported, model_type):
    def matmul_flops(phase_kind):
        phase = next(op for op in imported(model_type).walk() if isinstance(op, sim.PhaseOp) and op.kind.data == phase_kind)
        return sum(op.flops() * mult for op, mult in walk_with_multiplicity(phase) if isinstance(op, sim.MatmulOp))

    assert matmul_flops("backward") == pytest.approx(2 * matmul_flops("forward"), rel=0.05)


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_every_weight_but_attention_sinks_is_trained(imported, model_type):
    module = imported(model_type)
    step = next(op for op in module.walk() if isinstance(op, sim.OptimizerStepOp))
    trained = {v.owner.sym_name.data for v in step.params}
    params = {op.sym_name.data for op in module.walk() if isinstance(op, sim.ParamOp)}
    # GPT-OSS's per-head sink logits enter no op the attention is priced by
    assert {p for p in params - trained if not p.endswith("self_attn.sinks")} == set()


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_decode_imports(imported, model_type):
    module = imported(model_type, "decode")
    assert [op.kind.data for op in module.walk() if isinstance(op, sim.PhaseOp)] == ["decode"]
    assert any(isinstance(op, sim.KVCacheReadOp) for op in module.walk())


@pytest.mark.parametrize("model_type", ["nemotron", "gpt_oss", "gemma3_text", "falcon", "llama4_text"])
def test_prefill_imports(imported, model_type):
    module = imported(model_type, "prefill")
    assert any(isinstance(op, sim.KVCacheWriteOp) for op in module.walk())


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_tensor_parallel_splits_the_family(imported, model_type):
    before = imported(model_type)
    after = apply_pipeline(before.clone(), "shard-tensor{tp=2}")
    replicated = replicated_flops(after)["shard-tensor"]
    assert 2 * total_flops(after) == pytest.approx(total_flops(before) + replicated, rel=1e-9)
    # the matmuls split; what repeats is small (norms, the router, MLA's latent projections)
    assert replicated < 0.15 * total_flops(before)


@pytest.mark.parametrize("model_type", MOE_TYPES)
def test_expert_parallel_splits_every_expert_weight(imported, model_type):
    after = apply_pipeline(imported(model_type).clone(), "shard-expert{ep=2}")
    experts = [(op.sym_name.data, sim.shape_of(op.result)) for op in after.walk()
               if isinstance(op, sim.ParamOp) and ".experts." in op.sym_name.data]
    assert experts
    for name, shape in experts:
        # [layers, experts / ep, ...]; an MTP module's block is one layer: [experts / ep, ...]
        assert shape[1 if "[" in name else 0] == 8 // 2, name


def test_unsupported_family_is_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": 64,
                                "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}))
    with pytest.raises(CharonError) as e:
        import_model(path, seq_len=SEQ, use_cache=False)
    assert "'mamba'" in str(e.value) and "\n" not in str(e.value)


def test_sliding_window_layers_attend_to_their_window(imported):
    """GPT-OSS alternates sliding-window (32 in the tiny config) and full
    attention: the layers are traced apart (one repeat of a two-layer period),
    the sliding one's attention carries its window, and in decode its KV cache
    holds the window's tokens only."""
    from charon_ir.dialects import sim

    train = imported("gpt_oss")
    windows = sorted(op.window_size() for op in train.walk() if isinstance(op, sim.AttentionOp))
    assert windows == [0, 32]
    decode = imported("gpt_oss", "decode")
    kv = sorted(sim.shape_of(op.k)[1] for op in decode.walk() if isinstance(op, sim.AttentionOp))
    assert kv[0] == 32 and kv[1] > 32


def test_llama4_chunked_layers_attend_to_their_chunk(imported, tmp_path):
    """Llama 4's tiny config: layer 0 has rotary embeddings and chunked attention
    (chunk 32), layer 1 neither (NoPE, full causal attention): traced apart, the
    chunked one's attention and its gradient carry the chunk. In decode at 40
    tokens of context the new token (position 39) reads its chunk's 8 keys
    (32 .. 39), the NoPE layer all 40."""
    train = imported("llama4_text")
    chunks = sorted((op.name, op.chunk_size()) for op in train.walk()
                    if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)))
    assert chunks == [("sim.attention", 0), ("sim.attention", 32), ("sim.attention_grad", 0), ("sim.attention_grad", 32)]
    path = tmp_path / "llama4.json"
    path.write_text(json.dumps(dict(TINY["llama4_text"], model_type="llama4_text")))
    decode = import_model(path, seq_len=40, batch=1, mode="decode", use_cache=False)
    keys = sorted((op.chunk_size(), sim.shape_of(op.k)[1]) for op in decode.walk() if isinstance(op, sim.AttentionOp))
    assert keys == [(0, 40), (32, 8)]


def test_llama4_experts_are_routed_not_dense(imported):
    """HF's Llama 4 sends every token through all 8 experts; as the model runs,
    each token goes to its top 2 and the shared expert: the routed experts'
    matmuls do top_k / experts of the dense FLOPs, i.e. 2 x 64 tokens x 2 of
    them through gate_up (64 -> 2 x 32) and down (32 -> 64)."""
    forward = next(op for op in imported("llama4_text").walk() if isinstance(op, sim.PhaseOp) and op.kind.data == "forward")
    assert any(isinstance(op, sim.MoeDispatchOp) for op in forward.walk())
    expert_flops = sum(op.flops() * mult for op, mult in walk_with_multiplicity(forward)
                       if isinstance(op, sim.MatmulOp) and len(sim.shape_of(op.rhs)) == 3)
    tokens_k = SEQ * 2
    assert expert_flops == 2 * tokens_k * (HIDDEN * 2 * 32 + 32 * HIDDEN)


def test_deepseek_v3_trains_its_multi_token_prediction_module(imported, tmp_path):
    """DeepSeek-V3's config asks for one MTP module (num_nextn_predict_layers 1),
    which transformers does not build: a training step runs it after the stack
    and its forward matmuls and attention grow by exactly its closed form, its
    weights (counted apart) are trained; `mtp=False` leaves it out."""
    path = tmp_path / "deepseek_v3.json"
    path.write_text(json.dumps(dict(TINY["deepseek_v3"], model_type="deepseek_v3")))
    with_mtp = imported("deepseek_v3")
    without = import_model(path, seq_len=SEQ, batch=1, use_cache=False, mtp=False)
    assert mtp_param_count(without) == 0 and param_count(without) == param_count(with_mtp) - mtp_param_count(with_mtp)
    model, cfg = hf_model("deepseek_v3"), TINY["deepseek_v3"]
    block = sum(p.numel() for p in model.model.layers[-1].parameters())
    assert mtp_param_count(with_mtp) == 2 * HIDDEN * HIDDEN + 3 * HIDDEN + block  # eh_proj, 3 norms, block

    def grown(op_type):
        return phase_flops(with_mtp, "forward", op_type) - phase_flops(without, "forward", op_type)

    qk, v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    attention = 2 * HEADS * (qk + v) * SEQ * (SEQ + 1) / 2
    assert grown(sim.AttentionOp) == attention
    assert grown(sim.MatmulOp) == SEQ * mtp_closed_form_flops_per_token("deepseek_v3") - attention
    step = next(op for op in with_mtp.walk() if isinstance(op, sim.OptimizerStepOp))
    trained = {v.owner.sym_name.data for v in step.params}
    assert {n for n in trained if n.startswith("mtp.0.")} >= {"mtp.0.eh_proj.weight", "mtp.0.block.mlp.experts.gate_up_proj"}
    assert not any(isinstance(op, sim.ParamOp) and op.sym_name.data.startswith("mtp.")
                   for op in imported("deepseek_v3", "decode").walk())
