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

from dataclasses import replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from charon_ir.dialects.coll import AllGatherOp, AllReduceOp, AllToAllOp, CollectiveOp, RecvOp, ReduceScatterOp, SendOp
from charon_ir.dialects.sim import (
    AttentionGradOp,
    AttentionOp,
    ComputeOp,
    CostAttr,
    ElementwiseKind,
    ElementwiseOp,
    GenericOp,
    MatmulOp,
    TP_COMM_OVERLAP_ATTR,
    ViewOp,
    numel,
    shape_of,
)
from charon_ir.engines.base import Cost, CostEngine
from charon_ir.engines.collectives import CollectivePlan, TokenRoute, cached_plan
from charon_ir.engines.compute_efficiency import (
    DEFAULT_ATTENTION_KERNEL,
    GEMM_MAX_DEFAULT,
    KERNEL_FLOOR_S,
    VECTOR_MAX,
    attention_efficiency,
    gemm_efficiency,
    gemm_max_fp8,
    memory_efficiency,
)
from charon_ir.profile.key import is_free_view
from charon_ir.target.hardware import GpuSpec, check_fp8
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
    if isinstance(op, AllReduceOp):
        return 2 * (n - 1)
    return n - 1


def memory_time_s(gpu: GpuSpec, nbytes: float) -> float:
    return nbytes / (gpu.hbm_bandwidth * memory_efficiency(nbytes, gpu)) if nbytes > 0 else 0.0


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
    if not flash:
        return unfused_attention_time_s(gpu, dtype, batch, heads, sq, skv, head_dim, backward)
    eff = attention_efficiency(
        gpu, batch, heads, sq, skv, head_dim, causal, backward, kernel, group
    )
    return roofline_time_s(flops / (gpu.peak(dtype) * eff), memory_time_s(gpu, nbytes))


UNFUSED_MASK_BYTES = 1
"""Bytes per score element of the attention-dropout mask (torch's dropout keeps a
bool mask). Pre-FlashAttention stacks that materialised the scores (Megatron-LM
2019-2022: `--attention-dropout` 0.1 by default; GPT-2/GPT-3: `attn_pdrop` 0.1)
ran dropout on the attention probabilities."""


def unfused_attention_kernels(
    batch: int, heads: int, sq: int, skv: int, head_dim: int, backward: bool, elt: int = 2,
) -> list[tuple[tuple[int, int, int, int] | None, float]]:
    """The kernels of Megatron-LM's `CoreAttention` (2019-2022), which writes the
    score matrix to HBM: (batched GEMM dims or None, bytes of score-matrix traffic
    the kernel moves). Causal masking is applied in the softmax, so both GEMMs
    compute the full sq x skv square.

    forward: S = QK^T (writes S); fused scale-mask-softmax (reads S, writes P);
    dropout (reads P, writes P' and its mask); O = P'V (reads P').
    backward: dP' = dO V^T (writes dP'); dropout backward (reads dP' and the mask,
    writes dP); softmax backward (reads dP and P, writes dS); dQ = dS K and
    dK = dS^T Q (each reads dS); dV = P'^T dO (reads P')."""
    bh, e, mask = batch * heads, elt, UNFUSED_MASK_BYTES
    n = float(bh) * sq * skv
    d = head_dim
    if not backward:
        return [
            ((bh, sq, skv, d), n * e),
            (None, 2 * n * e),
            (None, 2 * n * e + n * mask),
            ((bh, sq, d, skv), n * e),
        ]
    return [
        ((bh, sq, skv, d), n * e),
        (None, 2 * n * e + n * mask),
        (None, 3 * n * e),
        ((bh, sq, d, skv), n * e),
        ((bh, skv, d, sq), n * e),
        ((bh, skv, d, sq), n * e),
    ]


def unfused_attention_time_s(
    gpu: GpuSpec, dtype: str, batch: int, heads: int, sq: int, skv: int, head_dim: int,
    backward: bool,
) -> float:
    """Unfused attention: its kernels run one after another, each a roofline of
    its own (the score-matrix GEMMs at K = head_dim are often memory-bound)."""
    elt = 4 if "32" in dtype else 1 if "8" in dtype else 2
    total = 0.0
    for dims, nbytes in unfused_attention_kernels(batch, heads, sq, skv, head_dim, backward, elt):
        if dims is None:
            total += roofline_time_s(0.0, memory_time_s(gpu, nbytes))
        else:
            b, m, n, k = dims
            total += matmul_time_s(gpu, dtype, b, m, n, k, nbytes)
    return total


def attention_kernel_of(op: Operation) -> str:
    """The flash kernel `fuse{attention-kernel=...}` named on the op, else the
    engine's default."""
    kernel = op.kernel if isinstance(op, (AttentionOp, AttentionGradOp)) else None
    return kernel.data.value if kernel is not None else DEFAULT_ATTENTION_KERNEL


