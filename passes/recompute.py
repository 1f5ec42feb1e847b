"""
Activation recomputation (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models").

Options:
- policy: none | selective | selective-op | full (default none).
- modules: with policy=selective, the sub-blocks recomputed, Megatron-Core's
  --recompute-modules names: core_attn (the default, as Megatron-Core's),
  layernorm, mla_up_proj, mlp, moe, moe_act, shared_experts
  (`charon_ir.parallel.sub_blocks` says how each is found).

selective with modules other than core_attn: each named sub-block of every
layer repeat is cloned into the backward body right before the first backward
op that reads one of its values, fed by its inputs, which the forward saves
instead (stacked per layer when the forward did not already); what the backward
read of the sub-block's values is read from the clone, and what the forward
saved only for that is no longer saved (Megatron-Core's `CheckpointWithoutOutput`
and `checkpoint` around a module). The clones are marked `sim.recompute =
#sim<recompute "selective">`; the backward gains exactly their FLOPs.

selective: the attention core is recomputed in backward. Before each
`sim.attention_grad` of a non-flash attention, a clone of its forward
`sim.attention` re-runs QK^T, softmax and the product with V from the saved q, k
and v (Megatron-LM's checkpointed core attention), and the gradient reads the
clone's output. The forward attention, the clone and the gradient are marked
`sim.recompute = #sim<recompute "selective">`: memory analysis then no longer
counts the softmax probabilities (and dropout mask and output) the forward
attention would have saved, and counts the recomputed probabilities as the
gradient's scratch. The
cost is the clone's: one attention forward per layer. A flash attention already
recomputes its scores in its backward and saves only its output and log-sum-exp:
it is left as it is.

selective-op: torchtitan's op-level selective activation checkpointing
(`selective_ac_option = 'op'`: each transformer block under
`torch.utils.checkpoint` with a policy from `create_selective_checkpoint_contexts`).
Each layer saves its input and the outputs of the ops the policy saves
(`op_level_saved`: the 1st, 3rd, ... `aten.mm` of the layer, a flash attention,
a tensor-parallel reduce-scatter), all of them, whether the backward reads them
or not (the policy's cache holds them until the re-run); the backward body
re-runs the layer's other ops in program order, before its first op that reads
a saved value, from the saved values, up to the last op whose output it reads
(the checkpoint's early stop), and reads the re-made values. The re-run ops are
marked `sim.recompute = #sim<recompute "selective-op">`; the backward gains
exactly their FLOPs. A re-run op runs under autograd: what it saves (a non-flash
attention's probabilities) is saved again, which memory analysis counts. A step
with a backward but no layer repeat is an error; so is `modules`.

full: each layer is re-run in backward from its input (Megatron-LM's uniform
full recompute with one layer per checkpoint). The body of each reverse layer
repeat starts with a clone of its forward repeat's body, fed by the saved layer
input; everything else the forward used to save for that repeat (its stacked
outputs, the forward phase's results and the backward's slices of them) is
dropped, so the forward saves only the layer input per layer. The backward gains
exactly one forward of each layer. What else of the forward phase's own the layer
reads (RoPE's cos/sin tables computed before the repeat, a sliced operand the
phase computes) the clone reads through the forward phase's results, which yield
it when they did not already: a phase never reads inside another's region. The
forward repeat and the cloned ops are marked
`sim.recompute = #sim<recompute "full">` (a clone runs under autograd: what it
saves lives until its layer's backward is done, which memory analysis counts
there). Under ZeRO-3 the clone reads the parameters the backward body gathers,
rather than gathering them a second time; under data-parallel's
overlap-param-gather, which gathers them once per step in the forward, it reads
the parameters. A step with a backward but no layer repeat is an error.

The pass runs on the module's step or on each `sim.stage` of a pipelined one,
before or after `pipeline` and `data-parallel`, records the policy on the module
(`sim.recompute_policy = #sim<recompute_policy "none">`) and never rewrites
what it produced (marked ops are skipped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import FIRST_FORWARD_ATTR, RECOMPUTE_ATTR, RECOMPUTE_POLICY_ATTR
from charon_ir.errors import CharonError
from charon_ir.memory.tensors import alias_source, is_model_state_buffer, saved_source, yielded
from charon_ir.parallel.sub_blocks import DEFAULT_MODULES, MODULES, LayerBlocks, with_views

POLICIES = tuple(p.value for p in sim.RecomputePolicy)
POLICY_CHOICES = f"{', '.join(POLICIES[:-1])} or {POLICIES[-1]}"
"""The policies in words ("none, selective, selective-op or full"), for error messages."""


def rewrote_nothing(module: ModuleOp) -> bool:
    """Whether the pass, just applied to `module`, left every op as it was: each
    of its rewrites marks what it made or re-ran (`sim.recompute`), so no mark
    means the module is the one without the pass but for the policy it records
    (`sim.recompute_policy`, which nothing reads). Selective recomputation of a
    flash attention's core is such a run: flash already re-runs it in its
    backward (the sweep then shares the point of no recomputation)."""
    return not any(sim.recompute_kind(op) is not None for op in module.walk())


# ---------------------------------------------------------------------------
# selective
# ---------------------------------------------------------------------------


class RecomputeAttentionCore(RewritePattern):
    """Recompute a non-flash attention's core right before its gradient."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.AttentionGradOp, rewriter: PatternRewriter) -> None:
        if op.flash or sim.recompute_kind(op) is not None or sim.phase_kind(op) != sim.PhaseKind.BACKWARD:
            return
        forward = saved_source(op.out).owner
        if not isinstance(forward, sim.AttentionOp) or forward.flash:
            return
        clone = sim.AttentionOp(
            op.q, op.k, op.v, op.out.type, causal=bool(op.causal), flash=False, window=op.window_size(),
            chunk=op.chunk_size(),
        )
        for name, attr in forward.attributes.items():
            clone.attributes[name] = attr
        mark = sim.RecomputeKindAttr(sim.RecomputeKind.SELECTIVE)
        clone.attributes[RECOMPUTE_ATTR] = mark
        clone.result.name_hint = f"{forward.result.name_hint or 'attention'}_recomputed"
        rewriter.insert(clone, InsertPoint.before(op))
        op.operands = [
            clone.result if name == "out" else getattr(op, name)
            for name, _ in type(op).get_irdl_definition().operands
        ]
        op.attributes[RECOMPUTE_ATTR] = mark
        rewriter.handle_operation_modification(op)
        forward.attributes[RECOMPUTE_ATTR] = mark
        rewriter.handle_operation_modification(forward)


