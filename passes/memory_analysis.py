"""
Peak device memory per pipeline stage, and an OOM diagnostic.

Options:
- limit-gb: the memory of one GPU in GiB; 0 (default) takes the target GPU's HBM
  (`set-target`). With no target and no limit the report is attached unchecked.
- grad-bytes: bytes per gradient element, 2 (bf16, default, the ZeRO paper's
  16 B per parameter) or 4 (fp32 accumulation, as Megatron-LM does).
- fp8: Transformer Engine's fp8 training: a layer value the backward reads only
  as a GEMM operand is saved as its fp8 cast, one byte an element
  (`liveness.fp8_saved_gemm_inputs`; default false).
- fp8-params: the layers' GEMM weights are kept in fp8 (Transformer Engine's fp8
  primary weights: NeMo's `fp8_params`, Megatron's `--fp8-param-gather`), one
  byte an element (default false).
- zero3-live-params: under ZeRO-3, the most parameter elements gathered at once
  (DeepSpeed's `stage3_max_live_parameters` plus its prefetch bucket; a single
  weight larger than it is gathered whole); 0 (default): the largest layer's
  parameters twice, the running layer's and the prefetched one's (FSDP).
- zero3-keep-gathered: under ZeRO-3, the layers' parameters stay gathered from
  their first gather to the end of the step and every gradient accumulates
  unsharded in fp32 until the last backward (FSDP2 under PyTorch's pipelining, as
  torchtitan runs it with pp; `charon_ir.memory.states`; default false).
- keep-stage-outputs: a pipeline stage's output stays until its micro-batch's
  backward (PyTorch's pipelining keeps it in `fwd_cache`); false (default): freed
  once sent, as Megatron-LM's `deallocate_output_tensor` does.
- fp32-param-shards: under ZeRO-3, a parameter's shard is the fp32 master copy
  the optimizer updates (FSDP2's mixed precision casts it to bf16 only for the
  all-gather): the layers' shards count 4 bytes an element and their optimizer
  states no master copy (`charon_ir.memory.states`; default false).

Each layer repeat that offloads (`offload-activations`), and its reverse twin,
gets `sim.cpu_offload_bytes`: the bytes one of its offloaded layers sends to the
host (`liveness.offloaded_layer_bytes`, fp8 casts included), which lower-to-events
copies. Each `sim.stage` (or the module, when the step is not pipelined) gets
`sim.memory`: one dictionary per physical stage it runs, in bytes:
`{stage, params, grads, optimizer, activations, saved_per_microbatch, in_flight,
comm_buffers, peak, top}` (`charon_ir.memory` says how each is counted). A stage
whose peak exceeds the limit is an error naming the stage and its three largest
consumers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass

from charon_ir.dialects import sim
from charon_ir.dialects.sim import CPU_OFFLOAD_BYTES_ATTR, MEMORY_ATTR, TARGET_ATTR
from charon_ir.errors import CharonError
from charon_ir.memory import GIB, analyze_memory
from charon_ir.memory.analysis import stage_roots
from charon_ir.memory.liveness import offloaded_layer_bytes
from charon_ir.parallel.mesh import stage_gpus
from charon_ir.target.target import Target


@dataclass(frozen=True)
class MemoryAnalysisPass(ModulePass):
    name = "memory-analysis"

    limit_gb: float | int = 0
    grad_bytes: int = 2
    fp8: bool = False
    fp8_params: bool = False
    zero3_live_params: int = 0
    zero3_keep_gathered: bool = False
    keep_stage_outputs: bool = False
    fp32_param_shards: bool = False

    def limit_bytes(self, module: ModuleOp) -> float | None:
        if not self.limit_gb >= 0:  # NaN fails too; inf: no limit
            raise CharonError(f"memory-analysis: option 'limit-gb' must be >= 0, got {self.limit_gb}")
        if self.limit_gb > 0:
            return self.limit_gb * GIB
        if TARGET_ATTR not in module.attributes:
            return None
        return Target.from_module(module).gpu.hbm_bytes

    def mark_offload_bytes(self, block: Block) -> None:
        """CPU_OFFLOAD_BYTES_ATTR on the step's layer repeats that offload."""
        pairs = [(f, b) for f, b in sim.layer_repeat_pairs(block) if sim.offloaded_layers(f)]
        if not pairs:
            return
        roots = stage_roots(block, self.fp8)
        for forward, backward in pairs:
            size = IntegerAttr(offloaded_layer_bytes(forward, roots), 64)
            forward.attributes[CPU_OFFLOAD_BYTES_ATTR] = backward.attributes[CPU_OFFLOAD_BYTES_ATTR] = size

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.zero3_live_params < 0:
            raise CharonError(f"memory-analysis: option 'zero3-live-params' must be >= 0, "
                              f"got {self.zero3_live_params}")
        if self.grad_bytes not in (2, 4):
            raise CharonError(f"memory-analysis: option 'grad-bytes' must be 2 or 4, got {self.grad_bytes}")
        limit = self.limit_bytes(op)
        results = {r.stage: r for r in analyze_memory(op, grad_bytes=self.grad_bytes, fp8=self.fp8,
                                                          fp8_params=self.fp8_params,
                                                          zero3_live_params=self.zero3_live_params,
                                                          zero3_keep_gathered=self.zero3_keep_gathered,
                                                          keep_stage_outputs=self.keep_stage_outputs,
                                                          fp32_param_shards=self.fp32_param_shards)}
        stages = [s for s in op.body.block.ops if isinstance(s, sim.StageOp)]
        for block in sim.step_blocks(op):
            self.mark_offload_bytes(block)
        if not stages:
            op.attributes[MEMORY_ATTR] = ArrayAttr([results[0].to_attr()])
        else:
            pp = len(results)
            for stage in stages:
                physical = sorted({v % pp for v in stage.stage_ids()})
                stage.attributes[MEMORY_ATTR] = ArrayAttr([results[p].to_attr() for p in physical])
        if limit is None:
            return
        # on a cluster of several node kinds a stage has its own GPU's memory
        gpus = None if self.limit_gb > 0 else stage_gpus(op)
        limits = {r.stage: gpus[r.stage % len(gpus)].hbm_bytes if gpus else limit
                  for r in results.values()}
        worst = max(results.values(), key=lambda r: (r.peak - limits[r.stage], r.peak, -r.stage))
        if worst.peak > limits[worst.stage]:
            raise CharonError(worst.oom_message(limits[worst.stage]))
