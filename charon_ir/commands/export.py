"""`charon export --chakra DIR`: a training step as Chakra execution traces.

The model and parallelism flags are `charon simulate`'s own (its signature is
reused, not copied: a flag added to simulate is a flag of export); the step is
built, priced and lowered as simulate builds it, then written as one `.et` file
per rank (`--ranks 0-63` for a subset) and `comm_group.json`
(`charon_ir/interop/chakra_export.py`).
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from typing import Annotated

import typer

from charon_ir import api
from charon_ir.commands import simulate as simulate_cmd
from charon_ir.errors import CharonError
from charon_ir.interop.chakra_export import Exporter, parse_ranks
from charon_ir.report.output import check_output_dir

REPORT_ONLY = ("as_json", "trace", "plot", "tier", "reserved")
"""simulate's parameters about its report, which an export has no use for."""
NOT_TRAINING_OPTIONS = ("ctx", "model", "framework", "chakra", "ranks")


def register(app: typer.Typer) -> None:
    app.command("export")(export_command())


def export_command():
    """export's function for typer: simulate's parameters (less the report's)
    and export's own."""
    base = inspect.signature(simulate_cmd.simulate_command, eval_str=True)
    own = [
        inspect.Parameter("chakra", inspect.Parameter.KEYWORD_ONLY, default="", annotation=Annotated[
            str, typer.Option("--chakra", help="write Chakra execution traces (one .et per rank) into this folder")]),
        inspect.Parameter("ranks", inspect.Parameter.KEYWORD_ONLY, default="", annotation=Annotated[
            str, typer.Option("--ranks", help="ranks to write, e.g. 0-63 or 0-7,56 (default: every rank)")]),
    ]
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in base.parameters.values()
              if p.name not in REPORT_ONLY]
    ctx_param, rest = params[0], params[1:]
    signature = base.replace(parameters=[ctx_param.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                         *own, *rest])

    @functools.wraps(export)
    def command(ctx, **values):
        return export(ctx, **values)

    del command.__wrapped__  # typer must read the signature below, not export's
    command.__signature__ = signature  # pyright: ignore[reportFunctionMemberAccess]
    command.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return command


def export(ctx: typer.Context, **values) -> None:
    """Write a training step as Chakra execution traces, one per rank.

    The same model and parallelism flags as `charon simulate`; the traces hold
    every event of the step (layers and micro-batches unrolled) with the cost
    engines' durations, and comm_group.json maps each pg_name to its ranks."""
    directory = values.pop("chakra")
    ranks_text = values.pop("ranks")
    if not directory:
        raise CharonError("export: give --chakra DIR (the folder the traces go to)")
    check_output_dir(directory, "--chakra")
    model, framework = values["model"], values["framework"]
    values["hardware"] = simulate_cmd.step_hardware(ctx, values)
    options = simulate_cmd.step_options(ctx, values)
    start = time.perf_counter()
    config, _ = api.configure(model, framework, **options)
    ctx_ir, module, _ = api.build_training_module(config)
    api.make_pass("lower-to-events", **api.lowering_options(config)).apply(ctx_ir, module)
    exporter = Exporter(module, meta={"model": model, "framework": framework})
    ranks = parse_ranks(ranks_text, exporter.mesh.world)
    summary = exporter.write(directory, ranks)
    seconds = time.perf_counter() - start
    per_class = ", ".join(f"{rc.name} {len(rc):,}" for rc in summary.classes)
    print(f"wrote {len(ranks)} Chakra traces ({summary.directory}/charon.<rank>.et, ranks "
          f"{ranks_text or f'0-{exporter.mesh.world - 1}'}) and comm_group.json ({summary.groups} process groups) "
          f"in {seconds:.1f} s; nodes per rank class: {per_class}", file=sys.stderr)
