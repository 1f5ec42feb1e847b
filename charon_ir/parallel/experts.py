"""Routed-expert weights recognised by their Hugging Face names: which dim
holds the experts and which the ffn. Shared by shard-expert, shard-tensor,
data-parallel and the memory model (which shards their optimizer states over
the expert data-parallel group); a leaf, so the memory model needs no pass."""

from __future__ import annotations

EXPERT_BIASES = {"gate_up_proj_bias": True, "up_proj_bias": True, "down_proj_bias": False}
"""HF's stacked experts' biases ([E, out]) -> whether out is the ffn dim."""


def expert_weight_dims(name: str, rank: int, out_first: bool = True) -> tuple[int, int | None] | None:
    """(experts dim, ffn dim) of a routed-expert weight named like HF's stacked
    experts (`mlp.experts.gate_up_proj` [E, 2I, h], `mlp.experts.down_proj` [E, h, I];
    [E, h, 2I] and [E, I, h] where a matmul reads them [in, out], `out_first`
    False: GPT-OSS's) or of their biases (`gate_up_proj_bias` [E, 2I];
    `down_proj_bias` [E, h], whose ffn dim is None), or None. Shared experts
    (`shared_experts`) are dense MLPs, not matched."""
    parts = name.split(".")
    lead = 1 if "[" in name else 0
    if "experts" not in parts:
        return None
    if rank - lead == 2 and parts[-1] in EXPERT_BIASES:
        return lead, lead + 1 if EXPERT_BIASES[parts[-1]] else None
    if rank - lead != 3:
        return None
    last = parts[-1] if parts[-1] not in ("weight", "bias") else parts[-2]
    # the ffn dim of a column weight (its out features) and of a row weight (its in features)
    column, row = (lead + 1, lead + 2) if out_first else (lead + 2, lead + 1)
    if last in ("gate_up_proj", "gate_proj", "up_proj", "w1", "w3"):
        return lead, column
    if last in ("down_proj", "w2"):
        return lead, row
    return None
