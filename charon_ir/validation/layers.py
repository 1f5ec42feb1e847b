"""
Per-layer records of `published.json` (category `training_microbenchmark`) as
simulated layers.

Korthikanti et al. 2022, Table 4, timed one transformer layer of the 22B model
(TP 8, micro-batch 4, A100) forward and backward. A record becomes the step its
own strategy describes, mapped as `training.training_case` maps a training record
of the same source (same framework settings), once with one layer and once with
two: the second layer's forward is the difference of the forward ends (`end F`)
and its backward the difference of the backward spans (`end F` to `end B`);
embedding, head and optimizer cancel.

The backward is where the layer's tensor-parallel all-reduces run beside the
weight-gradient GEMMs (Megatron-LM 2022's asynchronous all-reduce), so these rows
are what calibrates the overlap contention of their GPU type
(`compute_efficiency.OVERLAP_SLOWDOWN`, `calibration.refit`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from charon_ir import api
from charon_ir.dialects import event
from charon_ir.engines.compute_efficiency import overlap_slowdown
from charon_ir.runtime.flatten import flatten_all
from charon_ir.runtime.interpreter import OverlapModel, run
from charon_ir.target.hardware import load_gpu
from charon_ir.validation.training import Unsupported, case_options, config_path, int_in, training_case

LAYER_CATEGORY = "training_microbenchmark"


@dataclass(frozen=True)
class LayerCase:
    id: str
    gpu: str
    forward_s: float
    backward_s: float
    steps: tuple[Any, ...]
    """The 1-layer and 2-layer TrainingCase of the record."""


def _recompute_text(text: str) -> str:
    # Table 4 names its rows ("full_recompute", "selective_plus_sequence",
    # "sequence_parallel"), where a missing policy means none (its baseline);
    # training_case reads a policy and would assume the source's default instead
    text = text.lower()
    if text.startswith(("full", "selective")):
        return text
    return "none"


def layer_case(record: dict[str, Any]) -> LayerCase:
    """The layer of one per-layer record (raises Unsupported)."""
    if record.get("category") != LAYER_CATEGORY:
        raise Unsupported(f"category '{record.get('category')}' is not a per-layer record")
    others = record.get("other_metrics") or {}
    if "forward_ms" not in others or "backward_ms" not in others:
        raise Unsupported("no forward_ms / backward_ms to compare")
    pp = int_in(record["strategy"].get("pp")) or 1
    if pp != 1:
        raise Unsupported(f"a per-layer record is one stage's layer: pp must be 1, got {pp}")
    steps = []
    for layers in (1, 2):
        step = copy.deepcopy(record)
        step["category"] = "training"
        step["model"]["layers"] = layers
        strategy = step["strategy"]
        # one micro-batch per data-parallel rank
        dp = record["hardware"]["num_gpus"] // (int_in(strategy.get("tp")) or 1)
        strategy["global_batch"] = strategy["micro_batch"] * dp
        strategy["recompute"] = _recompute_text(str(strategy.get("recompute", "")))
        step["metric"], step["value"], step["unit"] = "iteration_time", 1.0, "s"
        steps.append(training_case(step))
    return LayerCase(
        id=record["id"], gpu=steps[0].options["hardware"],
        forward_s=float(others["forward_ms"]) / 1e3,
        backward_s=float(others["backward_ms"]) / 1e3,
        steps=tuple(steps),
    )


_FLAT_STEPS: dict[str, Any] = {}


def _flat_step(case: Any, directory: str):
    """The lowered, flattened event program of one step (fine tier), built once
    per process (a fit runs the same steps at many slowdowns)."""
    key = json.dumps([case.config, case.options, directory], sort_keys=True, default=str)
    if key not in _FLAT_STEPS:
        _FLAT_STEPS[key] = _build_flat_step(case, directory)
    return _FLAT_STEPS[key]


def _build_flat_step(case: Any, directory: str):
    config, _ = api.configure(str(config_path(case.config, Path(directory))), case.framework,
                              **case_options(case))
    ctx, module, _ = api.build_training_module(config)
    api.make_pass("lower-to-events", **api.lowering_options(config)).apply(ctx, module)
    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    return flatten_all(programs)


def _phase_ends(flat, slowdown: float) -> tuple[float, float]:
    timeline = run(flat, OverlapModel(slowdown, slowdown))
    ends = {item: float(timeline.end[i]) for i, item in flat.item_ends.items()}
    return ends[event.ScheduleItem.F], ends[event.ScheduleItem.B]


def predicted_layer(case: LayerCase, directory: str) -> tuple[float, float, float]:
    """(forward, backward, slowdown): the layer at its GPU type's calibrated
    overlap slowdown."""
    slowdown = overlap_slowdown(load_gpu(case.gpu))
    return (*layer_times(case, slowdown, directory), slowdown)


def layer_times(case: LayerCase, slowdown: float, directory: str) -> tuple[float, float]:
    """(forward, backward) seconds of the second layer with compute and
    communication each slowed by `slowdown` while they overlap."""
    (f1, b1), (f2, b2) = (_phase_ends(_flat_step(step, directory), slowdown) for step in case.steps)
    return f2 - f1, (b2 - f2) - (b1 - f1)
