"""
Kernel fusion: groups of ops that real training stacks run as one kernel become one
op whose intermediate tensors never reach device memory.

Options (each on by default but `loss` and `backward`):
- attention: flash attention; `sim.attention` / `sim.attention_grad` get `flash`,
  so the score matrix is never written or read back (`attention-kernel`, default
  empty: the flash kernel's name, flash2 / flash3 / triton, for the cost engine).
- norm: an RMSNorm imported as its pieces (cast, pow, mean, add eps, rsqrt, mul,
  cast, mul by the weight) becomes one `sim.generic "fused.rms_norm"`; a LayerNorm
  and its bias add (and saved statistics) one `"fused.layer_norm"`.
- bias-act: a bias add and the activation computed from it (gelu, silu, relu, or
  GELU's tanh form as imported: the pointwise ops that read only the group, and
  the free slices that split it into halves), and a gated unit's activation times
  its gate (SwiGLU: silu(g) * u), become one `sim.generic "fused.bias_act"` /
  `"fused.swiglu"`. The bias may be a stacked experts' ([experts, 1, out]): GPT-OSS's
  clamped SwiGLU (gate and up halves of the biased GEMM output, each clamped,
  gate * sigmoid(1.702 gate) * (up + 1)) is one kernel in Megatron-Core too
  (its fused weighted-SwiGLU with `activation_func_clamp_value`).
- rope: rotary embeddings imported as x * cos + rotate_half(x) * sin (slices, neg,
  cat, two muls and an add) become one `sim.generic "fused.rope"`.
- loss (default false): the loss as Megatron-Core's vocab-parallel cross entropy
  runs it: the fp32 logits' log-softmax and NLL forward become one
  `sim.generic "fused.cross_entropy"` that writes the softmax it saves, and the
  backward one kernel computing the gradient in place of that softmax. Off by
  default: the stacks outside Megatron run PyTorch's log-softmax and NLL as they
  import.
- backward (default false): the backward of each fused norm, activation and
  RoPE as one kernel as well (`fused.rms_norm_grad`, `fused.swiglu_grad`, ...,
  `FuseBackwardKernels`), instead of the pointwise pieces autograd derived from
  the imported forward. Transformer Engine and Megatron-Core run these fused;
  off by default because the unfused pieces' cost currently stands in for
  another under-priced cost of the step (docs/calibration.md, "Fused backward
  kernels").

A fusion changes bytes moved, never the model's FLOPs: the fused op carries the
sum of its parts' FLOPs, and reads each outside input once and writes each value
that is used outside the group once. What only the backward read (a norm's fp32
copy of its input and x * rstd, silu(g), GeLU's tanh pieces) is not written: the
forward saves the kernel's activation inputs in its place (and small statistics:
rstd, mean), and a `<callee>.recompute` op recomputes it before its first reader
in the backward, as the fused kernels' backward does (Apex and Transformer Engine
norms, Megatron's `bias_gelu_impl` and `bias_swiglu_impl`): memory analysis then
counts what those kernels save. Its FLOPs are the backward's own, as a flash
attention gradient's recomputed scores are (the model's FLOPs, not activation
recompute), and it moves only what it reads: it stands for the start of the
fused backward kernel, whose recomputed values never reach memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from charon_ir.dialects import sim
from charon_ir.dialects.sim import ElementwiseKind
from charon_ir.engines.compute_efficiency import ATTENTION_KERNELS
from charon_ir.errors import CharonError
from charon_ir.memory.liveness import Roots
from charon_ir.memory.tensors import alias_source, saved_source
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.rebuild import replace_keeping

ACTIVATIONS = frozenset({
    ElementwiseKind.GELU, ElementwiseKind.SILU, ElementwiseKind.RELU, ElementwiseKind.TANH, ElementwiseKind.SIGMOID,
})


def _kind(op: Operation | None, *kinds: ElementwiseKind) -> bool:
    return isinstance(op, sim.ElementwiseOp) and op.kind.data in kinds


def _owner(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def _single_user(value: SSAValue) -> Operation | None:
    users = {u.operation for u in value.uses}
    return next(iter(users)) if len(users) == 1 else None


@dataclass
class SavedInternals:
    """Values a fused kernel's group computed only for the backward, which the
    kernel's backward recomputes from its saved inputs instead (fused RMSNorm and
    LayerNorm save their input and statistics, a fused bias-GeLU its input and
    bias, a fused SwiGLU its gate and up inputs: Apex, Transformer Engine,
    Megatron's `bias_gelu_impl` / `bias_swiglu_impl`)."""

    fused: sim.GenericOp
    recomputed: list[int]
    """Indices of the fused op's outputs the backward recomputes."""
    inputs: list[int]
    """Indices of the fused op's inputs (activations) the recomputation reads."""
    statistics: list[int]
    """Indices of saved outputs the recomputation reads (a norm's rstd)."""
    flops: float
    """FLOPs of the group's ops between those and the recomputed values."""


