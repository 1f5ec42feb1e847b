"""Megatron-Core's own GPTModel as a frontend (`megatron:CONFIG`): built by
Megatron-Core from its config on the CPU, its decoder layers found as the stack,
the FLOPs those of the same model imported from its Hugging Face config."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("megatron.core")
torch = pytest.importorskip("torch")

import charon_ir  # noqa: E402
from charon_ir.dialects import sim  # noqa: E402
from charon_ir.errors import CharonError  # noqa: E402
from charon_ir.frontend import import_model, param_count, phase_flops  # noqa: E402

TINY = "megatron:examples/megatron_gpt_tiny.yaml"

# the Hugging Face Llama of the same shapes as examples/megatron_gpt_tiny.yaml
HF_TWIN = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 688,
    "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 1024,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    "hidden_act": "silu", "rope_theta": 10000.0,
}


@pytest.fixture(scope="module")
def megatron_ir():
    return import_model(TINY, seq_len=128, batch=2, use_cache=False)


def test_the_decoder_layers_are_the_stack(megatron_ir):
    forward = next(op for op in megatron_ir.body.block.ops if isinstance(op, sim.PhaseOp))
    (stack,) = [op for op in forward.body.block.ops if isinstance(op, sim.RepeatOp)]
    assert stack.count.value.data == 4
    assert [op for op in stack.walk() if isinstance(op, sim.AttentionOp)]  # TE's fused kernel, once a layer


def test_gemm_and_attention_flops_equal_the_hf_twins(megatron_ir, tmp_path):
    """Megatron fuses QKV and the gated FC1; the FLOPs of the GEMMs and of
    attention are those of the Llama with the same shapes."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HF_TWIN))
    hf = import_model(str(path), seq_len=128, batch=2, use_cache=False)
    assert param_count(megatron_ir) == param_count(hf)
    for phase in ("forward", "backward"):
        for kind in (sim.MatmulOp, sim.AttentionOp, sim.AttentionGradOp):
            assert phase_flops(megatron_ir, phase, kind) == pytest.approx(phase_flops(hf, phase, kind), rel=1e-9)


def test_it_simulates_under_pipeline_and_data_parallelism():
    report = charon_ir.simulate(TINY, gpus=4, pp=2, seq_len=256, global_batch=8)
    assert report["iteration_time_s"] > 0 and len(report["stages"]) == 2


def test_tensor_parallelism_is_refused_until_its_layers_carry_splits():
    """Its fused linear_qkv / linear_fc1 name no split (`frontend/roles.py`): tp
    would split only the embedding and the output layer, every rank running whole
    layers; refused in one line rather than priced wrong."""
    with pytest.raises(CharonError, match="tensor parallelism does not split Megatron-Core's decoder layers"):
        charon_ir.simulate(TINY, gpus=4, tp=2, pp=2, seq_len=256, global_batch=8)


@pytest.mark.parametrize("change, message", [
    ({"num_moe_experts": 8}, "MoE layers are not imported"),
    ({"tensor_model_parallel_size": 2}, "the model is imported whole"),
    ({"not_a_field": 1}, "unknown field(s) not_a_field"),
    ({"activation_func": "swish2"}, "activation_func 'swish2'"),
    ({"num_attention_heads": 7}, "num_attention_heads (7) must be a multiple of num_query_groups (4)"),
    ({"hidden_size": "wide"}, "Megatron-Core refused the config"),
])
def test_a_bad_config_is_one_line(tmp_path, change, message):
    import yaml

    config = yaml.safe_load(open("examples/megatron_gpt_tiny.yaml"))
    config.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(CharonError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        import_model(f"megatron:{path}", seq_len=64, use_cache=False)
    assert "\n" not in str(err.value)


def test_a_missing_config_is_one_line():
    with pytest.raises(CharonError, match="no-such.yaml"):
        import_model("megatron:no-such.yaml", seq_len=64)


def test_a_malformed_config_is_one_line(tmp_path):
    for name, text, message in (("bad.json", "{1", "bad.json:1:2: malformed Megatron config"),
                                ("bad.yaml", "a: [1", "bad.yaml: not a Megatron config (YAML:"),
                                ("list.yaml", "- 1", "a mapping of TransformerConfig")):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(CharonError, match=message.replace("(", r"\(")) as err:
            import_model(f"megatron:{path}", seq_len=64, use_cache=False)
        assert "\n" not in str(err.value)
