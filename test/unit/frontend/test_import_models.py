"""The frontend's promises on real model configs: exact parameter counts, forward
FLOPs per token against the closed form, backward = 2x forward matmul FLOPs, a
small IR, heterogeneous and MoE stacks kept structured."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from charon_ir.dialects import sim
from charon_ir.frontend import forward_flops, mtp_param_count, op_count, param_count, parse_ir, phase_flops

SEQ = 128  # a multiple of every model's experts / top-k, so expert buffers are exact

MODELS = [
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3", "deepseek-v2-lite", "gpt3-175b",
    "nemotron-4-340b", "gpt-oss-120b",
]


def raw_config(name: str) -> dict:
    text = resources.files("charon_ir.frontend").joinpath("models", f"{name}.json").read_text()
    return json.loads(text)


def closed_form_flops_per_token(cfg: dict, seq_len: int) -> float:
    """2 x active parameters (those that multiply, so without the rows an embedding
    lookup only reads) + causal attention: per layer and token 2 * heads *
    (qk_dim + v_dim) * (seq_len + 1) / 2 score pairs."""
    hidden = cfg.get("hidden_size") or cfg["n_embd"]
    heads = cfg.get("num_attention_heads") or cfg["n_head"]
    layers = cfg.get("num_hidden_layers") or cfg["n_layer"]
    lookup_only = 0 if cfg.get("tie_word_embeddings") else cfg["vocab_size"] * hidden
    if cfg["model_type"] == "gpt2":
        lookup_only += cfg["n_positions"] * hidden  # learned positions
    if "qk_nope_head_dim" in cfg:  # MLA
        qk, v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    else:
        qk = v = cfg.get("head_dim") or hidden // heads
    attention = layers * 2 * heads * (qk + v) * (seq_len + 1) / 2
    depth = cfg.get("num_nextn_predict_layers", 0)
    mtp = depth * mtp_flops_per_token(cfg, seq_len) if depth else 0.0
    return 2 * (cfg["_derived"]["activated_params_per_token"] - lookup_only) + attention + mtp


def mtp_flops_per_token(cfg: dict, seq_len: int) -> float:
    """One multi-token-prediction module of DeepSeek-V3 (MLA, an MoE block): 2 x
    (its projection 2h -> h, the block's activated weights, the shared LM head)
    + one layer's causal attention. Not in `_derived`, which counts HF's model."""
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    q_lora, kv_lora = cfg["q_lora_rank"], cfg["kv_lora_rank"]
    attention_weights = (h * q_lora + q_lora * heads * (nope + rope) + h * (kv_lora + rope)
                         + kv_lora * heads * (nope + v) + heads * v * h)
    experts = cfg["num_experts_per_tok"] + cfg["n_shared_experts"]
    moe_weights = cfg["n_routed_experts"] * h + experts * 3 * h * cfg["moe_intermediate_size"]
    multiplied = 2 * h * h + attention_weights + moe_weights + cfg["vocab_size"] * h
    return 2 * multiplied + 2 * heads * (nope + rope + v) * (seq_len + 1) / 2


@pytest.mark.parametrize("name", MODELS)
def test_parameter_count_is_exact(imported, name):
    result = imported(name, seq_len=SEQ)
    expected = raw_config(name)["_derived"]["total_params"]
    assert result.hf_param_count == expected
    # DeepSeek-V3's multi-token-prediction module: trained, not built by transformers
    assert param_count(result.module) - mtp_param_count(result.module) == expected


@pytest.mark.parametrize("name", MODELS)
def test_forward_flops_match_closed_form(imported, name):
    module = imported(name, seq_len=SEQ).module
    per_token = forward_flops(module) / SEQ
    expected = closed_form_flops_per_token(raw_config(name), SEQ)
    assert per_token == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("name", MODELS)
def test_backward_matmuls_cost_twice_the_forward(imported, name):
    module = imported(name, seq_len=SEQ).module
    fwd = phase_flops(module, "forward", sim.MatmulOp)
    bwd = phase_flops(module, "backward", sim.MatmulOp)
    assert bwd == pytest.approx(2 * fwd, rel=1e-9)
    # and one opaque attention op forward, one backward, per distinct layer
    n_att = sum(isinstance(op, sim.AttentionOp) for op in module.walk())
    n_grad = sum(isinstance(op, sim.AttentionGradOp) for op in module.walk())
    assert n_att == n_grad >= 1


@pytest.mark.parametrize("name", MODELS)
def test_ir_round_trips_through_text(imported, name):
    result = imported(name, seq_len=SEQ)
    text = str(result.module)
    again = parse_ir(text)
    again.verify()
    assert param_count(again) == param_count(result.module)
    assert forward_flops(again) == pytest.approx(forward_flops(result.module))


def test_405b_is_small(imported):
    module = imported("llama-3.1-405b", seq_len=SEQ).module
    assert op_count(module) <= 3000
    repeats = [op for op in module.walk() if isinstance(op, sim.RepeatOp)]
    assert [r.trip_count for r in repeats] == [126, 126]
    assert [bool(r.reverse) for r in repeats] == [False, True]


def test_gqa_shapes_are_kept(imported):
    module = imported("llama-3.1-8b", seq_len=SEQ).module
    (att,) = [op for op in module.walk() if isinstance(op, sim.AttentionOp)]
    assert sim.shape_of(att.q) == (1, SEQ, 32, 128)
    assert sim.shape_of(att.k) == (1, SEQ, 8, 128)
    assert att.causal is not None


def test_optimizer_updates_every_weight(imported):
    module = imported("llama-3.1-8b", seq_len=SEQ).module
    (step,) = [op for op in module.walk() if isinstance(op, sim.OptimizerStepOp)]
    assert step.kind.data == "adamw"
    assert step.num_elements() == param_count(module)


def test_deepseek_dense_then_moe_layers(imported):
    module = imported("deepseek-v3", seq_len=SEQ).module
    forward = next(op for op in module.walk() if isinstance(op, sim.PhaseOp) and op.kind.data == "forward")
    counts = [op.trip_count for op in forward.walk() if isinstance(op, sim.RepeatOp)]
    assert counts == [3, 58]
    names = {op.sym_name.data for op in module.walk() if isinstance(op, sim.ParamOp)}
    # MLA keeps its low-rank projections
    for proj in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"):
        assert f"model.layers[3:61].self_attn.{proj}.weight" in names
    # MoE keeps router, experts (stacked per expert) and shared experts
    assert "model.layers[3:61].mlp.gate.weight" in names
    assert "model.layers[3:61].mlp.experts.gate_up_proj" in names
    assert "model.layers[3:61].mlp.shared_experts.down_proj.weight" in names
    assert "model.layers[0:3].mlp.gate_proj.weight" in names
    kinds = {op.name for op in forward.walk()}
    assert {"sim.topk", "sim.moe_dispatch", "sim.moe_combine"} <= kinds


def test_moe_experts_are_batched_matmuls(imported):
    module = imported("mixtral-8x7b", seq_len=SEQ).module
    (dispatch,) = [op for op in module.walk() if isinstance(op, sim.MoeDispatchOp)
                   and isinstance(op.parent_op(), sim.RepeatOp) and not op.parent_op().reverse]
    # 128 tokens x top-2 over 8 experts: 32 tokens per expert
    assert sim.shape_of(dispatch.result) == (8, 32, 4096)
    expert_mms = [op for op in module.walk() if isinstance(op, sim.MatmulOp) and len(sim.shape_of(op.rhs)) == 3]
    assert len(expert_mms) == 2 + 4  # gate_up and down forward; dX and dW of each backward


def test_summary_lists_what_maps_to_nothing(imported):
    result = imported("llama-3.1-8b", seq_len=SEQ)
    attrs = result.module.attributes
    assert "aten.view" in attrs[sim.FREE_OPS_ATTR].data
    assert "aten.nll_loss_forward" in attrs[sim.GENERIC_OPS_ATTR].data


@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_complex_rotary_tables_trace_in_serving_modes(imported, mode):
    """DeepSeek-V2 keeps its rotary table as complex numbers (freqs_cis): one
    complex<f32> table the layers read instead of cos and sin."""
    module = imported("deepseek-v2-lite", seq_len=SEQ, mode=mode).module
    assert any(isinstance(op, sim.RepeatOp) for op in module.walk())
    assert any("complex<f32>" in str(r.type) for op in module.walk() for r in op.results)


def test_saved_tensors_are_kept_once(imported):
    """aot_autograd saves one view per consumer (q, k and v each get the normed
    input): the frontend merges them, so every phase and repeat yields a value
    once and every repeat slices a stack once."""
    module = imported("llama-3.1-8b", seq_len=SEQ).module
    for op in module.walk():
        if isinstance(op, (sim.PhaseOp, sim.RepeatOp)):
            values = list(op.body.block.last_op.operands)
            assert len(values) == len(set(values)), op.name
        if isinstance(op, sim.RepeatOp):
            assert len(op.slices) == len(set(op.slices))
    views = [(op.input, op.result.type, op.parent_block()) for op in module.walk() if isinstance(op, sim.ViewOp)]
    assert len(views) == len(set(views))


def test_loss_reads_one_logit_per_token(imported):
    """nll_loss_forward gathers the target class's log-probability of each token:
    its bytes count one element per row of the log-probabilities, the targets
    and the result, not the whole vocabulary."""
    module = imported("llama-3.1-8b", seq_len=SEQ).module
    (loss,) = [op for op in module.walk()
               if isinstance(op, sim.GenericOp) and op.callee.data == "aten.nll_loss_forward"]
    logp, target = loss.inputs[0], loss.inputs[1]
    rows = sim.numel(logp) // logp.type.get_shape()[-1]
    row_bytes = sim.tensor_bytes(logp) / sim.numel(logp) * rows
    expected = row_bytes + sim.tensor_bytes(target) + sum(sim.tensor_bytes(r) for r in loss.results)
    assert loss.bytes_moved() == pytest.approx(expected)
    assert loss.bytes_moved() < sim.tensor_bytes(logp) / 1000
