"""
The analytic engine against the kernel and collective records of
validation/published.json: each record becomes the op (or collective on a
cluster) it measured, priced with the engine's own functions, and compared.

`comparisons()` lists every record with its prediction; `refit()` re-derives the
per-GPU-type constants of `compute_efficiency` and `collectives` from the same
records (the values pasted in those modules; docs/calibration.md).
Constants are fitted per GPU type and kernel, never per record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from math import log
from collections.abc import Callable, Sequence
from typing import Any

from charon_ir.engines import collectives, compute_efficiency
from charon_ir.engines.analytic import attention_time_s, matmul_time_s
from charon_ir.engines.collectives import bus_bandwidth, collective_plan
from charon_ir.target.cluster import Cluster, parse_cluster
from charon_ir.target.hardware import GpuSpec, load_gpu
from charon_ir.validation import cache_directory, published_records, record_gpu
from charon_ir.validation.layers import layer_case, layer_times, predicted_layer

KERNEL_TOLERANCE = 0.15
NCCL_TOLERANCE = 0.10


@dataclass(frozen=True)
class Comparison:
    id: str
    group: str
    """`gemm`, `attention` or `nccl`."""
    gpu: str
    measured: float
    predicted: float
    unit: str
    setup: str
    primary: bool = True
    """False for numbers a record quotes on the side (`other_metrics`)."""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


# ---------------------------------------------------------------------------
# Records -> GPU types
# ---------------------------------------------------------------------------

@cache
def _records() -> tuple[dict[str, Any], ...]:
    return published_records()


def kernel_records(records: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The kernel records among `records` (default: the shipped ones)."""
    return [r for r in (_records() if records is None else records)
            if r["category"] == "kernel_microbenchmark"]


