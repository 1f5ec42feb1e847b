"""The report as terminal tables (rich): the step's summary, then one row per
pipeline stage (compute, the exposed communication of each axis, the bubble, how
busy the compute stream is, the peak memory), so a 16-stage run stays one screen
tall. Every stream's busy time is in the JSON report (`streams`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

GIB = 2**30


def _seconds(x: float) -> str:
    if x >= 1:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.1f} us"


def _summary(report: dict) -> Table:
    table = Table(title=f"Charon-IR: one step on {report['gpus']} x {report['hardware']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("iteration time", _seconds(report["iteration_time_s"]))
    if report.get("tokens_per_s"):
        table.add_row("tokens/s", f"{report['tokens_per_s']:,.0f}")
    else:  # hand-written IR: the step's tokens are its `sim.input {tokens}`
        table.add_row("tokens/s", "not known: no sim.input marked {tokens}")
    table.add_row("TFLOP/s per GPU", f"{report['tflops_per_gpu']:.1f}")
    table.add_row("MFU", f"{100 * report['mfu']:.1f} %")
    if report.get("model_flops_per_gpu", 0.0) < report.get("flops_per_gpu", 0.0):  # recompute
        table.add_row("HFU (recompute included)", f"{100 * report['hfu']:.1f} %")
    b = report["breakdown"]
    stage = f" (stage {b['stage']})" if "stage" in b and len(report.get("stages", [])) > 1 else ""
    table.add_row(f"compute{stage}", _seconds(b["compute_s"]))
    for axis, value in b["exposed_comm_s"].items():
        table.add_row(f"exposed {axis} comm", _seconds(value))
    table.add_row("pipeline bubble / wait", _seconds(b["bubble_s"]))
    peaks = report.get("peak_memory_bytes") or []
    reserved = report.get("peak_reserved_bytes") or []
    if peaks:
        table.add_row("peak memory per GPU", f"{max(peaks) / GIB:.1f} GiB")
    if reserved:
        over = [i for i, fits in enumerate(report.get("reserved_fits") or []) if not fits]
        table.add_row("peak reserved per GPU", f"{max(reserved) / GIB:.1f} GiB")
        if over:
            text = f"stage {', '.join(map(str, over))}: the replay runs out of memory"
            first = report.get("reserved_oom")
            if first:
                unit, scale = ("GiB", GIB) if first["capacity_bytes"] >= GIB else ("MiB", 2**20)
                text = (f"stage {', '.join(map(str, over))}: {first['reserved_bytes'] / scale:.1f} of "
                        f"{first['capacity_bytes'] / scale:.1f} {unit} (stage {first['stage']})")
            table.add_row("reserved past the memory", text)
    offload = report.get("cpu_offload")
    if offload:
        host = max(offload["host_bytes_per_microbatch"], default=0)
        table.add_row("CPU-offloaded activations", f"{offload['layers']} layers, {host / GIB:.2f} GiB per "
                      "micro-batch on the host")
    engines = ", ".join(f"{k}: {v}" for k, v in report["engines"].items())
    table.add_row("ops priced by", engines)
    framework = report.get("framework")
    if framework:
        table.add_row("framework defaults", _framework_defaults(framework))
    return table


SETTING_WORDS = {
    "sequence_parallel": "sequence parallel", "zero": "ZeRO-{}", "dp_overlap": "overlapped grad reduce",
    "dp_overlap_param_gather": "overlapped param gather", "dp_bucket_mb": "{} MiB buckets",
    "tp_comm_overlap": "tp-comm overlap", "fp8_recipe": "fp8 {}", "fsdp": "FSDP",
    "attention_kernel": "{} attention", "fuse_attention": "unfused attention",
    "optimizer": "{} optimizer", "unfused_grad_accumulation": "unfused grad accumulation",
    "pipeline_scatter_gather": "pipeline scatter-gather", "blocking_comm": "blocking {} comm",
    "fp8_params": "fp8 weights", "pp_send_overlap": "waited-for pipeline sends",
}
"""How the table names a setting a framework preset turned on."""


def _framework_defaults(framework: dict) -> str:
    """The framework's name and the settings its preset decided (not the flags'),
    in words: `megatron-core: sequence parallel, ZeRO-1, ...`."""
    words = []
    for setting, entry in framework.get("settings", {}).items():
        value = entry["value"]
        if not entry["from"].startswith("framework"):
            continue
        if setting in ("fuse_attention", "pp_send_overlap"):  # only their off state is news
            value = not value
        if setting == "grad_bytes":
            words.append("fp32 main gradients" if value == 4 else "bf16 gradients")
            continue
        if value in (False, 0, "", [], None):
            continue
        text = SETTING_WORDS.get(setting, setting)
        shown = ",".join(value) if isinstance(value, list) else value
        words.append(text.format(shown) if "{}" in text else text)
    return f"{framework['name']}: {', '.join(words) or 'none'}"


def _per_stage(report: dict) -> Table | None:
    stages = report.get("stages") or []
    if len(stages) < 2:
        return None
    axes = sorted({axis for s in stages for axis in s["exposed_comm_s"]})
    compute_use = {
        name.rpartition("/")[0]: stream["utilization"]
        for name, stream in report.get("streams", {}).items()
        if name.endswith("/compute")
    }
    peaks = report.get("peak_memory_bytes") or []
    table = Table(title="per pipeline stage, seconds (comm: exposed)")
    # stages on different GPUs (a cluster of several node kinds) name theirs
    gpus = [s.get("hardware", "") for s in stages]
    for column in ["stage", *(["GPU"] if any(gpus) else []), "compute",
                   *[f"{axis} comm" for axis in axes], "bubble", "busy %"]:
        table.add_column(column, justify="right")
    reserved = report.get("peak_reserved_bytes") or []
    fits = report.get("reserved_fits") or []
    if peaks:
        table.add_column("GiB", justify="right")
    if reserved:
        table.add_column("reserved", justify="right")
    for i, s in enumerate(stages):
        row = [str(i), *([gpus[i]] if any(gpus) else []), f"{s['compute_s']:.3f}"]
        row += [f"{s['exposed_comm_s'].get(axis, 0.0):.3f}" for axis in axes]
        row.append(f"{s['bubble_s']:.3f}")
        row.append(f"{100 * compute_use.get(f'stage{i}', 0.0):.0f}")
        if peaks:
            row.append(f"{peaks[i] / GIB:.1f}" if i < len(peaks) else "")
        if reserved:
            over = i < len(fits) and not fits[i]
            row.append(f"{reserved[i] / GIB:.1f}{' OOM' if over else ''}" if i < len(reserved) else "")
        table.add_row(*row)
    return table


def print_report(report: dict, console: Console | None = None) -> None:
    console = console or Console()
    console.print(_summary(report))
    stages = _per_stage(report)
    if stages is not None:
        console.print(stages)
