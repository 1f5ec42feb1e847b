"""The analytic engine: it knows every op, so it ends every engine chain.

Compute ops: a roofline with size-dependent efficiency,

    time = max(FLOPs / (peak x eff_compute(shape)), bytes / (HBM x eff_mem(bytes)))

never below one kernel's floor (`compute_efficiency.KERNEL_FLOOR_S`). GEMMs and
attention run on the tensor cores with the efficiency curves of
`compute_efficiency`; everything else runs on the vector units.

Collectives: the fastest NCCL-like plan over the links the group crosses in the
target's cluster (`collectives.collective_plan`); a target without a cluster
file stands for the GPU table's usual node on a non-blocking network.

The `time_s` functions below are what the engine and `charon calibrate` share.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from charon_ir.dialects.coll import CollectiveOp, RecvOp, SendOp
from charon_ir.dialects.sim import (
    AttentionGradOp,
    AttentionOp,
    ComputeOp,
    GenericOp,
    MatmulOp,
    shape_of,
)
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.engines.collectives import CollectivePlan, cached_plan
from charon_ir.engines.compute_efficiency import (
    DEFAULT_ATTENTION_KERNEL,
    GEMM_MAX_DEFAULT,
    KERNEL_FLOOR_S,
    VECTOR_MAX,
    attention_efficiency,
    gemm_efficiency,
    memory_efficiency,
)
from charon_ir.target.hardware import GpuSpec
from charon_ir.target.target import Target
from charon_ir.target.topology import group_ranks


def compute_dtype(op: Operation) -> str:
    for v in op.operands:
        if isinstance(v.type, TensorType):
            return str(v.type.element_type)
    return "bf16"


def ring_steps(op: CollectiveOp, n: int) -> int:
    if isinstance(op, (SendOp, RecvOp)):
        return 1
    if op.op_kind() == "all_reduce":
        return 2 * (n - 1)
    return n - 1


def memory_time_s(gpu: GpuSpec, nbytes: float) -> float:
    return nbytes / (gpu.hbm_bandwidth * memory_efficiency(nbytes)) if nbytes > 0 else 0.0


def roofline_time_s(compute_s: float, memory_s: float) -> float:
    return max(compute_s, memory_s, KERNEL_FLOOR_S)


def matmul_time_s(gpu: GpuSpec, dtype: str, batch: int, m: int, n: int, k: int,
                  nbytes: float) -> float:
    flops = 2.0 * batch * m * n * k
    if flops == 0:
        return roofline_time_s(0.0, memory_time_s(gpu, nbytes))
    eff = gemm_efficiency(gpu, batch, m, n, k)
    return roofline_time_s(flops / (gpu.peak(dtype) * eff), memory_time_s(gpu, nbytes))


def attention_time_s(
    gpu: GpuSpec,
    dtype: str,
    batch: int,
    heads: int,
    sq: int,
    skv: int,
    head_dim: int,
    flops: float,
    nbytes: float,
    causal: bool,
    backward: bool,
    flash: bool = True,
    kernel: str = DEFAULT_ATTENTION_KERNEL,
    group: int = 1,
) -> float:
    """`group`: query heads per kv head (GQA)."""
    if flash:
        eff = attention_efficiency(
            gpu, batch, heads, sq, skv, head_dim, causal, backward, kernel, group
        )
    else:
        # unfused: two batched GEMMs around a softmax that goes through HBM
        eff = gemm_efficiency(gpu, batch * heads, sq, skv, head_dim)
    return roofline_time_s(flops / (gpu.peak(dtype) * eff), memory_time_s(gpu, nbytes))


def vector_time_s(gpu: GpuSpec, flops: float, nbytes: float) -> float:
    return roofline_time_s(flops / (gpu.vector_peak * VECTOR_MAX), memory_time_s(gpu, nbytes))


class AnalyticEngine(CostEngine):
    name = "analytic"

    def price(self, op: Operation, target: Target) -> Cost | None:
        if isinstance(op, ComputeOp):
            return self.price_compute(op, target)
        if isinstance(op, CollectiveOp):
            return self.price_collective(op, target)
        return None

    def price_compute(self, op: ComputeOp, target: Target) -> Cost:
        gpu = target.gpu
        flops, nbytes = op.flops(), op.bytes_moved()
        dtype = compute_dtype(op)
        if isinstance(op, MatmulOp):
            batch, m, n, k = op.gemm_dims()
            time = matmul_time_s(gpu, dtype, batch, m, n, k, nbytes)
        elif isinstance(op, (AttentionOp, AttentionGradOp)):
            b, sq, hq, d = shape_of(op.q)
            _, skv, hkv, _ = shape_of(op.k)
            time = attention_time_s(
                gpu, dtype, b, hq, sq, skv, d, flops, nbytes,
                causal=op.causal is not None,
                backward=isinstance(op, AttentionGradOp),
                flash=op.flash is not None,
                group=hq // max(1, hkv),
            )
        elif isinstance(op, GenericOp) and nbytes and flops / nbytes > 50:
            # an unnamed op dense enough to be a contraction: tensor cores at a
            # typical GEMM efficiency
            time = roofline_time_s(
                flops / (gpu.peak(dtype) * GEMM_MAX_DEFAULT), memory_time_s(gpu, nbytes)
            )
        else:
            time = vector_time_s(gpu, flops, nbytes)
        return Cost(time, flops, nbytes, self.name)

    def price_collective(self, op: CollectiveOp, target: Target) -> Cost:
        plan = collective_plan_of(op, target)
        return Cost(plan.time_s, 0.0, op.ring_bytes_per_rank(), self.name)


def collective_plan_of(op: CollectiveOp, target: Target) -> CollectivePlan:
    """The plan the engine prices `op` with, for the group that holds rank 0:
    algorithm, protocol, bytes per rank on each link class, time. The runtime
    re-times it when groups share links."""
    n = op.group_size()
    kind = op.op_kind()
    sizes = op.lookup_grid().axis_sizes()
    ranks = group_ranks(sizes, op.axis_names())
    if isinstance(op, SendOp):
        ranks = (ranks[0], ranks[op.shift.value.data % n])
        if ranks[0] == ranks[1]:
            ranks = ranks[:1]
    if isinstance(op, RecvOp):
        kind = "recv"  # the sender is charged
    return cached_plan(kind, op.payload_bytes(), ranks, target.topology)
