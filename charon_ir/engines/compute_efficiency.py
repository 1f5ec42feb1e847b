"""
Size-dependent efficiency of GPU kernels: the fraction of dense peak FLOP/s (or of
HBM bandwidth) a kernel of a given shape reaches.

- GEMM: `gemm_max x tile/wave quantisation x K saturation`. Output tiles of the
  best of a few CUTLASS/cuBLAS tile shapes are spread over the SMs in waves; a
  last partial wave and partly filled edge tiles waste issue slots. Each tile
  also pays a fixed prologue/epilogue worth `GEMM_K_OVERHEAD` of K.
- Attention (FlashAttention): `max x d / (d + d0) x useful tiles / (computed
  tiles + overhead per query block) x wave quantisation`. Per (query block, key
  block) tile the matmul work is proportional to the head dim d while the
  softmax (exp, max, rescale on the non-tensor-core units) is not, hence
  d / (d + d0); each query block also loads Q and writes O (a fixed cost worth
  `overhead` key blocks); a causal mask computes the diagonal tiles in full.
- Memory-bound kernels: `mem_max x bytes / (bytes + half)`: small kernels do not
  fill the memory pipeline.

Constants are global per GPU type and kernel: fitted once to the kernel records
of validation/published.json by `charon calibrate --refit`, or a documented
default for GPU types without records (docs/calibration.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from charon_ir.dialects.sim import AttentionKernel
from charon_ir.errors import CharonError
from charon_ir.target.hardware import GpuSpec

# ---------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------

GEMM_TILES: tuple[tuple[int, int, float], ...] = (
    (128, 256, 1.0),
    (256, 128, 1.0),
    (128, 128, 0.95),
    (64, 128, 0.85),
    (64, 64, 0.7),
)
"""(tile M, tile N, relative efficiency): CUTLASS's default Hopper/Ampere tile
shapes; smaller tiles reuse less data per load, hence the lower ceiling."""
GEMM_K_OVERHEAD = 64
"""Prologue + epilogue of one output tile, in units of K (one 64-deep stage)."""

GEMM_SWEEP_K_MAX = 16384
"""The largest K of a maximum-achievable-matmul sweep: ml-engineering's "more
exhaustive search" runs mamf-finder.py over M, N and K in 0-16384 (benchmarks
README); such a sweep holds shapes whose tiles and waves divide exactly, where
the shape factor below is K / (K + overhead). It reports the fastest of 100
iterations per shape, a best case."""

GEMM_MAX: dict[str, float] = {
    "A100-SXM4-80GB": 0.8620,
    "H100-SXM5-80GB": 0.8037,
    "H200-SXM-141GB": 0.8330,
    "B200-SXM-180GB": 0.7786,
    "GB200-per-GPU": 0.7316,
}
"""Peak fraction of an ideally shaped GEMM. A `mamf_*` record is the *best* shape
of a sweep, so no shape of that sweep may be priced above it: the ceiling is the
record's fraction of peak divided by the best shape factor the sweep holds,
K/(K + GEMM_K_OVERHEAD) at GEMM_SWEEP_K_MAX (the highest record of a GPU type
where it has two). Before, the ceiling was fitted to the best shape itself, which
let large-K training GEMMs run 3-5 % above the best matmul ever measured."""
GEMM_MAX_FP8: dict[str, float] = {
    "H100-SXM5-80GB": 1402.6 / 1978.9 / (GEMM_SWEEP_K_MAX / (GEMM_SWEEP_K_MAX + GEMM_K_OVERHEAD)),
    "B200-SXM-180GB": 3432.5 / 4500.0 / (GEMM_SWEEP_K_MAX / (GEMM_SWEEP_K_MAX + GEMM_K_OVERHEAD)),
    "GB200-per-GPU": 3615.6 / 5000.0 / (GEMM_SWEEP_K_MAX / (GEMM_SWEEP_K_MAX + GEMM_K_OVERHEAD)),
}
"""The ceiling of an fp8 GEMM on the fp8 tensor cores, by the rule of GEMM_MAX: the
best fp8 matmul of stas00/ml-engineering's MAMF table (H100 SXM 1402.6 TFLOP/s, B200
3432.5 @ 15360x4096x3072, GB200 3615.6 @ 19456x5120x1536) over the fp8 peak and the
sweep's best shape factor (docs/calibration.md, "FP8 GEMMs"). GPU types without an
fp8 row keep their bf16 ceiling on the fp8 rate."""
GEMM_MAX_DEFAULT = 0.833
"""GPU types without a record: the mean of the A100, H100 and H200 values (the
Blackwell ones, added later, are left out: docs/calibration.md, "Blackwell")."""
SAME_SILICON = {
    "A100-SXM4-40GB": "A100-SXM4-80GB",
    "H800-SXM5-80GB": "H100-SXM5-80GB",
}
"""GPU types whose SMs, clocks and power match a calibrated one (the H800 differs
from the H100 only in NVLink and FP64)."""


def gemm_efficiency(gpu: GpuSpec, batch: int, m: int, n: int, k: int) -> float:
    """Fraction of dense peak a [batch x] M x N x K GEMM reaches."""
    sms = gpu.sm_count or 108
    best = 0.0
    for tm, tn, rel in GEMM_TILES:
        tiles_m, tiles_n = ceil(m / tm), ceil(n / tn)
        ctas = batch * tiles_m * tiles_n
        waves = ceil(ctas / sms)
        wave_eff = ctas / (waves * sms)
        fill = (m * n) / (tiles_m * tm * tiles_n * tn)
        best = max(best, rel * wave_eff * fill)
    k_eff = k / (k + GEMM_K_OVERHEAD)
    return gemm_max(gpu) * best * k_eff


SAME_FP8_TENSOR_CORES = {"H200-SXM-141GB": "H100-SXM5-80GB"}
"""GPU types with no fp8 matmul sweep of their own whose fp8 GEMMs run on a calibrated
type's SMs at its clocks: the H200 is the H100's GH100 at the same 1,980 MHz boost with
more and faster HBM, which a compute-bound fp8 GEMM does not read. Measured on an H200
(test/data/gpu/moe_gemm-h200.json, per-tensor `torch._scaled_mm`, 24 shapes): at the
H100's fp8 ceiling its GEMMs took 0.91-1.76 x the price (layers 1.07-1.19 x); at its own
bf16 ceiling, the fallback before, 1.26-1.55 x per layer."""


def gemm_max_fp8(gpu: GpuSpec) -> float:
    """The ceiling of an fp8 GEMM: the GPU file's `gemm_max` if it states one, else
    GEMM_MAX_FP8 of its calibration (or of the type whose fp8 tensor cores it
    shares, SAME_FP8_TENSOR_CORES), else its bf16 ceiling."""
    if gpu.efficiency.gemm_max is not None:
        return gpu.efficiency.gemm_max
    name = SAME_SILICON.get(gpu.calibration, gpu.calibration)
    name = name if name in GEMM_MAX_FP8 else SAME_FP8_TENSOR_CORES.get(name, name)
    return GEMM_MAX_FP8.get(name, gemm_max(gpu))


def gemm_max(gpu: GpuSpec) -> float:
    """The GPU file's `gemm_max`, else the ceiling fitted for its calibration."""
    if gpu.efficiency.gemm_max is not None:
        return gpu.efficiency.gemm_max
    name = SAME_SILICON.get(gpu.calibration, gpu.calibration)
    return GEMM_MAX.get(name, GEMM_MAX_DEFAULT)


