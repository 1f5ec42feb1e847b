"""The target a module is compiled for, stored on the module by `set-target`.

A pass reads the target only from the IR (`Target.from_module`), so a module file
carries everything needed to re-run the rest of a pipeline on it. A target with a
cluster file stores the cluster's canonical one-line text under `cluster`; a
target without one stands for the GPU table's usual node on a non-blocking
network (`Target.topology`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from math import prod

from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects.event import Link as LinkKind
from charon_ir.dialects.sim import TARGET_ATTR, TargetAttr
from charon_ir.errors import CharonError
from charon_ir.target.cluster import Cluster, implicit_cluster, parse_cluster_cached
from charon_ir.target.hardware import GpuSpec, load_gpu
from charon_ir.target.topology import group_ranks, place


# Per-step latency of a collective (alpha), seconds, for callers that want one
# number per link; the analytic engine uses NCCL's full latency model
# (engines/collectives.py, docs/calibration.md).
NVLINK_STEP_LATENCY_S = 2.0e-6
NETWORK_STEP_LATENCY_S = 6.0e-6


@dataclass(frozen=True)
class Link:
    """The bottleneck a group's collective crosses: per-GPU one-way bandwidth."""

    kind: LinkKind
    bandwidth: float
    step_latency_s: float


@dataclass(frozen=True)
class Target:
    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    cluster: Cluster | None = None

    def to_attr(self) -> TargetAttr:
        return TargetAttr(self.gpu.ref, self.gpus, self.gpus_per_node,
                          self.cluster.to_text() if self.cluster is not None else "")

    @staticmethod
    def from_attr(attr: TargetAttr) -> Target:
        cluster = None
        if attr.cluster.data:
            cluster = parse_cluster_cached(attr.cluster.data, "<sim.target cluster>")
        return Target(load_gpu(attr.hardware.data), attr.gpus.data, attr.gpus_per_node.data, cluster)

    @staticmethod
    def from_module(module: ModuleOp) -> Target:
        attr = module.attributes.get(TARGET_ATTR)
        if not isinstance(attr, TargetAttr):
            raise CharonError(
                "the module has no target: run set-target{hardware=...} first"
            )
        return Target.from_attr(attr)

    @property
    def heterogeneous(self) -> bool:
        return self.cluster is not None and self.cluster.heterogeneous

    def on_node_kind(self, name: str) -> Target:
        """The target as the ranks of node kind `name` see it: their GPU, their
        scale-up fabric and NICs."""
        assert self.cluster is not None
        view = self.cluster.view(name)
        return Target(view.gpu, self.gpus, self.gpus_per_node, view)

    def across(self, names: tuple[str, ...], gpu: GpuSpec) -> Target:
        """The target of traffic between ranks of the node kinds `names`: each
        link class at its slowest among them; `gpu` does the work at its ends."""
        assert self.cluster is not None
        view = self.cluster.slowest_view(names)
        return Target(gpu, self.gpus, self.gpus_per_node, replace(view, gpu=gpu))

    @property
    def topology(self) -> Cluster:
        """The cluster collectives are priced on: the attached one, or the
        implicit one the GPU table describes."""
        if self.cluster is not None:
            return self.cluster
        return _implicit(self.gpu, self.gpus, self.gpus_per_node)

    def link_for_group(self, axis_sizes: dict[str, int], axes: list[str],
                       subgroup: tuple[int, ...] = ()) -> Link:
        """The link a group over `axes` of a grid (axis sizes outermost first),
        or its `subgroup` of positions along one axis, is bound by. Ranks are
        numbered with the last axis fastest, so a group whose outermost axis spans
        at most one scale-up domain stays on NVLink, and so does a subgroup whose
        members all lie in one."""
        domain = min(self.gpus_per_node, self.gpu.scale_up_domain or 1)
        if subgroup:
            ranks = group_ranks(axis_sizes, axes, subgroup=subgroup)
            local = min(ranks) // domain == max(ranks) // domain
        else:
            names = list(axis_sizes)
            outer = min(names.index(a) for a in axes)
            local = prod(axis_sizes[a] for a in names[outer:]) <= domain
        if self.cluster is None and local:
            return Link(LinkKind.SCALE_UP, self.gpu.scale_up_bandwidth, NVLINK_STEP_LATENCY_S)
        if self.cluster is None:
            return Link(
                LinkKind.SCALE_OUT, self.gpu.scale_out_bandwidth_per_gpu, NETWORK_STEP_LATENCY_S
            )
        placement = place(self.cluster, group_ranks(axis_sizes, axes, subgroup=subgroup))
        if placement.nic is None:
            return Link(
                LinkKind.SCALE_UP, placement.scale_up.bandwidth,
                NVLINK_STEP_LATENCY_S + placement.scale_up.latency,
            )
        return Link(
            LinkKind.SCALE_OUT, placement.nic.bandwidth,
            NETWORK_STEP_LATENCY_S + placement.nic.latency,
        )


@cache
def _implicit(gpu: GpuSpec, gpus: int, gpus_per_node: int) -> Cluster:
    return implicit_cluster(gpu, gpus, gpus_per_node)
