"""What a sweep's worker runs: the evaluator of each (kind, tier), one per
process (its imports and probes reused across batches), and the batch entry
point pool and Ray workers call."""

from __future__ import annotations

from typing import Any

from charon_ir.sweep.evaluate import TrainingEvaluator
from charon_ir.sweep.serving import ServingEvaluator
from charon_ir.sweep.space import Point

_EVALUATORS: dict[tuple[str, str], Any] = {}


def evaluator(kind: str, tier: str = "fast") -> TrainingEvaluator | ServingEvaluator:
    """This process's evaluator of `kind` (training or serving) and `tier`
    (serving has one)."""
    if kind != "training":
        tier = "fast"
    if (kind, tier) not in _EVALUATORS:
        if kind == "training":
            # the other tier's parsed models, if it ran here first
            other = _EVALUATORS.get(("training", "fast" if tier == "screen" else "screen"))
            _EVALUATORS[kind, tier] = TrainingEvaluator(tier=tier, imports=other)
        else:
            _EVALUATORS[kind, tier] = ServingEvaluator()
    return _EVALUATORS[kind, tier]


def forget_outcomes() -> None:
    """Drop the outcomes this process's training evaluators keep by configuration:
    they are a sweep's, and the next sweep may read other model files, profile
    database or device (`run_sweep` calls it first; the forked workers inherit
    the empty cache)."""
    for ev in _EVALUATORS.values():
        if isinstance(ev, TrainingEvaluator):
            ev.forget_outcomes()


def point_kind(points: list[Point]) -> str:
    """Serving points carry no `gpus` setting."""
    return "serving" if points and "gpus" not in points[0].config else "training"


def evaluate_points(points: list[Point], tier: str = "fast") -> list[dict]:
    """Evaluate a batch of points in this process (what pool and Ray workers run)."""
    return list(evaluator(point_kind(points), tier).evaluate(points))
