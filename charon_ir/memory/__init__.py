"""Device memory of a step: model states (ZeRO), activations by liveness over the
phases with recompute, micro-batches in flight per the pipeline schedule,
communication buffers; the peak of each pipeline stage.

    analyze_memory(module, target) -> list[StageMemory]   (one per physical stage)
    peak_bytes_per_stage(module) -> list[int]             (after memory-analysis)
"""

from charon_ir.dialects.sim import MEMORY_ATTR
from charon_ir.memory.analysis import GIB, StageMemory, analyze_memory, peak_bytes_per_stage
from charon_ir.memory.liveness import PhaseMemory, Roots, layer_saved_values, phase_memory
from charon_ir.memory.states import DataParallel, ModelStates, model_states

__all__ = [
    "GIB",
    "MEMORY_ATTR",
    "DataParallel",
    "ModelStates",
    "PhaseMemory",
    "Roots",
    "StageMemory",
    "analyze_memory",
    "layer_saved_values",
    "model_states",
    "peak_bytes_per_stage",
    "phase_memory",
]
