"""Reading a sweep's records: ranking, the Pareto frontier, why the best point
wins, the table and the plots.

Training points rank by tokens per second (then fewer GPUs, then less memory);
their frontier trades throughput against GPUs or against dollars per hour.
Serving points rank by output tokens per second; their frontier trades
throughput against TTFT or TPOT (p90).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError
from charon_ir.sweep.space import LATER_SETTINGS, gpu_hour_cost, gpus_of

GIB = 2**30

Objective = tuple[Callable[[dict], float], int]
"""A value read off a record and its sense: +1 maximise, -1 minimise."""

STRATEGY_KEYS = (
    "tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "sequence_parallel", "recompute", "zero", "fuse",
    "batch", "max_num_seqs", "replicas", "prefill_decode_split",
)
HARDWARE_KEYS = ("hardware", "cluster", "gpus", "nic_speed", "scale_up_domain", "topology", "oversubscription",
                 "peak_flops_scale", "hbm_bw", "hbm_capacity", "scale_up_bw", "scale_out_bw")
TUNING_KEYS = LATER_SETTINGS
"""Kernel, overlap, optimizer and memory settings of training points (the
settings points gained after the first results files). Like the
others they are columns and differences only where records differ in them, but
they are kept out of STRATEGY_KEYS, whose every non-default value the best
point's one-line summary lists: these are nearly always at their defaults."""


def seconds(x: float) -> str:
    """A duration in the unit that keeps three significant digits readable."""
    if abs(x) >= 1:
        return f"{x:.3f} s"
    if abs(x) >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.2f} us"


def ok_records(records: Sequence[dict]) -> list[dict]:
    return [r for r in records if r["status"] == "ok" and r.get("metrics")]


def is_serving(record: dict) -> bool:
    return "gpus" not in record["config"]


def throughput(record: dict) -> float:
    m = record["metrics"]
    return float(m.get("tokens_per_s") or m.get("throughput_tokens_per_s") or 0.0)


def gpus(record: dict) -> int:
    """GPUs a point occupies, from its settings (training: the job; serving:
    tp x pp per replica)."""
    return gpus_of(record["config"])


def cost_per_hour(record: dict, table: dict[str, float] | None = None) -> float:
    return gpus(record) * gpu_hour_cost(record["config"].get("hardware", ""), table or {})


def _latency(record: dict, name: str) -> float:
    value = record["metrics"].get(name)
    if isinstance(value, dict):
        value = value.get("p90", value.get("mean"))
    return float(value) if value is not None else float("inf")


def _significant(x: float, digits: int = 3) -> float:
    return float(f"{x:.{digits - 1}e}") if x else 0.0


def rank(records: Sequence[dict]) -> list[dict]:
    """The runnable points, best first. Serving throughput is compared to three
    significant digits: under an offered load many deployments serve it all, and
    of those the smaller and then the faster-responding one is the better."""
    def key(r: dict):
        if is_serving(r):
            return (-_significant(throughput(r)), gpus(r), _latency(r, "ttft_s"), _latency(r, "tpot_s"), r["key"])
        return (-throughput(r), gpus(r), r["metrics"].get("max_peak_memory_bytes", 0), r["key"])

    return sorted(ok_records(records), key=key)


PARETO_AXES = {"training": ("gpus", "cost", "energy"), "serving": ("ttft", "tpot", "energy")}
"""The frontier's second axis of each kind of sweep, its default first ("" is
the default)."""


def check_pareto_axis(kind: str, axis: str) -> None:
    """Raise unless `axis` is a frontier axis of a `kind` sweep."""
    if axis and axis not in PARETO_AXES[kind]:
        *rest, last = PARETO_AXES[kind]
        raise CharonError(f"--pareto must be {', '.join(rest)} or {last} for a {kind} sweep, got '{axis}'")