STATISTIC_RATIO = 16
"""A saved output with at most 1/16 the elements of the group's largest input (a
norm's per-row mean or rstd) is kept: it is what the fused kernels save."""


def fuse_group(
    group: Sequence[Operation], callee: sim.GenericCallee | str, rewriter: PatternRewriter,
    on_chip: Callable[[SSAValue], bool] = lambda _: False, hoist: bool = False,
) -> tuple[sim.GenericOp, SavedInternals | None] | None:
    """Replace `group` (ops of one block) by one `sim.generic` at the place of its
    last op (with `hoist`, when an outside use comes before the last, at the
    earliest place every input is ready). Inputs: values from outside the group
    (those `on_chip` holds are read but not moved); outputs: group values used
    outside it. Returns the fused op and what of its outputs the backward should
    recompute; None (changing nothing) when no place reaches every outside use."""
    members = set(group)
    block = group[0].parent_block()
    if block is None or any(op.parent_block() is not block for op in group):
        return None
    order = {op: i for i, op in enumerate(block.ops)}
    first = min(group, key=lambda op: order[op])
    last = max(group, key=lambda op: order[op])
    inputs: list[SSAValue] = []
    outputs: list[SSAValue] = []
    earliest_use = len(order)
    for op in sorted(group, key=lambda o: order[o]):
        for v in op.operands:
            if (_owner(v) not in members) and v not in inputs:
                inputs.append(v)
        for r in op.results:
            outside = [u.operation for u in r.uses if u.operation not in members]
            if not outside:
                continue
            for user in outside:
                ancestor = block.find_ancestor_op_in_block(user)
                if ancestor is None:
                    return None
                earliest_use = min(earliest_use, order[ancestor])
            outputs.append(r)
    if not outputs:
        return None
    place = InsertPoint.after(last)
    if earliest_use <= order[last]:
        # the earliest place every input is ready, if that is before the first outside use
        defs = [a for v in inputs if isinstance(o := v.owner, Operation)
                and (a := block.find_ancestor_op_in_block(o)) is not None]
        ready = max(defs, key=order.__getitem__, default=None)
        if not hoist or (ready is not None and order[ready] >= earliest_use):
            return None
        place = (InsertPoint.before(first) if ready is None or order[ready] < order[first]
                 else InsertPoint.after(ready))
    saved = _saved_internals(members, inputs, outputs)
    flops = sum(op.flops() for op in group if isinstance(op, sim.ComputeOp))
    tensors = [v for v in (*inputs, *outputs) if isinstance(v.type, TensorType) and not on_chip(v)]
    moved = sum(sim.tensor_bytes(v) for v in tensors)
    fused = sim.GenericOp(callee, inputs, [r.type for r in outputs], flops, moved)
    rewriter.insert(fused, place)
    for old, new in zip(outputs, fused.results):
        old.replace_all_uses_with(new)
        new.name_hint = old.name_hint
    for op in sorted(group, key=lambda o: -order[o]):
        rewriter.erase(op, safe_erase=False)
    if saved is None:
        return fused, None
    recomputed, needed, statistics, recompute_flops = saved
    return fused, SavedInternals(
        fused,
        [outputs.index(v) for v in recomputed],
        [inputs.index(v) for v in needed],
        [outputs.index(v) for v in statistics],
        recompute_flops,
    )


def _saved_internals(
    members: set[Operation], inputs: list[SSAValue], outputs: list[SSAValue]
) -> tuple[list[SSAValue], list[SSAValue], list[SSAValue], float] | None:
    """(recomputed outputs, activation inputs and saved statistics they are
    recomputed from, FLOPs of that) for the outputs only the backward reads;
    None when there are none."""
    largest = max((sim.numel(v.type) for v in inputs if isinstance(v.type, TensorType)), default=0)
    saved = [v for v in outputs if isinstance(v.type, TensorType) and _only_saved(v, members)]
    statistics = [v for v in saved if sim.numel(v.type) * STATISTIC_RATIO <= largest]
    recomputed = [v for v in saved if v not in statistics]
    if not recomputed:
        return None
    boundary = set(inputs) | set(statistics)
    cone: set[Operation] = set()
    needed: list[SSAValue] = []
    used_statistics: list[SSAValue] = []
    stack = list(recomputed)
    while stack:
        v = stack.pop()
        if v in boundary:
            target = used_statistics if v in statistics else needed
            if v not in target:
                target.append(v)
            continue
        op = _owner(v)
        if op is None or op not in members or op in cone:
            continue
        cone.add(op)
        stack.extend(op.operands)
    roots = Roots()
    needed = [v for v in inputs if v in needed and not roots.is_parameter(v)]
    used_statistics = [v for v in statistics if v in used_statistics]
    flops = sum(op.flops() for op in cone if isinstance(op, sim.ComputeOp))
    return recomputed, needed, used_statistics, flops