def vector_time_s(gpu: GpuSpec, flops: float, nbytes: float) -> float:
    return roofline_time_s(flops / (gpu.vector_peak * VECTOR_MAX), memory_time_s(gpu, nbytes))


def fp8_gemm_target(target: Target, flag: str) -> Target:
    """The target a GEMM run on the fp8 tensor cores is priced on when the IR
    says bf16 (Transformer Engine's `fp8_autocast`, TensorRT-LLM's FP8 GEMMs):
    the GPU's fp8 rate and, for its operands of one byte, a doubled HBM
    bandwidth. `flag` names the option asking for it in the error of a GPU
    without fp8 tensor cores."""
    gpu = target.gpu
    check_fp8(gpu, flag)
    f8 = gpu.peak_flops["f8"]
    return replace(target, gpu=replace(gpu, peak_flops={**gpu.peak_flops, "bf16": f8, "f16": f8},
                                       hbm_bandwidth=2.0 * gpu.hbm_bandwidth,
                                       efficiency=replace(gpu.efficiency, gemm_max=gemm_max_fp8(gpu))))


FP8_CAST_BYTES_PER_OPERAND_ELEMENT: dict[str, float] = {
    "delayed": 2.0,
    "current": 3.0,
    "mxfp8": 2.0 + 1 / 32,
    "blockwise": 2.0 + 1 / 128,
}
"""HBM bytes of Transformer Engine's casts per element of a GEMM operand, by fp8
recipe. TE (`transformer_engine/pytorch/module/linear.py`, `_Linear`) casts each
of a linear layer's three 16-bit tensors once, with its transpose, in one kernel
(read 2 bytes, write 1 + 1 per element): the input and the weight in the forward,
the output gradient in the backward. Each of them feeds two of the layer's three
GEMMs (forward, data gradient, weight gradient), so each GEMM operand carries half
of its cast: 2 bytes. `delayed` scaling takes the scale from the amax history, so
the cast is that one pass; `current` (per-tensor) scaling reduces the tensor's own
amax first, one more 2-byte read (3 bytes per operand element); `mxfp8` (1x32
blocks, Blackwell) and `blockwise` (1x128 / 128x128, DeepSeek-V3) compute each
block's scale inside the cast kernel and write one byte of scale per 32 (128)
elements for each of the two orientations."""

FP8_RECIPES = tuple(FP8_CAST_BYTES_PER_OPERAND_ELEMENT)