# ---------------------------------------------------------------------------
# full
# ---------------------------------------------------------------------------


def _phase(block: Block, kind: sim.PhaseKind) -> sim.PhaseOp | None:
    return next(
        (op for op in block.ops if isinstance(op, sim.PhaseOp) and op.kind.data == kind),
        None,
    )


def _rebuild_phase(phase: sim.PhaseOp, yields: list[SSAValue]) -> sim.PhaseOp:
    """`phase` yielding `yields` instead; results of values yielded before keep
    their uses."""
    term = phase.body.block.last_op
    assert isinstance(term, sim.YieldOp)
    old = list(term.values)
    term.detach()
    term.erase()
    phase.body.block.add_op(sim.YieldOp(*yields))
    new = sim.PhaseOp(phase.kind.data, phase.detach_region(phase.body), [v.type for v in yields])
    new.attributes.update(phase.attributes)
    _replace(phase, new, old, yields)
    return new


def _rebuild_repeat(
    rep: sim.RepeatOp, iter_init: list[SSAValue], slices: list[SSAValue], region: Region, yields: list[SSAValue]
) -> sim.RepeatOp:
    block = region.block
    term = block.last_op
    assert isinstance(term, sim.YieldOp)
    old = list(term.values)
    term.detach()
    term.erase()
    block.add_op(sim.YieldOp(*yields))
    n = rep.trip_count
    types = [
        v.type if i < len(iter_init) else TensorType(v.type.element_type, [n, *sim.shape_of(v)])  # pyright: ignore[reportAttributeAccessIssue]
        for i, v in enumerate(yields)
    ]
    new = sim.RepeatOp(n, iter_init, slices, region, types, reverse=bool(rep.reverse))
    new.attributes.update(rep.attributes)
    _replace(rep, new, old, yields)
    return new


def _replace(old_op: Operation, new_op: Operation, old_yields: list[SSAValue], new_yields: list[SSAValue]) -> None:
    """Move the uses of `old_op`'s results to the `new_op` results that yield the
    same value; a dropped result must have no uses left."""
    block = old_op.parent_block()
    assert block is not None
    block.insert_op_before(new_op, old_op)
    for i, v in enumerate(old_yields):
        result = old_op.results[i]
        if v in new_yields:
            new_result = new_op.results[new_yields.index(v)]
            new_result.name_hint = new_result.name_hint or result.name_hint
        if not result.uses:
            continue
        if v not in new_yields:
            raise CharonError(
                f"recompute: cannot drop a result of {old_op.name}: "
                f"{next(iter(result.uses)).operation.name} still reads it"
            )
        result.replace_all_uses_with(new_op.results[new_yields.index(v)])
    old_op.detach()
    old_op.erase()


def recompute_layer_pairs(
    block: Block, recompute: Callable[[sim.RepeatOp, sim.RepeatOp, sim.PhaseOp], sim.PhaseOp]
) -> bool:
    """`recompute(forward, backward, forward phase)` on each (forward repeat,
    reverse repeat) pair of the step in `block` not yet recomputed, the forward
    phase it returns replacing the old; False when the step has a backward but
    no such pair."""
    fwd, bwd = _phase(block, sim.PhaseKind.FORWARD), _phase(block, sim.PhaseKind.BACKWARD)
    if fwd is None or bwd is None:
        return True
    found = False
    for rep in [o for o in bwd.body.block.ops if isinstance(o, sim.RepeatOp) and o.reverse]:
        forward = sim.forward_twin(rep, fwd)
        if forward is None:
            continue
        found = True
        if sim.recompute_kind(forward) is None:
            fwd = recompute(forward, rep, fwd)
    return found