def _only_saved(value: SSAValue, members: set[Operation]) -> bool:
    """Whether `value` is used outside its group only as what a forward phase
    yields or a forward layer repeat stacks per iteration: saved for the backward."""
    outside = [u for u in value.uses if u.operation not in members]
    return bool(outside) and all(_saved_use(u) for u in outside)


def _saved_use(use: Use) -> bool:
    user = use.operation
    if not isinstance(user, sim.YieldOp):
        return False
    parent = user.parent_op()
    if isinstance(parent, sim.RepeatOp) and not parent.reverse:
        if use.index < len(parent.iter_init):
            return False
        parent = parent.parent_op()
    return isinstance(parent, sim.PhaseOp) and parent.kind.data == sim.PhaseKind.FORWARD


@dataclass
class _Channel:
    """How the backward reads one value the forward yields: the yield operand,
    the values it passes through (a layer repeat's stacked result, the forward
    phase's result, a reverse repeat's slice argument) and the last of them, the
    one the backward's ops read."""

    yield_op: sim.YieldOp
    index: int
    links: list[SSAValue]

    @property
    def terminal(self) -> SSAValue:
        return self.links[-1]

    @property
    def reader_block(self) -> Block | None:
        t = self.terminal
        return t.block if isinstance(t, BlockArgument) else _backward_block(t)

    def carry(self, value: SSAValue) -> SSAValue:
        """Make the channel carry `value` (of the yielding block) instead; returns
        the new terminal, which the old terminal's readers now read."""
        self.yield_op.operands[self.index] = value
        t = value.type
        assert isinstance(t, TensorType)
        new_links: list[SSAValue] = []
        for link in self.links:
            if isinstance(link, OpResult) and isinstance(link.op, sim.RepeatOp):
                t = TensorType(t.element_type, [link.op.trip_count, *sim.shape_of(value)])
            elif isinstance(link, BlockArgument):
                t = value.type
            new_links.append(Rewriter.replace_value_with_new_type(link, t))
        self.links = new_links
        return self.terminal


def _backward_block(value: SSAValue) -> Block | None:
    """The backward phase's block, when every reader of `value` is an op of it."""
    blocks = {u.operation.parent_block() for u in value.uses}
    if len(blocks) != 1:
        return None
    block = blocks.pop()
    phase = block.parent_op() if block else None
    if isinstance(phase, sim.PhaseOp) and phase.kind.data == sim.PhaseKind.BACKWARD:
        return block
    return None


def _channel(use: Use) -> _Channel | None:
    term = use.operation
    assert isinstance(term, sim.YieldOp)
    links: list[SSAValue] = []
    parent = term.parent_op()
    index = use.index
    if isinstance(parent, sim.RepeatOp):
        stacked = parent.results[index]
        uses = list(stacked.uses)
        if len(uses) != 1 or not isinstance(uses[0].operation, sim.YieldOp):
            return None
        links.append(stacked)
        parent, index = uses[0].operation.parent_op(), uses[0].index
    assert isinstance(parent, sim.PhaseOp)
    saved = parent.results[index]
    links.append(saved)
    readers = list(saved.uses)
    if len(readers) == 1 and isinstance(rep := readers[0].operation, sim.RepeatOp):
        if not (rep.reverse and links[0] is not saved and readers[0].index >= len(rep.iter_init)):
            return None
        links.append(rep.body.block.args[readers[0].index])
    elif links[0] is not saved or _backward_block(saved) is None:
        return None
    channel = _Channel(term, use.index, links)
    return channel if channel.reader_block is not None else None


def _channels(value: SSAValue) -> list[_Channel] | None:
    found = [_channel(u) for u in value.uses]
    return None if not found or None in found else found  # pyright: ignore[reportReturnType]


def _in_block(value: SSAValue, block: Block) -> bool:
    """Whether `value` is computed in `block` (or is a layer's carried input)."""
    if isinstance(value, BlockArgument):
        rep = block.parent_op()
        return value.block is block and isinstance(rep, sim.RepeatOp) and value.index < len(rep.iter_init)
    return isinstance(value, OpResult) and value.op.parent_block() is block


RECOMPUTE_SUFFIX = ".recompute"


