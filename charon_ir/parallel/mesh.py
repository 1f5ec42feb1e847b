"""The module's device grid, `coll.grid @mesh`, that every parallelism pass extends.

Axes are kept in one canonical order, outermost first: dp, pp, cp, cpa, ep, tp. Ranks
are numbered with the last axis fastest, so tensor parallelism (the chattiest) lands on
neighbouring GPUs of one node, then expert, context, pipeline and data parallelism
(Megatron-Core's default order is tp-cp-ep-dp-pp: context inside expert parallelism,
where here an ep > 1 puts each context group's ranks ep x tp apart). Hierarchical
context parallelism (shard-context's a2a+p2p) splits the context-parallel ranks in two:
`cpa`, the inner all-to-all group (Megatron-Core's `--hierarchical-context-parallel-sizes`
first size; consecutive context ranks), inside `cp`, the ring between those groups.

Also the queries several passes and the runtime ask of a module's grid: whether
data parallelism marks a schedule (`schedule_marks`), whether every grid fits
the target (`check_grids_fit`), each pipeline stage's GPU (`stage_gpus`). Passes
share them here, not by importing each other.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects import sim
from charon_ir.dialects.coll import GridOp
from charon_ir.dialects.sim import DATA_PARALLEL_ATTR, StageOp
from charon_ir.errors import CharonError
from charon_ir.target.hardware import GpuSpec
from charon_ir.target.target import Target


MESH = "mesh"
AXIS_ORDER = ("dp", "pp", "cp", "cpa", "ep", "tp")
CONTEXT_AXES = ("cp", "cpa")
"""The context-parallel axes: the ring (or the whole group), and the inner
all-to-all group of a2a+p2p."""


def find_grid(module: ModuleOp, name: str = MESH) -> GridOp | None:
    for op in module.body.block.ops:
        if isinstance(op, GridOp) and op.sym_name.data == name:
            return op
    return None


def grid_axes(module: ModuleOp) -> dict[str, int]:
    grid = find_grid(module)
    return grid.axis_sizes() if grid else {}


def context_parallel(axes: dict[str, int]) -> int:
    """Ranks of a context-parallel group over grid `axes` (cp x cpa)."""
    return prod(axes.get(a, 1) for a in CONTEXT_AXES)


def data_parallel_replicas(module: ModuleOp) -> int:
    """Ranks that hold a replica of the dense weights, each with its own share of
    the step's tokens, and reduce their gradients: dp x ep x cp (expert
    parallelism is carved out of data parallelism; context-parallel ranks hold
    whole weights and reduce over dp x cp, Megatron-Core's
    `data_parallel_group_with_cp`; cp counts cpa's ranks too)."""
    axes = grid_axes(module)
    return axes.get("dp", 1) * axes.get("ep", 1) * context_parallel(axes)


def refuse_axis_twice(module: ModuleOp, axis: str, pass_name: str) -> None:
    """A pass that shards along `axis` runs once: a second run would split the
    already split shapes again (and fail far away, on a shape)."""
    grid = find_grid(module)
    if grid is not None and axis in grid.axis_sizes():
        raise CharonError(f"{pass_name}: the module is already sharded along grid axis '{axis}'")


def refuse_after_data_parallel(module: ModuleOp, pass_name: str) -> None:
    """A sharding pass that adds an axis whose ranks hold the same weights (cp, ep)
    runs before data-parallel, which sizes each gradient's reduction group and its
    ZeRO shards by the grid axes it finds."""
    if DATA_PARALLEL_ATTR in module.attributes:
        raise CharonError(f"{pass_name}: run it before data-parallel, which groups the gradients' "
                          "reduction by the grid axes it finds")


def ensure_axis(module: ModuleOp, axis: str, size: int, pass_name: str) -> GridOp:
    """Add `axis` of `size` to @mesh (creating the grid), keeping AXIS_ORDER.
    Re-adding an axis with another size is an error naming the pass."""
    if axis not in AXIS_ORDER:
        raise CharonError(f"{pass_name}: unknown grid axis '{axis}'")
    if size < 1:
        raise CharonError(f"{pass_name}: option '{axis}' must be >= 1, got {size}")
    grid = find_grid(module)
    axes = grid.axis_sizes() if grid else {}
    if axes.get(axis, size) != size:
        raise CharonError(
            f"{pass_name}: grid axis '{axis}' already has size {axes[axis]}, not {size}"
        )
    axes[axis] = size
    ordered = {a: axes[a] for a in AXIS_ORDER if a in axes}
    new = GridOp(MESH, ordered)
    if grid is None:
        first = module.body.block.first_op
        if first is None:
            module.body.block.add_op(new)
        else:
            module.body.block.insert_op_before(new, first)
    else:
        module.body.block.insert_op_before(new, grid)
        grid.detach()
        grid.erase()
    return new


def schedule_marks(module: ModuleOp) -> tuple[bool, bool]:
    """(gradients, parameters): whether a schedule's items synchronise gradients
    (B+/W+) and gather parameters (F+) over data-parallel replicas, the marks
    `charon_ir.parallel.schedules.mark_data_parallel` puts on an order."""
    sync = data_parallel_replicas(module) > 1
    attr = module.attributes.get(DATA_PARALLEL_ATTR)
    gather = isinstance(attr, sim.DataParallelAttr) and bool(attr.overlap_param_gather.value.data)
    return sync, sync and gather


def check_grids_fit(op: ModuleOp, gpus: int, where: str, what: str) -> None:
    """Every device grid fits in the target's GPUs (a grid built after set-target
    is checked again when the module is lowered)."""
    for grid in op.walk():
        if isinstance(grid, GridOp) and grid.num_devices() > gpus:
            raise CharonError(
                f"{where}: grid @{grid.sym_name.data} spans {grid.num_devices()} devices but "
                f"{what} {gpus}"
            )


def stage_gpus(op: ModuleOp) -> list[GpuSpec] | None:
    """The GPU of each physical pipeline stage of a module placed on a cluster of
    several node kinds (`sim.node_kind` on its stages), None on one kind of GPU."""
    target = Target.from_module(op)
    stages = [s for s in op.body.block.ops if isinstance(s, StageOp)]
    if not target.heterogeneous or not stages or target.cluster is None:
        return None
    pp = grid_axes(op).get("pp", 1)
    gpus: list[GpuSpec | None] = [None] * pp
    for stage in stages:
        kind = stage.node_kind()
        if kind is not None:
            for v in stage.stage_ids():
                gpus[v % pp] = target.cluster.kind(kind).gpu
    return [g or target.gpu for g in gpus]
