"""`charon sweep SPACE.yaml`: explore a design space (DESIGN.md section 7).

The space comes from a YAML file, flags, or both (flags override the file's
settings; a comma-separated flag value is an axis: `--tp 2,4,8`). Results stream
into a sqlite file (`--db`, default `<space name>.sqlite` in the `--plot` folder,
else in the working directory), so an interrupted sweep reruns from where it
stopped.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from charon_ir.commands import on_command_line
from charon_ir.errors import CharonError, one_line
from charon_ir.report.output import check_output_dir
from charon_ir.sweep import summarise
from charon_ir.sweep.analysis import (HARDWARE_KEYS, STRATEGY_KEYS, TUNING_KEYS, check_pareto_axis, rank,
                                      table_rows, write_plots)
from charon_ir.sweep.runner import check_options, run_sweep
from charon_ir.sweep.space import HARDWARE_AXES, TRAINING_DEFAULTS, load_space, read_space_file

MAX_POINTS = 10**6
"""`--max-points`' default: charon_ir.sweep.runner.MAX_POINTS (not imported here, so
that `charon --help` imports no sweep machinery)."""

Opt = typer.Option

AXIS_FLAGS = (
    "model", "hardware", "gpus", "cluster", "tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch",
    "recompute", "zero", "sequence_parallel", "fuse", "seq_len", "global_batch", "batch", "max_num_seqs", "rate", "num_requests", "replicas",
    "prefill_decode_split", "input_len", "output_len", "nic_speed", "scale_up_domain", "topology",
    "peak_flops_scale", "hbm_bw", "hbm_capacity", "scale_up_bw", "scale_out_bw",
    "fuse_attention", "attention_kernel", "tp_comm_overlap", "pipeline_scatter_gather", "dp_bucket_mb",
    "dp_overlap", "dp_overlap_param_gather", "optimizer", "memory_limit_gb", "unfused_grad_accumulation",
    "framework", "fp8_recipe", "grad_bytes", "cp_comm_type", "hierarchical_cp",
)
FLAG_NAMES = {"dp_overlap_param_gather": "--overlap-param-gather"}
"""Settings whose flag is not their name with dashes (as `charon simulate` spells it)."""
POINTS_FAILED = 3
"""Exit status of a sweep some of whose points failed with an error (the others'
results are stored): 1 is bad input, or a sweep none of whose points runs."""
FAILURE_LINES = 10
"""Distinct errors printed at most (--json lists every point's)."""
ILLEGAL_REASONS = 5
"""Pruning rules the summary tallies at most."""


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)


