"""Numbers read off an imported module: parameter count, FLOPs per phase.

Pure IR walks (no torch), shared by tests, the benchmark and later passes. An op
inside `sim.repeat` counts once per iteration: its FLOPs are multiplied by the
trip counts of every repeat around it.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from charon_ir.dialects import sim


MTP_PREFIX = "mtp."
"""Where the frontend names the multi-token-prediction modules' weights
(`mtp.0.eh_proj.weight`): transformers builds none, so they are counted apart
from the parameters it builds."""


def param_count(module: ModuleOp) -> int:
    """Sum of the element counts of all `sim.param` results (stacked ones included)."""
    return sum(sim.numel(op.result) for op in module.walk() if isinstance(op, sim.ParamOp))


def mtp_param_count(module: ModuleOp) -> int:
    """The part of `param_count` in multi-token-prediction modules (DeepSeek-V3's),
    which transformers' own model of the config does not hold."""
    return sum(sim.numel(op.result) for op in module.walk()
               if isinstance(op, sim.ParamOp) and op.sym_name.data.startswith(MTP_PREFIX))


def _weighted_ops(op: Operation, weight: int) -> Iterator[tuple[Operation, int]]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield inner, weight
                inner_weight = weight * inner.trip_count if isinstance(inner, sim.RepeatOp) else weight
                yield from _weighted_ops(inner, inner_weight)


def compute_ops(module: ModuleOp, phase: sim.PhaseKind | None = None) -> Iterator[tuple[sim.ComputeOp, int]]:
    """(compute op, times it runs per step), optionally within one phase kind."""
    for op in module.body.block.ops:
        if isinstance(op, sim.PhaseOp) and (phase is None or op.kind.data == phase):
            for inner, weight in _weighted_ops(op, 1):
                if isinstance(inner, sim.ComputeOp):
                    yield inner, weight


def phase_flops(module: ModuleOp, phase: sim.PhaseKind, op_type: type[sim.ComputeOp] | None = None) -> float:
    """FLOPs of one phase, repeats unrolled; only ops of `op_type` if given."""
    return sum(
        op.flops() * weight
        for op, weight in compute_ops(module, phase)
        if op_type is None or isinstance(op, op_type)
    )


def forward_flops(module: ModuleOp) -> float:
    """FLOPs of the forward pass of the step: the "forward" phase of a training
    step, or the only phase of a serving step."""
    kinds = sim.phases_of(module.body.block)
    for kind in (sim.PhaseKind.FORWARD, sim.PhaseKind.PREFILL, sim.PhaseKind.DECODE):
        if kind in kinds:
            return phase_flops(module, kind)
    return 0.0


def op_count(module: ModuleOp) -> int:
    """Operations in the IR (the module itself excluded)."""
    return sum(1 for _ in module.walk()) - 1
