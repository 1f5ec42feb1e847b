"""`charon calibrate`: the analytic engine's error on the published kernel, NCCL
and per-layer records (validation/published.json), one row per record.

`--refit` re-derives the per-GPU-type constants from the same records and
prints them (the values in engines/compute_efficiency.py and
engines/collectives.py; docs/calibration.md says where each comes from).
"""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Annotated

import typer

from charon_ir.commands import trace_run as tr
from charon_ir.errors import CharonError
from charon_ir.interop.kineto import calibration_action
from charon_ir.validation import calibration


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_command)


def calibrate_command(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    only: Annotated[
        str | None, typer.Option("--only", help="gemm, attention, nccl or layer (default: all)")
    ] = None,
    refit: Annotated[
        bool, typer.Option("--refit", help="also refit the constants and print them")
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
    engines: tr.Engines = "analytic",
    device: Annotated[str, typer.Option("--device", help="with --profile: store the calibration under this device (default: the trace's)")] = "",
    remove: Annotated[str, typer.Option("--remove", help="deactivate DEVICE's calibration in force (the one before it is in force again)")] = "",
    list_calibrations: Annotated[bool, typer.Option("--list", help="list the stored user calibrations")] = False,
) -> None:
    """Print the calibration error of the analytic engine per published record;
    with --profile, calibrate the `calibrated` engine from a measured trace."""
    if profile or remove or list_calibrations:
        print(calibration_action(profile, remove, list_calibrations, model, device,
                                 tr.run_options(seq_len, micro_batch, hardware, gpus, tp, pp, fuse, engines)))
        return
    if only is not None and only not in ("gemm", "attention", "nccl", "layer"):
        raise CharonError(f"--only {only!r}: expected gemm, attention, nccl or layer")
    # the layer rows simulate steps through the frontend: only when asked for
    rows = calibration.comparisons(layers=only in (None, "layer"))
    if only is not None:
        rows = [r for r in rows if r.group == only]
    summary = calibration.summary(rows)
    fitted = calibration.refit() if refit else None

    if as_json:
        out = {
            "records": [
                {
                    "id": r.id,
                    "group": r.group,
                    "gpu": r.gpu,
                    "measured": r.measured,
                    "predicted": round(r.predicted, 3),
                    "unit": r.unit,
                    "error": round(r.error, 4),
                    "primary": r.primary,
                    "setup": r.setup,
                }
                for r in rows
            ],
            "mape": {k: round(v, 4) for k, v in summary.items() if not k.endswith("_max")},
            "max_abs_error": {
                k.removesuffix("_max"): round(v, 4) for k, v in summary.items() if k.endswith("_max")
            },
        }
        if fitted is not None:
            out["refit"] = _plain(fitted)
        print(json.dumps(out, indent=2))
        return

    width = max(len(r.id) for r in rows) if rows else 10
    # measured and predicted share each row's unit (TFLOP/s of a GEMM, GB/s of a collective)
    units = max((len(r.unit) for r in rows), default=4)
    print(f"{'record':{width}}  {'gpu':16} {'measured':>9} {'predicted':>9} {'unit':{units}} "
          f"{'error':>7}  setup")
    for r in rows:
        side = "" if r.primary else "  (quoted on the side, not a record value)"
        print(
            f"{r.id:{width}}  {r.gpu:16} {r.measured:9.1f} {r.predicted:9.1f} {r.unit:{units}} "
            f"{r.error * 100:+6.1f}%  {r.setup}{side}"
        )
    print()
    for group, tol in (("gemm", calibration.KERNEL_TOLERANCE),
                       ("attention", calibration.KERNEL_TOLERANCE),
                       ("nccl", calibration.NCCL_TOLERANCE),
                       ("layer", calibration.KERNEL_TOLERANCE)):
        n = sum(1 for r in rows if r.group == group and r.primary)
        if n:
            print(
                f"{group:10} {n:3d} records  MAPE {summary[group] * 100:5.1f}%  "
                f"max |error| {summary[group + '_max'] * 100:5.1f}%  (target {tol * 100:.0f}%)"
            )
    if fitted is not None:
        print("\nrefitted constants:")
        print(json.dumps(_plain(fitted), indent=2))


def _plain(x):
    """JSON-friendly form of the fitted constants (dataclasses, tuple keys)."""
    if is_dataclass(x) and not isinstance(x, type):
        return asdict(x)
    if isinstance(x, dict):
        return {("/".join(k) if isinstance(k, tuple) else str(k)): _plain(v) for k, v in x.items()}
    return x
