"""Bundled configs and bad inputs: one clear line, no torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.frontend.configs import bundled_models, load_config

REQUIRED = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3",
            "qwen3-30b-a3b", "gpt3-175b"]


def test_bundled_models_ship_the_reference_configs():
    names = bundled_models()
    for name in REQUIRED:
        assert name in names


@pytest.mark.parametrize("name", bundled_models())
def test_every_bundled_config_loads(name):
    display, config = load_config(name)
    assert display == name
    assert config["model_type"]
    assert not any(k.startswith("_") for k in config)


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_unknown_name():
    with pytest.raises(CharonError) as err:
        load_config("llama-9")
    assert "unknown model 'llama-9'" in _one_line(err)


def test_missing_file(tmp_path):
    with pytest.raises(CharonError) as err:
        load_config(tmp_path / "none.json")
    assert "no such config file" in _one_line(err)


def test_a_hugging_face_model_folder_reads_its_config(tmp_path):
    """A folder was taken for a bundled name ("unknown model 'my-model'")."""
    folder = tmp_path / "my-model"
    folder.mkdir()
    tiny = Path(__file__).resolve().parents[3] / "examples" / "llama_tiny_config.json"
    (folder / "config.json").write_text(tiny.read_text())
    name, config = load_config(str(folder))
    assert name == "my-model" and config["model_type"] == "llama"
    # a Hugging Face cache: snapshots/<rev>/config.json links to ../../blobs/<hash>
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "abc123"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    (blobs / "0f3e").write_text(tiny.read_text())
    (snapshot / "config.json").symlink_to("../../blobs/0f3e")
    assert load_config(str(snapshot))[0] == "abc123"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CharonError) as err:
        load_config(str(empty))
    assert _one_line(err) == f"{empty}: a folder without a config.json"



def test_a_folder_named_like_a_bundled_model_does_not_hide_it(tmp_path, monkeypatch):
    """`--plot llama-3.1-8b` makes such a folder; the next run took it for the model."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "llama-3.1-8b").mkdir()
    assert load_config("llama-3.1-8b")[1]["hidden_size"] == 4096


def test_malformed_json(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", ')
    with pytest.raises(CharonError) as err:
        load_config(bad)
    assert "malformed config.json" in _one_line(err)


def test_missing_field(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                               "vocab_size": 100}))
    with pytest.raises(CharonError) as err:
        load_config(bad)
    assert "'num_hidden_layers' must be a positive integer" in _one_line(err)


@pytest.mark.parametrize("fields, line", [
    # both used to reach torch's tracing and fail there as internal errors
    ({"num_key_value_heads": 3},
     "'num_key_value_heads' must be a positive integer dividing num_attention_heads 4, got 3"),
    ({"hidden_size": 257}, "hidden size 257 is not divisible by 4 attention heads (and no 'head_dim' is given)"),
    # a model without an MLP ran (exit 0); a zero or odd head dimension failed in transformers
    ({"intermediate_size": 0}, "'intermediate_size' must be a positive integer, got 0"),
    ({"head_dim": 0}, "'head_dim' must be a positive integer, got 0"),
    ({"head_dim": 7}, "'head_dim' 7 is odd (rotary embeddings rotate pairs of dimensions)"),
    # Llama 4's chunk of attention: zero attends to nothing
    ({"attention_chunk_size": 0}, "'attention_chunk_size' must be a positive integer, got 0"),
    # a billion layers imported for hours
    ({"num_hidden_layers": 10**9}, "1000000000 layers; at most 10,000 (the largest models have a few hundred)"),
    # sizes past 64-bit byte counts: an internal error in memory-analysis, or a
    # MemoryError in data-parallel's buckets
    ({"vocab_size": 10**15}, "'vocab_size' is 1,000,000,000,000,000; at most 1,048,576 "
                             "(the largest models stay under 300,000)"),
    ({"num_hidden_layers": 9000, "hidden_size": 2**19, "intermediate_size": 2**20},
     "about 2.5e+16 parameters; at most 1e+15 (the largest models have ~1e12)"),
])
def test_malformed_sizes_are_one_line(tmp_path, fields, line):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "vocab_size": 100, **fields}))
    with pytest.raises(CharonError) as err:
        load_config(bad)
    assert _one_line(err).endswith(f"malformed config.json: {line}")


def test_unsupported_architecture(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "bert", "architectures": ["BertForMaskedLM"],
                               "hidden_size": 64}))
    with pytest.raises(CharonError) as err:
        load_config(bad)
    assert "unsupported architecture 'bert'" in _one_line(err)


def test_more_experts_per_token_than_experts(tmp_path):
    # traced until torch's top-k failed, with torch's own traceback on stderr
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "vocab_size": 100, "intermediate_size": 128,
                               "num_local_experts": 4, "num_experts_per_tok": 8}))
    with pytest.raises(CharonError) as err:
        load_config(bad)
    assert _one_line(err).endswith("malformed config.json: 'num_experts_per_tok' 8 is more than the 4 experts")


def test_a_multimodal_llama4_config_imports_its_language_model(tmp_path):
    """Llama 4's config.json (Llama4ForConditionalGeneration) nests the language
    model in text_config: that is what is read, the top level's untied head with it."""
    text = {"model_type": "llama4_text", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
            "vocab_size": 100, "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
                                "text_config": text, "vision_config": {"hidden_size": 8},
                                "tie_word_embeddings": False}))
    _, config = load_config(path)
    assert config == {**text, "tie_word_embeddings": False}
    path.write_text(json.dumps({"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"]}))
    with pytest.raises(CharonError) as err:
        load_config(path)
    assert "unsupported architecture 'llama4'" in _one_line(err)
