"""Names of every Charon dialect, pass and target, each behind a lazy factory."""

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.target import Target


def _sim() -> Dialect:
    from charon_ir.dialects.sim import Sim

    return Sim


def _coll() -> Dialect:
    from charon_ir.dialects.coll import Coll

    return Coll


def _event() -> Dialect:
    from charon_ir.dialects.event import Event

    return Event


ALL_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "sim": _sim,
    "coll": _coll,
    "event": _event,
}


def _pass(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return factory


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "set-target": _pass("charon_ir.passes.set_target", "SetTargetPass"),
    "cost-annotate": _pass("charon_ir.passes.cost_annotate", "CostAnnotatePass"),
    "lower-to-events": _pass("charon_ir.lowering.lower_to_events", "LowerToEventsPass"),
    "shard-tensor": _pass("charon_ir.passes.shard_tensor", "ShardTensorPass"),
    "sequence-parallel": _pass("charon_ir.passes.sequence_parallel", "SequenceParallelPass"),
    "shard-context": _pass("charon_ir.passes.shard_context", "ShardContextPass"),
    "shard-expert": _pass("charon_ir.passes.shard_expert", "ShardExpertPass"),
    "fuse": _pass("charon_ir.passes.fuse", "FusePass"),
    "pipeline": _pass("charon_ir.passes.pipeline", "PipelinePass"),
    "data-parallel": _pass("charon_ir.passes.data_parallel", "DataParallelPass"),
    "recompute": _pass("charon_ir.passes.recompute", "RecomputePass"),
    "offload-activations": _pass("charon_ir.passes.offload_activations", "OffloadActivationsPass"),
    "accumulate-gradients": _pass("charon_ir.passes.accumulate_gradients", "AccumulateGradientsPass"),
    "unfuse-optimizer": _pass("charon_ir.passes.unfuse_optimizer", "UnfuseOptimizerPass"),
    "group-expert-gemms": _pass("charon_ir.passes.group_expert_gemms", "GroupExpertGemmsPass"),
    "memory-analysis": _pass("charon_ir.passes.memory_analysis", "MemoryAnalysisPass"),
}


def _simulate_target() -> type[Target]:
    from charon_ir.runtime.simulate_target import SimulateTarget

    return SimulateTarget


def _chakra_target() -> type[Target]:
    from charon_ir.interop.chakra_target import ChakraTarget

    return ChakraTarget


ALL_TARGETS: dict[str, Callable[[], type[Target]]] = {"simulate": _simulate_target, "chakra": _chakra_target}