def fp8_cast_time_s(op: MatmulOp, gpu: GpuSpec, recipe: str = "delayed",
                    shares: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
    """(seconds, bytes) of Transformer Engine's cast and transpose kernels that
    one fp8 GEMM of a training step carries (FP8_CAST_BYTES_PER_OPERAND_ELEMENT
    of `recipe` per element of each operand, times the operand's share: the part
    of its cast paid per run of the GEMM, below 1 for a weight cast once per step),
    as memory-bound kernels at the GPU's 16-bit HBM bandwidth."""
    lhs, rhs = shares
    nbytes = FP8_CAST_BYTES_PER_OPERAND_ELEMENT[recipe] * (lhs * numel(op.lhs) + rhs * numel(op.rhs))
    return roofline_time_s(0.0, memory_time_s(gpu, nbytes)), nbytes


class AnalyticEngine(CostEngine):
    name = "analytic"

    def price(self, op: Operation, target: Target) -> Cost | None:
        if isinstance(op, ComputeOp):
            return self.price_compute(op, target)
        if isinstance(op, CollectiveOp):
            return self.price_collective(op, target)
        return None

    def price_compute(self, op: ComputeOp, target: Target) -> Cost:
        if is_free_view(op):
            return Cost(0.0, 0.0, 0.0, self.name)  # a view: no kernel runs (as `db` prices it)
        gpu = target.gpu
        flops, nbytes = op.flops(), op.bytes_moved()
        dtype = compute_dtype(op)
        if isinstance(op, MatmulOp):
            batch, m, n, k = op.gemm_dims()
            if op.grouped is not None:
                # one GEMM per expert: each fills its own tiles and waves
                time = batch * matmul_time_s(gpu, dtype, 1, m, n, k, nbytes / batch)
            else:
                time = matmul_time_s(gpu, dtype, batch, m, n, k, nbytes)
        elif isinstance(op, (AttentionOp, AttentionGradOp)):
            b, sq, hq, d = shape_of(op.q)
            _, skv, hkv, _ = shape_of(op.k)
            time = attention_time_s(
                gpu, dtype, b, hq, sq, skv, d, flops, nbytes,
                causal=op.causal is not None,
                backward=isinstance(op, AttentionGradOp),
                flash=op.flash is not None,
                kernel=attention_kernel_of(op),
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
        time = plan.time_s
        if tp_comm_overlap_enabled(op):
            gemms = overlapped_gemms(op)
            if gemms:
                # as priced where cost-annotate priced them first (fp8 GEMMs, the
                # profile database), else this engine's own bf16 price
                gemm_s = sum(self.price_compute(g, target).time_s if (t := priced_time_s(g)) is None
                             else t for g in gemms)
                time = overlapped_comm_time_s(time, gemm_s, op.group_size())
        return Cost(time, 0.0, op.ring_bytes_per_rank(), self.name)


# ---------------------------------------------------------------------------
# Tensor-parallel communication overlapped with GEMMs (--tp-comm-overlap)
# ---------------------------------------------------------------------------


def tp_comm_overlap_enabled(op: CollectiveOp) -> bool:
    if not isinstance(op, (AllGatherOp, ReduceScatterOp)) or op.axis_names() != ["tp"]:
        return False
    top = op.get_toplevel_object()
    return isinstance(top, Operation) and TP_COMM_OVERLAP_ATTR in top.attributes


def _through_views(value) -> list:
    """The ops that produce `value`, looking through free layout ops and the sums
    of partial results (an `add` of several GEMMs' outputs)."""
    owner = value.owner
    if isinstance(owner, ViewOp):
        return _through_views(owner.input)
    if isinstance(owner, ElementwiseOp) and owner.kind.data == ElementwiseKind.ADD:
        return [o for v in owner.operands for o in _through_views(v)]
    return [owner]


def _users_through_views(value) -> list:
    out = []
    for use in value.uses:
        user = use.operation
        if isinstance(user, ViewOp):
            out += _users_through_views(user.result)
        else:
            out.append(user)
    return out


def overlapped_gemms(op: CollectiveOp) -> list[MatmulOp]:
    """The GEMMs a sequence-parallel collective overlaps with under Megatron-Core's
    `--tp-comm-overlap` (Transformer Engine userbuffers): an all-gather with the
    GEMMs that consume what it gathers, a reduce-scatter with the GEMMs whose
    partial sums it reduces."""
    if isinstance(op, AllGatherOp):
        ops = [u for r in op.results for u in _users_through_views(r)]
    else:
        ops = [o for v in op.operands for o in _through_views(v)]
    seen: list[MatmulOp] = []
    for o in ops:
        if isinstance(o, MatmulOp) and o not in seen:
            seen.append(o)
    return seen


def priced_time_s(op: Operation) -> float | None:
    """The time of the cost an engine already attached to `op`, if any."""
    for attr in op.attributes.values():
        if isinstance(attr, CostAttr):
            return attr.time_s.data
    return None


def overlapped_comm_time_s(comm_s: float, gemm_s: float, chunks: int) -> float:
    """What a collective pipelined with a GEMM adds to the GEMM's time: both split
    into `chunks` (userbuffers' ring exchange: one chunk per TP rank), chunk i's
    transfer runs beside chunk i-1's GEMM. Pipeline of n stages c = comm/n and
    g = gemm/n: c + g + (n-1) max(c, g) in all, i.e. comm/n beyond the GEMM when
    the GEMM is longer, else comm - gemm (n-1)/n."""
    n = max(1, chunks)
    return max(comm_s / n, comm_s - gemm_s * (n - 1) / n)


def collective_plan_of(op: CollectiveOp, target: Target) -> CollectivePlan:
    """The plan the engine prices `op` with, for the group that holds rank 0:
    algorithm, protocol, bytes per rank on each link class, time. The runtime
    re-times it when groups share links."""
    n = op.group_size()
    kind = op.op_kind()
    sizes = op.lookup_grid().axis_sizes()
    ranks = group_ranks(sizes, op.axis_names(), subgroup=op.subgroup_positions())
    if isinstance(op, SendOp):
        ranks = (ranks[0], ranks[op.shift.value.data % n])
        if ranks[0] == ranks[1]:
            ranks = ranks[:1]
    if isinstance(op, RecvOp):
        kind = "recv"  # the sender is charged
    route = token_route(op) if isinstance(op, AllToAllOp) else None
    return cached_plan(kind, op.payload_bytes(), ranks, target.topology, route)


def token_route(op: AllToAllOp) -> TokenRoute | None:
    """How an all_to_all of MoE tokens runs, from its routing attributes; None
    for a plain all_to_all."""
    experts = op.routed_experts()
    if experts is None or (op.top_k is None and op.token_replicas is None):
        return None

    def value(attr) -> int:
        return attr.value.data if attr is not None else 0

    return TokenRoute(
        experts, value(op.top_k), value(op.groups), value(op.groups_per_token),
        max(1, value(op.token_replicas)), to_experts=op.split_axis.value.data == 0,
    )