# ---------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------

ATTENTION_BLOCK = 128
"""Query and key block of FlashAttention-2/3 kernels at head dim 64-128."""


@dataclass(frozen=True)
class AttentionConstants:
    fwd_max: float
    fwd_overhead: float
    """Per-query-block cost of the forward, in key blocks."""
    bwd_max: float
    bwd_overhead: float
    head_dim_half: float
    """d0 in d / (d + d0)."""


ATTENTION: dict[tuple[str, str], AttentionConstants] = {
    ("H100-SXM5-80GB", "flash2"): AttentionConstants(0.4505, 0.8116, 0.3916, 1.8765, 18.77),
    ("H100-SXM5-80GB", "flash3"): AttentionConstants(0.796, 1.8401, 0.3916, 1.8765, 18.77),
    ("A100-SXM4-80GB", "flash2"): AttentionConstants(0.8178, 0.7991, 0.7109, 1.8477, 18.77),
}
"""Fitted to the FlashAttention records (`fa2_*`, `fa3_*`). FlashAttention-3 has
no backward record: its backward reuses FlashAttention-2's constants."""
ATTENTION_ALIASES = {
    "A100-SXM4-40GB": "A100-SXM4-80GB",
    "H200-SXM-141GB": "H100-SXM5-80GB",
    "H800-SXM5-80GB": "H100-SXM5-80GB",
}
"""GPU types that run the same attention kernels on the same SM design."""
ATTENTION_DEFAULT = AttentionConstants(0.45, 0.81, 0.39, 1.88, 18.77)
"""GPU types without records: about H100 FlashAttention-2 as a share of peak."""
DEFAULT_ATTENTION_KERNEL = AttentionKernel.FLASH2.value
ATTENTION_KERNELS = tuple(kernel.value for kernel in AttentionKernel)
"""The flash kernels priced here (`fuse{attention-kernel}`, `--attention-kernel`)."""


