"""
Split a training step over pipeline stages.

Options:
- pp: pipeline stages (default 1).
- vpp: model chunks per stage, for the interleaved schedule (default 1).
- schedule: gpipe | 1f1b | interleaved | zb-h1 (default 1f1b).
- microbatches: micro-batches per step (default: pp).
- layers: layers of each virtual stage, e.g. `layers=18,20,20,22`; empty splits
  evenly, the remainder going to the middle stages (default: empty). A 0 leaves a
  stage no layers: the last then holds only what follows them (head, loss, MTP:
  Megatron's layout `...|mL`), the first only the embedding.
- scatter-gather: send an activation or gradient that every tensor-parallel rank
  holds whole as 1/tp per rank (each over its own NIC), and all-gather it over tp
  (NVLink) on the receiving stage: Megatron-LM's `scatter_gather_tensors_in_pipeline`
  (Narayanan et al. 2021, sec. 4.1). A tensor already split over tp (sequence
  parallelism) is sent as it is (default false).

The layer repeats of the forward phase (and their reverse twins in backward) are
cut at stage boundaries: each virtual stage keeps its share of every repeat (a
count of 0 where it holds none of those layers), the first stage keeps what comes
before the layers (embedding), the last keeps what comes after (head, loss) and
their gradients. Activations cross stages with `coll.send`/`coll.recv` on the `pp`
axis in forward, gradients in backward. An op another stage runs leaves a
`sim.off_stage` value in its place; the canonicalization patterns of the ops spread
it to what depends on it (phase results, optimizer pairs), and xDSL's region
dead-code elimination takes what nothing reads any more (params and inputs of
other stages' layers). Stages with identical contents share one
`sim.stage`; the schedule is recorded as the module's `sim.pipeline` attribute, for
`lower-to-events` to emit each stage's exact order of micro-batches.

A weight the first and the last stage both read (tied input and output
embeddings, GPT-2's `wte`) is held by both, as in Megatron-LM
(`share_embeddings_and_output_weights`): each end stage keeps its own partial of
the weight's gradient (the embedding's, the head's) where the backward summed
the two, and updates its copy; before the step, in the optimizer phase, the
partials are summed by a `coll.all_reduce` over the embedding group, the first and
last positions of the `pp` axis (`{subgroup = array<i64: 0, pp-1>}`): Megatron's
`_allreduce_embedding_grads`, once per step, after the last micro-batch's
backward and the data-parallel reduction.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from charon_ir.dialects import coll, sim
from charon_ir.dialects.coll import GRAD_SYNC
from charon_ir.dialects.sim import OPTIMIZER_KERNELS_ATTR, PIPELINE_ATTR
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import step_tokens
from charon_ir.parallel.mesh import MESH, ensure_axis, grid_axes
from charon_ir.parallel.schedules import check_schedule


def even_split(layers: int, parts: int) -> list[int]:
    """`layers` over `parts`, the remainder to the middle parts (the first and last
    stages also hold the embedding and the head)."""
    base, extra = divmod(layers, parts)
    counts = [base] * parts
    middle = sorted(range(parts), key=lambda i: (abs(i - (parts - 1) / 2), i))
    for i in middle[:extra]:
        counts[i] += 1
    return counts


def _retype_leading(value: SSAValue, count: int) -> SSAValue:
    """`value` stacked over `count` layers: the rewriter's new value, which every
    use of the old one now reads."""
    t = value.type
    assert isinstance(t, TensorType)
    return Rewriter.replace_value_with_new_type(value, TensorType(t.element_type, [count, *t.get_shape()[1:]]))


def _current(value: SSAValue) -> SSAValue:
    """The value that stands where `value` stood: the retyping above replaces a
    value by a new one, and a work list may still hold the old."""
    if isinstance(value, OpResult):
        return value.op.results[value.index]
    assert isinstance(value, BlockArgument)
    return value.block.args[value.index]


def _repeats(phase: sim.PhaseOp, reverse: bool) -> list[sim.RepeatOp]:
    return [
        op
        for op in phase.body.block.ops
        if isinstance(op, sim.RepeatOp) and bool(op.reverse) == reverse
    ]


@dataclass(frozen=True)
class StageShape:
    """What a virtual stage holds: its share of each layer repeat, and whether it is
    the first (embedding) or last (head and loss) virtual stage."""

    counts: tuple[int, ...]
    first: bool
    last: bool


def stage_shapes(repeat_counts: list[int], layers_per_stage: list[int]) -> list[StageShape]:
    shapes = []
    start = 0
    total_stages = len(layers_per_stage)
    for v, n in enumerate(layers_per_stage):
        end = start + n
        counts, offset = [], 0
        for c in repeat_counts:
            lo, hi = max(start, offset), min(end, offset + c)
            counts.append(max(0, hi - lo))
            offset += c
        shapes.append(StageShape(tuple(counts), v == 0, v == total_stages - 1))
        start = end
    return shapes


def _flat(t: TensorType, parts: int) -> TensorType:
    return TensorType(t.element_type, [prod(t.get_shape()) // parts])


def _gradient_sum(op: Operation) -> tuple[sim.OptimizerStepOp, int, list[Operation]] | None:
    """When `op` adds two partials of a parameter's gradient (a tied weight's
    embedding and head gradients): the optimizer step and the index of the pair
    that updates the parameter, and the ops that carry the sum to the backward
    phase's yield (the sums over context-parallel ranks that shard-context marks
    `coll.grad_sync`). None for any other op."""
    if not (isinstance(op, sim.ElementwiseOp) and op.kind.data == sim.ElementwiseKind.ADD and len(op.inputs) == 2):
        return None
    carriers: list[Operation] = []
    value = op.results[0]
    while (user := value.get_user_of_unique_use()) is not None:
        if not (isinstance(user, coll.AllReduceOp) and GRAD_SYNC in user.attributes):
            break
        carriers.append(user)
        value = user.result
    for use in value.uses:
        phase = use.operation.parent_op()
        if not (isinstance(use.operation, sim.YieldOp) and isinstance(phase, sim.PhaseOp)
                and phase.kind.data == sim.PhaseKind.BACKWARD):
            continue
        for grad_use in phase.results[use.index].uses:
            step = grad_use.operation
            if isinstance(step, sim.OptimizerStepOp) and grad_use.index >= len(step.params):
                return step, grad_use.index - len(step.params), carriers
    return None


def _computed_only_for(value: SSAValue) -> set[Operation]:
    """The op of `value`, which nothing on this stage reads any more, and the ops of
    its block that only it needs, transitively: what the previous stage computes
    to send `value` to this one. (Dead-code elimination cannot take them: the
    vocabulary-parallel embedding's collective is communication, never dead.)"""
    owner = value.owner
    if not isinstance(owner, Operation):
        return set()
    block = owner.parent_block()
    taken: set[Operation] = set()
    work = [owner]
    while work:
        op = work.pop()
        if op in taken or op.parent_block() is not block:
            continue
        if any(use.operation not in taken for r in op.results for use in r.uses):
            continue
        taken.add(op)
        work += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
    return taken


def _all_but_yield(ops: list[Operation]) -> list[Operation]:
    return [op for op in ops if not isinstance(op, sim.YieldOp)]


class _StageBuilder:
    """Specialises a clone of the module's step to one stage shape: resizes the
    layer repeats, cuts the phases at the stage's boundaries (sends and receives
    where values cross) and puts an off-stage value (`sim.off_stage`) in place of
    each op another stage runs. What follows from that (what reads them, phase
    results, optimizer pairs, params left unread) is canonicalization's and
    dead-code elimination's (`PipelinePass.clean_up`)."""

    def __init__(self, block: Block, shape: StageShape, scatter: int = 1, full_elements: int = 0):
        self.block = block
        self.shape = shape
        self.scatter = scatter
        """tp size when activations replicated over tp cross stages as 1/tp slices."""
        self.full_elements = full_elements
        """Elements of a whole (not sequence-split) activation: tokens x hidden."""
        self.cut: set[Operation] = set()
        """The ops another stage runs."""

    def build(self) -> None:
        phases = sim.phases_of(self.block)
        fwd, bwd = phases.get(sim.PhaseKind.FORWARD), phases.get(sim.PhaseKind.BACKWARD)
        assert fwd is not None
        f_reps = _repeats(fwd, reverse=False)
        b_reps = list(reversed(_repeats(bwd, reverse=True))) if bwd else []
        for i, rep in enumerate(f_reps):
            twin = b_reps[i] if i < len(b_reps) else None
            self.resize(rep, twin, self.shape.counts[i])
        self.cut_forward(fwd, f_reps)
        if bwd is not None and b_reps:
            self.cut_backward(bwd, list(reversed(b_reps)))
        self.take_off_stage()

    # -- stacked values -------------------------------------------------------

    def resize(self, rep: sim.RepeatOp, twin: sim.RepeatOp | None, count: int) -> None:
        """Give `rep` (and its backward twin) `count` iterations and every value
        stacked along them a leading dim of `count`."""
        full = rep.trip_count
        stacked: list[SSAValue] = list(rep.slices) + list(rep.outputs[len(rep.iter_init):])
        for r in (rep, twin):
            if r is None:
                continue
            r.count = IntegerAttr(count, 64)
        if twin is not None:
            stacked += list(twin.slices) + list(twin.outputs[len(twin.iter_init):])
        seen: set[SSAValue] = set()
        work = list(stacked)
        while work:
            v = _current(work.pop())
            if v in seen:
                continue
            seen.add(v)
            t = v.type
            if not isinstance(t, TensorType) or not t.get_shape() or t.get_shape()[0] != full:
                continue
            v = _retype_leading(v, count)
            seen.add(v)
            # follow the value through phase yields into the phases that read it
            for use in list(v.uses):
                user = use.operation
                if isinstance(user, sim.YieldOp) and isinstance(user.parent_op(), sim.PhaseOp):
                    work.append(user.parent_op().results[use.index])  # pyright: ignore[reportOptionalMemberAccess]
                elif isinstance(user, sim.OptimizerStepOp):
                    n = len(user.params)
                    partner = user.grads[use.index] if use.index < n else user.params[use.index - n]
                    work.append(partner)

    # -- stage boundaries -----------------------------------------------------

    def _insert_before(self, op: Operation, new: Operation) -> Operation:
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(new, op)
        return new

    def _insert_after(self, op: Operation, new: Operation) -> Operation:
        block = op.parent_block()
        assert block is not None
        block.insert_op_after(new, op)
        return new

    def _scattered(self, value: SSAValue) -> bool:
        """Whether `value` crosses stages as 1/tp slices (scatter-gather)."""
        t = value.type
        return (
            self.scatter > 1
            and isinstance(t, TensorType)
            and sim.numel(value) == self.full_elements
            and self.full_elements % self.scatter == 0
        )

    def _receive(self, rep: sim.RepeatOp, shift: int) -> None:
        """The repeat's carried input arrives from stage `shift` away; scattered,
        as this rank's slice, all-gathered over tp and viewed back."""
        value = rep.iter_init[0]
        t = value.type
        assert isinstance(t, TensorType)
        if not self._scattered(value):
            recv = coll.RecvOp.build(result_types=[t], properties=_p2p_props(shift))
            self._insert_before(rep, recv)
            rep.operands = [recv.results[0], *rep.operands[1:]]
            return
        recv = coll.RecvOp.build(result_types=[_flat(t, self.scatter)], properties=_p2p_props(shift))
        gather = coll.AllGatherOp(
            recv.results[0], MESH, ["tp"], _flat(t, 1), axis=IntegerAttr(0, 64)
        )
        view = sim.ViewOp(gather.result, t)
        for new in (recv, gather, view):
            self._insert_before(rep, new)
        rep.operands = [view.result, *rep.operands[1:]]

    def _send(self, rep: sim.RepeatOp, shift: int) -> None:
        out = rep.outputs[0]
        if self._scattered(out):
            t = out.type
            assert isinstance(t, TensorType)
            # this rank's 1/tp of the flattened tensor: a free slice
            part = sim.GenericOp("p2p_scatter", [out], [_flat(t, self.scatter)], flops=0.0, bytes=0.0)
            send = coll.SendOp.build(operands=[part.results[0]], properties=_p2p_props(shift))
            self._insert_after(rep, part)
            self._insert_after(part, send)
            return
        send = coll.SendOp.build(operands=[out], properties=_p2p_props(shift))
        self._insert_after(rep, send)

    def cut_forward(self, fwd: sim.PhaseOp, reps: list[sim.RepeatOp]) -> None:
        body = list(fwd.body.block.ops)
        last = body.index(reps[-1])
        if not self.shape.first:
            entering = reps[0].iter_init[0]
            self._receive(reps[0], -1)
            self.cut |= _computed_only_for(entering)
        if not self.shape.last:
            self._send(reps[-1], 1)
            self.cut.update(_all_but_yield(body[last + 1:]))

    def cut_backward(self, bwd: sim.PhaseOp, reps: list[sim.RepeatOp]) -> None:
        body = list(bwd.body.block.ops)
        first, last = body.index(reps[0]), body.index(reps[-1])
        if not self.shape.last:
            self._receive(reps[0], 1)
            self.cut.update(_all_but_yield(body[:first]))
        if not self.shape.first:
            self._send(reps[-1], -1)
            self.cut.update(_all_but_yield(body[last + 1:]))

    def take_off_stage(self) -> None:
        """Put an off-stage value in place of each result of a cut op that a kept
        op reads, and erase the cut ops. A sum of two gradient partials of a
        parameter (`_gradient_sum`) and what carries it stay: canonicalization
        decides it once it knows which partials this stage holds (`SumTiedGradient`)."""
        for op in list(self.cut):
            if (found := _gradient_sum(op)) is not None:
                self.cut.difference_update([op, *found[2]])
        order = {op: i for i, op in enumerate(self.block.walk())}
        for op in sorted(self.cut, key=order.__getitem__, reverse=True):
            offs = [sim.OffStageOp(r.type) for r in op.results if r.uses]
            it = iter(offs)
            Rewriter.replace_op(op, offs, [next(it).result if r.uses else None for r in op.results])


@dataclass(frozen=True)
class SumTiedGradient(RewritePattern):
    """A sum of two partials of a parameter's gradient (a tied weight's embedding
    and head gradients) of which this stage holds one: the stage keeps its own
    partial, and before the optimizer step updates its copy of the weight, the
    partials of the first and the last stage are summed by an all-reduce over the
    embedding group (positions 0 and pp-1 of the `pp` axis), as Megatron-LM's
    `_allreduce_embedding_grads`."""

    pp: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ElementwiseOp, rewriter: PatternRewriter, /) -> None:
        held = [v for v in op.inputs if not sim.is_off_stage(v)]
        if len(held) != 1 or (found := _gradient_sum(op)) is None:
            return
        step, index, _ = found
        grad = step.grads[index]
        subgroup = DenseArrayBase.from_list(i64, [0, self.pp - 1])
        total = rewriter.insert(coll.AllReduceOp(grad, MESH, ["pp"], subgroup=subgroup), InsertPoint.before(step))
        rewriter.replace_uses_with_if(grad, total.result, lambda use: use.operation is not total)
        rewriter.replace(op, [], held)