@dataclass
class LayerRecompute:
    """Full recompute of one (forward repeat, reverse repeat) pair of a step."""

    block: Block

    def run(self) -> bool:
        """Recompute every layer repeat of the step; False when the step has a
        backward but no (forward repeat, reverse repeat) pair to work on."""
        return recompute_layer_pairs(self.block, self.recompute)

    def recompute(self, forward: sim.RepeatOp, backward: sim.RepeatOp, fwd: sim.PhaseOp) -> sim.PhaseOp:
        f_block = forward.body.block
        f_yields = list(yielded(f_block))
        n_iter = len(forward.iter_init)
        carried_args = list(f_block.args[:n_iter])

        # 1. the forward repeat stacks its layer inputs, the forward phase saves them
        stacked_inputs: list[SSAValue] = []
        for arg in carried_args:
            if arg not in f_yields[n_iter:]:
                f_yields.append(arg)
        forward = _rebuild_repeat(
            forward, list(forward.iter_init), list(forward.slices),
            forward.detach_region(forward.body), f_yields,
        )
        f_block = forward.body.block
        for arg in carried_args:
            stacked_inputs.append(forward.results[f_yields.index(arg, n_iter)])
        # ... and whatever else of its own the forward phase hands the layer body
        # (a value the body reads from around the repeat, a sliced operand): the
        # backward phase reads those through the forward phase's results, never
        # from inside the forward phase's region
        captured = _captured(forward, backward, fwd)
        p_yields = list(yielded(fwd.body.block))
        for v in [*stacked_inputs, *captured]:
            if v not in p_yields:
                p_yields.append(v)
        fwd = _rebuild_phase(fwd, p_yields)
        saved_inputs = [fwd.results[p_yields.index(v)] for v in stacked_inputs]
        from_phase = {v: fwd.results[p_yields.index(v)] for v in captured}
        for v, result in from_phase.items():
            result.name_hint = result.name_hint or v.name_hint

        # 2. the backward repeat: keep its carried values and the slices that are
        # not the forward repeat's saved outputs, add the saved layer inputs
        b_block = backward.body.block
        b_iter = len(backward.iter_init)
        from_forward: dict[BlockArgument, SSAValue] = {}
        kept: list[tuple[SSAValue, BlockArgument]] = []
        dropped: set[SSAValue] = set()
        for s, arg in zip(backward.slices, b_block.args[b_iter:]):
            src = yielded(fwd.body.block)[s.index] if isinstance(s, OpResult) and s.op is fwd else None
            if isinstance(src, OpResult) and src.op is forward:
                from_forward[arg] = yielded(f_block)[src.index]
                dropped.add(s)
            else:
                kept.append((s, arg))
        new_block = Block(arg_types=[a.type for a in b_block.args[:b_iter]])
        slices: list[SSAValue] = []
        mapper: dict[SSAValue, SSAValue] = {}
        for s, arg in kept:
            slices.append(s)
            mapper[arg] = new_block.insert_arg(arg.type, len(new_block.args))
        for old, new in zip(b_block.args[:b_iter], new_block.args):
            mapper[old] = new

        # the forward body's block arguments, seen from the backward body; the
        # forward phase's values the body reads, as the phase's results
        clone_map: dict[SSAValue, SSAValue] = dict(from_phase)
        for arg, saved in zip(carried_args, saved_inputs):
            clone_map[arg] = new_block.insert_arg(arg.type, len(new_block.args))
            slices.append(saved)
        for s, arg in zip(forward.slices, f_block.args[n_iter:]):
            s = from_phase.get(s, s)
            if s in slices:
                clone_map[arg] = new_block.args[b_iter + slices.index(s)]
                continue
            slices.insert(len(kept), s)
            clone_map[arg] = new_block.insert_arg(arg.type, b_iter + len(kept))
            kept.append((s, arg))
        # ZeRO-3: the backward body gathers its layer's parameters first; the
        # recomputed forward reads those instead of gathering them again
        skipped = self.share_gathered_parameters(f_block, b_block, clone_map, mapper)
        for op in list(b_block.ops)[: len(_leading_gathers(b_block)) if skipped else 0]:
            op.detach()
            new_block.add_op(op)
        for op in f_block.ops:
            if isinstance(op, sim.YieldOp):
                break
            if op in skipped:
                continue
            clone = op.clone(clone_map)
            clone.attributes[RECOMPUTE_ATTR] = sim.RecomputeKindAttr(sim.RecomputeKind.FULL)
            new_block.add_op(clone)
        # values the backward read from the forward now come from the clone
        for arg, src in from_forward.items():
            mapper[arg] = clone_map.get(src, src)
        for op in list(b_block.ops):
            op.detach()
            new_block.add_op(op)
        for old, new in mapper.items():
            old.replace_all_uses_with(new)
        b_yields = list(yielded(new_block))
        _rebuild_repeat(backward, list(backward.iter_init), slices, Region(new_block), b_yields)

        # 3. drop what the forward saved only for that backward (a value the
        # forward repeat yields twice leaves its second phase result unread:
        # `_replace` moved both readers to the first)
        p_yields = list(yielded(fwd.body.block))
        unused = {
            i for i, r in enumerate(fwd.results)
            if not r.uses and (r in dropped or _stacked_output_of(p_yields[i], forward))
        }
        fwd = _rebuild_phase(fwd, [v for i, v in enumerate(p_yields) if i not in unused])
        f_yields = list(yielded(forward.body.block))
        keep = [
            v for i, v in enumerate(f_yields)
            if i < n_iter or forward.results[i].uses
        ]
        forward = _rebuild_repeat(
            forward, list(forward.iter_init), list(forward.slices),
            forward.detach_region(forward.body), keep,
        )
        forward.attributes[RECOMPUTE_ATTR] = sim.RecomputeKindAttr(sim.RecomputeKind.FULL)
        return fwd

    @staticmethod
    def share_gathered_parameters(
        f_block: Block, b_block: Block, clone_map: dict[SSAValue, SSAValue], mapper: dict[SSAValue, SSAValue]
    ) -> set[Operation]:
        """Map the forward body's gathered parameters to the backward body's;
        the forward's gather ops, which the clone then skips (none when the
        two bodies do not both gather the same parameters)."""
        f_lead, b_lead = _leading_gathers(f_block), _leading_gathers(b_block)
        f_pairs, b_pairs = _gathered(f_lead), _gathered(b_lead)
        if f_pairs and all(FIRST_FORWARD_ATTR in op.attributes for op in f_lead):
            # overlap-param-gather: the forward gathered them once for the step;
            # the recomputed forward reads the parameters themselves
            clone_map.update({full: clone_map.get(param, param) for param, full in f_pairs})
            return set(f_lead)
        if not f_pairs or not b_pairs:
            return set()
        by_param = {mapper.get(param, param): full for param, full in b_pairs}
        shared: dict[SSAValue, SSAValue] = {}
        for param, full in f_pairs:
            target = by_param.get(clone_map.get(param, param))
            if target is None:
                return set()
            shared[full] = target
        clone_map.update(shared)
        return set(f_lead)


