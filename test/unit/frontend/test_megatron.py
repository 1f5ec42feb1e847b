"""Megatron-Core's own GPTModel as a frontend (`megatron:CONFIG`): built by
Megatron-Core from its config on the CPU, its decoder layers found as the stack,
the FLOPs those of the same model imported from its Hugging Face config; built
and traced as one rank of the run's tensor parallelism, its collectives those
Megatron-Core issues."""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("megatron.core")
torch = pytest.importorskip("torch")

import charon_ir  # noqa: E402
from charon_ir.dialects import coll, sim  # noqa: E402
from charon_ir.errors import CharonError  # noqa: E402
from charon_ir.frontend import import_model, param_count, parse_ir, phase_flops  # noqa: E402
from charon_ir.frontend.megatron import build_megatron_model  # noqa: E402
from charon_ir.parallel.accounting import walk_with_multiplicity  # noqa: E402

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


def test_gemm_and_attention_flops_equal_the_hf_twins(megatron_ir, gemms_equal_its_twin):
    """Megatron fuses QKV and the gated FC1; the FLOPs of the GEMMs and of
    attention are those of the Llama with the same shapes."""
    gemms_equal_its_twin(megatron_ir, HF_TWIN)


def test_it_simulates_under_pipeline_and_data_parallelism():
    report = charon_ir.simulate(TINY, gpus=4, pp=2, seq_len=256, global_batch=8)
    assert report["iteration_time_s"] > 0 and len(report["stages"]) == 2


@functools.cache
def _rank(tp: int, sequence_parallel: bool = False):
    """One rank's module of the tiny GPT at `tp` (imported once per session)."""
    return import_model(TINY, seq_len=128, batch=2, use_cache=False, tp=tp, sequence_parallel=sequence_parallel)


def _matmul_flops(module) -> list[float]:
    """Every GEMM's FLOPs, in program order, an op in a repeat once."""
    return [op.flops() for op in module.walk() if isinstance(op, sim.MatmulOp)]


def _collectives(module, phase: str) -> dict[str, int]:
    """How many of each tp collective one step of `phase` issues."""
    ops = next(op for op in module.body.block.ops if isinstance(op, sim.PhaseOp) and op.kind.data == phase)
    counts: dict[str, int] = {}
    for op, times in walk_with_multiplicity(ops):
        if isinstance(op, coll.CollectiveOp):
            assert op.axis_names() == ["tp"]
            counts[op.op_kind()] = counts.get(op.op_kind(), 0) + times
    return counts


@settings(max_examples=6, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]), sequence_parallel=st.booleans())
def test_a_rank_runs_1_over_tp_of_every_gemm(tp, sequence_parallel):
    """Built at tp, Megatron-Core's ColumnParallelLinear / RowParallelLinear and
    vocab-parallel embedding and output layer hold one rank's weights: every
    GEMM (forward and backward, fused QKV and gated FC1 included) is 1/tp of
    the whole model's, so tp ranks do the GEMM FLOPs of tp 1 exactly; the
    weights are 1/tp but for the norms', which every rank holds whole."""
    sequence_parallel = sequence_parallel and tp > 1
    whole, rank = _rank(1), _rank(tp, sequence_parallel)
    assert [f * tp for f in _matmul_flops(rank)] == _matmul_flops(whole)
    norms = sum(sim.numel(p.result) for p in whole.walk()
                if isinstance(p, sim.ParamOp) and p.param_role() == sim.ParamRole.NORM)
    assert (param_count(rank) - norms) * tp == param_count(whole) - norms
    for kind in (sim.AttentionOp, sim.AttentionGradOp):
        assert phase_flops(rank, "forward" if kind is sim.AttentionOp else "backward", kind) * tp == \
            phase_flops(whole, "forward" if kind is sim.AttentionOp else "backward", kind)


def test_a_tp_rank_issues_megatrons_collectives():
    """Without sequence parallelism: per layer an all-reduce after linear_proj
    and linear_fc2 forward and of linear_qkv's and linear_fc1's input gradients
    backward; the vocab-parallel embedding's all-reduce and the cross entropy's
    three (max, target logit, sum of exponentials); the output layer's input
    gradient. With it, the layers' all-reduces are Megatron-Core's
    all-gathers (before the column-parallel linears, and again backward for
    their weight gradients) and reduce-scatters."""
    rank = _rank(2)
    assert _collectives(rank, "forward") == {"all_reduce": 2 * 4 + 1 + 3}
    assert _collectives(rank, "backward") == {"all_reduce": 2 * 4 + 1}
    sp = _rank(2, True)
    assert _collectives(sp, "forward") == {"all_gather": 2 * 4 + 1, "reduce_scatter": 2 * 4 + 1, "all_reduce": 3}
    assert _collectives(sp, "backward") == {"all_gather": 4 * 4 + 1 + 1, "reduce_scatter": 2 * 4 + 1}
    grid = next(op for op in sp.body.block.ops if isinstance(op, coll.GridOp))
    assert grid.axis_sizes() == {"tp": 2}


