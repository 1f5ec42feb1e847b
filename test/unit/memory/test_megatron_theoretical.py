"""Weights and optimizer states against Megatron-LM's own theoretical formula
(`megatron/training/theoretical_memory_usage.py`, `compute_weight_and_optimizer_memory`):

    P_first = (P_layers / pp + P_embedding) / tp      (+ the untied head when pp == 1)
    bytes   = P_first x 18                     without the distributed optimizer
            = P_first x (6 + 12 / dp)          with it

18 = 2 (bf16 parameter) + 4 (fp32 main gradient) + 12 (fp32 master, Adam m and v);
the distributed optimizer shards the last 12 over dp. Under the megatron-core
preset (distributed optimizer, fp32 main gradients) the first stage's parameters,
gradients and optimizer states must match it within 2 % (the formula leaves out
the norms' weights, which tp does not split; the analysis counts them)."""

from __future__ import annotations

import json

import pytest

TINY_LLAMA = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512,
    "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8,
    "num_key_value_heads": 4, "vocab_size": 4096, "max_position_embeddings": 256,
    "tie_word_embeddings": False,
}


def megatron_weight_and_optimizer_bytes(config: dict, *, tp: int, pp: int, dp: int,
                                        distributed_optimizer: bool) -> float:
    """Megatron-LM's formula for a Llama (SwiGLU, RMSNorm, GQA) model."""
    h, ffn, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    heads, groups, vocab = config["num_attention_heads"], config["num_key_value_heads"], config["vocab_size"]
    kv_channels = h // heads
    attention = 2 * h * h * ((1 + groups / heads) * (kv_channels * heads / h))
    dense_layer = 2 * h * (ffn * 1.5 + 1) + attention  # gated MLP, RMSNorm (one weight per norm)
    block = dense_layer * layers + h  # the final norm
    embedding = h * vocab
    first = (block / pp + embedding) / tp
    if pp == 1:
        first += embedding / tp  # the untied output layer
    return first * (6 + 12 / dp if distributed_optimizer else 18)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama") / "config.json"
    path.write_text(json.dumps(TINY_LLAMA))
    return str(path)


@pytest.mark.parametrize(("tp", "pp", "dp"), [(1, 1, 8), (2, 1, 4), (2, 2, 2), (4, 2, 1), (1, 4, 2)])
def test_first_stage_states_match_megatron(tiny_llama, tp, pp, dp, monkeypatch, tmp_path):
    from charon_ir.api import build_training_module, configure

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "ir"))
    config, _ = configure(tiny_llama, gpus=tp * pp * dp, tp=tp, pp=pp, seq_len=256,
                          global_batch=8 * dp, memory_limit_gb=1e9)
    assert config.zero == 1 and config.grad_bytes == 4  # the preset's
    _, _, memory = build_training_module(config)
    first = memory[0]
    ours = first.params + first.grads + first.optimizer
    theirs = megatron_weight_and_optimizer_bytes(TINY_LLAMA, tp=tp, pp=pp, dp=dp,
                                                 distributed_optimizer=True)
    print(f"tp{tp} pp{pp} dp{dp}: {ours / 2**20:.3f} MiB, Megatron {theirs / 2**20:.3f} MiB, "
          f"{100 * (ours / theirs - 1):+.2f} %")
    assert ours == pytest.approx(theirs, rel=0.02)
