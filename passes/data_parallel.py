"""
Data parallelism: replicas over the `dp` grid axis synchronise gradients. Ranks of
a `cp` axis (shard-context) hold whole weights and each computes a partial sum of
every weight gradient: they join the group (dp x cp, Megatron-Core's
`data_parallel_group_with_cp`), the per-micro-batch cp all-reduces shard-context
marked `coll.grad_sync` are folded into the step's reduction, and ZeRO shards
over dp x cp.

Options:
- dp: data-parallel replicas (default 1).
- zero: 0 (DDP: all_reduce of gradients), 1 (optimizer states sharded: gradients
  reduce_scatter, the step updates a 1/dp shard, updated shards all_gather), 2 (as 1,
  gradients kept sharded too), 3 (as 2, parameters sharded: each layer's
  parameters all_gather before the layer runs, in forward and again in backward,
  as FSDP does, and stay sharded after the step; parameters outside the layers are
  gathered after the step, as under 1) (default 0).
- bucket-mb: bucket size in MiB; each bucket is one collective: a gradient
  reduction, or the all_gather of updated parameters back into a bucket of the
  same layout (default 25).
- overlap: reduce a layer's gradients as soon as its backward produced them,
  overlapping the rest of backward; false waits for the whole backward (default true).
- overlap-param-gather: under zero 1 or 2, the layers' updated parameters are not
  gathered after the step but in the next step's first forward, each layer's just
  before it runs, so the gathers overlap that forward (Megatron-Core's
  `--overlap-param-gather`); parameters outside the layers are still gathered
  after the step (default false).

Gradient accumulation over micro-batches is not unrolled in IR: one micro-batch's
step is described once and the schedule repeats it; gradients are reduced once per
step, on the last micro-batch, and parameters gathered in the forward under
overlap-param-gather once, on the first (those gathers are marked
`sim.first_forward`); `sim.data_parallel` records the settings for
`lower-to-events` and `memory-analysis`.

Buckets are flat buffers a collective runs on; packing gradients into them costs
nothing (Megatron's contiguous gradient buffer), so the packing ops are
`sim.generic` with zero FLOPs and bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from math import ceil

from xdsl.context import Context
from xdsl.dialects.builtin import (
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from charon_ir.dialects import coll, sim
from charon_ir.dialects.coll import GRAD_SYNC
from charon_ir.dialects.sim import DATA_PARALLEL_ATTR, FIRST_FORWARD_ATTR, OPTIMIZER_KERNELS_ATTR
from charon_ir.errors import CharonError
from charon_ir.parallel.experts import is_expert_weight
from charon_ir.parallel.mesh import CONTEXT_AXES, MESH, context_parallel, ensure_axis, grid_axes
from charon_ir.parallel.rebuild import optimizer_step_over


def _tensor(v: SSAValue) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


def _free(callee: sim.GenericCallee, inputs: Sequence[SSAValue], types: Sequence[TensorType]) -> sim.GenericOp:
    return sim.GenericOp(callee, inputs, types, flops=0.0, bytes=0.0)


def bucket_sizes(elements: int, element_bytes: int, dp: int, bucket_bytes: int) -> list[int]:
    """Elements of each bucket that `elements` values (gradients of one group,
    or parameters) are packed into: `bucket_bytes` each and the rest in the
    last, each padded to split evenly over `dp` ranks. The sweep's screen
    prices its points' buckets with it."""
    per_bucket = max(dp, int(bucket_bytes // element_bytes))
    n = max(1, ceil(elements / per_bucket))
    sizes = [per_bucket] * (n - 1) + [elements - per_bucket * (n - 1)]
    return [ceil(s / dp) * dp for s in sizes]


@dataclass(frozen=True)
class _Sync:
    """How the gradients of one group of parameters synchronise: over `axes`,
    `dp` ranks in all."""

    dp: int
    zero: int
    bucket_bytes: int
    overlap: bool
    axes: tuple[str, ...] = ("dp",)

    def bucket_types(self, values: Sequence[SSAValue]) -> list[TensorType]:
        """Flat buckets covering `values` (all of one element type, padded so each
        splits evenly over dp)."""
        elt = _tensor(values[0]).element_type
        total = sum(sim.numel(v) for v in values)
        return [TensorType(elt, [n]) for n in bucket_sizes(total, sim.element_bytes(elt), self.dp, self.bucket_bytes)]

    def shard_of(self, bucket: TensorType) -> TensorType:
        """The 1/dp slice of a bucket each replica holds."""
        return TensorType(bucket.element_type, [bucket.get_shape()[0] // self.dp])

    def reduce_gradients(self, block: Block, after: Operation, grads: Sequence[SSAValue]) -> None:
        """Insert after `after`: pack `grads` into buckets and reduce each over dp."""
        if not grads or self.dp == 1:
            return
        pack = _free(sim.GenericCallee.GRAD_BUCKET, grads, self.bucket_types(grads))
        ops: list[Operation] = [pack]
        for bucket in pack.outputs:
            if self.zero == 0:
                ops.append(coll.AllReduceOp(bucket, MESH, list(self.axes)))
            else:
                shard = self.shard_of(_tensor(bucket))
                ops.append(
                    coll.ReduceScatterOp(bucket, MESH, list(self.axes), shard, axis=IntegerAttr(0, 64))
                )
        for op in reversed(ops):
            block.insert_op_after(op, after)

    def gather_parameters(self, block: Block, params: Sequence[SSAValue], once: bool = False) -> None:
        """At the start of `block`, all_gather `params` from their shards; their
        uses in the block read the gathered copies. ZeRO-3 gathers every time the
        block runs; `once` marks the gathers to run in the step's first forward only
        (overlap-param-gather: the parameters stay gathered until the next step)."""
        if not params or self.dp == 1:
            return
        shards = [self.shard_of(t) for t in self.bucket_types(params)]
        pack = _free(sim.GenericCallee.PARAM_SHARD_BUCKET, params, shards)
        gathers = [
            coll.AllGatherOp(
                s, MESH, list(self.axes), TensorType(_tensor(s).element_type, [_tensor(s).get_shape()[0] * self.dp]),
                axis=IntegerAttr(0, 64),
            )
            for s in pack.outputs
        ]
        unpack = _free(sim.GenericCallee.PARAM_UNPACK, [g.result for g in gathers], [_tensor(p) for p in params])
        first = block.first_op
        assert first is not None
        for op in (pack, *gathers, unpack):
            if once:
                op.attributes[FIRST_FORWARD_ATTR] = UnitAttr()
            block.insert_op_before(op, first)
        for p, full in zip(params, unpack.outputs):
            p.replace_uses_with_if(full, lambda use: use.operation is not pack)

    def shard_optimizer(
        self, step: sim.OptimizerStepOp, gathered_per_layer: Set[SSAValue] = frozenset()
    ) -> None:
        """ZeRO >= 1: each replica updates a 1/dp shard, then gathers the result
        in the gradients' buckets: a bucket of `bucket_bytes` of parameters is
        gathered from its dp shards (Megatron-Core's buffers share one bucket
        layout for the gradient reduce-scatter and the parameter all-gather;
        DeepSpeed's `allgather_bucket_size` counts gathered elements too).
        Parameters in `gathered_per_layer` are gathered before their layer runs
        (ZeRO-3: before each use; overlap-param-gather: in the next step's first
        forward), not after the step."""
        if not step.params or self.dp == 1:
            return
        block = step.parent_block()
        assert block is not None

        def shard(v: SSAValue) -> TensorType:
            t = _tensor(v)
            return TensorType(t.element_type, [ceil(sim.numel(v) / self.dp)])

        p_shards = _free(sim.GenericCallee.ZERO_SHARD, list(step.params), [shard(p) for p in step.params])
        g_shards = _free(sim.GenericCallee.ZERO_SHARD, list(step.grads), [shard(p) for p in step.params])
        new = sim.OptimizerStepOp.build(
            operands=[list(p_shards.outputs), list(g_shards.outputs)],
            result_types=[[shard(p) for p in step.params]],
            properties={"kind": step.kind},
        )
        for op in (p_shards, g_shards, new):
            block.insert_op_before(op, step)
        resident = [i for i, p in enumerate(step.params) if p not in gathered_per_layer]
        if resident:
            buckets = self.bucket_types([step.params[i] for i in resident])
            shards = [self.shard_of(b) for b in buckets]
            pack = _free(sim.GenericCallee.PARAM_BUCKET, [new.updated[i] for i in resident], shards)
            block.insert_op_before(pack, step)
            for shard_bucket, bucket in zip(pack.outputs, buckets):
                block.insert_op_before(
                    coll.AllGatherOp(shard_bucket, MESH, list(self.axes), bucket, axis=IntegerAttr(0, 64)),
                    step,
                )
        step.detach()
        step.erase()

    def reduce_layer_gradients(self, rep: sim.RepeatOp, stacked: SSAValue) -> None:
        """The gradient `stacked` out of a backward repeat: with overlap, each
        layer's slice is reduced inside the body as soon as it exists."""
        index = list(rep.outputs).index(stacked)
        body = rep.body.block
        term = body.last_op
        assert isinstance(term, sim.YieldOp)
        per_layer = term.values[index]
        if not self.overlap:
            after = rep
            block = rep.parent_block()
            assert block is not None
            self.reduce_gradients(block, after, [stacked])
            return
        owner = per_layer.owner
        after = owner if isinstance(owner, Operation) and owner.parent_block() is body else None
        if after is None:
            after = term.prev_op
        assert after is not None
        self.reduce_gradients(body, after, [per_layer])


def _leaving_backward(grad: SSAValue) -> SSAValue:
    """The gradient as the backward phase yields it: a tied weight's is summed
    over the pipeline's end stages in the optimizer phase (`pipeline`), after
    the data-parallel reduction of what each stage computed."""
    owner = grad.owner
    return owner.input if isinstance(owner, coll.AllReduceOp) else grad


def _apply_to_scope(block: Block, sync_of: Callable[[SSAValue], _Sync], gather_in_forward: bool) -> None:
    """Reduce the gradients of one scope (the module, or a pipeline stage), each
    over the group `sync_of(param)` says, and shard what ZeRO shards over it;
    `gather_in_forward`: ZeRO-1/2's layer parameters are gathered in the forward."""
    phases = sim.phases_of(block)
    fwd, bwd, opt = (phases.get(k) for k in (sim.PhaseKind.FORWARD, sim.PhaseKind.BACKWARD, sim.PhaseKind.OPTIMIZER))
    if bwd is None or opt is None:
        return
    steps = [op for op in opt.body.block.ops if isinstance(op, sim.OptimizerStepOp)]
    param_of = {_leaving_backward(g): p for s in steps for p, g in zip(s.params, s.grads)}
    term = bwd.body.block.last_op
    assert isinstance(term, sim.YieldOp)
    loose: dict[_Sync, list[SSAValue]] = {}
    for res, val in zip(bwd.outputs, term.values):
        if res not in param_of:
            continue
        sync = sync_of(param_of[res])
        owner = val.owner
        if isinstance(owner, sim.RepeatOp) and val in owner.outputs[len(owner.iter_init):]:
            sync.reduce_layer_gradients(owner, val)
        else:
            loose.setdefault(sync, []).append(val)
    for sync, grads in loose.items():
        last = max(
            (v.owner for v in grads if isinstance(v.owner, Operation)),
            key=lambda o: bwd.body.block.get_operation_index(o),
            default=None,
        )
        after = last if last is not None and last.parent_block() is bwd.body.block else term.prev_op
        assert after is not None
        sync.reduce_gradients(bwd.body.block, after, grads)
    zero = max(sync_of(p).zero for p in param_of.values()) if param_of else 0
    gathered_per_layer: set[SSAValue] = set()
    if zero >= 3 or gather_in_forward:
        for phase in (fwd, bwd) if zero >= 3 else (fwd,):
            if phase is None:
                continue
            for rep in phase.body.block.ops:
                if isinstance(rep, sim.RepeatOp):
                    n_iter = len(rep.iter_init)
                    groups: dict[_Sync, list[SSAValue]] = {}
                    for arg, sl in zip(rep.body.block.args[n_iter:], rep.slices):
                        if isinstance(sl.owner, sim.ParamOp):
                            groups.setdefault(sync_of(sl), []).append(arg)
                            gathered_per_layer.add(sl)
                    for sync, params in groups.items():
                        sync.gather_parameters(rep.body.block, params, once=zero < 3)
    if zero >= 1:
        for step in steps:
            groups_of: dict[_Sync, list[int]] = {}
            for i, p in enumerate(step.params):
                groups_of.setdefault(sync_of(p), []).append(i)
            if len(groups_of) == 1:
                next(iter(groups_of)).shard_optimizer(step, gathered_per_layer)
                continue
            parts = [(sync, optimizer_step_over(step, keep)) for sync, keep in groups_of.items()]
            step.detach()
            step.erase()
            for sync, part in parts:
                sync.shard_optimizer(part, gathered_per_layer)


def _fold_context_gradient_sums(module: ModuleOp) -> None:
    """Drop shard-context's cp all-reduces of weight gradients (`coll.grad_sync`):
    the step's reduction over dp x cp sums the partial gradients once, not every
    micro-batch."""
    for op in list(module.walk()):
        if isinstance(op, coll.AllReduceOp) and GRAD_SYNC in op.attributes and set(op.axis_names()) <= set(CONTEXT_AXES):
            Rewriter.replace_op(op, [], [op.input])


@dataclass(frozen=True)
class DataParallelPass(ModulePass):
    name = "data-parallel"

    dp: int = 1
    zero: int = 0
    bucket_mb: int = 25
    overlap: bool = True
    overlap_param_gather: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dp < 1:
            raise CharonError(f"data-parallel: option 'dp' must be >= 1, got {self.dp}")
        if self.zero not in (0, 1, 2, 3):
            raise CharonError(f"data-parallel: option 'zero' must be 0, 1, 2 or 3, got {self.zero}")
        if self.bucket_mb < 1:
            raise CharonError(f"data-parallel: option 'bucket-mb' must be >= 1, got {self.bucket_mb}")
        if self.overlap_param_gather and self.zero not in (1, 2):
            raise CharonError(
                "data-parallel: option 'overlap-param-gather' needs zero 1 or 2 (only they "
                f"gather updated parameters), got zero {self.zero}"
            )
        if DATA_PARALLEL_ATTR in op.attributes:
            raise CharonError("data-parallel: the module is already data-parallel")
        if OPTIMIZER_KERNELS_ATTR in op.attributes:
            raise CharonError("data-parallel: run it before unfuse-optimizer, which prices the "
                              "optimizer's kernels on the shards data-parallel makes")
        ensure_axis(op, "dp", self.dp, self.name)
        op.attributes[DATA_PARALLEL_ATTR] = sim.DataParallelAttr(
            self.dp, self.zero, self.bucket_mb, self.overlap, self.overlap_param_gather
        )
        # expert parallelism is carved out of data parallelism (as in Megatron-LM):
        # the ep ranks of a dp rank are replicas of everything but the routed
        # experts, whose gradients are reduced over dp alone
        axes = grid_axes(op)
        ep, cp = axes.get("ep", 1), context_parallel(axes)
        bucket = self.bucket_mb * 2**20
        # axes in the mesh's order: dp, cp, cpa, ep
        with_cp = tuple(a for a in CONTEXT_AXES if axes.get(a, 1) > 1)
        dense = _Sync(self.dp * ep * cp, self.zero, bucket, self.overlap,
                      ("dp", *with_cp, *(("ep",) if ep > 1 else ())))
        experts = _Sync(self.dp * cp, self.zero, bucket, self.overlap, ("dp", *with_cp))

        def sync_of(param: SSAValue) -> _Sync:
            return experts if ep > 1 and is_expert_weight(param) else dense

        if dense.dp == 1:
            return
        if cp > 1:
            _fold_context_gradient_sums(op)
        for block in sim.step_blocks(op):
            _apply_to_scope(block, sync_of, self.overlap_param_gather)
