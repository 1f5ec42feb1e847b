"""Micro-batches a pipeline stage holds, read off its exact schedule order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from charon_ir.memory.liveness import PhaseMemory
from charon_ir.parallel.schedules import SPLIT_BACKWARD, stage_order


@dataclass(frozen=True)
class ScheduledActivations:
    peak: int
    """Most activation bytes live at once over the step."""
    in_flight: int
    """Most micro-batches whose forward has run and backward (W under zb-h1) has not."""
    saved_in_flight: int
    """What the in-flight micro-batches keep at the peak, without the running
    micro-batch's working set."""
    weight_grad_residual: int = 0
    """Split backward only: what a micro-batch (all chunks) keeps from B to W."""
    most_saved: int = 0
    """Most bytes the forwards whose backward has not run keep at once (every
    forward's saved bytes, none of a running item's working set): what
    Megatron-LM's `compute_activation_memory` counts."""


def scheduled_activations(
    chunks: Sequence[PhaseMemory],
    schedule: str,
    pp: int,
    microbatches: int,
    stage: int,
) -> ScheduledActivations:
    """Walk the stage's order of forward and backward items: a forward adds its
    chunk's saved bytes, a backward releases them. During a forward the live set
    is the held bytes plus the forward's own peak; during a backward it is the
    held bytes of the other micro-batches plus the backward's peak (which starts
    from this micro-batch's saved bytes). Under a split backward (zb-h1) a B item
    keeps what the micro-batch's W item will read, and the W item releases it."""
    vpp = len(chunks)
    order = stage_order(schedule, pp, vpp, microbatches, stage)
    held = peak = count = most = most_saved = 0
    saved_at_peak = 0
    for kind, chunk, _ in order:
        mem = chunks[chunk]
        if kind == "F":
            if held + mem.forward_peak > peak:
                peak, saved_at_peak = held + mem.forward_peak, held
            held += mem.saved
            most_saved = max(most_saved, held)
            count += 1
            most = max(most, count)
        elif kind[0] == "W":
            held -= mem.weight_grad_residual
            count -= 1
        else:
            split = schedule in SPLIT_BACKWARD
            held -= mem.saved
            if held + mem.backward_peak > peak:
                peak, saved_at_peak = held + mem.backward_peak, held
            if split:
                held += mem.weight_grad_residual
            else:
                count -= 1
    residual = sum(c.weight_grad_residual for c in chunks) if schedule in SPLIT_BACKWARD else 0
    return ScheduledActivations(peak, most, saved_at_peak, residual, most_saved)
