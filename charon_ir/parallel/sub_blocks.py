"""The sub-blocks of a transformer layer that Megatron-Core's selective
recomputation names (`--recompute-modules`), found in a forward layer body from
the data flow and op kinds, never from the model's parameter names.

A layer body is the block of a forward `sim.repeat` (one or more layers: GPT-OSS
repeats a two-layer period). Its residual norms are the norms (`sim.norm`,
`fused.rms_norm`, `fused.layer_norm`) whose input has the type of the carried
hidden state; they cut the body into blocks: from a residual norm's output to
the residual add that the next residual norm reads (the body's carried result
after the last one). A block holding a `sim.attention` is an attention block,
any other an MLP block (a MoE block when it holds a `sim.moe_dispatch`).

Per module (Megatron-Core `TransformerConfig.recompute_modules`):
- layernorm: the residual norms (`input_layernorm`, `pre_mlp_layernorm`).
- mla_up_proj: in an attention block, the ops between the first GEMMs from the
  norm (the down projections) and the attention's q, k, v: the latent norms, the
  up projections, RoPE and the concatenations (Multi-Latent Attention; nothing
  in a block whose q, k, v come from one GEMM).
- mlp: a dense MLP block whole (Megatron-Core skips MoE layers).
- moe: a MoE block whole (router, dispatch, experts, combine, shared experts).
- moe_act: in a MoE block, the non-GEMM ops between the experts' first and
  second GEMMs (the activation).
- shared_experts: in a MoE block, what neither feeds nor reads the routed
  experts' combine (the shared experts' MLP), when it holds a GEMM.
- core_attn is the recompute pass's attention-core rewrite, not a block here.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from charon_ir.dialects import sim
from charon_ir.memory.tensors import alias_source, is_alias_op

MODULES = ("core_attn", "layernorm", "mla_up_proj", "mlp", "moe", "moe_act", "shared_experts")
"""Megatron-Core's `--recompute-modules` names, in its documentation's order."""

DEFAULT_MODULES = ("core_attn",)
"""Megatron-Core's `recompute_modules` default (`recompute_granularity=selective`
recomputes the attention core)."""

NORM_CALLEES = (sim.GenericCallee.FUSED_RMS_NORM, sim.GenericCallee.FUSED_LAYER_NORM)


def _root(value: SSAValue) -> SSAValue:
    while (src := alias_source(value)) is not None:
        value = src
    return value


def _is_norm(op: Operation) -> bool:
    return isinstance(op, sim.NormOp) or sim.is_generic(op, *NORM_CALLEES)


def _normalised(op: Operation) -> SSAValue:
    """A norm's normalised output: its largest result (the others are per-row
    statistics)."""
    return max(op.results, key=lambda r: sim.numel(r.type) if isinstance(r.type, TensorType) else 0)


def _descendants(block: Block, roots: Iterable[SSAValue]) -> set[Operation]:
    """Ops of `block` that read `roots`, directly or through other ops."""
    found: set[Operation] = set()
    work = list(roots)
    while work:
        for use in list(work.pop().uses):
            op = block.find_ancestor_op_in_block(use.operation)
            if op is None or op in found or isinstance(op, sim.YieldOp):
                continue
            found.add(op)
            work.extend(op.results)
    return found


def _ancestors(block: Block, roots: Iterable[SSAValue]) -> set[Operation]:
    """Ops of `block` that `roots` are computed from, the roots' owners included."""
    found: set[Operation] = set()
    work = list(roots)
    while work:
        owner = work.pop().owner
        if not isinstance(owner, Operation) or owner.parent_block() is not block or owner in found:
            continue
        found.add(owner)
        work.extend(owner.operands)
    return found