# ---------------------------------------------------------------------------
# selective: named sub-blocks (Megatron-Core --recompute-modules)
# ---------------------------------------------------------------------------


@dataclass
class SubBlockRecompute:
    """Recompute the named sub-blocks of every layer repeat of a step in its
    backward (Megatron-Core's `CheckpointWithoutOutput` / `checkpoint` around a
    module): what the backward read of a sub-block's values it reads from a
    clone of the sub-block, inserted before the first such read and fed by the
    sub-block's inputs, which the forward saves instead."""

    block: Block
    modules: tuple[str, ...]

    def run(self) -> bool:
        """Recompute every layer repeat of the step; False when the step has a
        backward but no (forward repeat, reverse repeat) pair to work on."""
        return recompute_layer_pairs(self.block, self.recompute)

    def chosen_ops(self, forward: sim.RepeatOp) -> list[Operation]:
        body = forward.body.block
        if len(forward.iter_init) != 1:
            return []
        blocks = LayerBlocks(body, body.args[0], yielded(body)[0])
        chosen: set[Operation] = set()
        for module in self.modules:
            chosen |= blocks.module_ops(module)
        chosen = with_views(body, {op for op in chosen if sim.recompute_kind(op) is None})
        # what only the sub-block reads and reads nothing from outside it (an
        # empty buffer it fills, a view of that) is re-made, not saved
        inner = {op for op in body.ops if chosen and op not in chosen and op.results
                 and not isinstance(op, sim.YieldOp)}
        shrunk = True
        while shrunk:
            closed = chosen | inner
            keep = {
                op for op in inner
                if all(v.owner in closed for v in op.operands)
                and (users := [body.find_ancestor_op_in_block(u.operation) for r in op.results for u in r.uses])
                and all(u in closed for u in users)
            }
            shrunk, inner = keep != inner, keep
        chosen |= inner
        return [op for op in body.ops if op in chosen]

    def recompute(self, forward: sim.RepeatOp, backward: sim.RepeatOp, fwd: sim.PhaseOp) -> sim.PhaseOp:
        ops = self.chosen_ops(forward)
        chosen = set(ops)
        f_block, b_block = forward.body.block, backward.body.block
        n_iter, b_iter = len(forward.iter_init), len(backward.iter_init)

        def saved_args() -> dict[SSAValue, list[BlockArgument]]:
            """Forward body value -> the backward body's arguments holding it."""
            found: dict[SSAValue, list[BlockArgument]] = {}
            p_yields, f_yields = yielded(fwd.body.block), yielded(f_block)
            for s, arg in zip(backward.slices, b_block.args[b_iter:]):
                src = p_yields[s.index] if isinstance(s, OpResult) and s.op is fwd else None
                if isinstance(src, OpResult) and src.op is forward and src.index >= n_iter:
                    found.setdefault(f_yields[src.index], []).append(arg)
            return found

        replaced = [v for v in saved_args() if isinstance(v, OpResult) and v.op in chosen]
        if not replaced:
            return fwd  # the backward reads none of it: nothing to free
        ops = self.rerun(ops, replaced)
        chosen = set(ops)
        cached = self.cached_values(forward)

        # what the clone reads: saved layer values, parameters, the forward
        # phase's values around the repeat, values above the phase
        inputs = list(dict.fromkeys(v for op in ops for v in op.operands if v.owner not in chosen))
        to_stack: list[SSAValue] = []
        captured: list[SSAValue] = []
        gathered: list[SSAValue] = []
        for v in inputs:
            owner = v.owner
            if isinstance(v, BlockArgument) and owner is f_block:
                if v.index < n_iter:
                    to_stack.append(v)
                elif fwd.is_ancestor(_defining_op(forward.slices[v.index - n_iter])):
                    captured.append(forward.slices[v.index - n_iter])
            elif isinstance(owner, Operation) and owner.parent_block() is f_block:
                (gathered if is_model_state_buffer(owner) else to_stack).append(v)
            elif fwd.is_ancestor(_defining_op(v)):
                captured.append(v)
        to_stack += [v for v in cached if v not in to_stack]

        # 1. the forward repeat stacks the layer values the clone reads
        f_yields = list(yielded(f_block))
        extra = [v for v in to_stack if v not in f_yields[n_iter:]]
        if extra:
            f_yields += extra
            forward = _rebuild_repeat(
                forward, list(forward.iter_init), list(forward.slices),
                forward.detach_region(forward.body), f_yields,
            )
        stacked = {v: forward.results[f_yields.index(v, n_iter)] for v in to_stack}
        # 2. ... and the forward phase yields them and what it computes around the repeat
        p_yields = list(yielded(fwd.body.block))
        wanted = [*stacked.values(), *captured]
        if any(v not in p_yields for v in wanted):
            p_yields += [v for v in dict.fromkeys(wanted) if v not in p_yields]
            fwd = _rebuild_phase(fwd, p_yields)
        from_phase = {v: fwd.results[p_yields.index(v)] for v in wanted}

        # 3. the backward body: an argument per slice it needs
        slices = list(backward.slices)

        def argument(outer: SSAValue) -> SSAValue:
            if outer not in slices:
                slices.append(outer)
                b_block.insert_arg(_unstacked(outer.type), len(b_block.args))
            return b_block.args[b_iter + slices.index(outer)]

        clone_map: dict[SSAValue, SSAValue] = {}
        for arg, outer in zip(f_block.args[n_iter:], forward.slices):
            outer = from_phase.get(outer, outer)
            if outer in slices or arg in inputs:
                clone_map[arg] = argument(outer)
        for v in to_stack:
            clone_map[v] = argument(from_phase[stacked[v]])
        for v in captured:
            clone_map[v] = from_phase[v]
        # a parameter the forward gathered (data-parallel's ZeRO): the one the
        # backward body gathers, or the parameter itself where the forward's
        # gather is the step's only one (overlap-param-gather)
        backward_gathered = {
            clone_map.get(param, param): full
            for op in _leading_gathers(b_block) for param, full in _unpacked(op)
        }
        for v in gathered:
            param = next((p for p, full in _unpacked(v.owner) if full is v), None)  # pyright: ignore[reportArgumentType]
            if param is None:
                continue
            param = clone_map.get(param, param)
            if FIRST_FORWARD_ATTR in v.owner.attributes:  # pyright: ignore[reportAttributeAccessIssue]
                clone_map[v] = param
            elif param in backward_gathered:
                clone_map[v] = backward_gathered[param]
        missing = [v for v in gathered if v not in clone_map]
        if missing:
            raise CharonError(
                f"recompute: {self.rerun_what} reads a gathered parameter "
                "that the backward layer does not gather"
            )

        # 4. the clones, fed by what the forward saved
        saved = saved_args()
        self.insert_clones(b_block, ops, replaced, saved, clone_map)
        for v in replaced:
            for arg in saved[v]:
                if v in clone_map:
                    arg.replace_all_uses_with(clone_map[v])

        # 5. drop the slices no longer read (but what the forward caches for the
        # backward), then what the forward saved only for them
        pinned = {from_phase[stacked[v]] for v in cached}
        keep = [i for i, arg in enumerate(b_block.args[b_iter:]) if arg.uses or slices[i] in pinned]
        dropped = {slices[i] for i in range(len(slices)) if i not in keep}
        for arg in [a for i, a in enumerate(b_block.args[b_iter:]) if i not in keep]:
            b_block.erase_arg(arg)
        _rebuild_repeat(
            backward, list(backward.iter_init), [slices[i] for i in keep],
            backward.detach_region(backward.body), list(yielded(b_block)),
        )
        p_yields = list(yielded(fwd.body.block))
        unused = {
            i for i, r in enumerate(fwd.results)
            if not r.uses and (r in dropped or self.drops_every_unread) and _stacked_output_of(p_yields[i], forward)
        }
        if unused:
            fwd = _rebuild_phase(fwd, [v for i, v in enumerate(p_yields) if i not in unused])
        f_yields = list(yielded(forward.body.block))
        kept = [v for i, v in enumerate(f_yields) if i < n_iter or forward.results[i].uses]
        if len(kept) < len(f_yields):
            _rebuild_repeat(
                forward, list(forward.iter_init), list(forward.slices),
                forward.detach_region(forward.body), kept,
            )
        return fwd

    rerun_what = "option 'modules': a recomputed sub-block"
    """What re-runs, as the pass's errors name it."""
    drops_every_unread = False
    """Whether the forward phase stops yielding every stacked layer output that
    nothing reads, not only those the backward stopped reading here (a value
    the forward yielded twice leaves its second copy unread)."""

    def rerun(self, ops: list[Operation], replaced: list[SSAValue]) -> list[Operation]:
        """The chosen ops the backward re-runs, given the values of theirs it
        reads (`replaced`): each whole sub-block."""
        return ops

    def cached_values(self, forward: sim.RepeatOp) -> list[SSAValue]:
        """Forward layer values saved for the backward whether it reads them or
        not: none here."""
        return []

    def insert_clones(
        self, b_block: Block, ops: list[Operation], replaced: list[SSAValue],
        saved: dict[SSAValue, list[BlockArgument]], clone_map: dict[SSAValue, SSAValue],
    ) -> None:
        """Each sub-block's clone, right before the first backward op that reads
        what it recomputes (as Megatron-Core's hooks recompute a module when its
        backward starts)."""
        mark = sim.RecomputeKindAttr(sim.RecomputeKind.SELECTIVE)
        for component in _components(ops):
            members = set(component)
            readers = {arg for v in replaced if v.owner in members for arg in saved[v]}
            if not readers:
                continue
            first = next(
                op for op in b_block.ops
                if any(v in readers for inner in op.walk() for v in inner.operands)
            )
            for op in component:
                clone = op.clone(clone_map)
                clone.attributes[RECOMPUTE_ATTR] = mark
                b_block.insert_op_before(clone, first)