def objectives(kind: str, axis: str = "", table: dict[str, float] | None = None) -> list[Objective]:
    """The frontier's axes: throughput up, and GPUs / cost / latency down."""
    check_pareto_axis(kind, axis)
    if axis == "energy":
        return [(throughput, +1), (joules_per_token, -1)]
    if kind == "serving":
        latency = "tpot_s" if axis == "tpot" else "ttft_s"
        return [(throughput, +1), (lambda r: _latency(r, latency), -1)]
    if axis == "cost":
        return [(throughput, +1), (lambda r: cost_per_hour(r, table), -1)]
    return [(throughput, +1), (lambda r: float(gpus(r)), -1)]


def joules_per_token(record: dict) -> float:
    """Energy per token (training: per token trained; serving: per output token);
    infinite where the GPU states no power figures."""
    per_joule = record["metrics"].get("tokens_per_joule")
    return 1.0 / per_joule if per_joule else float("inf")


def pareto_front(records: Sequence[dict], objs: Sequence[Objective]) -> list[dict]:
    """Points no other point beats on every objective (and strictly on one),
    best throughput first; of points with equal objectives the best-ranked stays."""
    candidates = rank(records)
    values = [tuple(sense * f(r) for f, sense in objs) for r in candidates]
    front, seen = [], set()
    for i, v in enumerate(values):
        if v in seen:
            continue
        dominated = any(
            all(a >= b for a, b in zip(w, v)) and any(a > b for a, b in zip(w, v))
            for j, w in enumerate(values) if j != i
        )
        if not dominated:
            front.append(candidates[i])
            seen.add(v)
    return front


# ---------------------------------------------------------------------------
# Why the best point wins
# ---------------------------------------------------------------------------


def _components(metrics: dict) -> dict[str, float]:
    """The additive parts of a training step's critical stage."""
    b = metrics.get("breakdown") or {}
    out = {"compute": float(b.get("compute_s", 0.0))}
    for axis, seconds in sorted((b.get("exposed_comm_s") or {}).items()):
        out[f"exposed {axis} comm"] = float(seconds)
    out["pipeline bubble"] = float(b.get("bubble_s", 0.0))
    return out


def config_differences(a: dict, b: dict) -> list[tuple[str, Any, Any]]:
    keys = [k for k in (*STRATEGY_KEYS, *TUNING_KEYS, *HARDWARE_KEYS) if k in a or k in b]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def _settings_text(a: dict, b: dict) -> str:
    return ", ".join(f"{k} {_cell(x) or 'none'} vs {_cell(y) or 'none'}" for k, x, y in config_differences(a, b))


def runner_up(ranked: Sequence[dict]) -> dict | None:
    """The point to explain the winner against: the next one in the ranking
    whose numbers differ (a setting that changes nothing explains nothing)."""
    if len(ranked) < 2:
        return None
    best = ranked[0]

    def numbers(r: dict) -> tuple:
        if is_serving(r):
            return (round(throughput(r), 6), round(_latency(r, "ttft_s"), 9), round(_latency(r, "tpot_s"), 9))
        return (round(r["metrics"]["iteration_time_s"], 12),)

    return next((r for r in ranked[1:] if numbers(r) != numbers(best)), ranked[1])