TRITON_FLASH2_SPEEDUP = 1.8
"""How much faster FlashAttention-2 runs forward + backward than the Triton
FlashAttention of 2022-23 (`flash_attn_triton.py`, triton 2.0.0.dev20221202, the
kernel llm-foundry's `attn_impl: triton` ran): Dao 2023 (FlashAttention-2, arXiv
2307.08691, sec. 4.1) measures FlashAttention-2 "1.3-2.5x faster than
FlashAttention in Triton" on A100; 1.8 is the geometric middle of that range.
No record measures the Triton kernel: not fitted."""


def kernel_refusal(gpu: GpuSpec, kernel: str) -> str:
    """Why `gpu` cannot run the attention kernel `kernel` ("" when it can):
    FlashAttention-3 is written for Hopper's TMA and wgmma (sm90); elsewhere it was
    priced as FlashAttention-2 without a word."""
    architecture = gpu.architecture
    if kernel == "flash3" and architecture and not architecture.startswith("Hopper"):
        return f"attention kernel 'flash3' (FlashAttention-3) runs on Hopper GPUs only; {gpu.name} is {architecture}"
    return ""


def attention_constants(gpu: GpuSpec, kernel: str = DEFAULT_ATTENTION_KERNEL) -> AttentionConstants:
    name = ATTENTION_ALIASES.get(gpu.calibration, gpu.calibration)
    if refusal := kernel_refusal(gpu, kernel):
        raise CharonError(refusal)
    stated = {k: AttentionConstants(*v) for k, v in gpu.efficiency.attention}
    if stated:
        # the GPU file's own kernels; flash3's backward is flash2's where unstated
        table = {(name, k): c for k, c in stated.items()}
    else:
        table = ATTENTION
    if kernel == "triton":
        c = table.get((name, "flash2")) or ATTENTION_DEFAULT
        return AttentionConstants(
            c.fwd_max / TRITON_FLASH2_SPEEDUP, c.fwd_overhead,
            c.bwd_max / TRITON_FLASH2_SPEEDUP, c.bwd_overhead, c.head_dim_half,
        )
    return table.get((name, kernel)) or table.get((name, "flash2")) or ATTENTION_DEFAULT


def attention_tiles(sq: int, skv: int, causal: bool) -> tuple[float, float, int]:
    """(useful tiles, computed tiles, query blocks) per batch row and head, in
    units of a full BxB tile; a causal mask is aligned to the end of the keys."""
    b = ATTENTION_BLOCK
    n_q, n_kv = ceil(sq / b), ceil(skv / b)
    if not causal:
        return sq * skv / (b * b), float(n_q * n_kv), n_q
    useful = (sq * (skv - sq) + sq * (sq + 1) / 2) / (b * b)
    # query block i sees the key blocks up to the diagonal, n_kv - n_q + i + 1
    computed = n_q * (n_kv - n_q) + n_q * (n_q + 1) / 2
    return useful, float(computed), n_q


MIN_QUERY_ROWS = 16
"""The smallest tensor-core tile row count (mma m16)."""


