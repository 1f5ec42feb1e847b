"""The report as a terminal table (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _seconds(x: float) -> str:
    if x >= 1:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3f} ms"
    return f"{x * 1e6:.1f} us"


def print_report(report: dict, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"Charon-IR: one step on {report['gpus']} x {report['hardware']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("iteration time", _seconds(report["iteration_time_s"]))
    if report.get("tokens_per_s"):
        table.add_row("tokens/s", f"{report['tokens_per_s']:,.0f}")
    table.add_row("TFLOP/s per GPU", f"{report['tflops_per_gpu']:.1f}")
    table.add_row("MFU", f"{100 * report['mfu']:.1f} %")
    b = report["breakdown"]
    table.add_row("compute", _seconds(b["compute_s"]))
    for axis, value in b["exposed_comm_s"].items():
        table.add_row(f"exposed {axis} comm", _seconds(value))
    table.add_row("pipeline bubble / wait", _seconds(b["bubble_s"]))
    for name, stream in report["streams"].items():
        table.add_row(f"stream {name} busy", f"{_seconds(stream['busy_s'])} ({100 * stream['utilization']:.0f} %)")
    engines = ", ".join(f"{k}: {v}" for k, v in report["engines"].items())
    table.add_row("ops priced by", engines)
    console.print(table)
