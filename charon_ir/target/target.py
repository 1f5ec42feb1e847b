"""The target a module is compiled for, stored on the module by `set-target`.

A pass reads the target only from the IR (`Target.from_module`), so a module file
carries everything needed to re-run the rest of a pipeline on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr

from charon_ir.errors import CharonError
from charon_ir.target.hardware import GpuSpec, load_gpu

TARGET_ATTR = "sim.target"

# Per-step latency of a collective (alpha), seconds. NCCL's own tuning model uses a
# few microseconds per NVLink step and more across the network; docs/calibration.md
# lists the source of each constant.
NVLINK_STEP_LATENCY_S = 2.0e-6
NETWORK_STEP_LATENCY_S = 6.0e-6


@dataclass(frozen=True)
class Link:
    """The bottleneck a group's collective crosses: per-GPU one-way bandwidth."""

    kind: str  # "scale-up" or "scale-out"
    bandwidth: float
    step_latency_s: float


@dataclass(frozen=True)
class Target:
    gpu: GpuSpec
    gpus: int
    gpus_per_node: int

    def to_attr(self) -> DictionaryAttr:
        return DictionaryAttr(
            {
                "hardware": StringAttr(self.gpu.name),
                "gpus": IntegerAttr(self.gpus, 64),
                "gpus_per_node": IntegerAttr(self.gpus_per_node, 64),
            }
        )

    @staticmethod
    def from_attr(attr: DictionaryAttr) -> Target:
        d = attr.data
        hardware = d["hardware"]
        assert isinstance(hardware, StringAttr)
        gpus, per_node = d["gpus"], d["gpus_per_node"]
        assert isinstance(gpus, IntegerAttr) and isinstance(per_node, IntegerAttr)
        return Target(load_gpu(hardware.data), gpus.value.data, per_node.value.data)

    @staticmethod
    def from_module(module: ModuleOp) -> Target:
        attr = module.attributes.get(TARGET_ATTR)
        if not isinstance(attr, DictionaryAttr):
            raise CharonError(
                "the module has no target: run set-target{hardware=...} first"
            )
        return Target.from_attr(attr)

    def link_for_group(self, axis_sizes: dict[str, int], axes: list[str]) -> Link:
        """The link a group over `axes` of a grid (axis sizes outermost first) is
        bound by. Ranks are numbered with the last axis fastest, so a group whose
        outermost axis spans at most one node's GPUs stays on NVLink."""
        names = list(axis_sizes)
        outer = min(names.index(a) for a in axes)
        span = prod(axis_sizes[a] for a in names[outer:])
        if span <= min(self.gpus_per_node, self.gpu.scale_up_domain or 1):
            return Link("scale-up", self.gpu.scale_up_bandwidth, NVLINK_STEP_LATENCY_S)
        return Link(
            "scale-out", self.gpu.scale_out_bandwidth_per_gpu, NETWORK_STEP_LATENCY_S
        )


def target_of(module: ModuleOp) -> Target:
    return Target.from_module(module)


def check_gpus(gpus: int, gpus_per_node: int) -> None:
    if gpus < 1 or gpus_per_node < 1:
        raise CharonError(
            f"set-target: gpus ({gpus}) and gpus_per_node ({gpus_per_node}) must be >= 1"
        )