# ---------------------------------------------------------------------------
# selective-op: torchtitan's op-level selective activation checkpointing
# ---------------------------------------------------------------------------


def is_mm(op: Operation) -> bool:
    """Whether `op` is what torch dispatches as `aten.mm`: a `sim.matmul` with a
    2-D right operand (a linear's weight; `aten.bmm` keeps a batched one) whose
    product is not `aten.addmm`'s, which the frontend imports as the matmul and
    an add of a 1-D bias that is its only reader."""
    if not isinstance(op, sim.MatmulOp) or len(sim.shape_of(op.rhs)) != 2:
        return False
    readers = [u.operation for u in op.result.uses]
    return not (
        len(readers) == 1 and isinstance(add := readers[0], sim.ElementwiseOp)
        and add.kind.data == sim.ElementwiseKind.ADD
        and any(len(sim.shape_of(v)) == 1 for v in add.operands if v is not op.result)
    )


def _reads_router_weight(op: sim.MatmulOp) -> bool:
    """Whether the GEMM's weight is a MoE router's."""
    param = sim.param_of(op.rhs)
    return param is not None and param.param_role() == sim.ParamRole.ROUTER


def op_level_saved(body: Block) -> list[Operation]:
    """The ops of a layer body whose outputs torchtitan's op-level policy saves
    (`_apply_ac_to_transformer_block`'s `_save_list`, MUST_SAVE): the
    odd-numbered `aten.mm`s in program order (the 1st, 3rd, ...: its counter
    starts at 0 in every block and every even count is recomputed), the
    flash and memory-efficient SDPA kernels (a `sim.attention {flash}`; a
    non-flash one is the math path's bmm and softmax, not in the list), and
    the reduce-scatters of tensor parallelism. A body of several layers (a
    period of alternating ones: sliding and full attention) counts each
    layer's from 0, from the residual norm of its attention block. A MoE
    layer follows the torchtitan versions that run MoE models (2025): the
    expert-parallel all-to-alls are saved (`_c10d_functional.all_to_all_single`
    in the list) and the router's gate re-run, not counted
    (`per_op_sac_force_recompute_mm_shapes_by_fqns = ["moe.router.gate"]`)."""
    blocks = LayerBlocks(body, body.args[0], yielded(body)[0])
    layer_starts = {norm for norm, ops in blocks.blocks if LayerBlocks.attention_of(ops) is not None}
    saved: list[Operation] = []
    mm_count = 0
    for op in body.ops:
        if op in layer_starts:
            mm_count = 0
        elif is_mm(op) and not _reads_router_weight(op):
            mm_count += 1
            if mm_count % 2 == 1:
                saved.append(op)
        elif isinstance(op, coll.AllToAllOp) and "ep" in op.axis_names():
            saved.append(op)
        elif isinstance(op, sim.AttentionOp) and op.flash:
            saved.append(op)
        elif isinstance(op, coll.ReduceScatterOp) and not is_model_state_buffer(op):
            saved.append(op)
    return saved


