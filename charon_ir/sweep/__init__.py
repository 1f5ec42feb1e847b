"""Design-space exploration: `charon sweep SPACE.yaml`.

    from charon_ir.sweep import sweep
    result = sweep("examples/sweeps/training.yaml", db="runs/70b.sqlite", jobs=2)
    result["results"], result["pareto"], result["best"]

A space (`space.py`) expands into normalised, hashed points; illegal ones are
pruned by rule, the rest evaluated (`evaluate.py`: shared imports and pass
prefixes, memory pruning before pricing and timing) in-process, in a process
pool or on Ray (`runner.py`), streaming into a resumable sqlite file
(`store.py`); `analysis.py` ranks them, finds the Pareto frontier, explains the
winner and plots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from charon_ir.sweep.analysis import check_pareto_axis, explain, objectives, pareto_front, rank, runner_up
from charon_ir.sweep.runner import SweepResult, run_sweep
from charon_ir.sweep.space import Point, Space, load_space


def summarise(result: SweepResult, *, pareto_axis: str = "") -> dict[str, Any]:
    """The JSON form of a sweep: every record, the frontier, the winner and why."""
    space = result.space
    ranked = rank(result.records)
    front = pareto_front(result.records, objectives(space.kind, pareto_axis, space.gpu_hour_cost))
    return {
        "space": space.name,
        "kind": space.kind,
        "points": len(result.records),
        "counts": result.counts,
        "elapsed_s": result.elapsed_s,
        "evaluated": result.evaluated,
        "reused": result.reused,
        "stale": result.stale,
        "executor": result.executor,
        "db": result.db,
        "results": result.records,
        "ranking": [r["key"] for r in ranked],
        "pareto": front,
        "best": explain(ranked[0], runner_up(ranked)) if ranked else None,
    }


def sweep(space: str | Path | dict | Space, **options: Any) -> dict[str, Any]:
    """Run a sweep (options: db, jobs, ray, ray_address, progress, limit) and
    return its summary: {"results": [...], "pareto": [...], "best": {...}, ...}."""
    pareto_axis = options.pop("pareto_axis", "")
    if not isinstance(space, Space):
        space = load_space(space)
    check_pareto_axis(space.kind, pareto_axis)  # before the sweep, not after it
    return summarise(run_sweep(space, **options), pareto_axis=pareto_axis)


__all__ = ["Point", "Space", "SweepResult", "load_space", "run_sweep", "summarise", "sweep"]