def recompute_in_backward(saved: SavedInternals) -> bool:
    """Save the activation inputs (and statistics) of `saved.fused` in place of
    the internals only its backward read, which a `<callee>.recompute` op
    recomputes before their first reader in the backward. Returns False,
    changing nothing, when the backward does not read them through one layer
    repeat or the backward phase."""
    fused = saved.fused
    block = fused.parent_block()
    needed = [fused.inputs[i] for i in saved.inputs]
    if block is None or not needed or not all(_in_block(v, block) for v in needed):
        return False
    internal: list[list[_Channel]] = []
    for i in saved.recomputed:
        found = _channels(fused.results[i])
        if found is None:
            return False
        internal.append(found)
    flat = [c for found in internal for c in found]
    readers = {c.reader_block for c in flat}
    if len(readers) != 1 or len(flat) < len(needed):
        return False
    reader = readers.pop()
    assert reader is not None
    statistics: list[SSAValue] = []
    for i in saved.statistics:
        found = [c for c in _channels(fused.results[i]) or [] if c.reader_block is reader]
        if not found:
            return False
        statistics.append(found[0].terminal)
    users = [reader.find_ancestor_op_in_block(u.operation) for c in flat for u in c.terminal.uses]
    if not users or None in users:
        return False
    order = {op: n for n, op in enumerate(reader.ops)}
    first = min(users, key=order.__getitem__)  # pyright: ignore[reportArgumentType]
    # a channel per needed input; a surplus channel carries one again (one
    # storage, counted once), which the recompute pass tolerates
    terminals = [c.carry(needed[n % len(needed)]) for n, c in enumerate(flat)]
    sources = [*terminals[: len(needed)], *statistics]
    types = [fused.results[i].type for i in saved.recomputed]
    moved = sum(sim.tensor_bytes(v) for v in sources)
    op = sim.GenericOp(fused.callee.data + RECOMPUTE_SUFFIX, sources, types, saved.flops, moved)
    reader.insert_op_before(op, first)
    n = 0
    for result, i, found in zip(op.results, saved.recomputed, internal):
        result.name_hint = fused.results[i].name_hint
        for _ in found:
            terminals[n].replace_uses_with_if(result, lambda u: u.operation is not op)
            n += 1
    _drop_outputs(fused, saved.recomputed)
    return True


def recomputed_flops(module: ModuleOp) -> float:
    """FLOPs one step spends in the fused kernels' backward recomputations: what
    fusion adds to the unfused step's FLOPs."""
    return sum(
        op.flops() * mult
        for op, mult in walk_with_multiplicity(module)
        if isinstance(op, sim.GenericOp) and op.callee.data.endswith(RECOMPUTE_SUFFIX)
    )


def _drop_outputs(fused: sim.GenericOp, dropped: list[int]) -> None:
    """`fused` without the outputs at `dropped` (now unread): it no longer writes them."""
    keep = [i for i in range(len(fused.results)) if i not in dropped]
    moved = fused.byte_count.value.data - sum(sim.tensor_bytes(fused.results[i]) for i in dropped)
    new = sim.GenericOp(fused.callee.data, fused.inputs, [fused.results[i].type for i in keep],
                        fused.flop_count.value.data, moved)
    for i, result in zip(keep, new.results):
        result.name_hint = fused.results[i].name_hint
    replace_keeping(fused, new, keep)


class FusionPattern(RewritePattern):
    """A pattern that fuses groups; collects what their backward recomputes."""

    def __init__(self, saved: list[SavedInternals]):
        self.saved = saved

    def fuse(self, group: Sequence[Operation], callee: sim.GenericCallee, rewriter: PatternRewriter) -> None:
        fused = fuse_group(group, callee, rewriter)
        if fused is not None and fused[1] is not None:
            self.saved.append(fused[1])


class FlashAttention(RewritePattern):
    """Mark attention flash: scores stay in on-chip memory; with a `kernel`, name
    the flash kernel that runs it."""

    def __init__(self, kernel: sim.AttentionKernel | None = None):
        self.kernel = kernel

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, (sim.AttentionOp, sim.AttentionGradOp)) and op.flash is None:
            op.properties["flash"] = UnitAttr()
            if self.kernel is not None:
                op.properties["kernel"] = sim.AttentionKernelAttr(self.kernel)
            rewriter.handle_operation_modification(op)


class FuseRmsNorm(FusionPattern):
    """x -> [cast] -> pow -> mean -> add eps -> rsqrt -> mul x -> [cast] -> mul w."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ReduceOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != sim.ReduceKind.MEAN:
            return
        power = _owner(op.input)
        if not _kind(power, ElementwiseKind.POW):
            return
        x = power.operands[0]
        group: list[Operation] = [power, op]
        cast_in = _owner(x)
        if _kind(cast_in, ElementwiseKind.CAST):
            group.insert(0, cast_in)
        eps = _single_user(op.result)
        if not _kind(eps, ElementwiseKind.ADD):
            return
        rstd = _single_user(eps.results[0])
        if not _kind(rstd, ElementwiseKind.RSQRT):
            return
        scale = next(
            (u.operation for u in rstd.results[0].uses
             if _kind(u.operation, ElementwiseKind.MUL) and x in u.operation.operands),
            None,
        )
        if scale is None:
            return
        group += [eps, rstd, scale]
        tail = scale.results[0]
        cast_out = _single_user(tail)
        if _kind(cast_out, ElementwiseKind.CAST):
            group.append(cast_out)
            tail = cast_out.results[0]
        weight = next(
            (u.operation for u in tail.uses if _kind(u.operation, ElementwiseKind.MUL)
             and any(len(sim.shape_of(v)) == 1 for v in u.operation.operands)),
            None,
        )
        if weight is not None:
            group.append(weight)
        self.fuse(group, sim.GenericCallee.FUSED_RMS_NORM, rewriter)


class FuseRope(FusionPattern):
    """x * cos + cat(-x2, x1) * sin, rooted at the add."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != sim.ElementwiseKind.ADD or len(op.inputs) != 2:
            return
        a, b = (_owner(v) for v in op.inputs)
        if not (_kind(a, ElementwiseKind.MUL) and _kind(b, ElementwiseKind.MUL)):
            return
        for cos_mul, sin_mul in ((a, b), (b, a)):
            cat = next((_owner(v) for v in sin_mul.operands if isinstance(_owner(v), sim.GenericOp)
                        and _owner(v).callee.data == "aten.cat"), None)
            if cat is None or len(cat.operands) != 2:
                continue
            neg = _owner(cat.operands[0])
            if not _kind(neg, ElementwiseKind.NEG):
                continue
            group: list[Operation] = [cos_mul, sin_mul, cat, neg, op]
            for v in (neg.operands[0], cat.operands[1]):
                sl = _owner(v)
                if isinstance(sl, sim.GenericOp) and sl.callee.data == "aten.slice" and sl not in group:
                    group.append(sl)
            self.fuse(group, sim.GenericCallee.FUSED_ROPE, rewriter)
            return


