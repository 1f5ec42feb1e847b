"""
Attach the hardware a module is compiled for (`sim.target` on the module).

Options:
- hardware: a bundled GPU (`H100-SXM5-80GB`) or its alias (`H100`), a GPU file
  (`"gpus/my.toml"`, docs/gpus.md; stored on the module by its absolute path),
  or either with overrides (`"H100:hbm_bw=6.7e12,hbm=141e9"`, quoted); required
  unless `cluster` is given.
- gpus: GPUs in the job; 0 takes every GPU of the cluster, or 8 without one
  (default 0).
- gpus-per-node: GPUs per node; 0 takes the cluster's or the GPU's usual node
  size (default 0).
- cluster: a preset name (`dgx-h100`, `gb200-nvl72`, ...) or a `.cluster` file,
  quoted when it holds `/` (`cluster="clusters/my.cluster"`); docs/cluster.md
  describes the language. The GPU, node size and GPU count default to the
  cluster's; its canonical text is stored on the module, so later passes need no
  file.

On a cluster of several node kinds (docs/cluster.md), each pipeline stage
(`sim.stage`) gets the kind its ranks sit on as `node_kind`; a stage class whose
stages sit on different kinds is split, one `sim.stage` per kind, and a stage
whose ranks span kinds is an error (as is a job without stages that does).

Every later pass and engine reads the target from the module, never from options.
A module already priced (cost-annotate ran) is not retargeted to another GPU: its
times are the first GPU's.
"""

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from charon_ir.dialects.event import ProgramOp
from charon_ir.dialects.sim import COST_ATTR, MEMORY_ATTR, NODE_KIND_ATTR, StageOp, TARGET_ATTR
from charon_ir.errors import CharonError
from charon_ir.parallel.mesh import check_grids_fit, grid_axes
from charon_ir.target.cluster import MAX_CLUSTER_COUNT, Cluster, load_cluster
from charon_ir.target.hardware import UnknownGpuError, load_gpu
from charon_ir.target.target import Target
from charon_ir.target.topology import group_ranks

DEFAULT_GPUS_WITHOUT_CLUSTER = 8


def _priced(op: ModuleOp) -> bool:
    """cost-annotate has run (or the module is already lowered to events):
    its times are the targeted GPU's. Asked only when a module is retargeted."""
    return any(COST_ATTR in o.attributes or isinstance(o, ProgramOp) for o in op.walk())


