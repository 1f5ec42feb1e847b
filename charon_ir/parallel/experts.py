"""Routed-expert weights, recognised by their role (`#sim.role<expert>`, set by
the frontend) and split (`#sim.split<column|row>`), never by their name: which
dim holds the experts and which the ffn. Shared by shard-expert, shard-tensor,
data-parallel and the memory model (which shards their optimizer states over
the expert data-parallel group); a leaf, so the memory model needs no pass."""

from __future__ import annotations

from xdsl.ir import SSAValue

from charon_ir.dialects import sim
from charon_ir.dialects.sim import ParamRole, WeightSplit


def expert_weight_dims(param: sim.ParamOp, out_first: bool = True) -> tuple[int, int | None] | None:
    """(experts dim, ffn dim) of a routed-expert weight ([E, out, in]; [E, in, out]
    where a matmul reads it [in, out], `out_first` False: GPT-OSS's) or of a
    bias ([E, out]), or None for any other parameter. The ffn dim is the out
    features of a column weight or bias, the in features of a row weight; None
    for a row weight's bias (added after the all-reduce, whole) or an expert of
    no split. Shared experts (role `shared_expert`) are dense MLPs, not matched."""
    if param.param_role() != ParamRole.EXPERT:
        return None
    lead = 1 if param.is_stacked() else 0
    rank = len(sim.shape_of(param.result)) - lead
    split = param.weight_split()
    if rank == 2:
        return lead, lead + 1 if split == WeightSplit.COLUMN else None
    if rank != 3:
        return None
    column, row = (lead + 1, lead + 2) if out_first else (lead + 2, lead + 1)
    if split == WeightSplit.COLUMN:
        return lead, column
    return lead, row if split == WeightSplit.ROW else None


def is_expert_weight(value: SSAValue) -> bool:
    """Whether `value` is a routed-expert parameter (its states shard over the
    expert data-parallel group, its gradients reduce there)."""
    owner = value.owner
    return isinstance(owner, sim.ParamOp) and expert_weight_dims(owner) is not None