def comm_records(records: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The NCCL records among `records` (default: the shipped ones)."""
    return [r for r in (_records() if records is None else records)
            if r["category"] == "comm_microbenchmark"]


def layer_records() -> list[dict[str, Any]]:
    return [r for r in _records() if r["category"] == "training_microbenchmark"]


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


def _kernel_name(record: dict[str, Any]) -> str:
    kernel = str(record["strategy"].get("kernel", ""))
    return "flash3" if "FlashAttention-3" in kernel else "flash2"


def predict_gemm(record: dict[str, Any], gpu: GpuSpec) -> tuple[float, str]:
    """One bf16 `M x N x K` matmul, `batch` of them when the record says so."""
    m, n, k = (int(x) for x in record["model"]["shape_MxNxK"].split("x"))
    batch = int(record["model"].get("batch", 1))
    nbytes = 2.0 * batch * (m * k + k * n + m * n)
    t = matmul_time_s(gpu, "bf16", batch, m, n, k, nbytes)
    shape = f"{batch}x{m}x{n}x{k}" if batch > 1 else f"{m}x{n}x{k}"
    return 2.0 * batch * m * n * k / t / 1e12, f"bf16 GEMM {shape}"


def predict_attention(record: dict[str, Any], gpu: GpuSpec) -> tuple[float, str]:
    """FlashAttention benchmark setup: 16k tokens in all, hidden 2048, FLOPs
    counted as 4 s^2 d h per forward (halved when causal), fwd+bwd = 3.5 x fwd."""
    model = record["model"]
    d, s, causal = int(model["head_dim"]), int(model["seq_len"]), bool(model["causal"])
    heads = int(model["hidden"]) // d
    batch = int(model["total_tokens"]) // s
    kernel = _kernel_name(record)
    both = record["strategy"]["passes"] == "fwd+bwd"
    pairs = s * (s + 1) / 2 if causal else float(s * s)
    fwd_flops = 4.0 * batch * heads * pairs * d
    io = 2.0 * batch * s * heads * d * 2  # bf16 q, k, v, o
    t = attention_time_s(gpu, "bf16", batch, heads, s, s, d, fwd_flops, 2 * io,
                         causal, backward=False, kernel=kernel)
    if both:
        t += attention_time_s(gpu, "bf16", batch, heads, s, s, d, 2.5 * fwd_flops, 4 * io,
                              causal, backward=True, kernel=kernel)
    counted = 4.0 * batch * heads * s * s * d * (0.5 if causal else 1.0) * (3.5 if both else 1.0)
    setup = (f"{kernel} {'fwd+bwd' if both else 'fwd'} d={d} s={s} "
             f"{'causal' if causal else 'full'} b={batch} h={heads}")
    return counted / t / 1e12, setup


def kernel_comparisons(records: Sequence[dict[str, Any]] | None = None) -> list[Comparison]:
    out = []
    for r in kernel_records(records):
        name = record_gpu(r)
        gpu = load_gpu(name)
        if r["metric"] == "attention_tflops":
            pred, setup = predict_attention(r, gpu)
            group = "attention"
        else:
            pred, setup = predict_gemm(r, gpu)
            group = "gemm"
        out.append(Comparison(r["id"], group, name, float(r["value"]), pred, "TFLOP/s", setup))
    return out


# ---------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CommScenario:
    """What one NCCL record measured: all-reduce of `size` bytes over `nodes`
    nodes of `gpus_per_node` GPUs with `nics` NICs of `nic_gbps` each, by the
    algorithm the record forced (`NCCL_ALGO`), else the fastest."""

    id: str
    gpu: str
    nodes: int
    nics: int
    nic_gbps: int
    size: int
    measured_gbps: float
    primary: bool = True
    gpus_per_node: int = 8
    algorithm: str | None = None

    def cluster(self) -> Cluster:
        return _scenario_cluster(self.id, self.gpu, self.nodes, self.nics, self.nic_gbps,
                                 self.gpus_per_node)


@cache
def _scenario_cluster(id: str, gpu: str, nodes: int, nics: int, nic_gbps: int,
                      gpus_per_node: int = 8) -> Cluster:
    return parse_cluster(
        f'name = "{id}" nodes = {nodes} node {{ gpu = {gpu} gpus = {gpus_per_node} }} '
        f"nic {{ count = {nics} speed = {nic_gbps}Gb/s }}",
        f"<record {id}>",
    )


_ALGORITHMS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls_tree"}
"""NCCL_ALGO names (a record's `strategy.algorithm`) -> the plans of collectives.py."""


def _nics(record: dict[str, Any], gpu: GpuSpec) -> tuple[int, int]:
    """NIC count and speed a record states; else the GPU table's usual node."""
    text = str(record["hardware"].get("inter_node", ""))
    for pattern in (
        r"(\d+) GPU-NIC pairs per node \((\d+)G",  # "8 GPU-NIC pairs per node (400G"
        r"(\d+)x\s*(?:[A-Za-z][A-Za-z0-9\-]*\s+)*(\d+)\s*Gb",  # "4x ConnectX-6 200 Gb/s"
    ):
        m = re.search(pattern, text)
        if m:
            return int(m.group(1)), int(m.group(2))
    return gpu.nics_per_node, int(gpu.nic_bandwidth * 8 / 1e9)


_SIZE_HINTS = (
    (r"up to (\d+) ?GB", 2**30),
    (r"-e (\d+)G", 2**30),
    (r"(\d+)G-(\d+)G", 2**30),
    (r"8B-(\d+)MB", 2**20),
)


def _message_size(record: dict[str, Any]) -> int:
    """The size a record's bus bandwidth was read at: its message size, else
    the largest size of the sweep it ran (where busbw peaks)."""
    model = record["model"]
    if "message_bytes" in model:
        return int(model["message_bytes"])
    text = str(model.get("name", "")) + " " + str(record["strategy"].get("max_message", ""))
    for pattern, unit in _SIZE_HINTS:
        m = re.search(pattern, text)
        if m:
            return int(m.groups()[-1]) * unit
    return 2**30


def comm_scenarios(records: Sequence[dict[str, Any]] | None = None) -> list[CommScenario]:
    out = []
    for r in comm_records(records):
        name = record_gpu(r)
        gpu = load_gpu(name)
        nics, gbps = _nics(r, gpu)
        size = _message_size(r)
        nodes = int(r["strategy"].get("nodes") or 1)
        per_node = int(r["hardware"].get("gpus_per_node") or 8)
        forced = str(r["strategy"].get("algorithm", "")).lower().replace("_", "")
        algorithm = _ALGORITHMS[forced] if forced else None
        out.append(CommScenario(r["id"], name, nodes, nics, gbps, size, float(r["value"]),
                                gpus_per_node=per_node, algorithm=algorithm))
        # numbers quoted on the side: busbw of the same setup on other node counts
        for key, value in (r.get("other_metrics") or {}).items():
            m = re.fullmatch(r"(\d+)_nodes?_(\d+)_gpus_busbw_GBps", key)
            if m:
                out.append(CommScenario(f"{r['id']}@{m.group(1)}nodes", name, int(m.group(1)),
                                        nics, gbps, size, float(value), primary=False,
                                        gpus_per_node=per_node, algorithm=algorithm))
    return out


def predict_busbw(sc: CommScenario) -> tuple[float, str]:
    cluster = sc.cluster()
    n = sc.nodes * sc.gpus_per_node
    plan = collective_plan("all_reduce", sc.size, tuple(range(n)), cluster, algorithm=sc.algorithm)
    busbw = bus_bandwidth("all_reduce", sc.size, n, plan.time_s) / 1e9
    setup = (f"all_reduce {sc.size / 2**20:g} MiB, {sc.nodes}x{sc.gpus_per_node} GPUs, "
             f"{sc.nics}x{sc.nic_gbps}G -> {plan.algorithm}/{plan.protocol}"
             + (" (forced)" if sc.algorithm else ""))
    return busbw, setup


def comm_comparisons(records: Sequence[dict[str, Any]] | None = None) -> list[Comparison]:
    out = []
    for sc in comm_scenarios(records):
        pred, setup = predict_busbw(sc)
        out.append(Comparison(sc.id, "nccl", sc.gpu, sc.measured_gbps, pred, "GB/s", setup,
                              sc.primary))
    return out


# ---------------------------------------------------------------------------
# Layers: compute beside communication
# ---------------------------------------------------------------------------


def _layer_cases() -> list[Any]:
    return [layer_case(r) for r in layer_records()]


def _layer_directory() -> str:
    return str(cache_directory())


def layer_comparisons() -> list[Comparison]:
    """Each per-layer record's forward + backward (its value), then its forward
    and backward on the side, at the GPU type's calibrated overlap slowdown."""
    out = []
    directory = _layer_directory()
    for case in _layer_cases():
        fwd, bwd, slowdown = predicted_layer(case, directory)
        setup = f"one layer, overlap slowdown {slowdown:g}"
        out += [
            Comparison(case.id, "layer", case.gpu, (case.forward_s + case.backward_s) * 1e3,
                       (fwd + bwd) * 1e3, "ms", f"{setup}: forward + backward"),
            Comparison(case.id, "layer", case.gpu, case.forward_s * 1e3, fwd * 1e3, "ms",
                       f"{setup}: forward", primary=False),
            Comparison(case.id, "layer", case.gpu, case.backward_s * 1e3, bwd * 1e3, "ms",
                       f"{setup}: backward", primary=False),
        ]
    return out


def comparisons(layers: bool = True) -> list[Comparison]:
    """Every kernel, NCCL and (with `layers`, which simulates steps through the
    frontend) per-layer record with its prediction."""
    return kernel_comparisons() + comm_comparisons() + (layer_comparisons() if layers else [])


def mape(rows: list[Comparison]) -> float:
    return sum(abs(r.error) for r in rows) / len(rows) if rows else 0.0


# ---------------------------------------------------------------------------
# Refitting the constants
# ---------------------------------------------------------------------------


def _nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float = 0.1,
                 iterations: int = 400) -> list[float]:
    """Minimise f from x0 (relative initial steps); enough for 2-5 parameters."""
    n = len(x0)
    simplex = [list(x0)] + [
        [x * (1 + step) if i == j else x for j, x in enumerate(x0)] for i in range(n)
    ]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        if max(values) - min(values) <= 1e-10 * (1 + abs(min(values))):
            break
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflect = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(reflect)
        if fr < values[0]:
            expand = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(expand)
            simplex[-1], values[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflect, fr
        else:
            contract = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(contract)
            if fc < values[-1]:
                simplex[-1], values[-1] = contract, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (x - b) for b, x in zip(best, s)]
                                    for s in simplex[1:]]
                values = [values[0]] + [f(s) for s in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def _log_loss(pairs: list[tuple[float, float]]) -> float:
    return sum(log(p / m) ** 2 for p, m in pairs)


def refit() -> dict[str, Any]:
    """Fit the per-GPU-type constants to the records; return them (and leave the
    modules as they were)."""
    fitted: dict[str, Any] = {}

    # GEMM: a mamf record is the best shape of a sweep, so the ceiling is the
    # highest record's fraction of peak over the best shape factor of the sweep
    gemm_max = dict(compute_efficiency.GEMM_MAX)
    by_gpu: dict[str, list[float]] = {}
    k = compute_efficiency.GEMM_SWEEP_K_MAX
    best_shape = k / (k + compute_efficiency.GEMM_K_OVERHEAD)
    for r in kernel_records():
        if r["metric"] == "attention_tflops":
            continue
        name = record_gpu(r)
        peak = load_gpu(name).peak("bf16") / 1e12
        by_gpu.setdefault(name, []).append(float(r["value"]) / peak / best_shape)
    for name, ratios in by_gpu.items():
        gemm_max[name] = round(max(ratios), 4)
    fitted["GEMM_MAX"] = gemm_max

    # attention: per (GPU type, kernel)
    fitted["ATTENTION"] = _refit_attention()

    # NCCL: scale-up ring efficiency (A100 ring record), NVLS efficiency and fill
    fitted["collectives"] = _refit_collectives()
    # NVLS on NVLink5 (GB200 NVL72), from its own records
    fitted["collectives_by_gpu"] = _refit_nvls_by_gpu()

    # overlap contention: per GPU type, from its per-layer records' backward
    fitted["OVERLAP_SLOWDOWN"] = _refit_overlap_slowdown()
    return fitted


def _refit_overlap_slowdown() -> dict[str, float]:
    """The slowdown s that brings each GPU type's simulated per-layer backward
    (its all-reduces beside GEMMs) to the measured one; the forward, whose
    collectives feed the next op, moves under 0.1 % with s and is not fitted."""
    directory = _layer_directory()
    by_gpu: dict[str, list[Any]] = {}
    for case in _layer_cases():
        by_gpu.setdefault(case.gpu, []).append(case)
    fitted = {}
    for gpu, cases in by_gpu.items():
        def loss(x: list[float], cases=cases) -> float:
            if x[0] < 0:
                return 1e9
            return _log_loss([(layer_times(c, x[0], directory)[1], c.backward_s) for c in cases])

        start = compute_efficiency.OVERLAP_SLOWDOWN.get(gpu) or 0.5
        (slowdown,) = _nelder_mead(loss, [start])
        fitted[gpu] = round(slowdown, 2)
    return fitted


def _attention_rows(gpu: str, kernel: str) -> list[dict[str, Any]]:
    return [
        r for r in kernel_records()
        if r["metric"] == "attention_tflops" and record_gpu(r) == gpu and _kernel_name(r) == kernel
    ]


def _refit_attention() -> dict[tuple[str, str], compute_efficiency.AttentionConstants]:
    table = compute_efficiency.ATTENTION
    saved = dict(table)
    out = {}
    try:
        # H100 FlashAttention-2: forward records pin the forward, fwd+bwd the
        # backward and the head-dim constant
        key = ("H100-SXM5-80GB", "flash2")
        rows = _attention_rows(*key)
        gpu = load_gpu(key[0])

        def loss2(x: list[float]) -> float:
            if min(x) <= 0:
                return 1e9
            table[key] = compute_efficiency.AttentionConstants(*x)
            return _log_loss([(predict_attention(r, gpu)[0], float(r["value"])) for r in rows])

        best = _nelder_mead(loss2, list(_as_list(saved[key])), iterations=600)
        out[key] = compute_efficiency.AttentionConstants(*[round(v, 4) for v in best])
        table[key] = out[key]

        # H100 FlashAttention-3 forward; backward and d0 as FlashAttention-2
        key3 = ("H100-SXM5-80GB", "flash3")
        rows3 = _attention_rows(*key3)
        base = out[key]

        def loss3(x: list[float]) -> float:
            if min(x) <= 0:
                return 1e9
            table[key3] = replace(base, fwd_max=x[0], fwd_overhead=x[1])
            return _log_loss([(predict_attention(r, gpu)[0], float(r["value"])) for r in rows3])

        f3, o3 = _nelder_mead(loss3, [saved[key3].fwd_max, saved[key3].fwd_overhead])
        out[key3] = replace(base, fwd_max=round(f3, 4), fwd_overhead=round(o3, 4))
        table[key3] = out[key3]

        # A100 FlashAttention-2: fwd+bwd records only; keep H100's ratios of
        # backward to forward and d0
        keya = ("A100-SXM4-80GB", "flash2")
        rowsa = _attention_rows(*keya)
        gpua = load_gpu(keya[0])
        rb, ro = base.bwd_max / base.fwd_max, base.bwd_overhead / base.fwd_overhead

        def lossa(x: list[float]) -> float:
            if min(x) <= 0:
                return 1e9
            table[keya] = compute_efficiency.AttentionConstants(
                x[0], x[1], x[0] * rb, x[1] * ro, base.head_dim_half
            )
            return _log_loss([(predict_attention(r, gpua)[0], float(r["value"])) for r in rowsa])

        fa, oa = _nelder_mead(lossa, [saved[keya].fwd_max, saved[keya].fwd_overhead])
        out[keya] = compute_efficiency.AttentionConstants(
            round(fa, 4), round(oa, 4), round(fa * rb, 4), round(oa * ro, 4), base.head_dim_half
        )
    finally:
        table.clear()
        table.update(saved)
    return out


def _as_list(c: compute_efficiency.AttentionConstants) -> list[float]:
    return [c.fwd_max, c.fwd_overhead, c.bwd_max, c.bwd_overhead, c.head_dim_half]


def _refit_collectives() -> collectives.CollectiveConstants:
    saved = dict(collectives.CONSTANTS)
    default = collectives.DEFAULT_CONSTANTS
    scenarios = [s for s in comm_scenarios() if s.primary]
    ring = [s for s in scenarios if s.gpu.startswith("A100") and s.nodes == 1]
    nvls = [s for s in scenarios if s.gpu.startswith("H100") and s.nodes == 1]
    try:
        def with_constants(k: collectives.CollectiveConstants) -> None:
            for name in ("A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB"):
                collectives.CONSTANTS[name] = k

        def loss_ring(x: list[float]) -> float:
            with_constants(replace(default, scale_up_efficiency=x[0]))
            return _log_loss([(predict_busbw(s)[0], s.measured_gbps) for s in ring])

        (ring_eff,) = _nelder_mead(loss_ring, [default.scale_up_efficiency])
        tuned = replace(default, scale_up_efficiency=round(ring_eff, 4))

        def loss_nvls(x: list[float]) -> float:
            if x[0] <= 0 or x[1] < 0 or x[2] < 0:
                return 1e9
            with_constants(replace(tuned, nvls_efficiency=x[0], nvls_latency_s=x[1] * 1e-6,
                                   nvls_fill_s=x[2] * 1e-6))
            return _log_loss([(predict_busbw(s)[0], s.measured_gbps) for s in nvls])

        eff, lat, fill = _nelder_mead(
            loss_nvls,
            [default.nvls_efficiency, default.nvls_latency_s * 1e6 or 5.0, default.nvls_fill_s * 1e6],
            iterations=800,
        )
        return replace(tuned, nvls_efficiency=round(eff, 4), nvls_latency_s=round(lat, 2) * 1e-6,
                       nvls_fill_s=round(fill, 2) * 1e-6)
    finally:
        collectives.CONSTANTS.clear()
        collectives.CONSTANTS.update(saved)


NVLS_FITTED_GPUS = ("GB200-per-GPU",)
"""GPU types whose NVLS constants are fitted to their own all-reduce records
(one NVLink domain, NCCL's choice of algorithm); the others keep the H100 fit."""


def _refit_nvls_by_gpu() -> dict[str, collectives.CollectiveConstants]:
    """NVLS efficiency and fill per GPU type of NVLS_FITTED_GPUS, on the shipped
    ring and NIC efficiencies. Their records hold only large sizes (512 MiB -
    8 GiB), which do not tell the fixed latency from the fill: the latency stays
    the H100 fit's (`_refit_collectives`)."""
    saved = dict(collectives.CONSTANTS)
    default = collectives.DEFAULT_CONSTANTS
    out = {}
    try:
        for gpu in NVLS_FITTED_GPUS:
            domain = load_gpu(gpu).scale_up_domain
            rows = [s for s in comm_scenarios() if s.primary and s.gpu == gpu
                    and s.algorithm is None and s.nodes * s.gpus_per_node <= domain]
            if not rows:
                continue
            start = saved.get(gpu, default)

            def loss(x: list[float], rows=rows, gpu=gpu) -> float:
                if x[0] <= 0 or x[1] < 0:
                    return 1e9
                collectives.CONSTANTS[gpu] = replace(
                    default, nvls_efficiency=x[0], nvls_fill_s=x[1] * 1e-6)
                return _log_loss([(predict_busbw(s)[0], s.measured_gbps) for s in rows])

            eff, fill = _nelder_mead(loss, [start.nvls_efficiency, start.nvls_fill_s * 1e6],
                                     iterations=800)
            out[gpu] = replace(default, nvls_efficiency=round(eff, 4),
                               nvls_fill_s=round(fill, 2) * 1e-6)
    finally:
        collectives.CONSTANTS.clear()
        collectives.CONSTANTS.update(saved)
    return out


def summary(rows: list[Comparison]) -> dict[str, float]:
    out = {}
    for group in ("gemm", "attention", "nccl", "layer"):
        sel = [r for r in rows if r.group == group and r.primary]
        out[group] = mape(sel)
        out[f"{group}_max"] = max((abs(r.error) for r in sel), default=0.0)
    return out