def _axis(flag: str, text: str) -> Any:
    items = [v.strip() for v in text.split(",")]
    if not all(items):
        raise CharonError(f"{flag}: empty value in '{text}' (a comma-separated list is an axis, e.g. 1,2,4)")
    values = [_value(v) for v in items]
    return values if len(values) > 1 else values[0]


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def sweep_command(
    ctx: typer.Context,
    space_file: Annotated[Path | None, typer.Argument(help="space YAML (examples/sweeps/)")] = None,
    kind: Annotated[str, Opt("--kind", metavar="training|serving", help="training | serving (without a space file)")] = "training",
    name: Annotated[str, Opt("--name", help="the sweep's name (default: the space file's)")] = "",
    model: Annotated[str, Opt("--model", help="model (comma list: an axis)")] = "",
    hardware: Annotated[str, Opt("--hardware", help="GPU type(s)")] = "",
    gpus: Annotated[str, Opt("--gpus", help="GPUs in the job, e.g. 64,128 (training)")] = "",
    cluster: Annotated[str, Opt("--cluster", help="cluster file(s) or preset(s), e.g. dgx-h100")] = "",
    tp: Annotated[str, Opt("--tp", help="e.g. 1,2,4,8")] = "",
    pp: Annotated[str, Opt("--pp", help="pipeline-parallel stages, e.g. 1,2,4")] = "",
    dp: Annotated[str, Opt("--dp", help="data-parallel replicas (0: gpus / (tp pp cp))")] = "",
    cp: Annotated[str, Opt("--cp", help="context-parallel ranks, e.g. 1,2")] = "",
    cp_comm_type: Annotated[str, Opt("--cp-comm-type", metavar="p2p|a2a|a2a+p2p", help="with cp > 1: p2p (ring) | a2a (Ulysses) | a2a+p2p (all-to-all within --hierarchical-cp ranks, the ring between them); a comma list: an axis")] = "",
    hierarchical_cp: Annotated[str, Opt("--hierarchical-cp", help="with cp_comm_type a2a+p2p: ranks of the inner all-to-all group, e.g. 2,4")] = "",
    ep: Annotated[str, Opt("--ep", help="expert-parallel ranks (MoE models), e.g. 1,8")] = "",
    vpp: Annotated[str, Opt("--vpp", help="virtual stages per pipeline rank (interleaved)")] = "",
    micro_batch: Annotated[str, Opt("--micro-batch", help="sequences per micro-batch, e.g. 1,2,4")] = "",
    recompute: Annotated[str, Opt("--recompute", metavar="none|selective|selective-op|full", help="none | selective | selective-op | full (a comma list: an axis)")] = "",
    zero: Annotated[str, Opt("--zero", metavar="0|1|2|3", help="ZeRO stage 0 | 1 | 2 | 3 (a comma list: an axis)")] = "",
    sequence_parallel: Annotated[str, Opt("--sequence-parallel", metavar="true|false", help="true, false or true,false")] = "",
    fuse: Annotated[str, Opt("--fuse", metavar="true|false", help="true (default), false or true,false: fused kernels")] = "",
    seq_len: Annotated[str, Opt("--seq-len", help="training tokens per sequence, e.g. 4096,8192")] = "",
    global_batch: Annotated[str, Opt("--global-batch", help="sequences per step, e.g. 512,1024")] = "",
    batch: Annotated[str, Opt("--batch", help="serving: a static batch of requests")] = "",
    max_num_seqs: Annotated[str, Opt("--max-num-seqs", help="serving: batch cap of continuous batching")] = "",
    rate: Annotated[str, Opt("--rate", help="serving: Poisson requests per second")] = "",
    num_requests: Annotated[str, Opt("--num-requests", help="serving: requests of the Poisson source")] = "",
    replicas: Annotated[str, Opt("--replicas", help="serving replicas")] = "",
    prefill_decode_split: Annotated[str, Opt("--prefill-decode-split", help="serving 'P:D' GPUs")] = "",
    input_len: Annotated[str, Opt("--input-len", help="serving: prompt tokens per request")] = "",
    output_len: Annotated[str, Opt("--output-len", help="serving: generated tokens per request")] = "",
    nic_speed: Annotated[str, Opt("--nic-speed", help="e.g. 400Gb/s,800Gb/s")] = "",
    scale_up_domain: Annotated[str, Opt("--scale-up-domain", help="e.g. 8,72")] = "",
    topology: Annotated[str, Opt("--topology", metavar="fat_tree|rail_fat_tree|fullflat", help="fat_tree | rail_fat_tree | fullflat")] = "",
    peak_flops_scale: Annotated[str, Opt("--peak-flops-scale", help="every peak FLOP/s x this, e.g. 1,2")] = "",
    hbm_bw: Annotated[str, Opt("--hbm-bw", help="HBM bandwidth, e.g. 3.35TB/s,8TB/s")] = "",
    hbm_capacity: Annotated[str, Opt("--hbm-capacity", help="HBM capacity, e.g. 80GiB,192GiB")] = "",
    scale_up_bw: Annotated[str, Opt("--scale-up-bw", help="scale-up bandwidth per GPU and direction, e.g. 450GB/s,900GB/s")] = "",
    scale_out_bw: Annotated[str, Opt("--scale-out-bw", help="scale-out bandwidth per GPU and direction, e.g. 50GB/s,100GB/s")] = "",
    fuse_attention: Annotated[str, Opt("--fuse-attention", metavar="true|false", help="true (default), false or true,false: flash attention")] = "",
    attention_kernel: Annotated[str, Opt("--attention-kernel", metavar="flash2|flash3|triton", help="flash2 | flash3 | triton")] = "",
    tp_comm_overlap: Annotated[str, Opt("--tp-comm-overlap", metavar="true|false", help="true, false or true,false")] = "",
    pipeline_scatter_gather: Annotated[str, Opt("--pipeline-scatter-gather", metavar="true|false", help="true, false or true,false")] = "",
    dp_bucket_mb: Annotated[str, Opt("--dp-bucket-mb", help="e.g. 25,100")] = "",
    dp_overlap: Annotated[str, Opt("--dp-overlap", metavar="true|false", help="true (default), false or true,false")] = "",
    dp_overlap_param_gather: Annotated[str, Opt("--overlap-param-gather", metavar="true|false", help="true, false or true,false (zero 1/2)")] = "",
    optimizer: Annotated[str, Opt("--optimizer", metavar="fused|unfused-fp16|unfused-bf16", help="fused | unfused-fp16 | unfused-bf16")] = "",
    unfused_grad_accumulation: Annotated[str, Opt("--unfused-grad-accumulation", metavar="true|false", help="true, false or true,false")] = "",
    memory_limit_gb: Annotated[str, Opt("--memory-limit-gb", help="memory-analysis' limit per GPU (0: its HBM)")] = "",
    framework: Annotated[str, Opt("--framework", help="training: the stack whose defaults fill the settings not given "
                                  "(megatron-core, the default; none: only the space's; a comma list is an axis)")] = "",
    fp8_recipe: Annotated[str, Opt("--fp8-recipe", metavar="delayed|current|mxfp8|blockwise", help="delayed | current | mxfp8 | blockwise (with precision fp8)")] = "",
    grad_bytes: Annotated[str, Opt("--grad-bytes", metavar="2|4", help="2 (bf16 gradients) | 4 (fp32 main gradients)")] = "",
    db: Annotated[str | None, Opt("--db", help="results sqlite (default: <space name>.sqlite in the --plot folder, else in .)")] = None,
    jobs: Annotated[int, Opt("--jobs", "-j", help="local worker processes (1: in-process)")] = 1,
    ray: Annotated[bool, Opt("--ray", help="run on a local Ray cluster")] = False,
    ray_address: Annotated[str, Opt("--ray-address", help="join a Ray cluster (e.g. auto, ray://host:10001)")] = "",
    limit: Annotated[int, Opt("--limit", help="stop after N new evaluations (rerun to continue); "
                              "the points are enumerated as they are taken")] = 0,
    max_points: Annotated[int, Opt("--max-points", help="refuse a space of more points than this "
                                   "(counted before any is built)")] = MAX_POINTS,
    tier: Annotated[str, Opt("--tier", metavar="screen|fast", help="training: screen (composed from one probe per layer class, "
                                            "the best re-timed by the fast tier) | fast (every point)")] = "screen",
    retime: Annotated[int, Opt("--retime", help="screen: re-time the best N with the fast tier "
                                                "(0: 10; -1: none)")] = 0,
    top: Annotated[int, Opt("--top", help="rows of the ranked table")] = 0,
    pareto: Annotated[str, Opt("--pareto", metavar="gpus|cost|ttft|tpot", help="frontier axis: gpus | cost | energy (training), ttft | tpot | energy (serving)")] = "",
    plot: Annotated[Path | None, Opt("--plot", help="write PNG plots into this folder")] = None,
    as_json: Annotated[bool, Opt("--json", help='print {"results": [...], "pareto": [...]}')] = False,
    no_progress: Annotated[bool, Opt("--no-progress", help="no progress bar")] = False,
) -> None:
    """Sweep strategy and hardware axes; print the ranked table, the Pareto
    frontier and why the best configuration wins.

    Exit status: 0 when every point ran or was pruned (illegal, out of memory);
    1 on bad input, or when no point runs; 3 when some points failed with an
    error (each distinct error is printed, the other points' results are stored).
    """
    raw: dict[str, Any] = {}
    if space_file is not None:
        raw = {str(k).replace("-", "_"): v for k, v in read_space_file(space_file).items()}
        file_kind = raw.get("kind", "training")
        if kind != file_kind and on_command_line(ctx, "kind"):
            raise CharonError(f"--kind {kind}: {space_file} is a {file_kind} space (its 'kind')")
        raw.setdefault("name", space_file.stem)
    else:
        if kind not in ("training", "serving"):
            raise CharonError(f"--kind must be training or serving, got '{kind}'")
        if not model:
            raise CharonError("give a space file (e.g. examples/sweeps/training.yaml) or --model")
        raw["kind"] = kind
    if name:
        raw["name"] = name
    flags = locals()
    # in AXIS_FLAGS' order, not a set's: it orders the axes and so the points
    given = tuple(name for name in AXIS_FLAGS if flags[name])
    for name in given:
        raw[name] = _axis(FLAG_NAMES.get(name, f"--{name.replace('_', '-')}"), flags[name])
    space = load_space(raw, where=str(space_file) if space_file is not None else "space", flag_keys=frozenset(given))
    # every flag and output path is checked before the sweep runs, not after it
    if top < 0:
        raise CharonError(f"--top must be >= 1 (0: the space's, {space.top}), got {top}")
    if top:
        space.top = top
    check_pareto_axis(space.kind, pareto)
    if space.kind == "serving":
        for option in ("tier", "retime"):  # the training tiers: a serving point is one serve run
            if on_command_line(ctx, option):
                raise CharonError(f"--{option}: a serving sweep runs `charon serve` per point "
                                  "(the tiers are training's)")
    check_options(jobs=jobs, limit=limit, retime=retime)
    if ray and ray_address:
        raise CharonError("--ray starts a local cluster and --ray-address joins one: give one of them")
    if plot is not None:
        check_output_dir(plot, "--plot")
    made: Path | None = None
    if db is None:
        # beside the run's plots (--plot), else in the working directory: never
        # inside the repo's examples, nor where a name that is a path would put it
        if Path(space.name).name != space.name or space.name in ("", ".", ".."):
            raise CharonError(f"the sweep's name '{space.name}' is a path, not a name (the results "
                              f"go to <--plot folder or .>/<name>.sqlite; give --db for another place)")
        if plot is not None and not plot.exists():
            made = plot
            plot.mkdir(parents=True)
        db = (plot if plot is not None else Path(".")) / f"{space.name}.sqlite"
    created = not Path(db).exists()
    try:
        result = run_sweep(
            space, db=db, jobs=jobs, ray=ray, ray_address=ray_address or None,
            progress=not no_progress and not as_json and sys.stderr.isatty(), limit=limit,
            tier=tier, retime=retime, max_points=max_points,
        )
    except KeyboardInterrupt:
        print(f"interrupted: finished points are stored in {db}; rerun the same command to resume",
              file=sys.stderr)
        raise SystemExit(130) from None
    except CharonError:
        _remove_if_empty(made)  # refused before anything was written: no folder left either
        raise
    summary = summarise(result, pareto_axis=pareto)
    nothing_runs = not summary["ranking"] and not result.pending
    if nothing_runs and created:
        # a results file this run created holds nothing to resume or rank: none is left
        for path in (Path(db), Path(f"{db}-wal"), Path(f"{db}-shm")):
            path.unlink(missing_ok=True)
        _remove_if_empty(made)
        summary["db"] = f"{db} (removed: no point runs)"
    written = []
    if plot is not None and summary["ranking"]:
        written = write_plots(result.records, summary["pareto"], plot, kind=space.kind, axis=pareto,
                              table=space.gpu_hour_cost)
        summary["plots"] = written
    if as_json:
        print(json.dumps(summary, indent=2, default=str), flush=True)
    else:
        _print_summary(summary, space.top, written, result.pending)
    failed = [r for r in summary["results"] if r["status"] == "error"]
    # an error is a bug or a bad input the rules did not foresee, not a pruned point:
    # it is printed, and the exit status says so
    _print_failures(failed, list(space.axes))
    if nothing_runs:
        # the summary above says why each point fails; the exit status says none runs
        raise CharonError(_nothing_runs(summary))
    if failed:
        print(f"error: {len(failed)} point{'s' * (len(failed) != 1)} failed with an error; the others' "
              f"results are in {db}", file=sys.stderr)
        raise SystemExit(POINTS_FAILED)


