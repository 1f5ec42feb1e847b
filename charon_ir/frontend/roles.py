"""What each parameter is in the model, read once, here, from its Hugging Face
(or Megatron-Core) name: the frontend tags every `sim.param` with a
`#sim.role<...>` (`sim.ParamRole`) and the passes read the role, never the name.

The names below are the ones the passes recognised before roles existed (the
vocabulary tables tensor parallelism splits, the stacked routed experts expert
parallelism splits), so an imported module is split exactly as before. A name
matches nothing here: the parameter's role is `other`, which no pass treats as
a table, an expert or a router.
"""

from __future__ import annotations

import re

from charon_ir.dialects.sim import ParamRole, WeightSplit

EMBEDDING_MODULES = frozenset({"embed_tokens", "wte", "word_embeddings", "embed_in"})
"""Token embedding tables ([vocab, hidden]): Llama-likes, GPT-2, Bloom/Megatron, GPT-NeoX."""

HEAD_MODULES = frozenset({"lm_head", "embed_out", "output_layer"})
"""Output projections to the vocabulary: HF's, GPT-NeoX's, Megatron-Core's."""

EXPERT_BIASES = {"gate_up_proj_bias": True, "up_proj_bias": True, "down_proj_bias": False}
"""HF's stacked experts' biases ([E, out]) -> whether out is the ffn dim."""

EXPERT_COLUMN = frozenset({"gate_up_proj", "gate_proj", "up_proj", "w1", "w3", "w13_weight"})
"""Stacked expert weights whose out features are the ffn dim (vLLM's `w13_weight`: [E, 2I, h])."""

EXPERT_ROW = frozenset({"down_proj", "w2", "w2_weight"})
"""Stacked expert weights whose in features are the ffn dim (vLLM's `w2_weight`: [E, h, I])."""

EXPERT_MODULES = frozenset({"experts", "routed_experts"})
"""Modules holding stacked expert weights: HF's, vLLM's (`experts.routed_experts`)."""

COLUMN_HEADS = frozenset({"q_proj", "k_proj", "v_proj", "q_b_proj", "kv_b_proj", "query_key_value",
                          "c_attn", "qkv_proj"})
"""Linear modules whose output features are attention heads: split column-wise."""

COLUMN_FFN = frozenset({"gate_proj", "up_proj", "gate_up_proj", "c_fc", "fc1", "w1", "w3", "dense_h_to_4h"})
"""Linear modules whose output features are the ffn dim: split column-wise."""

KV_MODULES = frozenset({"k_proj", "v_proj"})
"""Column modules over the kv heads (GQA)."""

ROW_MODULES = frozenset({"o_proj", "down_proj", "c_proj", "fc2", "w2", "dense", "dense_4h_to_h"})
"""Linear modules split on their input features (the bias, added after the all-reduce, whole)."""

ROW_ATTENTION = frozenset({"o_proj", "dense", "c_proj"})
"""Row modules that are the attention's output projection when under an attention module."""

ROUTER_MODULES = frozenset({"gate", "router"})
"""An MoE block's router (Mixtral/DeepSeek `mlp.gate`, GPT-OSS/Llama 4 `router`)."""

SHARED_EXPERT_MODULES = frozenset({"shared_expert", "shared_experts", "shared_expert_gate"})
ATTENTION_MODULES = frozenset({"self_attn", "attn", "attention", "self_attention", "cross_attn"})
MLP_MODULES = frozenset({"mlp", "feed_forward", "ffn", "block_sparse_moe"})

_NORM = re.compile(r"(norm|^ln(_|$))")
"""A norm's module or a fused norm's parameter (TE's `layer_norm_weight`): q_norm,
input_layernorm, ln_f, final_layernorm, ..."""


def _parts(name: str) -> list[str]:
    """The dotted parts of a name, a stacked name's `[start:end]` dropped
    (`model.layers[0:32].mlp` -> model, layers, mlp)."""
    return [p.split("[", 1)[0] for p in name.split(".")]


def _stacked_expert_dims(name: str, rank: int) -> tuple[int, int | None] | None:
    """(experts dim, ffn dim) of a routed-expert weight named like HF's stacked
    experts (`mlp.experts.gate_up_proj` [E, 2I, h], `mlp.experts.down_proj` [E, h, I])
    or of their biases (`gate_up_proj_bias` [E, 2I]; `down_proj_bias` [E, h], whose
    ffn dim is None), or None. Shared experts (`shared_experts`) are dense MLPs,
    not matched. (Which dim a matmul reads as out is the passes' business:
    `parallel/experts.expert_weight_dims`.)"""
    parts = name.split(".")
    lead = 1 if "[" in name else 0
    if "experts" not in parts:
        return None
    if rank - lead == 2 and parts[-1] in EXPERT_BIASES:
        return lead, lead + 1 if EXPERT_BIASES[parts[-1]] else None
    if rank - lead != 3:
        return None
    last = parts[-1] if parts[-1] not in ("weight", "bias") else parts[-2]
    if last in EXPERT_COLUMN:
        return lead, lead + 1
    if last in EXPERT_ROW:
        return lead, lead + 2
    return None


def param_role(name: str, rank: int) -> ParamRole:
    """The role of the parameter `name` of `rank` dims (stacked ones included)."""
    parts = _parts(name)
    module, kind = (parts[-2], parts[-1]) if len(parts) >= 2 else ("", parts[-1])
    if any(_NORM.search(p) for p in parts[-2:]):
        return ParamRole.NORM
    if kind == "weight" and rank >= 2:
        if module in EMBEDDING_MODULES:
            return ParamRole.EMBEDDING
        if module in HEAD_MODULES:
            return ParamRole.HEAD
    if _stacked_expert_dims(name, rank) is not None:
        return ParamRole.EXPERT
    if any(p in SHARED_EXPERT_MODULES for p in parts):
        return ParamRole.SHARED_EXPERT
    if module in ROUTER_MODULES or kind == "e_score_correction_bias":
        return ParamRole.ROUTER
    if module in COLUMN_HEADS or (module in ROW_ATTENTION and ("attn" in name or "attention" in name)):
        return ParamRole.ATTENTION
    if module in COLUMN_FFN or module in ROW_MODULES:
        return ParamRole.MLP
    if any(p in ATTENTION_MODULES for p in parts):
        return ParamRole.ATTENTION
    if any(p in MLP_MODULES for p in parts):
        return ParamRole.MLP
    return ParamRole.OTHER


def weight_split(name: str, rank: int) -> WeightSplit | None:
    """Where Megatron's tensor parallelism splits the parameter `name` (None:
    nowhere, or on the vocabulary for an embedding or a head): q/k/v, gate and up
    projections column-wise (k and v over the kv heads), output and down
    projections row-wise (their biases whole), the stacked routed experts by
    their gate_up (column) or down (row) projection."""
    parts = _parts(name)
    if len(parts) < 2 or param_role(name, rank) in (ParamRole.EMBEDDING, ParamRole.HEAD):
        return None
    module, kind = parts[-2], parts[-1]
    if module in KV_MODULES:
        return WeightSplit.KV
    if module in COLUMN_HEADS or module in COLUMN_FFN:
        return WeightSplit.COLUMN
    if module in ROW_MODULES:
        return WeightSplit.ROW if kind == "weight" else None
    if module in EXPERT_MODULES and (dims := _stacked_expert_dims(name, rank)) is not None:
        last = kind.removesuffix("_bias")
        return WeightSplit.COLUMN if dims[1] is not None and last in EXPERT_COLUMN else WeightSplit.ROW
    return None