@dataclass(frozen=True)
class SetTargetPass(ModulePass):
    name = "set-target"

    hardware: str = ""
    gpus: int = 0
    gpus_per_node: int = 0
    cluster: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cluster = load_cluster(self.cluster) if self.cluster else None
        target = self.target(cluster)
        check_grids_fit(op, target.gpus, "set-target", "option 'gpus' is")
        if TARGET_ATTR in op.attributes and _priced(op):
            before = Target.from_module(op)
            if before.gpu.name != target.gpu.name:
                raise CharonError(
                    f"set-target: the module is already priced for {before.gpu.name}; "
                    f"set the target ({target.gpu.name}) before cost-annotate"
                )
        op.attributes[TARGET_ATTR] = target.to_attr()
        if target.cluster is not None and target.cluster.heterogeneous:
            place_stages(op, target.cluster, target.gpus)

    def target(self, cluster: Cluster | None) -> Target:
        if not self.hardware and cluster is None:
            raise CharonError(
                "set-target: option 'hardware' is required (e.g. hardware=H100) "
                "unless a cluster is given"
            )
        gpu = None
        if self.hardware:
            try:
                gpu = load_gpu(self.hardware)
            except UnknownGpuError as e:
                raise CharonError(f"set-target: option 'hardware': {e}") from None
        if cluster is None:
            assert gpu is not None
            gpus = self.gpus or DEFAULT_GPUS_WITHOUT_CLUSTER
            per_node = self.gpus_per_node or gpu.gpus_per_node
            self.check_counts(gpus, per_node)
            return Target(gpu, gpus, per_node)

        if gpu is not None and gpu.name != cluster.gpu.name:
            raise CharonError(
                f"set-target: option 'hardware' ({gpu.name}) differs from the GPU of "
                f"cluster '{cluster.name}' ({cluster.gpu.name})"
            )
        if self.gpus_per_node and self.gpus_per_node != cluster.gpus_per_node:
            raise CharonError(
                f"set-target: option 'gpus-per-node' ({self.gpus_per_node}) differs from "
                f"cluster '{cluster.name}' ({cluster.gpus_per_node})"
            )
        gpus = self.gpus or cluster.total_gpus
        self.check_counts(gpus, cluster.gpus_per_node)
        if gpus > cluster.total_gpus:
            raise CharonError(
                f"set-target: option 'gpus' ({gpus}) exceeds the {cluster.total_gpus} GPUs "
                f"of cluster '{cluster.name}'"
            )
        return Target(cluster.gpu, gpus, cluster.gpus_per_node, cluster)

    def check_counts(self, gpus: int, per_node: int) -> None:
        if gpus < 1 or per_node < 1:
            raise CharonError(
                f"set-target: options 'gpus' ({gpus}) and 'gpus-per-node' "
                f"({per_node}) must be >= 1"
            )
        if max(gpus, per_node) > MAX_CLUSTER_COUNT:  # the bound of `charon simulate --gpus`
            raise CharonError(
                f"set-target: options 'gpus' ({gpus}) and 'gpus-per-node' "
                f"({per_node}) must be <= {MAX_CLUSTER_COUNT}"
            )
        if gpus > per_node and gpus % per_node:
            # ranks are placed node after node: a partial last node would put
            # an uneven share of every group on the network
            raise CharonError(
                f"set-target: option 'gpus' ({gpus}) is not a whole number of "
                f"{per_node}-GPU nodes"
            )


def stage_kinds(op: ModuleOp, cluster: Cluster, gpus: int) -> list[str]:
    """The node kind of each physical pipeline stage (one entry without a `pp`
    axis): the kind every rank of the stage sits on."""
    sizes = grid_axes(op) or {"dp": gpus}
    pp = sizes.get("pp", 1)
    others = [a for a in sizes if a != "pp"]
    stride = prod(sizes[a] for a in list(sizes)[list(sizes).index("pp") + 1:]) if "pp" in sizes else 0
    kinds = []
    for s in range(pp):
        names = sorted({cluster.kind_of_rank(r).name
                        for r in group_ranks(sizes, others, rank=s * stride)},
                       key=cluster.kind_names().index)
        if len(names) > 1:
            where = f"pipeline stage {s}'s ranks" if pp > 1 else "the job's ranks"
            raise CharonError(
                f"set-target: {where} lie on node kinds {' and '.join(names)} of cluster "
                f"'{cluster.name}': a stage runs on one kind (order the node blocks so that "
                "each stage's ranks share one, ranks are dp-major)"
            )
        kinds.append(names[0])
    return kinds


def place_stages(op: ModuleOp, cluster: Cluster, gpus: int) -> None:
    """Give each `sim.stage` its ranks' node kind, splitting a stage class whose
    stages sit on different kinds."""
    kinds = stage_kinds(op, cluster, gpus)
    pp = len(kinds)
    for stage in [s for s in op.body.block.ops if isinstance(s, StageOp)]:
        by_kind: dict[str, list[int]] = {}
        for v in stage.stage_ids():
            by_kind.setdefault(kinds[v % pp], []).append(v)
        if len(by_kind) == 1:
            stage.attributes[NODE_KIND_ATTR] = StringAttr(next(iter(by_kind)))
            continue
        if MEMORY_ATTR in stage.attributes:
            raise CharonError("set-target: the module's memory is analysed for one kind of GPU; "
                              "set a cluster of several node kinds before memory-analysis")
        for kind, ids in by_kind.items():
            part = stage.clone()
            part.virtual_stages = DenseArrayBase.from_list(i64, ids)
            part.attributes[NODE_KIND_ATTR] = StringAttr(kind)
            Rewriter.insert_op(part, InsertPoint.before(stage))
        Rewriter.erase_op(stage)
