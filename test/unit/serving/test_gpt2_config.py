"""A GPT-2-style config.json (`n_head`, `n_embd`, `n_layer`) serves as it
simulates: the serving path read the raw keys (`KeyError: 'num_attention_heads'`,
an internal error); configs are now read through transformers' attribute map."""

from __future__ import annotations

import json

import pytest

from charon_ir.frontend.configs import ATTRIBUTE_MAPS, load_config

GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_head": 4, "n_embd": 256,
        "n_layer": 2, "n_positions": 1024, "n_inner": None, "vocab_size": 1024,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}


@pytest.fixture
def gpt2_config(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GPT2))
    return path


def test_the_standard_names_are_filled_in(gpt2_config):
    _, config = load_config(gpt2_config)
    assert (config["num_attention_heads"], config["hidden_size"], config["num_hidden_layers"],
            config["max_position_embeddings"]) == (4, 256, 2, 1024)
    assert config["n_head"] == 4  # the family's own keys stay


def test_the_map_is_transformers(gpt2_config):
    transformers = pytest.importorskip("transformers")
    for model_type, mapping in ATTRIBUTE_MAPS.items():
        theirs = transformers.AutoConfig.for_model(model_type).attribute_map
        assert {k: theirs[k] for k in mapping} == mapping


def test_a_gpt2_replica_is_checked_sized_and_tabled(gpt2_config, monkeypatch):
    """What `charon serve` reads of the config before the table is priced (the
    pricing itself, seconds of tracing, is the simulate path's: replaced here)."""
    from dataclasses import replace

    from charon_ir.serving import latency

    from .conftest import synthetic_model

    monkeypatch.setattr(latency, "_MEMO", {})
    monkeypatch.setattr(latency, "build_step_model", lambda shape: replace(synthetic_model(), shape=shape))
    shape = latency.ReplicaShape(str(gpt2_config), "H100-SXM5-80GB", tp=2, attention_kernel="per-head")
    model = latency.step_model(shape)
    assert model.decode_attention_reads == 1.0  # 4 heads, no GQA: each KV head read once
    _, config = load_config(gpt2_config)
    # two MLP matrices of 4 x hidden (n_inner null), not three of a gated MLP
    attention, mlp, vocab = 4 * 256 * 256, 2 * 256 * 1024, 2 * 1024 * 256
    assert latency.estimated_weight_bytes(config, shape) == (2 * (attention + mlp) / 2 + vocab / 2) * 2.0