@dataclass
class OpLevelRecompute(SubBlockRecompute):
    """torchtitan's op-level selective checkpointing of every layer repeat of a
    step (`torch.utils.checkpoint` with `create_selective_checkpoint_contexts`
    around each transformer block): the forward saves the layer's input and
    the outputs of the ops `op_level_saved` names, all of them, whether the
    backward reads them or not (the policy's cache holds every MUST_SAVE
    output until the layer's backward re-runs it); at the first backward op
    that reads a saved value, the layer's other ops re-run, in program order,
    up to the last one whose output the backward reads (the checkpoint's
    early stop), fed by the saved ones."""

    modules: tuple[str, ...] = ()
    saved_ops: dict[sim.RepeatOp, list[Operation]] = field(default_factory=dict)
    """`op_level_saved` of each forward repeat's body, as the forward left it."""

    rerun_what = "option 'policy=selective-op': a recomputed op"
    drops_every_unread = True

    def saved_of(self, forward: sim.RepeatOp) -> list[Operation]:
        if forward not in self.saved_ops:
            self.saved_ops[forward] = op_level_saved(forward.body.block)
        return self.saved_ops[forward]

    def chosen_ops(self, forward: sim.RepeatOp) -> list[Operation]:
        body = forward.body.block
        kept = set(self.saved_of(forward))
        return [
            op for op in body.ops
            if op not in kept and not isinstance(op, sim.YieldOp) and not is_model_state_buffer(op)
            and sim.recompute_kind(op) is None
        ]

    def rerun(self, ops: list[Operation], replaced: list[SSAValue]) -> list[Operation]:
        """The recomputable ops up to the last one whose storage the backward
        reads (where the re-run of the block's forward stops), and the views the
        backward reads of them: the frontend puts a linear's flattening views at
        the end of the body, where torch makes them inside the linear."""
        chosen = set(ops)
        views: set[Operation] = set()
        last = -1
        for v in replaced:
            while (src := alias_source(v)) is not None and v.owner in chosen:
                views.add(v.owner)  # pyright: ignore[reportArgumentType]
                v = src
            if v.owner in chosen:
                last = max(last, ops.index(v.owner))  # pyright: ignore[reportArgumentType]
        return [op for i, op in enumerate(ops) if i <= last or op in views]

    def cached_values(self, forward: sim.RepeatOp) -> list[SSAValue]:
        return [r for op in self.saved_of(forward) for r in op.results]

    def insert_clones(
        self, b_block: Block, ops: list[Operation], replaced: list[SSAValue],
        saved: dict[SSAValue, list[BlockArgument]], clone_map: dict[SSAValue, SSAValue],
    ) -> None:
        """The re-run, in program order, before the first backward op that reads
        anything the forward saved for this layer (torch re-runs the block at
        the first unpack of one of its saved tensors)."""
        readers = {arg for args in saved.values() for arg in args}
        first = next(
            op for op in b_block.ops
            if any(v in readers for inner in op.walk() for v in inner.operands)
        )
        mark = sim.RecomputeKindAttr(sim.RecomputeKind.SELECTIVE_OP)
        for op in ops:
            clone = op.clone(clone_map)
            clone.attributes[RECOMPUTE_ATTR] = mark
            b_block.insert_op_before(clone, first)