def decode_row_fill(sq: int, group: int) -> float:
    """Decode kernels (FlashDecoding, paged attention) stack the query rows of
    the `group` query heads that share a kv head into one tile of at least
    MIN_QUERY_ROWS rows and split the keys over the SMs: the filled share of that
    tile is what the tensor cores do useful work on."""
    rows = sq * group
    tile = max(MIN_QUERY_ROWS, 1 << (rows - 1).bit_length())
    return rows / tile


def attention_efficiency(
    gpu: GpuSpec,
    batch: int,
    heads: int,
    sq: int,
    skv: int,
    head_dim: int,
    causal: bool,
    backward: bool = False,
    kernel: str = DEFAULT_ATTENTION_KERNEL,
    group: int = 1,
) -> float:
    """`group` = query heads per kv head (GQA)."""
    c = attention_constants(gpu, kernel)
    top, overhead = (c.bwd_max, c.bwd_overhead) if backward else (c.fwd_max, c.fwd_overhead)
    head = top * head_dim / (head_dim + c.head_dim_half)
    if sq * group < ATTENTION_BLOCK and not backward:
        n_kv = ceil(skv / ATTENTION_BLOCK)
        return head * decode_row_fill(sq, group) * skv / (n_kv * ATTENTION_BLOCK) * (
            n_kv / (n_kv + overhead)
        )
    useful, computed, n_q = attention_tiles(sq, skv, causal)
    sms = gpu.sm_count or 108
    ctas = batch * heads * n_q
    wave_eff = ctas / (ceil(ctas / sms) * sms)
    return head * useful / (computed + overhead * n_q) * wave_eff


# ---------------------------------------------------------------------------
# Memory-bound kernels
# ---------------------------------------------------------------------------

MEMORY_MAX = 0.90
"""Fraction of HBM bandwidth a large streaming kernel reaches (STREAM-like copy
on A100/H100 reaches 85-92 %)."""
MEMORY_HALF_BYTES = 4.0 * 2**20
"""Bytes at which a streaming kernel reaches half of MEMORY_MAX: a few MiB must
be in flight to cover HBM latency across all SMs (Little's law)."""
KERNEL_FLOOR_S = 3.0e-6
"""No kernel takes less: launch + the smallest kernel's run time, 2-4 us."""
VECTOR_MAX = 0.7
"""Fraction of the fp32 vector peak reached by compute-heavy pointwise code."""


def memory_efficiency(nbytes: float, gpu: GpuSpec | None = None) -> float:
    """MEMORY_MAX and MEMORY_HALF_BYTES, or the GPU file's own curve."""
    top, half = MEMORY_MAX, MEMORY_HALF_BYTES
    if gpu is not None:
        if gpu.efficiency.memory_max is not None:
            top = gpu.efficiency.memory_max
        if gpu.efficiency.memory_half_bytes is not None:
            half = gpu.efficiency.memory_half_bytes
    return top * nbytes / (nbytes + half) if nbytes > 0 else top


# ---------------------------------------------------------------------------
# Compute beside communication
# ---------------------------------------------------------------------------

OVERLAP_SLOWDOWN: dict[str, float] = {
    "A100-SXM4-80GB": 0.68,
}
"""While a kernel and a collective run at once on a GPU, both progress at
1 / (1 + s) of their rate (the interpreter's OverlapModel with compute and
communication slowdown s): they share the SMs (NCCL's kernels occupy some) and
HBM. s = 1 hides nothing, s = 0 hides the shorter one whole. Fitted per GPU type
to the backward of the per-layer records, where tensor-parallel all-reduces run
beside weight-gradient GEMMs (Korthikanti et al. 2022, Table 4; `calibration.
refit`, `validation/layers.py`). GPU types without such a record: 0."""


def overlap_slowdown(gpu: GpuSpec) -> float:
    """The GPU file's `overlap_slowdown`, else the calibrated overlap contention
    of the GPU type (OVERLAP_SLOWDOWN)."""
    if gpu.efficiency.overlap_slowdown is not None:
        return gpu.efficiency.overlap_slowdown
    return OVERLAP_SLOWDOWN.get(SAME_SILICON.get(gpu.calibration, gpu.calibration), 0.0)
