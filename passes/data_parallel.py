"""
Data parallelism: replicas over the `dp` grid axis synchronise gradients.

Options:
- dp: data-parallel replicas (default 1).
- zero: 0 (DDP: all_reduce of gradients), 1 (optimizer states sharded: gradients
  reduce_scatter, the step updates a 1/dp shard, updated shards all_gather), 2 (as 1,
  gradients kept sharded too), 3 (as 2, parameters sharded: each layer's
  parameters all_gather before the layer runs, in forward and again in backward,
  as FSDP does) (default 0).
- bucket-mb: gradient bucket size in MiB; each bucket is one collective (default 25).
- overlap: reduce a layer's gradients as soon as its backward produced them,
  overlapping the rest of backward; false waits for the whole backward (default true).

Gradient accumulation over micro-batches is not unrolled in IR: one micro-batch's
step is described once and the schedule repeats it; gradients are reduced once per
step, on the last micro-batch (`sim.data_parallel` records the settings for
`lower-to-events` and `memory-analysis`).

Buckets are flat buffers a collective runs on; packing gradients into them costs
nothing (Megatron's contiguous gradient buffer), so the packing ops are
`sim.generic` with zero FLOPs and bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from xdsl.context import Context
from xdsl.dialects.builtin import (
    BoolAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from charon_ir.dialects import coll, sim
from charon_ir.errors import CharonError
from charon_ir.parallel.mesh import MESH, ensure_axis

DATA_PARALLEL_ATTR = "sim.data_parallel"


def _tensor(v: SSAValue) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


def _free(callee: str, inputs: Sequence[SSAValue], types: Sequence[TensorType]) -> sim.GenericOp:
    return sim.GenericOp(callee, inputs, types, flops=0.0, bytes=0.0)


@dataclass(frozen=True)
class _Sync:
    """How one scope (the module, or one pipeline stage) synchronises."""

    dp: int
    zero: int
    bucket_bytes: int
    overlap: bool

    def bucket_types(self, values: Sequence[SSAValue]) -> list[TensorType]:
        """Flat buckets covering `values` (all of one element type, padded so each
        splits evenly over dp)."""
        elt = _tensor(values[0]).element_type
        nbytes = sim.element_bytes(elt)
        total = sum(sim.numel(v) for v in values)
        per_bucket = max(self.dp, int(self.bucket_bytes // nbytes))
        n = max(1, ceil(total / per_bucket))
        sizes = [per_bucket] * (n - 1) + [total - per_bucket * (n - 1)]
        return [TensorType(elt, [ceil(s / self.dp) * self.dp]) for s in sizes]

    def reduce_gradients(self, block: Block, after: Operation, grads: Sequence[SSAValue]) -> None:
        """Insert after `after`: pack `grads` into buckets and reduce each over dp."""
        if not grads:
            return
        pack = _free("grad_bucket", grads, self.bucket_types(grads))
        ops: list[Operation] = [pack]
        for bucket in pack.outputs:
            if self.zero == 0:
                ops.append(coll.AllReduceOp(bucket, MESH, ["dp"]))
            else:
                t = _tensor(bucket)
                shard = TensorType(t.element_type, [t.get_shape()[0] // self.dp])
                ops.append(
                    coll.ReduceScatterOp(bucket, MESH, ["dp"], shard, axis=IntegerAttr(0, 64))
                )
        for op in reversed(ops):
            block.insert_op_after(op, after)

    def gather_parameters(self, block: Block, params: Sequence[SSAValue]) -> None:
        """ZeRO-3: at the start of `block`, all_gather `params` from their shards;
        their uses in the block read the gathered copies."""
        if not params:
            return
        shards = [
            TensorType(t.element_type, [t.get_shape()[0] // self.dp])
            for t in self.bucket_types(params)
        ]
        pack = _free("param_shard_bucket", params, shards)
        gathers = [
            coll.AllGatherOp(
                s, MESH, ["dp"], TensorType(_tensor(s).element_type, [_tensor(s).get_shape()[0] * self.dp]),
                axis=IntegerAttr(0, 64),
            )
            for s in pack.outputs
        ]
        unpack = _free("param_unpack", [g.result for g in gathers], [_tensor(p) for p in params])
        first = block.first_op
        assert first is not None
        for op in (pack, *gathers, unpack):
            block.insert_op_before(op, first)
        for p, full in zip(params, unpack.outputs):
            p.replace_uses_with_if(full, lambda use: use.operation is not pack)

    def shard_optimizer(self, step: sim.OptimizerStepOp) -> None:
        """ZeRO >= 1: each replica updates a 1/dp shard, then gathers the result."""
        if not step.params:
            return
        block = step.parent_block()
        assert block is not None

        def shard(v: SSAValue) -> TensorType:
            t = _tensor(v)
            return TensorType(t.element_type, [ceil(sim.numel(v) / self.dp)])

        p_shards = _free("zero_shard", list(step.params), [shard(p) for p in step.params])
        g_shards = _free("zero_shard", list(step.grads), [shard(p) for p in step.params])
        new = sim.OptimizerStepOp.build(
            operands=[list(p_shards.outputs), list(g_shards.outputs)],
            result_types=[[shard(p) for p in step.params]],
            properties={"kind": step.kind},
        )
        updated = list(new.updated)
        pack = _free("param_bucket", updated, self.bucket_types(updated))
        for op in (p_shards, g_shards, new, pack):
            block.insert_op_before(op, step)
        for bucket in pack.outputs:
            t = _tensor(bucket)
            block.insert_op_before(
                coll.AllGatherOp(
                    bucket, MESH, ["dp"], TensorType(t.element_type, [t.get_shape()[0] * self.dp]),
                    axis=IntegerAttr(0, 64),
                ),
                step,
            )
        step.detach()
        step.erase()

    def apply_to_scope(self, block: Block) -> None:
        phases = {op.kind.data: op for op in block.ops if isinstance(op, sim.PhaseOp)}
        fwd, bwd, opt = phases.get("forward"), phases.get("backward"), phases.get("optimizer")
        if bwd is None or opt is None:
            return
        steps = [op for op in opt.body.block.ops if isinstance(op, sim.OptimizerStepOp)]
        grad_results = {g for s in steps for g in s.grads}
        term = bwd.body.block.last_op
        assert isinstance(term, sim.YieldOp)
        loose: list[SSAValue] = []
        for res, val in zip(bwd.outputs, term.values):
            if res not in grad_results:
                continue
            owner = val.owner
            if isinstance(owner, sim.RepeatOp) and val in owner.outputs[len(owner.iter_init):]:
                self.reduce_layer_gradients(owner, val)
            else:
                loose.append(val)
        if loose:
            last = max(
                (v.owner for v in loose if isinstance(v.owner, Operation)),
                key=lambda o: bwd.body.block.get_operation_index(o),
                default=None,
            )
            after = last if last is not None and last.parent_block() is bwd.body.block else term.prev_op
            assert after is not None
            self.reduce_gradients(bwd.body.block, after, loose)
        if self.zero >= 3:
            for phase in (fwd, bwd):
                if phase is None:
                    continue
                for rep in phase.body.block.ops:
                    if isinstance(rep, sim.RepeatOp):
                        n_iter = len(rep.iter_init)
                        params = [
                            arg for arg, s in zip(rep.body.block.args[n_iter:], rep.slices)
                            if isinstance(s.owner, sim.ParamOp)
                        ]
                        self.gather_parameters(rep.body.block, params)
        if self.zero >= 1:
            for step in steps:
                self.shard_optimizer(step)

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


@dataclass(frozen=True)
class DataParallelPass(ModulePass):
    name = "data-parallel"

    dp: int = 1
    zero: int = 0
    bucket_mb: int = 25
    overlap: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.dp < 1:
            raise CharonError(f"data-parallel: option 'dp' must be >= 1, got {self.dp}")
        if self.zero not in (0, 1, 2, 3):
            raise CharonError(f"data-parallel: option 'zero' must be 0, 1, 2 or 3, got {self.zero}")
        if self.bucket_mb < 1:
            raise CharonError(f"data-parallel: option 'bucket-mb' must be >= 1, got {self.bucket_mb}")
        if DATA_PARALLEL_ATTR in op.attributes:
            raise CharonError("data-parallel: the module is already data-parallel")
        ensure_axis(op, "dp", self.dp, self.name)
        op.attributes[DATA_PARALLEL_ATTR] = DictionaryAttr(
            {
                "dp": IntegerAttr(self.dp, 64),
                "zero": IntegerAttr(self.zero, 64),
                "bucket_mb": IntegerAttr(self.bucket_mb, 64),
                "overlap": BoolAttr.from_bool(self.overlap),
            }
        )
        if self.dp == 1:
            return
        sync = _Sync(self.dp, self.zero, self.bucket_mb * 2**20, self.overlap)
        scopes = [s.body.block for s in op.body.block.ops if isinstance(s, sim.StageOp)]
        for block in scopes or [op.body.block]:
            sync.apply_to_scope(block)