class LayerBlocks:
    """The residual blocks of one forward layer body."""

    def __init__(self, body: Block, carried: SSAValue, carried_out: SSAValue):
        self.body = body
        norms = [
            op for op in body.ops
            if _is_norm(op) and op.operands and op.operands[0].type == carried.type
        ]
        ends = [_root(n.operands[0]) for n in norms[1:]] + [_root(carried_out)]
        self.blocks: list[tuple[Operation, set[Operation]]] = []
        """(residual norm, the block's ops: from the norm's output to its
        residual add, both excluded)."""
        for norm, end in zip(norms, ends):
            if not isinstance(end.owner, Operation):
                continue
            ops = _descendants(body, [_normalised(norm)]) & _ancestors(body, [end])
            ops.discard(end.owner)
            self.blocks.append((norm, ops))

    @staticmethod
    def attention_of(ops: set[Operation]) -> sim.AttentionOp | None:
        return next((o for o in ops if isinstance(o, sim.AttentionOp)), None)

    @staticmethod
    def dispatch_of(ops: set[Operation]) -> sim.MoeDispatchOp | None:
        return next((o for o in ops if isinstance(o, sim.MoeDispatchOp)), None)

    def module_ops(self, module: str) -> set[Operation]:
        """The ops of `module` in this body (empty where the body has none)."""
        found: set[Operation] = set()
        for norm, ops in self.blocks:
            attention = self.attention_of(ops)
            dispatch = self.dispatch_of(ops)
            if module == "layernorm":
                found.add(norm)
            elif module == "mla_up_proj" and attention is not None:
                found |= self._up_projection(norm, attention, ops)
            elif module == "mlp" and attention is None and dispatch is None:
                found |= ops
            elif module == "moe" and dispatch is not None:
                found |= ops
            elif module == "moe_act" and dispatch is not None:
                found |= self._expert_activation(dispatch, ops)
            elif module == "shared_experts" and dispatch is not None:
                found |= self._shared_experts(ops)
        return found

    def _up_projection(self, norm: Operation, attention: sim.AttentionOp, ops: set[Operation]) -> set[Operation]:
        to_qkv = ops & _ancestors(self.body, [attention.q, attention.k, attention.v])
        to_qkv.discard(attention)
        gemms = [o for o in to_qkv if isinstance(o, sim.MatmulOp)]
        down = [g for g in gemms if not any(
            o in to_qkv for o in _ancestors(self.body, g.operands) if isinstance(o, sim.MatmulOp) and o is not g)]
        after_down = _descendants(self.body, [r for g in down for r in g.results]) & to_qkv
        if not any(isinstance(o, sim.MatmulOp) for o in after_down):
            return set()  # q, k, v straight from their projections: no latent to expand
        return after_down

    def _expert_activation(self, dispatch: sim.MoeDispatchOp, ops: set[Operation]) -> set[Operation]:
        combines = [o for o in ops if isinstance(o, sim.MoeCombineOp)]
        experts = _descendants(self.body, dispatch.results) & _ancestors(
            self.body, [c.operands[0] for c in combines])
        gemms = [o for o in experts if isinstance(o, sim.MatmulOp)]
        after_first = _descendants(self.body, [r for g in gemms for r in g.results])
        before_second = _ancestors(self.body, [v for g in gemms for v in g.operands])
        return {
            o for o in experts & after_first & before_second
            if not isinstance(o, sim.MatmulOp) and not is_alias_op(o)
        }

    def _shared_experts(self, ops: set[Operation]) -> set[Operation]:
        combines = [o for o in ops if isinstance(o, sim.MoeCombineOp)]
        routed = _ancestors(self.body, [r for c in combines for r in c.results]) | _descendants(
            self.body, [r for c in combines for r in c.results])
        shared = {o for o in ops - routed if not is_alias_op(o)}
        if not any(isinstance(o, sim.MatmulOp) for o in shared):
            return set()
        return shared


def with_views(body: Block, ops: set[Operation]) -> set[Operation]:
    """`ops` and the views of their results (which share their storage)."""
    found = set(ops)
    for op in body.ops:
        if op not in found and is_alias_op(op) and isinstance(op.operands[0], SSAValue) and (
            op.operands[0].owner in found
        ):
            found.add(op)
    return found


def is_body_argument(value: SSAValue, body: Block) -> bool:
    return isinstance(value, BlockArgument) and value.owner is body