def explain(best: dict, runner_up: dict | None) -> dict[str, Any]:
    """Why `best` beats `runner_up`: their settings that differ and, for
    training, which parts of the step account for the time between them."""
    out: dict[str, Any] = {"best": best["key"], "config": best["config"], "metrics": best["metrics"]}
    if runner_up is None:
        out["why"] = "the only point that runs"
        return out
    out["runner_up"] = runner_up["key"]
    out["runner_up_config"] = runner_up["config"]
    out["differences"] = [
        {"setting": k, "best": x, "runner_up": y} for k, x, y in config_differences(best["config"], runner_up["config"])
    ]
    tb, tr = throughput(best), throughput(runner_up)
    out["throughput_gain"] = tb / tr - 1 if tr else None
    if is_serving(best):
        rows = []
        for name in ("ttft_s", "tpot_s"):
            rows.append({"part": name, "best": _latency(best, name), "runner_up": _latency(runner_up, name)})
        out["parts"] = rows
        settings = _settings_text(best["config"], runner_up["config"])
        out["why"] = (
            f"{tb:,.0f} vs {tr:,.0f} output tokens/s (+{out['throughput_gain']:.1%}) on {gpus(best)} vs "
            f"{gpus(runner_up)} GPUs, TTFT p90 {seconds(_latency(best, 'ttft_s'))} vs "
            f"{seconds(_latency(runner_up, 'ttft_s'))}, TPOT p90 {seconds(_latency(best, 'tpot_s'))} vs "
            f"{seconds(_latency(runner_up, 'tpot_s'))}, with {settings}"
        )
        return out
    cb, cr = _components(best["metrics"]), _components(runner_up["metrics"])
    parts = []
    for name in dict.fromkeys([*cb, *cr]):
        x, y = cb.get(name, 0.0), cr.get(name, 0.0)
        parts.append({"part": name, "best_s": x, "runner_up_s": y, "delta_s": x - y})
    parts.sort(key=lambda p: p["delta_s"])
    out["parts"] = parts
    ib, ir = best["metrics"]["iteration_time_s"], runner_up["metrics"]["iteration_time_s"]
    saved = [p for p in parts if p["delta_s"] < -1e-9]
    lost = [p for p in parts if p["delta_s"] > 1e-9]
    settings = _settings_text(best["config"], runner_up["config"])
    text = (
        f"{seconds(ib)} vs {seconds(ir)} per step (+{out['throughput_gain']:.1%} tokens/s) "
        f"with {settings or 'equal settings'}: "
    )
    if saved:
        text += "saves " + ", ".join(f"{p['part']} {seconds(-p['delta_s'])}" for p in saved)
    if lost:
        text += ("; " if saved else "") + "pays " + ", ".join(f"{p['part']} {seconds(p['delta_s'])}" for p in lost)
    mb, mr = best["metrics"].get("max_peak_memory_bytes", 0), runner_up["metrics"].get("max_peak_memory_bytes", 0)
    text += f"; peak memory {mb / GIB:.1f} vs {mr / GIB:.1f} GiB"
    out["why"] = text
    return out


# ---------------------------------------------------------------------------
# The table and the plots
# ---------------------------------------------------------------------------


def _varying(records: Sequence[dict]) -> list[str]:
    """Settings that differ between the records shown (the others say nothing)."""
    keys = [k for k in (*STRATEGY_KEYS, *TUNING_KEYS, *HARDWARE_KEYS) if any(k in r["config"] for r in records)]
    return [k for k in keys if len({str(r["config"].get(k)) for r in records}) > 1] or [
        k for k in ("tp", "pp", "dp") if records and k in records[0]["config"]
    ]


SHORT = {
    "micro_batch": "mb", "sequence_parallel": "sp", "max_num_seqs": "max seqs", "recompute": "recomp", "prefill_decode_split": "P:D",
    "scale_up_domain": "su", "nic_speed": "nic", "topology": "topo", "oversubscription": "oversub",
    "peak_flops_scale": "flops x", "hbm_bw": "hbm bw", "hbm_capacity": "hbm", "scale_up_bw": "su bw",
    "scale_out_bw": "so bw",
    "hardware": "gpu", "fuse_attention": "flash", "attention_kernel": "attn", "tp_comm_overlap": "tp overlap",
    "pipeline_scatter_gather": "pp s/g", "dp_bucket_mb": "bucket MB", "dp_overlap": "dp overlap",
    "dp_overlap_param_gather": "param gather",
    "optimizer": "optim", "memory_limit_gb": "mem GB", "unfused_grad_accumulation": "grad acc kernel",
}


def table_rows(records: Sequence[dict], top: int) -> tuple[list[str], list[list[str]]]:
    shown = list(records[:top])
    keys = _varying(shown)
    header = ["#", *[SHORT.get(k, k) for k in keys]]
    serving = bool(shown) and is_serving(shown[0])
    if serving:
        header += ["tok/s", "ttft p90", "tpot p90", "GPUs"]
    else:
        header += ["step", "tok/s", "MFU", "peak GiB", "GPUs", "tier"]
    rows = []
    for i, r in enumerate(shown, 1):
        m = r["metrics"]
        cells = [str(i), *[_cell(r["config"].get(k)) for k in keys]]
        if serving:
            cells += [f"{throughput(r):,.0f}", f"{_latency(r, 'ttft_s') * 1e3:.1f} ms",
                      f"{_latency(r, 'tpot_s') * 1e3:.2f} ms", str(gpus(r))]
        else:
            cells += [seconds(m["iteration_time_s"]), f"{throughput(r):,.0f}", f"{m['mfu']:.1%}",
                      f"{m.get('max_peak_memory_bytes', 0) / GIB:.1f}", str(gpus(r)), m.get("tier", "fast")]
        rows.append(cells)
    return header, rows


