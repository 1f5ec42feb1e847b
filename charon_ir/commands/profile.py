"""
`charon profile`: measure a model's ops with torch on this machine and store them
in the profile database (DESIGN.md sections 5 and 7), and fit the predictor.

    charon profile --device cpu                       # the bundled tiny Llama step
    charon profile --device cpu --ops-from model.mlir
    charon profile --device cpu --model examples/llama_tiny_config.json --seq-len 256 --batch 2
    charon profile --device cuda --shipped-steps --db k.db  # the kernels Charon ships (GPU)
    charon profile --device cuda --shipped-steps --db k.db --refresh-below 1e-4  # small ones again
    charon profile --fit                              # held-out error per op family

Each op is measured on its own shapes and, unless `--sweep ""`, on variants with
one dimension scaled (`charon_ir.profile.sweep`) for the predictor to fit on. A
run measures only what the database lacks; interrupting it keeps what was
measured. To price with CPU measurements, run the passes with
`CHARON_PROFILE_DEVICE=cpu` (`charon_ir.profile.device`).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from charon_ir.commands import on_command_line
from charon_ir.errors import CharonError
from charon_ir.frontend import import_model
from charon_ir.profile.collect import OpSet, parse_module_file, parse_module_text
from charon_ir.profile.fit import error_by_kind, held_out_error, samples_by_family
from charon_ir.profile.reference_step import llama_step_mlir
from charon_ir.profile.session import plan, profile_ops, torch_device
from charon_ir.profile.shipped import SHIPPED_STEPS
from charon_ir.profile.shipped_steps import shipped_steps_opset
from charon_ir.profile.store import ProfileStore, default_db_path
from charon_ir.report.output import names_a_folder

DEFAULT_SWEEP = "0.25,0.5,0.75,1.5,2,3"
"""`charon_ir.profile.sweep.DEFAULT_FACTORS`, spelled out so `charon --help` imports no IR."""


def register(app: typer.Typer) -> None:
    app.command("profile")(profile_command)


def profile_command(
    ctx: typer.Context,
    device: Annotated[
        str | None, typer.Option("--device", help="cpu or cuda (cuda:N): measure on this device")
    ] = None,
    ops_from: Annotated[
        list[Path] | None,
        typer.Option("--ops-from", help="a .mlir file whose compute ops to measure (repeat for several)"),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="a model to import and measure: bundled name, config.json or a model folder"),
    ] = None,
    shipped_steps: Annotated[
        bool,
        typer.Option("--shipped-steps", help="measure the ops of the training steps whose GPU kernels Charon ships"),
    ] = False,
    seq_len: Annotated[int, typer.Option("--seq-len", help="with --model: tokens per sequence")] = 256,
    batch: Annotated[int, typer.Option("--batch", help="with --model: sequences per step")] = 2,
    db: Annotated[
        str | None,
        typer.Option("--db", help="database file (default $CHARON_PROFILE_DB or ~/.cache/charon/profile.db)"),
    ] = None,
    fit: Annotated[bool, typer.Option("--fit", help="fit the predictor and print its held-out error")] = False,
    repeats: Annotated[int, typer.Option("--repeats", help="timed samples per op", min=1)] = 10,
    warmup: Annotated[int, typer.Option("--warmup", help="untimed calls before timing", min=0)] = 2,
    sweep: Annotated[
        str, typer.Option("--sweep", help="factors the sweep scales one dim by; '' for none")
    ] = DEFAULT_SWEEP,
    threads: Annotated[int, typer.Option("--threads", help="CPU: torch threads (1 is stored as 'cpu')", min=1)] = 1,
    device_name: Annotated[
        str | None, typer.Option("--device-name", help="store under this device name instead")
    ] = None,
    refresh_below: Annotated[
        float,
        typer.Option("--refresh-below", help="measure again the stored ops faster than this many seconds"),
    ] = 0.0,
    budget: Annotated[
        float,
        typer.Option("--budget", min=0.0, help="seconds to spend measuring (0: no limit): the model's ops first, "
                     "then the sweep's variants; what is left, a later run measures"),
    ] = 0.0,
) -> None:
    """Measure ops into the profile database; with --fit, report the predictor's error."""
    if db and names_a_folder(os.path.expanduser(db)):
        raise CharonError(f"--db {db}: is a directory, not a file")
    path = Path(db).expanduser() if db else default_db_path()
    if device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise CharonError(f"--device {device}: expected cpu, cuda or cuda:N")
    if device is None and not fit:
        raise CharonError("charon profile: pass --device cpu|cuda to measure, or --fit")
    if device is None and (ops_from or model is not None or shipped_steps):
        raise CharonError("charon profile: --ops-from, --model and --shipped-steps need --device cpu|cuda")
    if model is None:
        for name, flag in (("seq_len", "--seq-len"), ("batch", "--batch")):
            if on_command_line(ctx, name):
                raise CharonError(f"{flag} shapes the step --model imports; the ops of --ops-from "
                                  "(or the bundled step) have their own shapes")
    for flag, value in (("--seq-len", seq_len), ("--batch", batch)):
        if value < 1:
            raise CharonError(f"{flag} must be >= 1, got {value}")
    if not 0 <= refresh_below < math.inf:  # NaN fails too
        raise CharonError(f"--refresh-below must be a number of seconds >= 0, got {refresh_below}")
    if device_name is not None and not device_name.strip():
        raise CharonError("--device-name must name a device (it keys the measurements), got a blank")
    measured_on: str | None = None
    if device is not None:
        factors = _factors(sweep)
        # read the ops and find the device first: bad input leaves no database
        # file behind
        opset, source = _ops(ops_from, model, shipped_steps, seq_len, batch)
        torch_device(device)
        with ProfileStore.open(path) as store:
            measured_on = _measure(
                store, device, opset, source, factors, repeats, warmup, threads, device_name, refresh_below,
                budget,
            )
    if fit:
        store = ProfileStore.open_existing(path)
        if store is None:
            raise CharonError(f"profile database {path} does not exist: run charon profile --device first")
        with store:
            _print_fit(store, measured_on)