def _p2p_props(shift: int) -> dict:
    return {
        "grid": SymbolRefAttr(MESH),
        "grid_axes": ArrayAttr([StringAttr("pp")]),
        "shift": IntegerAttr(shift, 64),
    }


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    name = "pipeline"

    pp: int = 1
    vpp: int = 1
    schedule: str = "1f1b"
    microbatches: int = 0
    layers: tuple[int, ...] | int = ()
    scatter_gather: bool = False

    def layer_split(self, total: int) -> list[int]:
        stages = self.pp * self.vpp
        if stages > total:
            raise CharonError(
                f"pipeline: options 'pp' x 'vpp' ({self.pp} x {self.vpp} = {stages} stages) "
                f"exceed the model's {total} layers"
            )
        if not self.layers:
            return even_split(total, stages)
        split = [self.layers] if isinstance(self.layers, int) else list(self.layers)
        if len(split) != stages or sum(split) != total or min(split) < 0:
            raise CharonError(
                f"pipeline: option 'layers' ({','.join(map(str, split))}) must give "
                f"{stages} stages of >= 0 layers summing to the model's {total} layers"
            )
        return split

    def clean_up(self, stage: sim.StageOp) -> None:
        """What follows from the ops a stage does not run: the canonical forms of
        `sim.off_stage` (what reads one is off-stage; a phase stops yielding it, an
        optimizer step stops updating its pair), a tied weight's gradient summed
        across the end stages (`SumTiedGradient`, tried first), then xDSL's region
        dead-code elimination for what nothing reads any more (the embedding of a
        later stage, params and inputs of another stage's layers)."""
        if not any(isinstance(o, sim.OffStageOp) for o in stage.walk()):
            region_dce(stage.body)  # one stage holds everything (pp = 1): nothing to spread
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SumTiedGradient(self.pp), CanonicalizationRewritePattern()],
                                        dce_enabled=False),
        ).rewrite_region(stage.body)
        region_dce(stage.body)
        for off in (o for o in stage.walk() if isinstance(o, sim.OffStageOp)):
            reader = next(iter(off.result.uses)).operation
            raise CharonError(f"pipeline: cannot move work off this stage: '{reader.name}' still reads "
                              "a value another stage computes")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.pp < 1 or self.vpp < 1:
            raise CharonError(f"pipeline: options 'pp' ({self.pp}) and 'vpp' ({self.vpp}) must be >= 1")
        if self.vpp > 1 and self.pp == 1:
            # the chunks of one stage would send to themselves, and a weight the
            # first and last chunk share (tied embeddings) would be held twice
            raise CharonError(f"pipeline: option 'vpp' ({self.vpp}) needs 'pp' >= 2 "
                              "(an interleaved schedule of one stage)")
        microbatches = self.microbatches or self.pp
        check_schedule(self.schedule, self.pp, self.vpp, microbatches)
        if any(isinstance(o, sim.StageOp) for o in op.body.block.ops):
            raise CharonError("pipeline: the module is already split into stages")
        if OPTIMIZER_KERNELS_ATTR in op.attributes:
            raise CharonError("pipeline: run it before unfuse-optimizer, which prices the "
                              "optimizer's kernels on each stage's parameters")
        fwd = sim.phases_of(op.body.block).get(sim.PhaseKind.FORWARD)
        if fwd is None:
            raise CharonError("pipeline: the module has no forward phase to split")
        reps = _repeats(fwd, reverse=False)
        if not reps:
            raise CharonError("pipeline: the forward phase has no sim.repeat of layers to split")
        counts = [r.trip_count for r in reps]
        split = self.layer_split(sum(counts))
        shapes = stage_shapes(counts, split)
        ensure_axis(op, "pp", self.pp, self.name)

        tp = grid_axes(op).get("tp", 1)
        full = 0
        if self.scatter_gather and tp > 1:
            seq, batch = step_tokens(op)
            hidden = reps[0].iter_init[0].type
            assert isinstance(hidden, TensorType)
            full = seq * batch * hidden.get_shape()[-1]
        classes: dict[StageShape, list[int]] = {}
        for v, shape in enumerate(shapes):
            classes.setdefault(shape, []).append(v)
        step_ops = [o for o in op.body.block.ops if not isinstance(o, coll.GridOp)]
        for shape, virtual_stages in classes.items():
            block = Block()
            mapper: dict[SSAValue, SSAValue] = {}
            for o in step_ops:
                block.add_op(o.clone(mapper))
            _StageBuilder(block, shape, tp if full else 1, full).build()
            stage = sim.StageOp(virtual_stages, Region(block))
            op.body.block.add_op(stage)
            self.clean_up(stage)
        for o in reversed(step_ops):
            o.detach()
            o.erase(safe_erase=False)
        op.attributes[PIPELINE_ATTR] = sim.PipelineAttr(self.pp, self.vpp, self.schedule, microbatches, split)