def _remove_if_empty(folder: Path | None) -> None:
    """Remove the --plot folder this run made for its results file when nothing
    was left in it."""
    if folder is not None and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _print_failures(failed: list[dict[str, Any]], axes: list[str]) -> None:
    """One `error:` line on stderr per distinct error, naming the first point
    that gave it (by its axis values) and how many more did."""
    points: dict[str, list[dict[str, Any]]] = {}
    for r in failed:
        error = (str(r.get("error") or "").strip().splitlines() or ["no reason stored"])[0]
        points.setdefault(error, []).append(r["config"])
    for error, configs in list(points.items())[:FAILURE_LINES]:
        name = ", ".join(f"{k}={configs[0][k]}" for k in axes if k in configs[0]) or "the point"
        more = f" (and {len(configs) - 1} more)" if len(configs) > 1 else ""
        print(one_line(f"error: point {name}{more} failed: {error}"), file=sys.stderr)
    if len(points) > FAILURE_LINES:
        print(f"error: ... and {len(points) - FAILURE_LINES} more distinct errors (--json lists every point's)",
              file=sys.stderr)


def _nothing_runs(summary: dict[str, Any]) -> str:
    """The one-line error of a sweep none of whose points runs: the counts and
    the first point's rule."""
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary["counts"].items()))
    failed = [r for r in summary["results"] if r["status"] != "ok"]
    if not failed:
        return f"no configuration runs ({counts})"
    first = failed[0]
    error = (str(first.get("error") or "").strip().splitlines() or ["no reason stored"])[0]
    what = {"illegal": "is illegal", "oom": "does not fit", "error": "failed"}.get(first["status"], first["status"])
    return f"no configuration runs ({counts}); the first point {what}: {error}"


