"""Text and JSON forms of `charon validate`'s results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from charon_ir.validation.runner import GATE_EXCEPTIONS, REPORTED_GROUPS, RecordResult, Summary
from charon_ir.validation.training import SOURCE_FLOPS


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def format_results(results: Sequence[RecordResult], summary: Sequence[Summary]) -> str:
    lines = []
    width = max((len(r.id) for r in results), default=10)
    lines.append(f"{'record':{width}}  {'measured':>9} {'predicted':>9} {'error':>7}  quantity / notes")
    for group in ("training", "inference", "long-context", "kernel", "comm", "layer", "memory", "?"):
        rows = [r for r in results if r.group == group]
        if not rows:
            continue
        lines.append(f"-- {group}")
        for r in rows:
            if r.status == "ok":
                what = r.quantity + (f" (published: {r.published})" if r.published else "")
                if r.note:
                    what += f"; {r.note}"
                lines.append(f"{r.id:{width}}  {_num(r.measured):>9} {_num(r.predicted):>9} "
                             f"{_pct(r.error):>7}  {what}")
            else:
                lines.append(f"{r.id:{width}}  {'':>9} {'':>9} {'':>7}  {r.status}: {r.note}")
    excepted = [r.id for r in results if r.id in GATE_EXCEPTIONS and r.error is not None]
    if excepted:
        lines.append("")
        lines.append("Not judged by --max-error (kept in the MAPE):")
        lines += [f"  {rid}: {GATE_EXCEPTIONS[rid]}" for rid in excepted]
    reported = sorted({r.group for r in results if r.group in REPORTED_GROUPS and r.error is not None})
    if reported:
        lines.append("")
        lines.append("Reported, not in the overall MAPE nor judged by --max-mape / --max-error:")
        lines += [f"  {group}: {REPORTED_GROUPS[group]}" for group in reported]
    margins = sorted(r.memory_margin for r in results if r.memory_margin is not None)
    if margins:
        over = sum(m < 0 for m in margins)
        lines.append("")
        lines.append(f"Memory: {len(margins) - over} of {len(margins)} published runs predicted to fit; "
                     f"margin (1 - peak / GPU memory) from {margins[0]:+.0%} to {margins[-1]:+.0%}, "
                     f"median {margins[len(margins) // 2]:+.0%} (--json: memory_margin per record)")
    formulas = sorted({r.source for r in results if r.group == "training"} & set(SOURCE_FLOPS))
    if formulas:
        lines.append("")
        lines.append("FLOP/s records are converted to iteration time with the source's own FLOP count:")
        lines += [f"  {source}: {SOURCE_FLOPS[source]}" for source in formulas]
    lines.append("")
    groups = max([10] + [len(s.group) for s in summary])
    lines.append(f"{'group':{groups}} {'source':16} {'records':>7} {'MAPE':>7} {'max|err|':>8} "
                 f"{'bias':>7}  not compared")
    for s in summary:
        mape = "-" if s.mape is None else f"{s.mape * 100:.1f}%"
        worst = "-" if s.max_abs_error is None else f"{s.max_abs_error * 100:.1f}%"
        lines.append(f"{s.group:{groups}} {s.source:16} {s.compared:7d} {mape:>7} {worst:>8} "
                     f"{_pct(s.bias):>7}  {s.skipped}")
    return "\n".join(lines)


def results_json(results: Sequence[RecordResult], summary: Sequence[Summary]) -> dict[str, Any]:
    return {
        "records": [r.to_json() for r in results],
        "summary": [asdict(s) for s in summary],
        "max_error_exceptions": {r.id: GATE_EXCEPTIONS[r.id] for r in results if r.id in GATE_EXCEPTIONS},
        "reported_groups": {g: REPORTED_GROUPS[g] for g in sorted({r.group for r in results})
                            if g in REPORTED_GROUPS},
    }