class FuseNormBias(FusionPattern):
    """A LayerNorm and the add of its bias (and the statistics it saves for the
    backward, read from the same input)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.NormOp, rewriter: PatternRewriter) -> None:
        add = _single_user(op.result)
        if not (_kind(add, ElementwiseKind.ADD) and any(len(sim.shape_of(v)) == 1 for v in add.operands)):
            return
        group: list[Operation] = [op, add]
        for use in op.input.uses:
            stats = use.operation
            if sim.is_generic(stats, sim.GenericCallee.LAYER_NORM_STATS):
                group.append(stats)
        self.fuse(group, sim.GenericCallee.FUSED_LAYER_NORM, rewriter)


def _is_bias(value: SSAValue, result: SSAValue) -> bool:
    """A bias: a vector, or a stacked experts' bias broadcast over the rows of
    each expert's buffer ([experts, 1, out] added to [experts, capacity, out])."""
    dims, out = sim.shape_of(value), sim.shape_of(result)
    if len(dims) == 1:
        return True
    return (len(dims) == len(out) == 3 and dims[1] == 1 < out[1]
            and (dims[0], dims[2]) == (out[0], out[2]))


def _is_bias_add(op: Operation | None) -> bool:
    return _kind(op, ElementwiseKind.ADD) and len(op.operands) == 2 and any(  # pyright: ignore[reportOptionalMemberAccess]
        _is_bias(v, op.results[0]) for v in op.operands  # pyright: ignore[reportOptionalMemberAccess]
    )


FREE_SLICES = frozenset({"aten.slice", "aten.split"})
"""Zero-cost generics that take a part of a value: a fused kernel reads the
part it needs (GPT-OSS's gate and up halves of one bias-added GEMM output)."""


def _is_free_slice(op: Operation) -> bool:
    return (isinstance(op, sim.GenericOp) and op.callee.data in FREE_SLICES
            and op.flops() == 0 and len(op.operands) == 1)