def _print_summary(summary: dict[str, Any], top: int, plots: list[str], pending: int = 0) -> None:
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # piped: never cut the numbers of a wide table
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary["counts"].items()))
    console.print(
        f"[bold]{summary['space']}[/bold]: {summary['points']} points ({counts}); "
        f"{summary['evaluated']} evaluated now, {summary['reused']} already stored"
        + (f" ({summary['stale']} stored by another simulator version: timed again)"
           if summary.get("stale") else "")
        + f"; {summary['elapsed_s']:.1f} s {summary['executor']} -> {summary['db']}"
    )
    reasons = Counter(r["error"] for r in summary["results"] if r["status"] == "illegal")
    if reasons:
        # pruning is by design, but the rules it followed are shown, most frequent first
        shown = [f"{reason} ({n} point{'s' * (n != 1)})" for reason, n in reasons.most_common(ILLEGAL_REASONS)]
        if len(reasons) > ILLEGAL_REASONS:
            shown.append(f"{len(reasons) - ILLEGAL_REASONS} more rules")
        console.print(f"illegal: {'; '.join(shown)}", markup=False, soft_wrap=True)
    ranked = rank(summary["results"])
    if not ranked:
        errors = [r for r in summary["results"] if r["status"] != "ok"][:3]
        for r in errors:
            console.print(f"  {r['status']}: {r['error']}", markup=False)
        if pending:
            console.print(f"no configuration runs yet: {pending} point{'s' * (pending != 1)} left "
                          "(rerun to continue)")
        return
    header, rows = table_rows(ranked, top)
    table = Table(title=f"best {len(rows)} of {len(ranked)} runnable")
    for name in header:
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    front_keys = [r["key"] for r in summary["pareto"]]
    positions = {k: i + 1 for i, k in enumerate(summary["ranking"])}
    console.print(f"Pareto frontier: {len(front_keys)} points (ranks "
                  f"{', '.join(str(positions[k]) for k in front_keys[:12])})")
    best = summary["best"]
    console.print(f"[bold]best[/bold]: {_settings(best['config'])}", markup=True)
    console.print(f"why: {best['why']}", markup=False)
    if best.get("parts") and "delta_s" in best["parts"][0]:
        parts = Table(title="best against the runner-up (critical pipeline stage, seconds per step)")
        for name in ("part", "best", "runner-up", "delta"):
            parts.add_column(name, justify="right")
        for p in best["parts"]:
            parts.add_row(p["part"], f"{p['best_s']:.4f}", f"{p['runner_up_s']:.4f}", f"{p['delta_s']:+.4f}")
        console.print(parts)
    for path in plots:
        console.print(f"plot: {path}")


def _settings(config: dict[str, Any]) -> str:
    quiet = {"oversubscription": 1.0, "ep": 1, "cp": 1, "vpp": 1, "replicas": 1,
             **{k: v for k, v in HARDWARE_AXES.items() if k != "oversubscription"}}
    keys = [k for k in (*HARDWARE_KEYS, *STRATEGY_KEYS)
            if k in config and config[k] not in ("", 0, None) and config[k] != quiet.get(k, object())]
    # the kernel, overlap and optimizer settings only where they are not simulate's defaults
    keys += [k for k in TUNING_KEYS if k in config and config[k] != TRAINING_DEFAULTS[k]]
    return " ".join(f"{k}={config[k]}" for k in keys)