def test_a_sequence_parallel_rank_carries_its_share_of_the_tokens():
    """Between layers Megatron-Core keeps the hidden state split on the
    sequence ([s / tp, b, h]): the stack's input is this rank's 64 of 128."""
    forward = next(op for op in _rank(2, True).body.block.ops if isinstance(op, sim.PhaseOp))
    (stack,) = [op for op in forward.body.block.ops if isinstance(op, sim.RepeatOp)]
    assert sim.shape_of(stack.operands[0]) == (64, 2, 256)


def test_a_tp_rank_round_trips_through_the_cache_text():
    module = _rank(2, True)
    again = parse_ir(str(module))
    again.verify()
    assert str(again) == str(module)


def test_it_simulates_under_tensor_parallelism_near_its_hf_twin(simulates_near_its_twin):
    """shard-tensor splits the Hugging Face twin; Megatron-Core splits itself:
    the FLOPs per GPU within 0.1 % (the GEMMs' are equal; the elementwise
    work differs), the step within 25 % (the tiny model's kernels
    sit at the launch floor, where Megatron-Core's local spec runs more of them:
    unfused rotary, norm casts; README gives the 8B comparison)."""
    simulates_near_its_twin(TINY, HF_TWIN, axis="tp", flops_rel=1e-3, step_rel=0.25,
                            gpus=4, tp=2, pp=2, seq_len=256, global_batch=8)


def test_only_a_megatron_model_is_imported_at_a_tp(hf_twin):
    with pytest.raises(CharonError, match="only a megatron: model is imported at a tensor-parallel size") as err:
        import_model(hf_twin(HF_TWIN), seq_len=64, tp=2, use_cache=False)
    assert "\n" not in str(err.value)


def test_a_tp_megatron_refuses_is_one_line():
    """tp 3 divides neither the 8 heads nor the 4 query groups: Megatron-Core's
    own check, in one line."""
    with pytest.raises(CharonError, match="Megatron-Core refused the config") as err:
        import_model(TINY, seq_len=64, tp=3, use_cache=False)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("change, message", [
    ({"tensor_model_parallel_size": 2}, "tensor_model_parallel_size 2: the run gives the parallel degrees"),
    ({"sequence_parallel": True}, "sequence_parallel True: the run gives the parallel degrees"),
    ({"not_a_field": 1}, "unknown field(s) not_a_field"),
    ({"bf16": False}, "bf16 False: the import builds the model with bf16 True"),
    ({"params_dtype": "float32"}, "params_dtype 'float32': the import builds the model with params_dtype 'bfloat16'"),
    ({"activation_func": "swish2"}, "activation_func 'swish2'"),
    ({"num_attention_heads": 7}, "num_attention_heads (7) must be a multiple of num_query_groups (4)"),
    ({"hidden_size": "wide"}, "Megatron-Core refused the config"),
])
def test_a_bad_config_is_one_line(tmp_path, change, message):
    config = yaml.safe_load(open("examples/megatron_gpt_tiny.yaml"))
    config.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(CharonError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        import_model(f"megatron:{path}", seq_len=64, use_cache=False)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("tp", [1, 2])
def test_a_config_stating_the_default_degrees_builds(tp):
    """A config that states tp 1, pp 1, cp 1, ep 1 and no sequence parallelism
    (Megatron-Core's defaults, common in real configs) builds at the run's tp:
    the run's options replace them, they are not passed to TransformerConfig twice."""
    config = yaml.safe_load(open("examples/megatron_gpt_tiny.yaml"))
    config.update(tensor_model_parallel_size=1, pipeline_model_parallel_size=1, context_parallel_size=1,
                  expert_model_parallel_size=1, sequence_parallel=False)
    model = build_megatron_model(config, "defaults.yaml", tp=tp)
    assert model.tp == tp and model.model.config.tensor_model_parallel_size == tp


def test_a_config_stating_the_build_settings_builds():
    """bf16, its params_dtype and the initialisation flags, as Megatron-LM's own
    configs state them, are what the importer sets: not passed twice."""
    config = yaml.safe_load(open("examples/megatron_gpt_tiny.yaml"))
    config.update(bf16=True, params_dtype="bfloat16", use_cpu_initialization=False, perform_initialization=True)
    model = build_megatron_model(config, "stated.yaml")
    assert model.model.config.bf16 and model.model.config.params_dtype == torch.bfloat16


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


def test_charon_import_writes_one_tp_rank(tmp_path):
    """`charon import megatron:CONFIG --tp 2 --sequence-parallel`: the rank's IR,
    its grid and Megatron-Core's all-gathers in it; --tp on any other model is
    one line, exit 1, no file."""
    out = tmp_path / "rank.mlir"
    proc = subprocess.run([sys.executable, "-m", "charon_ir.cli", "import", TINY, "--seq-len", "64", "--tp", "2",
                           "--sequence-parallel", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert 'coll.grid @mesh(axes = ["tp"], shape = 2)' in text and "coll.all_gather" in text
    bad = tmp_path / "bad.mlir"
    proc = subprocess.run([sys.executable, "-m", "charon_ir.cli", "import", "llama-3-8b", "--tp", "2",
                           "-o", str(bad)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and not bad.exists()
    assert "only a megatron: model is imported at a tensor-parallel size" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