def plot_label(config: dict[str, Any], keys: Sequence[str]) -> str:
    """A configuration's settings as a plot's tick reads them: `tp=2 recomp=full`
    (a setting and its value run together read "recompnone")."""
    return " ".join(f"{SHORT.get(k, k)}={_cell(config.get(k))}" for k in keys)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "y" if value else "-"
    return str(value)


def write_plots(records: Sequence[dict], front: Sequence[dict], folder: str | Path, *, kind: str,
                axis: str = "", table: dict[str, float] | None = None) -> list[str]:
    """PNG plots into `folder`: the frontier scatter, and for training the step
    breakdown of the best points. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ranked = rank(records)
    written = []
    if not ranked:
        return written
    front_keys = {r["key"] for r in front}
    if axis == "energy":
        xlabel, xs = "energy (J / token)", [joules_per_token(r) for r in ranked]
    elif kind == "serving":
        xlabel = "TPOT p90 (ms)" if axis == "tpot" else "TTFT p90 (ms)"
        latency = "tpot_s" if axis == "tpot" else "ttft_s"
        xs = [_latency(r, latency) * 1e3 for r in ranked]
    elif axis == "cost":
        xlabel, xs = "cost ($ / hour)", [cost_per_hour(r, table) for r in ranked]
    else:
        xlabel, xs = "GPUs", [gpus(r) for r in ranked]
        if len(set(xs)) == 1:
            # one GPU count: the frontier is one point and the scatter a vertical strip;
            # memory per GPU is what the configurations trade throughput against
            xlabel = f"peak memory per GPU (GiB), all on {xs[0]} GPUs"
            xs = [r["metrics"].get("max_peak_memory_bytes", 0) / GIB for r in ranked]
    ys = [throughput(r) for r in ranked]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = ["tab:red" if r["key"] in front_keys else "tab:blue" for r in ranked]
    ax.scatter(xs, ys, c=colours, s=18, alpha=0.7)
    fx = [x for x, r in zip(xs, ranked) if r["key"] in front_keys]
    fy = [y for y, r in zip(ys, ranked) if r["key"] in front_keys]
    order = sorted(range(len(fx)), key=lambda i: fx[i])
    ax.plot([fx[i] for i in order], [fy[i] for i in order], color="tab:red", lw=1, marker="o", ms=6,
            label="Pareto frontier")
    if kind == "serving" and min(xs) > 0 and max(xs) / min(xs) > 100:
        ax.set_xscale("log")  # queueing spreads latencies over decades
    ax.set_xlabel(xlabel)
    ax.set_ylabel("tokens / s")
    ax.set_title(f"{len(ranked)} runnable configurations")
    ax.legend()
    fig.tight_layout()
    path = folder / "pareto.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(str(path))
    if kind == "training":
        best = ranked[:10]
        parts = list(dict.fromkeys(p for r in best for p in _components(r["metrics"])))
        fig, ax = plt.subplots(figsize=(8, 4.5))
        bottoms = [0.0] * len(best)
        labels = [plot_label(r["config"], _varying(best)) for r in best]
        for part in parts:
            values = [_components(r["metrics"]).get(part, 0.0) for r in best]
            ax.bar(range(len(best)), values, bottom=bottoms, label=part)
            bottoms = [b + v for b, v in zip(bottoms, values)]
        ax.set_xticks(range(len(best)), labels, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("seconds per step (critical stage)")
        ax.set_title("Step breakdown of the best configurations")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never on one
        fig.tight_layout()
        path = folder / "breakdown.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(str(path))
    return written
