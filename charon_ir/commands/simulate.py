"""`charon simulate`: predict one training step (DESIGN.md section 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from charon_ir.errors import CharonError


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)


def simulate_command(
    model: Annotated[str, typer.Option("--model", help="a .mlir file of the sim dialect")],
    hardware: Annotated[str, typer.Option("--hardware", help="GPU name, e.g. H100-SXM5-80GB")] = "H100-SXM5-80GB",
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in the job")] = 8,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="0: the GPU's usual node")] = 0,
    engines: Annotated[str, typer.Option("--engines", help="cost engine chain, comma separated")] = "analytic",
    as_json: Annotated[bool, typer.Option("--json", help="print the JSON report")] = False,
    trace: Annotated[Path | None, typer.Option("--trace", help="write a Chrome/Perfetto trace")] = None,
) -> None:
    """Simulate one training step and print the report."""
    from charon_ir.api import simulate_file

    path = Path(model)
    if path.suffix != ".mlir":
        raise CharonError(f"--model {model}: only .mlir files are supported so far")
    report = simulate_file(
        path,
        hardware=hardware,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        engines=tuple(engines.split(",")),
        trace=trace,
    )
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        from charon_ir.report.table import print_report

        print_report(report)