def _components(ops: list[Operation]) -> list[list[Operation]]:
    """`ops` (in program order) split into the groups their def-use edges
    connect, each in program order, ordered by their first op."""
    parent = {op: op for op in ops}

    def find(op: Operation) -> Operation:
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in ops:
        for v in op.operands:
            if v.owner in parent:
                parent[find(v.owner)] = find(op)  # pyright: ignore[reportArgumentType]
    groups: dict[Operation, list[Operation]] = {}
    for op in ops:
        groups.setdefault(find(op), []).append(op)
    return list(groups.values())


def _unpacked(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    """(parameter, gathered parameter) pairs of a ZeRO `param_unpack`: the
    outputs of the unpacker and the inputs of the shard packer its gather read."""
    if not sim.is_generic(op, sim.GenericCallee.PARAM_UNPACK):
        return []
    source = op.inputs[0].owner
    while isinstance(source, Operation) and not isinstance(source, sim.GenericOp) and source.operands:
        source = source.operands[0].owner
    if not (isinstance(source, sim.GenericOp) and source.calls(sim.GenericCallee.PARAM_SHARD_BUCKET)):
        return []
    if len(source.inputs) != len(op.outputs):
        return []
    return list(zip(source.inputs, op.outputs))


def _defining_op(value: SSAValue) -> Operation:
    owner = value.owner
    return owner if isinstance(owner, Operation) else owner.parent_op()  # pyright: ignore[reportReturnType]


def _unstacked(t: Attribute) -> Attribute:
    """The type of one layer's slice of a stacked [n, ...] value."""
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, sim.shape_of(t)[1:])


