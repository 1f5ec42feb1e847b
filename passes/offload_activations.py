"""
CPU activation offloading: Megatron-Core's `--cpu-offloading` with
`--cpu-offloading-num-layers N` (TransformerConfig `cpu_offloading`,
`cpu_offloading_num_layers`; NeMo's `cpu_offloading`, `cpu_offloading_num_layers`).

Options:
- layers: how many of the step's first layers keep the activations their
  forward saves for the backward in host memory (default 0: none, the pass
  changes nothing).

Megatron-Core wraps each layer of its TransformerBlock in Transformer Engine's
CPU offload context (`get_cpu_offload_context(cpu_offloading,
cpu_offloading_num_layers, num_layers, ...)`, transformer_block.py); TE's
`AsyncDoubleBufferGroupOffloadHandler` copies the tensors layer i < N saves to
pinned host memory on a copy stream after its forward, frees them on the GPU
once the copy is done, and copies them back ahead of its backward. The layers
offloaded are the first N of the block, counted across the step's layer repeats
in order. Each forward layer repeat of the step, and its reverse twin in the
backward, is marked `sim.cpu_offload = #sim.cpu_offload<layers, first,
chunk_layers, chunk_offloaded>`: memory-analysis keeps those layers' saved bytes
off the GPU but for the one in flight, and lower-to-events times the copies.

Refused as Megatron-Core's TransformerConfig refuses it (transformer_config.py,
`__post_init__`): N >= the step's layers ("CPU offloading can be done only for
layers less than num_layers"), pipeline parallelism ("no support for Pipeline
parallelism with CPU offloading"), and activation recomputation ("CPU offloading
does not work when activation recomputation is enabled"); also a step without a
backward (nothing is saved) or without a layer repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from charon_ir.dialects import sim
from charon_ir.dialects.sim import CPU_OFFLOAD_ATTR, PIPELINE_ATTR, RECOMPUTE_POLICY_ATTR
from charon_ir.errors import CharonError


@dataclass
class MarkOffloadedLayers(RewritePattern):
    """On a training step's forward phase: mark each layer repeat with its share
    of the step's first `layers` layers (0 past them), and its reverse twin."""

    layers: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.PhaseOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != sim.PhaseKind.FORWARD:
            return
        pairs = sim.layer_repeat_pairs(op.parent_block())  # pyright: ignore[reportArgumentType]
        if not pairs or any(CPU_OFFLOAD_ATTR in f.attributes for f, _ in pairs):
            return
        total = sum(f.trip_count for f, _ in pairs)
        first = 0
        for forward, backward in pairs:
            # a repeat past the offloaded layers is marked too (layers = 0): its
            # layers still wait for copies (the windows spread over the chunk)
            share = min(max(0, self.layers - first), forward.trip_count)
            mark = sim.CpuOffloadAttr(share, first, total, self.layers)
            for rep in (forward, backward):
                rep.attributes[CPU_OFFLOAD_ATTR] = mark
                rewriter.notify_op_modified(rep)
            first += forward.trip_count


@dataclass(frozen=True)
class OffloadActivationsPass(ModulePass):
    name = "offload-activations"

    layers: int = 0

    def check(self, module: ModuleOp) -> None:
        """Megatron-Core's refusals (module docstring), as one line each."""
        pipeline = module.attributes.get(PIPELINE_ATTR)
        if isinstance(pipeline, sim.PipelineAttr) and pipeline.pp.data > 1:
            raise CharonError(f"offload-activations: Megatron-Core has no CPU offloading under pipeline "
                              f"parallelism (pp = {pipeline.pp.data}); use pp = 1")
        policy = module.attributes.get(RECOMPUTE_POLICY_ATTR)
        if isinstance(policy, sim.RecomputePolicyAttr) and policy.data != sim.RecomputePolicy.NONE:
            raise CharonError(f"offload-activations: Megatron-Core's CPU offloading does not work when "
                              f"activation recomputation is enabled (recompute policy {policy.data})")
        for step in sim.step_blocks(module):
            phases = sim.phases_of(step)
            if sim.PhaseKind.BACKWARD not in phases:
                raise CharonError("offload-activations: the step has no backward phase: a forward-only step "
                                  "saves no activations to offload")
            pairs = sim.layer_repeat_pairs(step)
            if not pairs:
                raise CharonError("offload-activations: the step has no forward sim.repeat of layers whose "
                                  "saved outputs a reverse sim.repeat in backward reads")
            total = sum(f.trip_count for f, _ in pairs)
            if self.layers >= total:
                raise CharonError(f"offload-activations: option 'layers' ({self.layers}) must be less than "
                                  f"the step's {total} layers (Megatron-Core keeps the last layer's on the GPU)")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.layers < 0:
            raise CharonError(f"offload-activations: option 'layers' must be >= 0, got {self.layers}")
        if self.layers == 0:
            return
        self.check(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MarkOffloadedLayers(self.layers)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