def _factors(text: str) -> tuple[float, ...]:
    try:
        factors = tuple(float(f) for f in text.split(",") if f.strip())
    except ValueError:
        raise CharonError(f"--sweep {text!r}: expected comma-separated numbers, e.g. 0.5,2") from None
    if not all(0 < f < math.inf for f in factors):  # NaN fails too
        raise CharonError(f"--sweep {text!r}: factors must be finite numbers > 0")
    return factors


def _ops(ops_from: list[Path] | None, model: str | None, shipped_steps: bool, seq_len: int, batch: int):
    if bool(ops_from) + (model is not None) + shipped_steps > 1:
        raise CharonError("charon profile: pass one of --ops-from, --model and --shipped-steps")
    if shipped_steps:
        return shipped_steps_opset(), f"the shipped training steps ({'; '.join(SHIPPED_STEPS)})"
    opset = OpSet()
    if model is not None:
        opset.add_module(import_model(model, seq_len=seq_len, batch=batch, mode="train"))
        return opset, f"{model} (seq {seq_len}, batch {batch})"
    if ops_from:
        # one plan over every file: an op two files share, and its sweep
        # variants, are measured once
        for path in ops_from:
            opset.add_module(parse_module_file(path))
        return opset, ", ".join(map(str, ops_from))
    opset.add_module(parse_module_text(llama_step_mlir(), "reference_step"))
    return opset, "the bundled tiny Llama step (charon_ir/profile/reference_step.py)"


def _measure(store, device, opset, source, factors, repeats, warmup, threads, device_name, refresh_below,
             budget: float = 0.0) -> str:
    """Measure what the database lacks; return the device name it is stored under."""
    err = Console(stderr=True)
    items = plan(opset, factors)
    err.print(
        f"profiling {len(opset.ops)} distinct ops of {source} and {len(items) - len(opset.ops)} "
        f"sweep variants into {store.path}"
    )
    started = time.monotonic()
    state: dict[str, object] = {}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
        console=err,
    ) as progress:
        task = progress.add_task("measuring", total=len(items))

        def on_start(run, total: int) -> None:
            state["run"] = run
            # the bar counts measurements: each op not in the database yet, once a
            # round (rounds interleave the ops so that a slow spell of the machine
            # spreads over all of them)
            todo = len(items) - run.already
            rounds = total // todo if todo else 0
            progress.update(task, total=total,
                            description=f"measuring {todo} ops x {rounds} rounds on {run.device}"
                            + (f" ({run.already} already in the database)" if run.already else ""))

        try:
            run = profile_ops(
                store, items, device, warmup=warmup, repeats=repeats, device_name=device_name,
                cpu_threads=threads, on_start=on_start, on_op=lambda key: progress.advance(task),
                refresh_below=refresh_below, budget_s=budget,
            )
        except KeyboardInterrupt:
            progress.stop()
            run = state.get("run")
            measured = getattr(run, "measured", 0)
            print(
                f"interrupted: {measured} measurements kept in {store.path}; run again to resume",
                file=sys.stderr,
            )
            raise SystemExit(130) from None
    elapsed = time.monotonic() - started
    print(
        f"{run.device} (torch {run.torch_version}): measured {run.measured}, "
        f"already in the database {run.already}, in {elapsed:.1f} s",
        file=sys.stderr,
    )
    if run.left_for_later:
        print(f"--budget {budget:g} s reached: {run.left_for_later} ops left unmeasured; run again to measure them",
              file=sys.stderr)
    if opset.views:
        print(f"zero-work views (cost 0, not measured): {opset.views}", file=sys.stderr)
    for reason, count in sorted(run.not_runnable.items()):
        print(f"not measured x{count} (priced by the next engine): {reason}", file=sys.stderr)
    for reason, count in sorted(run.timed_eagerly.items()):
        print(f"timed eagerly x{count} (no CUDA graph: launches included): {reason}", file=sys.stderr)
    return run.device


def _print_fit(store, device: str | None) -> None:
    devices = store.devices() if device is None else [device]
    if not devices:
        raise CharonError(f"profile database {store.path} holds no measurements")
    console = Console()
    for dev in devices:
        families = samples_by_family(store.measurements(dev))
        if not families:
            raise CharonError(f"profile database {store.path} holds no measurements on {dev}")
        table = Table(title=f"predictor held-out error on {dev} (interior records, 5-fold)")
        for col, justify in (("family", "left"), ("records", "right"), ("model", "left"),
                             ("mean error", "right"), ("max error", "right")):
            table.add_column(col, justify=justify)  # pyright: ignore[reportArgumentType]
        results = []
        for family, samples in families.items():
            h = held_out_error(family, samples)
            name = escape(family)  # `elementwise[silu]` is not rich markup
            if h is None:
                table.add_row(name, str(len(samples)), "-", "too few", "-")
            else:
                results.append(h)
                table.add_row(name, str(h.records), h.model, f"{h.mape:.1%}", f"{h.max_error:.1%}")
        console.print(table)
        kinds = Table(title=f"per op kind on {dev}")
        for col in ("kind", "held out", "mean error"):
            kinds.add_column(col, justify="left" if col == "kind" else "right")
        for kind, (n, mape) in error_by_kind(results).items():
            kinds.add_row(kind, str(n), f"{mape:.1%}")
        console.print(kinds)
