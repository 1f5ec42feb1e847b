"""`charon validate`: the simulator against published measurements.

Each record of `validation/published.json` (or of `--set FILE`, a JSON list of
records in the same form) becomes a simulate, serve or kernel run built from the
record's own model, hardware and strategy; the command prints the error per
record, the MAPE, the largest error and the mean signed error (bias) per source
and overall. `--max-mape` and `--max-error` make it a gate (exit 1 past either,
or when a record that should run fails), for a CI that guards the fidelity of a
change. `--live` instead measures a small
Llama training step on this machine and compares it with its simulation.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from charon_ir.commands import trace_run as tr
from charon_ir.errors import CharonError
from charon_ir.interop.kineto import validate_profile
from charon_ir.validation import load_record_set
from charon_ir.validation.live import format_live, run_live
from charon_ir.validation.report import format_results, results_json
from charon_ir.validation.runner import gate_failure, summarize, validate


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_command)


def validate_command(
    record_set: Annotated[
        str, typer.Option("--set", help="a JSON file of records (default: the shipped published.json)")
    ] = "",
    only: Annotated[
        str | None, typer.Option("--only", help="training, inference, long-context, kernel, comm, layer or memory "
                                 "(default: all)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    live: Annotated[
        bool, typer.Option("--live", help="measure a small Llama step here and compare")
    ] = False,
    device: Annotated[str, typer.Option("--device", help="--live: cpu or cuda (default: cuda if present)")] = "",
    framework: Annotated[str, typer.Option("--framework", help="simulate every training record under this "
                                           "framework's defaults (default: each record's own)")] = "",
    jobs: Annotated[int, typer.Option("--jobs", help="processes for training records (default: one per CPU)",
                                      show_default=False)] = 0,
    max_mape: Annotated[
        float, typer.Option("--max-mape", help="exit 1 if the overall MAPE exceeds this fraction (0.10: 10 %); with --only memory, the memory group's")
    ] = 0.0,
    max_error: Annotated[
        float, typer.Option("--max-error", help="exit 1 if a record's |error| exceeds this fraction")
    ] = 0.0,
    require_fit: Annotated[
        bool, typer.Option("--require-fit", help="exit 1 if a published training run is predicted not to fit")
    ] = False,
    profile: tr.Profile = "",
    model: tr.Model = "",
    seq_len: tr.SeqLen = 2048,
    micro_batch: tr.MicroBatch = 1,
    hardware: tr.Hardware = "H100-SXM5-80GB",
    gpus: tr.Gpus = 1,
    tp: tr.Tp = 1,
    pp: tr.Pp = 1,
    fuse: tr.Fuse = False,
    engines: tr.Engines = "calibrated,analytic",
    host_launch_us: tr.HostLaunch = 0.0,
    fuse_backward: Annotated[bool, typer.Option(
        "--fuse-backward", help="the training records with each fused kernel's backward as one kernel "
                                "(a what-if: `charon simulate --fuse-backward`)")] = False,
) -> None:
    """Compare predictions with published (or, with --live, local; with
    --profile, a trace's) measurements."""
    if profile:
        if live or record_set or only is not None or fuse_backward:
            raise CharonError("--profile compares one traced step: --live, --set, --only and --fuse-backward "
                              "do not apply")
        if not model:
            raise CharonError("--profile: give --model, the traced step's model (and its --seq-len)")
        print(validate_profile(profile, model, tr.run_options(seq_len, micro_batch, hardware, gpus, tp, pp,
                                                              fuse, engines, host_launch_us), as_json))
        return

    if jobs < 0:
        raise CharonError(f"--jobs must be >= 0 (0: one per CPU), got {jobs}")
    for flag, value in (("--max-mape", max_mape), ("--max-error", max_error)):
        if not math.isfinite(value) or value < 0:
            raise CharonError(f"{flag} must be a finite number >= 0 (a fraction, 0.10: 10 %; 0: no gate), "
                              f"got {value:g}")
    if live:
        given = [flag for flag, value in (("--set", record_set), ("--only", only is not None), ("--jobs", jobs),
                                          ("--framework", framework),
                                          ("--max-mape", max_mape), ("--max-error", max_error),
                                          ("--require-fit", require_fit),
                                          ("--host-launch-us", host_launch_us),
                                          ("--fuse-backward", fuse_backward)) if value]
        if given:
            raise CharonError(f"--live measures a step on this machine: {', '.join(given)} "
                              "apply to the records' comparison")
    if device and not live:
        raise CharonError(f"--device {device}: only --live runs on a device (the records are simulated)")
    if live:
        result = run_live(device=device or None)
        print(json.dumps(result.to_json(), indent=2) if as_json else format_live(result))
        return
    records = load_record_set(Path(record_set) if record_set else None)
    results = validate(records, only=only, jobs=jobs, framework=framework, host_launch_s=host_launch_us * 1e-6,
                       fuse_backward=fuse_backward)
    summary = summarize(results)
    print(json.dumps(results_json(results, summary), indent=2) if as_json
          else format_results(results, summary), flush=True)
    failure = gate_failure(results, summary, max_mape=max_mape, max_error=max_error,
                           require_fit=require_fit)
    if failure:
        raise CharonError(failure)