def _captured(forward: sim.RepeatOp, backward: sim.RepeatOp, fwd: sim.PhaseOp) -> list[SSAValue]:
    """The values that `fwd`'s region defines outside the forward repeat and that
    the recomputed layer reads: what the repeat's body reads from around it, the
    repeat's sliced operands, and what its body yields unchanged for `backward`
    to read; in first-use order."""
    body = forward.body.block
    body_yields = yielded(body)
    read_back = {
        body_yields[src.index]
        for s in backward.slices
        if isinstance(s, OpResult) and s.op is fwd
        and isinstance(src := yielded(fwd.body.block)[s.index], OpResult) and src.op is forward
    }
    used = [*forward.slices]
    for op in body.walk():
        used += op.operands if op is not body.last_op else [v for v in op.operands if v in read_back]
    return list(dict.fromkeys(
        v for v in used if fwd.is_ancestor(v.owner) and not forward.is_ancestor(v.owner)
    ))


def _stacked_output_of(value: SSAValue, rep: sim.RepeatOp) -> bool:
    return isinstance(value, OpResult) and value.op is rep and value.index >= len(rep.iter_init)


def _leading_gathers(block: Block) -> list[Operation]:
    """The data-parallel pass's ZeRO-3 parameter gathers at the start of a body."""
    lead: list[Operation] = []
    for op in block.ops:
        if not is_model_state_buffer(op):
            break
        lead.append(op)
    return lead


def _gathered(ops: list[Operation]) -> list[tuple[SSAValue, SSAValue]]:
    """(parameter, gathered parameter) pairs of a ZeRO-3 gather sequence: the
    shard packer's inputs, in order, and the unpacker's outputs."""
    packs = [op for op in ops if sim.is_generic(op, sim.GenericCallee.PARAM_SHARD_BUCKET)]
    unpacks = [op for op in ops if sim.is_generic(op, sim.GenericCallee.PARAM_UNPACK)]
    if len(packs) != 1 or len(unpacks) != 1 or len(packs[0].inputs) != len(unpacks[0].outputs):
        return []
    return list(zip(packs[0].inputs, unpacks[0].outputs))


@dataclass(frozen=True)
class RecomputePass(ModulePass):
    name = "recompute"

    policy: Literal["none", "selective", "selective-op", "full"] = "none"
    modules: tuple[str, ...] | str = DEFAULT_MODULES
    """With policy=selective: the sub-blocks recomputed (Megatron-Core's
    --recompute-modules): core_attn, layernorm, mla_up_proj, mlp, moe, moe_act,
    shared_experts."""

    def module_names(self) -> tuple[str, ...]:
        names = (self.modules,) if isinstance(self.modules, str) else tuple(self.modules)
        unknown = [m for m in names if m not in MODULES]
        if unknown:
            raise CharonError(
                f"recompute: option 'modules': unknown module '{unknown[0]}' (known: {', '.join(MODULES)})"
            )
        if self.policy != sim.RecomputePolicy.SELECTIVE and names != DEFAULT_MODULES:
            raise CharonError(f"recompute: option 'modules' needs policy=selective, got policy={self.policy}")
        return names

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.policy not in POLICIES:
            raise CharonError(
                f"recompute: option 'policy': unknown policy '{self.policy}' "
                f"(known: {', '.join(POLICIES)})"
            )
        modules = self.module_names()
        policy = sim.RecomputePolicy(self.policy)
        if policy == sim.RecomputePolicy.SELECTIVE:
            if "core_attn" in modules:
                PatternRewriteWalker(
                    GreedyRewritePatternApplier([RecomputeAttentionCore()], dce_enabled=False),
                    apply_recursively=False,
                ).rewrite_module(op)
            blocks = tuple(m for m in modules if m != "core_attn")
            if blocks:
                for step in sim.step_blocks(op):
                    SubBlockRecompute(step, blocks).run()
        elif policy == sim.RecomputePolicy.SELECTIVE_OP:
            if not all([OpLevelRecompute(block).run() for block in sim.step_blocks(op)]):
                raise CharonError(
                    "recompute: option 'policy=selective-op' needs the layers as a forward sim.repeat "
                    "whose saved outputs a reverse sim.repeat in backward reads; the step has none"
                )
        elif policy == sim.RecomputePolicy.FULL:
            if not all([LayerRecompute(block).run() for block in sim.step_blocks(op)]):
                raise CharonError(
                    "recompute: option 'policy=full' needs the layers as a forward sim.repeat "
                    "whose saved outputs a reverse sim.repeat in backward reads; the step has none"
                )
        op.attributes[RECOMPUTE_POLICY_ATTR] = sim.RecomputePolicyAttr(policy)