class FuseBiasActivation(FusionPattern):
    """A bias add and the activation computed from it alone (gelu, or its tanh /
    erf decomposition as imported); SwiGLU's silu(g) * u."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.ElementwiseOp, rewriter: PatternRewriter) -> None:
        if _is_bias_add(op):
            # grow over the pointwise ops that read only the group (constants folded)
            group: list[Operation] = [op]
            members: set[Operation] = {op}
            block = op.parent_block()
            assert block is not None
            started = False
            for later in block.ops:
                started = started or later is op
                if not started or later in members or not (
                    isinstance(later, sim.ElementwiseOp) or _is_free_slice(later)
                ):
                    continue
                owners = [_owner(v) for v in later.operands]
                if owners and all(o in members for o in owners):
                    group.append(later)
                    members.add(later)
            # a slice that feeds no pointwise op of the group is no part of it
            while group and _is_free_slice(group[-1]):
                members.discard(group.pop())
            if any(_kind(g, *ACTIVATIONS, ElementwiseKind.ERF) for g in group):
                self.fuse(group, sim.GenericCallee.FUSED_BIAS_ACT, rewriter)
            return
        if op.kind.data == sim.ElementwiseKind.MUL and len(op.inputs) == 2:
            for v in op.inputs:
                act = _owner(v)
                if _kind(act, ElementwiseKind.SILU, ElementwiseKind.GELU) and len(act.operands) == 1:
                    self.fuse([act, op], sim.GenericCallee.FUSED_SWIGLU, rewriter)
                    return


def _generic(op: Operation | None, callee: str) -> bool:
    return isinstance(op, sim.GenericOp) and op.callee.data == callee


class FuseCrossEntropy(FusionPattern):
    """The loss as Megatron-Core's vocab-parallel cross entropy runs it
    (megatron/core/tensor_parallel/cross_entropy.py): forward, the fp32 copy of
    the logits becomes the softmax in place (cast, log-softmax and the NLL as
    one kernel writing the softmax it saves and the loss); backward, the
    gradient is computed in place of that saved softmax (NLL and log-softmax
    backward, and the cast to the GEMMs' bf16, as one kernel), so no further
    vocabulary-sized fp32 tensor is allocated."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.GenericOp, rewriter: PatternRewriter) -> None:
        if op.callee.data == "aten._log_softmax":
            group: list[Operation] = [op]
            x = _owner(op.operands[0])
            while isinstance(x, sim.ViewOp) and _single_user(x.results[0]) is not None:
                group.insert(0, x)
                x = _owner(x.operands[0])
            if _kind(x, ElementwiseKind.CAST) and _single_user(x.results[0]) is not None:  # pyright: ignore
                group.insert(0, x)  # pyright: ignore[reportArgumentType]
            nll = [u.operation for u in op.results[0].uses if _generic(u.operation, "aten.nll_loss_forward")]
            if len(group) > 1 and nll:
                self.fuse(group + nll[:1], sim.GenericCallee.FUSED_CROSS_ENTROPY, rewriter)
            return
        if op.callee.data != "aten._log_softmax_backward_data":
            return
        nll = _owner(op.operands[0])
        if not (_generic(nll, "aten.nll_loss_backward") and _single_user(nll.results[0]) is op):  # pyright: ignore
            return
        group = [nll, op]  # pyright: ignore[reportAssignmentType]
        tail = op.results[0]
        while (user := _single_user(tail)) is not None and (
            isinstance(user, sim.ViewOp) or _kind(user, ElementwiseKind.CAST)
        ):
            group.append(user)
            tail = user.results[0]
            if _kind(user, ElementwiseKind.CAST):
                break
        if _kind(group[-1], ElementwiseKind.CAST):
            self.fuse(group, sim.GenericCallee.FUSED_CROSS_ENTROPY_GRAD, rewriter)


def _gradient_in_logits(module: ModuleOp) -> None:
    """Transformer Engine's parallel cross entropy (Megatron-Bridge's
    `cross_entropy_fusion_impl="te"`) computes the logits' gradient in its
    forward kernel, in place of the bf16 logits it saves: what the backward reads
    is that bf16 tensor, so the fused loss's recompute yields it in the logits'
    type, not an fp32 softmax."""
    for o in module.walk():
        if isinstance(o, sim.GenericOp) and o.callee.data == sim.GenericCallee.FUSED_CROSS_ENTROPY + RECOMPUTE_SUFFIX:
            logits = o.operands[0].type
            for r in o.results:
                if isinstance(r.type, TensorType) and isinstance(logits, TensorType):
                    Rewriter.replace_value_with_new_type(r, TensorType(logits.element_type, r.type.get_shape()))


# ---------------------------------------------------------------------------
# backward kernels
# ---------------------------------------------------------------------------


GRAD_CALLEES: dict[str, sim.GenericCallee] = {
    sim.GenericCallee.FUSED_RMS_NORM: sim.GenericCallee.FUSED_RMS_NORM_GRAD,
    sim.GenericCallee.FUSED_LAYER_NORM: sim.GenericCallee.FUSED_LAYER_NORM_GRAD,
    sim.GenericCallee.FUSED_ROPE: sim.GenericCallee.FUSED_ROPE_GRAD,
    sim.GenericCallee.FUSED_BIAS_ACT: sim.GenericCallee.FUSED_BIAS_ACT_GRAD,
    sim.GenericCallee.FUSED_SWIGLU: sim.GenericCallee.FUSED_SWIGLU_GRAD,
}
"""A fused forward kernel -> its backward kernel."""

LAYOUT_CALLEES = frozenset({"aten.slice", "aten.split", "aten.slice_backward", "aten.cat"})
"""Generics that only move elements (RoPE's halves and their gradients' padding
back): pointwise for fusion."""


def _pointwise(op: Operation) -> bool:
    """An op a fused pointwise kernel can hold: element-wise math, a reduction
    over some dims, a view or a layout generic, none of them a recomputation's
    clone (the recompute pass's, which re-runs forward kernels)."""
    if sim.recompute_kind(op) is not None:
        return False
    return isinstance(op, (sim.ElementwiseOp, sim.ReduceOp, sim.ViewOp)) or (
        isinstance(op, sim.GenericOp) and op.callee.data in LAYOUT_CALLEES
    )


def _origin(value: SSAValue) -> SSAValue:
    while (src := alias_source(value)) is not None:
        value = src
    return value


class FuseBackwardKernels(RewritePattern):
    """The backward of each fused forward kernel as one kernel.

    Autograd differentiates a fused kernel's pieces as they were imported: an
    RMSNorm's backward is a dozen element-wise ops and two reductions, each a
    pass over the activation. The stacks that run the fused forward kernels run
    their backward as one kernel too (Transformer Engine's `rmsnorm_bwd` and fused
    RoPE backward, Megatron-Core's `bias_swiglu_impl` / `bias_gelu_impl`), reading
    the output gradient and what the forward saved once and writing the input
    (and weight) gradients once.

    A group starts at a pointwise op of a backward block that reads what a fused
    forward kernel left for its backward: the results of its `<callee>.recompute`
    op, or a saved copy of one of its inputs or outputs (a norm's statistics,
    SwiGLU's gate and up halves, RoPE's cos and sin tables). It grows over the
    pointwise ops that read it, pulling in the pointwise ops that feed them (and
    the other pieces of the same kernel's backward: a norm's weight gradient
    beside its input gradient), while everything it reads from outside is what the forward saved, parameters,
    and one activation: the output gradient. A gradient summed from two streams
    (a residual's, the q/k/v projections') is another kernel, autograd's
    accumulation: where an op would read two, the group stops. The recompute op's
    results are read on chip (it stands for the start of the same kernel), so
    the fused op moves the output gradient, the saved tensors and its outputs.
    """

    def __init__(self, bases: frozenset[str]):
        self.bases = bases

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sim.PhaseOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != sim.PhaseKind.BACKWARD or (block := op.parent_block()) is None:
            return
        forward = next((p for p in block.ops if isinstance(p, sim.PhaseOp) and p.kind.data == sim.PhaseKind.FORWARD),
                       None)
        if forward is None:
            return
        roots = Roots()
        kernels: dict[SSAValue, set[sim.GenericOp]] = {}
        for f in forward.walk():
            if isinstance(f, sim.GenericOp) and f.callee.data in self.bases:
                for v in (*f.operands, *f.results):
                    if not roots.is_parameter(v):
                        kernels.setdefault(_origin(v), set()).add(f)
        blocks = [op.body.block, *(r.body.block for r in op.body.block.ops if isinstance(r, sim.RepeatOp) and r.reverse)]
        for body in blocks:
            _BackwardBlock(body, kernels, roots).fuse(rewriter)


@dataclass(frozen=True)
class _Kernel:
    """The fused forward kernel(s) a backward op is a piece of the backward of."""

    callee: str
    forward: frozenset[sim.GenericOp]


class _BackwardBlock:
    """The backward kernels of one backward block (a reverse layer repeat's body,
    or the phase's own ops)."""

    def __init__(self, block: Block, kernels: dict[SSAValue, set[sim.GenericOp]], roots: Roots):
        self.block = block
        self.kernels = kernels
        self.roots = roots
        self.claimed: set[Operation] = set()

    def _forward_of(self, value: SSAValue) -> frozenset[sim.GenericOp]:
        return frozenset(self.kernels.get(_origin(saved_source(value)), ()))

    def recompute_of(self, value: SSAValue) -> _Kernel | None:
        """The kernel whose `.recompute` op made `value`."""
        owner = _owner(value)
        if not (isinstance(owner, sim.GenericOp) and owner.callee.data.endswith(RECOMPUTE_SUFFIX)):
            return None
        forward = frozenset().union(*(self._forward_of(v) for v in owner.operands))
        callee = owner.callee.data[: -len(RECOMPUTE_SUFFIX)]
        return _Kernel(callee, forward) if forward else None

    def saved(self, value: SSAValue) -> bool:
        """A parameter, or what the forward saved for the backward."""
        if self.roots.is_parameter(value):
            return True
        src = saved_source(value)
        owner = src.owner if isinstance(src.owner, Operation) else src.owner.parent_op()
        return src is not value and owner is not None and sim.phase_kind(owner) == sim.PhaseKind.FORWARD

    def side(self, value: SSAValue) -> bool:
        """Read by a backward kernel besides the output gradient: not a tensor,
        saved, or recomputed on chip."""
        return not isinstance(value.type, TensorType) or self.saved(value) or self.recompute_of(value) is not None

    def kernel_of(self, op: Operation) -> _Kernel | None:
        """The kernel a pointwise op starts the backward of: it reads a recompute
        op's result or a saved input or output of a fused forward kernel."""
        if isinstance(op, sim.ViewOp) or not _pointwise(op):
            return None
        found: list[_Kernel] = []
        for v in op.operands:
            kernel = self.recompute_of(v)
            if kernel is None and self.saved(v) and not self.roots.is_parameter(v) and (fwd := self._forward_of(v)):
                callees = {f.callee.data for f in fwd}
                kernel = _Kernel(callees.pop(), fwd) if len(callees) == 1 else None
            if kernel is not None:
                found.append(kernel)
        if not found or len({k.callee for k in found}) > 1:
            return None
        return _Kernel(found[0].callee, frozenset().union(*(k.forward for k in found)))

    def fuse(self, rewriter: PatternRewriter) -> None:
        for seed in list(self.block.ops):
            if seed in self.claimed or (kernel := self.kernel_of(seed)) is None:
                continue
            members = self.grow(seed, kernel)
            if sum(1 for m in members if not isinstance(m, sim.ViewOp)) < 2:
                continue
            self.claimed |= members
            order = {o: i for i, o in enumerate(self.block.ops)}
            group = sorted(members, key=order.__getitem__)
            fuse_group(group, GRAD_CALLEES[kernel.callee], rewriter,
                       on_chip=lambda v: self.recompute_of(v) is not None, hoist=True)

    def grow(self, seed: Operation, kernel: _Kernel) -> set[Operation]:
        members: set[Operation] = set()
        gradient: set[SSAValue] = set()
        forward = set(kernel.forward)

        def same_kernel(op: Operation) -> bool:
            other = self.kernel_of(op)
            return other is not None and other.callee == kernel.callee and bool(other.forward & forward)

        def reads(v: SSAValue, memo: dict[SSAValue, tuple[frozenset[SSAValue], frozenset[Operation]]]
                  ) -> tuple[frozenset[SSAValue], frozenset[Operation]]:
            """(activations from outside, pointwise ops to pull in) behind `v`."""
            if v in memo:
                return memo[v]
            w = _owner(v)
            found: tuple[frozenset[SSAValue], frozenset[Operation]] = (frozenset(), frozenset())
            if self.side(v) or w in members:
                pass
            elif (w is None or w.parent_block() is not self.block or not _pointwise(w) or w in self.claimed
                  or (self.kernel_of(w) is not None and not same_kernel(w))):
                found = (frozenset({v}), frozenset())
            else:
                parts = [reads(o, memo) for o in w.operands]
                outside = frozenset().union(*(p[0] for p in parts))
                pulled = frozenset().union(*(p[1] for p in parts))
                # a sum of two gradient streams is autograd's accumulation: its own kernel
                found = (frozenset({v}), frozenset()) if len(outside) > 1 else (outside, pulled | {w})
            memo[v] = found
            return found

        grown = True
        while grown:
            grown = False
            for u in self.block.ops:
                if u in members or u in self.claimed or not _pointwise(u):
                    continue
                # another piece of the same kernel (a norm's weight gradient beside
                # its input gradient) joins when it reads the same output gradient
                if not (u is seed or same_kernel(u) or (
                        not isinstance(u, sim.ViewOp) and any(_owner(v) in members for v in u.operands))):
                    continue
                memo: dict[SSAValue, tuple[frozenset[SSAValue], frozenset[Operation]]] = {}
                parts = [reads(v, memo) for v in u.operands]
                outside = gradient.union(*(p[0] for p in parts))
                if len(outside) > 1:
                    continue
                gradient = set(outside)
                members |= {u}.union(*(p[1] for p in parts))
                if (other := self.kernel_of(u)) is not None:
                    forward |= other.forward
                grown = True
        return members


@dataclass(frozen=True)
class FusePass(ModulePass):
    name = "fuse"

    attention: bool = True
    norm: bool = True
    bias_act: bool = True
    rope: bool = True
    loss: bool = False
    """Megatron-Core's cross entropy (`FuseCrossEntropy`): off by default, as the
    stacks outside Megatron run PyTorch's log-softmax and NLL as they import."""
    backward: bool = False
    """The backward of each fused norm, activation and RoPE as one kernel too
    (`FuseBackwardKernels`), as Transformer Engine and Megatron-Core run them;
    false (the default): as autograd's pieces. Off by default until the cost
    its pieces now stand in for is found (docs/calibration.md, "Fused backward
    kernels")."""
    attention_kernel: str = ""
    """The flash kernel the cost engine prices attention with (flash2, flash3,
    triton); empty: the engine's default."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.attention_kernel and self.attention_kernel not in ATTENTION_KERNELS:
            # the engine would silently price an unknown name as its default kernel
            raise CharonError(
                f"fuse: option 'attention-kernel': unknown kernel '{self.attention_kernel}' "
                f"(known: {', '.join(ATTENTION_KERNELS)})"
            )
        saved: list[SavedInternals] = []
        patterns: list[RewritePattern] = []
        if self.attention:
            patterns.append(FlashAttention(sim.AttentionKernel(self.attention_kernel) if self.attention_kernel else None))
        if self.norm:
            patterns += [FuseRmsNorm(saved), FuseNormBias(saved)]
        if self.rope:
            patterns.append(FuseRope(saved))
        if self.bias_act:
            patterns.append(FuseBiasActivation(saved))
        if self.loss:
            patterns.append(FuseCrossEntropy(saved))
        if not patterns:
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        for internals in saved:
            recompute_in_backward(internals)
        if self.loss:
            _gradient_in_logits(op)
        bases = frozenset(
            [*((sim.GenericCallee.FUSED_RMS_NORM, sim.GenericCallee.FUSED_LAYER_NORM) if self.norm else ()),
             *((sim.GenericCallee.FUSED_ROPE,) if self.rope else ()),
             *((sim.GenericCallee.FUSED_BIAS_ACT, sim.GenericCallee.FUSED_SWIGLU) if self.bias_act else ())]
        )
        if self.backward and bases:
            PatternRewriteWalker(FuseBackwardKernels(bases), apply_recursively=False).rewrite_module(op)
