"""`-t simulate`: run the interpreter on a module and print the JSON report.

Options:
- compute-slowdown: slowdown of compute overlapped with communication (default:
  the target GPU type's calibrated value, `compute_efficiency.OVERLAP_SLOWDOWN`).
- comm-slowdown: slowdown of communication overlapped with compute (default: the
  same calibrated value).
- trace: path of a Chrome/Perfetto trace to write (default: none).
- tier: fast (loops of identical layers folded, extrapolated from two simulated
  iterations) or fine (every event) (default fast; a module whose host launches
  are modelled, `lower-to-events{host-launch}`, always runs fine).

A module that is priced but not lowered, or targeted but not priced, is finished
with the default pipeline (`cost-annotate`, `lower-to-events`) first.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target as XdslTarget

from charon_ir.dialects import event
from charon_ir.errors import CharonError
from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.report.summary import summarize
from charon_ir.runtime.flatten import flatten_all
from charon_ir.report.trace import write_trace
from charon_ir.runtime.interpreter import OverlapModel, Timeline, calibrated_overlap, run
from charon_ir.target.target import Target


def run_module(
    ctx: Context, module: ModuleOp, overlap: OverlapModel = OverlapModel(), tier: str = "fast",
    loop_cache: dict | None = None,
) -> tuple[list[Timeline], Target]:
    """Interpret every event program of the module (lowering it first if needed)."""
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    if not programs:
        CostAnnotatePass().apply(ctx, module)
        LowerToEventsPass().apply(ctx, module)
        programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    target = Target.from_module(module)
    if tier not in ("fast", "fine"):
        raise CharonError(f"simulate: option 'tier' must be fast or fine, got '{tier}'")
    # the host runs ahead of the GPU across loop boundaries, which a folded loop
    # (simulated on its own, its lanes starting free) does not keep
    launched = any(isinstance(op, event.StreamOp) and op.kind.data == event.StreamKind.HOST for p in programs for op in p.body.ops)
    flat = flatten_all(programs, fold=tier == "fast" and not launched, overlap=overlap, loop_cache=loop_cache)
    return [run(flat, overlap)], target


def simulate_module(
    ctx: Context,
    module: ModuleOp,
    overlap: OverlapModel = OverlapModel(),
    trace: str | None = None,
    tier: str = "fast",
) -> dict:
    """The JSON report of the module; with `trace`, also a Perfetto trace file (a
    trace shows every event, so it always comes from the fine tier)."""
    timelines, target = run_module(ctx, module, overlap, "fine" if trace else tier)
    report = summarize(timelines[0], target)
    if trace:
        write_trace(trace, timelines)
    return report


@dataclass(frozen=True)
class SimulateTarget(XdslTarget):
    name = "simulate"

    compute_slowdown: float | None = None
    comm_slowdown: float | None = None
    trace: str = ""
    tier: str = "fast"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        slowdowns = {"compute_slowdown": self.compute_slowdown, "comm_slowdown": self.comm_slowdown}
        for option, value in slowdowns.items():
            # -1 divided by zero in the interpreter; NaN fails too
            if value is not None and not 0 <= value < math.inf:
                raise CharonError(f"simulate: option '{option}' must be a finite number >= 0, got {value}")
        report = simulate_module(
            ctx,
            module,
            calibrated_overlap(Target.from_module(module).gpu, self.compute_slowdown, self.comm_slowdown),
            trace=self.trace or None,
            tier=self.tier,
        )
        output.write(json.dumps(report, indent=2) + "\n")
