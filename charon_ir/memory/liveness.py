"""Activation bytes of one micro-batch, by liveness over the step's phases.

A value's storage is allocated by the op that defines its root (see
`charon_ir.memory.tensors`) and freed after the last op of the same block that
reads it, directly or from a nested region. What the forward phase yields is what
it saves for the backward: those roots stay alive to the end of the forward and
into the backward until their last reader there. What the backward phase yields
are the parameter gradients, which live in the gradient buffers (counted with the
model states, not here). Parameters, step inputs and the data-parallel buffers
(gradient buckets, ZeRO shards, gathered parameters: `tensors.is_model_state_buffer`)
are not activations, nor is what a collective makes of a parameter (a weight
gathered or re-laid-out for a layer: a communication buffer).

A `sim.repeat` is not unrolled. At its last iteration the live set is what was
live before it, plus what the earlier iterations kept (their stacked outputs),
plus the body's own peak: live_before + (count - 1) * kept_per_iteration +
body_peak. A reverse repeat consumes stacked values from its first iteration on,
so its peak is at the first iteration, which the same formula gives with
nothing kept per iteration (its stacked outputs are gradients).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.memory import tensors
from charon_ir.parallel.backward_split import weight_gradient_ops

Root = Hashable
STATIC = "static"


class Roots:
    """Storage roots of values and their bytes, memoised over one stage's program.

    `fp8_saved`: the layer values the backward reads only as GEMM operands, which
    Transformer Engine's fp8 linears save as their fp8 cast (one byte an element;
    `fp8_saved_gemm_inputs`)."""

    def __init__(self, fp8_saved: frozenset[Root] = frozenset()) -> None:
        self._root: dict[SSAValue, Root] = {}
        self._tagged: dict[sim.RepeatOp, frozenset[Root]] = {}
        self.fp8_saved = fp8_saved

    def offloadable(self, rep: sim.RepeatOp) -> frozenset[Root]:
        """The roots of a forward layer repeat's body that Transformer Engine's
        CPU offload handler would move (`te_offloaded_roots`), memoised."""
        if rep not in self._tagged:
            self._tagged[rep] = te_offloaded_roots(rep.body.block, self)
        return self._tagged[rep]

    def layers_on_host(self, rep: sim.RepeatOp, inner: Root) -> int:
        """Layers of a forward repeat whose stacked output rooted at `inner` lives
        on the host: its offloaded layers, for what the handler moves."""
        host = on_host(rep)
        return host if host and inner in self.offloadable(rep) else 0

    def root(self, value: SSAValue) -> Root:
        if value in self._root:
            return self._root[value]
        key = self._resolve(value)
        self._root[value] = key
        return key

    def _resolve(self, value: SSAValue) -> Root:
        src = tensors.alias_source(value)
        if src is not None:
            return self.root(src)
        if isinstance(value, BlockArgument):
            return ("arg", value)
        assert isinstance(value, OpResult)
        op = value.op
        if isinstance(op, (sim.ParamOp, sim.InputOp)) or tensors.is_model_state_buffer(op):
            return STATIC
        if isinstance(op, coll.CollectiveOp) and op.operands and self.is_parameter(op.operands[0]):
            # a gathered (or re-laid-out) weight: a communication buffer
            return STATIC
        if isinstance(op, sim.PhaseOp):
            term = op.body.block.last_op
            assert isinstance(term, sim.YieldOp)
            return self.root(term.values[value.index])
        if isinstance(op, sim.RepeatOp):
            n_iter = len(op.iter_init)
            if value.index < n_iter:
                return value
            term = op.body.block.last_op
            assert isinstance(term, sim.YieldOp)
            inner = self.root(term.values[value.index])
            if inner == STATIC:
                return STATIC
            if isinstance(inner, tuple) and inner[0] == "arg":
                arg = inner[1]
                if arg.owner is op.body.block and arg.index >= n_iter:
                    # a view of a sliced operand (a weight's slice): its storage
                    return self.root(op.slices[arg.index - n_iter])
            return ("stacked", op, inner)
        return value

    def is_parameter(self, value: SSAValue) -> bool:
        """Whether `value` is a parameter, a view of one, or a repeat body's slice
        of one."""
        key = self.root(value)
        if key == STATIC:
            return True
        if isinstance(key, tuple) and key[0] == "arg":
            arg = key[1]
            rep = arg.owner.parent_op()
            if isinstance(rep, sim.RepeatOp) and arg.index >= len(rep.iter_init):
                return self.is_parameter(rep.slices[arg.index - len(rep.iter_init)])
        return False

    def size(self, key: Root) -> int:
        """Bytes of a root. Block arguments of a repeat body are accounted by the
        op that holds the repeat: 0 inside."""
        if key == STATIC:
            return 0
        if isinstance(key, tuple):
            if key[0] == "arg":
                return 0
            if key[0] == "stacked":
                _, rep, inner = key
                # the layers offload-activations keeps on the host hold none here
                return (rep.trip_count - self.layers_on_host(rep, inner)) * self.iteration_size(inner)
        assert isinstance(key, SSAValue)
        extra = 0
        if isinstance(key, OpResult) and key.index == 0:
            extra = tensors.hidden_saved_bytes(key.op) + tensors.flash_saved_bytes(key.op)
        return tensors.value_bytes(key) + extra

    def iteration_size(self, inner: Root) -> int:
        """Bytes one iteration keeps for a stacked output rooted at `inner`: a
        carried block argument (the layer input) is kept whole."""
        if isinstance(inner, tuple) and inner[0] == "arg":
            return tensors.value_bytes(inner[1])
        if inner in self.fp8_saved:
            assert isinstance(inner, SSAValue)
            return sim.numel(inner.type)  # pyright: ignore[reportArgumentType]
        return self.size(inner)


def on_host(rep: sim.RepeatOp) -> int:
    """Layers of a forward repeat whose saved activations live on the host
    (`offload-activations`); a reverse repeat's stacked outputs are gradients."""
    return 0 if rep.reverse else sim.offloaded_layers(rep)


_TE_NORMS = (sim.GenericCallee.FUSED_RMS_NORM, sim.GenericCallee.FUSED_LAYER_NORM,
             sim.GenericCallee.LAYER_NORM_STATS)


def te_offloaded_roots(block: Block, roots: Roots) -> frozenset[Root]:
    """The roots of a forward layer body that Transformer Engine's CPU offload
    handler moves to the host. It moves only the saved tensors tagged
    `activation_offloading` (`get_cpu_offload_context`:
    `tensor_need_offloading_checker_activations`), and the modules tag what they
    save as they save it, in the forward: a TE linear's input (a GEMM's
    activation operand here, fp8 cast or not), a TE norm's input and its
    statistics and output (`sim.norm`, the fused norms, LayerNorm's statistics),
    DotProductAttention's q, k, v, output and softmax statistics (a
    `sim.attention`'s operands and results, a context-parallel ring's merge), and
    Megatron's fused SwiGLU input (`bias_swiglu_impl`, a `fused.swiglu`'s operand).
    Everything else a layer saves stays on the GPU: the input of the fused bias-GeLU
    (`bias_gelu_impl`, `fused.bias_act`) or of an unfused activation, dropout masks,
    MoE routing probabilities and indices. A parameter is no activation."""
    tagged: set[Root] = set()

    def tag(values: Iterable[SSAValue]) -> None:
        for v in values:
            if not roots.is_parameter(v):
                tagged.add(roots.root(v))

    for op in block.walk():
        if isinstance(op, sim.MatmulOp):
            tag(op.operands)
        elif isinstance(op, (sim.NormOp, sim.AttentionOp)) or sim.is_generic(
                op, *_TE_NORMS, sim.GenericCallee.RING_MERGE):
            tag(op.operands)
            tag(op.results)
        elif sim.is_generic(op, sim.GenericCallee.FUSED_SWIGLU):
            tag(op.operands)
    tagged.discard(STATIC)
    return frozenset(tagged)


def offloaded_layer_bytes(rep: sim.RepeatOp, roots: Roots) -> int:
    """What one offloaded layer of a marked repeat sends to the host: the bytes a
    copy to or from the host moves, and what the GPU holds of it while that copy
    runs (what it saves that `te_offloaded_roots` names; the rest of what it saves
    stays on the GPU). For a reverse repeat, what it slices of its forward twin's
    stacked outputs."""
    if not rep.reverse:
        offloadable = roots.offloadable(rep)
        return sum(roots.iteration_size(k) for k in stacked_roots(rep, roots) if k in offloadable)
    seen: set[Root] = set()
    total = 0
    for sliced in rep.slices:
        key = roots.root(sliced)
        if (isinstance(key, tuple) and key[0] == "stacked" and key not in seen
                and roots.layers_on_host(key[1], key[2])):
            seen.add(key)
            total += roots.iteration_size(key[2])
    return total


def host_bytes(block: Block, roots: Roots) -> int:
    """Saved activation bytes one micro-batch keeps on the host: each marked
    forward repeat's offloaded layers."""
    fwd = sim.phases_of(block).get(sim.PhaseKind.FORWARD)
    if fwd is None:
        return 0
    return sum(on_host(rep) * offloaded_layer_bytes(rep, roots)
               for rep in fwd.body.block.ops if isinstance(rep, sim.RepeatOp))


@dataclass
class BlockLiveness:
    peak: int
    """Most bytes live at once, beyond what was live on entry to the block."""
    end: int
    """Bytes live after the terminator, beyond the entry."""
    kept_per_iteration: int = 0
    """For a repeat body: bytes each iteration keeps in its stacked outputs."""
    host_per_iteration: int = 0
    """Of those, the bytes an offloaded iteration sends to the host instead."""


@dataclass
class PhaseMemory:
    """One micro-batch of one stage class: what its forward saves, and the live
    peaks while its forward and its backward run."""

    saved: int
    forward_peak: int
    backward_peak: int
    saved_values: list[tuple[str, int]] = field(default_factory=list)
    weight_grad_residual: int = 0
    """Under a split backward (zb-h1): what stays live from a micro-batch's B item
    until its W item (the saved tensors and input-gradient intermediates the
    weight gradients read)."""
    host: int = 0
    """Saved bytes kept on the host (`offload-activations`), in none of the above."""


def uses_by_position(block: Block, roots: Roots) -> dict[Root, int]:
    """Root -> index of the last op of `block` that reads it (a read inside a
    nested region counts at the op that holds the region)."""
    last: dict[Root, int] = {}
    for i, op in enumerate(block.ops):
        for nested in op.walk():
            for operand in nested.operands:
                last[roots.root(operand)] = i
    return last


def analyze_block(
    block: Block,
    roots: Roots,
    *,
    kept: set[Root],
    excluded: set[Root],
    entry: dict[Root, int] | None = None,
    backward: bool = False,
) -> BlockLiveness:
    """Walk `block` once. `entry`: roots live on entry (with bytes), freed at their
    last use here; `kept`: roots never freed in this block; `excluded`: roots not
    counted (gradient buffers)."""
    live: dict[Root, int] = dict(entry or {})
    base = sum(live.values())
    current = base
    peak = base
    last = uses_by_position(block, roots)
    # the roots whose last read is each op (bytes are integers: the order they
    # are freed in is any)
    last_read: dict[int, list[Root]] = {}
    for key, at in last.items():
        last_read.setdefault(at, []).append(key)
    in_flight = _offload_in_flight(block, roots)
    for i, op in enumerate(block.ops):
        # results are written while the op runs: they count at its peak, except
        # a repeat's, whose body peak already holds what its iterations kept
        during = current + tensors.transient_bytes(op)
        counts_results = True
        if isinstance(op, sim.RepeatOp):
            counts_results = False
            if op.trip_count > 0:
                body = analyze_repeat(op, roots, backward=backward)
                earlier = op.trip_count - 1
                # the earlier layers' saved bytes, but what the offloaded ones sent
                on_gpu = earlier * body.kept_per_iteration - min(on_host(op), earlier) * body.host_per_iteration
                during = current + on_gpu + body.peak + in_flight.get(op, 0)
        allocated = 0
        for r in op.results:
            key = roots.root(r)
            if key in live or key in excluded or key == STATIC:
                continue
            size = roots.size(key)
            live[key] = size
            allocated += size
        current += allocated
        peak = max(peak, during + (allocated if counts_results else 0), current)
        for r in op.results:
            key = roots.root(r)
            if key in live and key not in kept and last.get(key, i) <= i:
                current -= live.pop(key)
        for key in last_read.get(i, ()):
            if key in live and key not in kept:
                current -= live.pop(key)
    return BlockLiveness(peak - base, current - base)


def _offload_in_flight(block: Block, roots: Roots) -> dict[Operation, int]:
    """Offloaded bytes a layer repeat of `block` has on the GPU while it runs,
    beyond what its non-offloaded layers keep. Transformer Engine's
    AsyncDoubleBufferGroupOffloadHandler frees offloaded layer k once its copy is
    waited for, after the forward of layer `layer_window_map[k]`, the last one
    after the block's last layer, and copies layer k back before the backward of
    that same layer: the forward's last layer runs beside the chunk's last
    offloaded layer (its copy still in flight), and the backward's first layer
    beside that layer reloaded. Earlier layers hold fewer (the count of live
    layers only grows over the forward and shrinks over the backward), so a
    repeat running from the first marked one to the end of the forward, or from
    the backward's start to the last marked one, holds one offloaded layer."""
    reps = [op for op in block.ops if isinstance(op, sim.RepeatOp) and op.trip_count > 0]
    marked = [op for op in reps if sim.offloaded_layers(op)]
    if not marked:
        return {}
    if marked[0].reverse:
        last = marked[0]  # the backward meets the chunk's last offloaded layer first
        size = offloaded_layer_bytes(last, roots)
        return {op: size for op in reps[: reps.index(last) + 1]}
    extra: dict[Operation, int] = {}
    size = 0
    for op in reps[reps.index(marked[0]):]:
        if sim.offloaded_layers(op):
            size = offloaded_layer_bytes(op, roots)
        extra[op] = size
    return extra


def stacked_roots(rep: sim.RepeatOp, roots: Roots) -> set[Root]:
    """The storage roots a repeat's body stacks per iteration (its results past
    the carried values), without what it only passes through of its own slices."""
    block = rep.body.block
    term = block.last_op
    assert isinstance(term, sim.YieldOp)
    n_iter = len(rep.iter_init)
    stacked = {roots.root(v) for v in term.values[n_iter:]}
    stacked.discard(STATIC)
    return {k for k in stacked if not is_slice_arg(k, block, n_iter)}


def analyze_repeat(rep: sim.RepeatOp, roots: Roots, *, backward: bool) -> BlockLiveness:
    block = rep.body.block
    kept = stacked_roots(rep, roots)
    if backward:
        # a backward layer's stacked outputs are its weight gradients
        result = analyze_block(block, roots, kept=set(), excluded=kept, backward=True)
        return result
    result = analyze_block(block, roots, kept=kept, excluded=set())
    result.kept_per_iteration = sum(roots.iteration_size(k) for k in kept)
    if on_host(rep):
        result.host_per_iteration = offloaded_layer_bytes(rep, roots)
    return result


def is_slice_arg(key: Root, block: Block, n_iter: int) -> bool:
    return (
        isinstance(key, tuple)
        and key[0] == "arg"
        and key[1].owner is block
        and key[1].index >= n_iter
    )


def fp8_saved_gemm_inputs(block: Block, roots: Roots) -> frozenset[Root]:
    """The values a forward layer saves that the backward layer reads only as
    GEMM operands (through views): under Transformer Engine's fp8 training each
    linear saves the fp8 cast of its input for its weight-gradient GEMM
    (`_Linear.forward`: `saved_inputmat` is the fp8 tensor), so such a value is
    kept at one byte an element. A value some other backward op reads (the
    attention output its backward needs, SwiGLU's inputs) stays 16-bit; so does an
    attention's output, which flash attention's backward reads (TE's
    `DotProductAttention` saves it) though the IR's backward takes only the
    row statistics (under context parallelism the ring's merge, shard-context's
    `ring_attention.merge`, is that output). Keys are the forward layer body's roots, as
    `Roots.iteration_size` sees them."""
    phases = sim.phases_of(block)
    fwd, bwd = phases.get(sim.PhaseKind.FORWARD), phases.get(sim.PhaseKind.BACKWARD)
    if fwd is None or bwd is None:
        return frozenset()
    f_term = fwd.body.block.last_op
    assert isinstance(f_term, sim.YieldOp)
    # a forward phase result -> the root of what the layer yields for it
    stacked: dict[SSAValue, Root] = {}
    for result, value in zip(fwd.results, f_term.values):
        key = roots.root(value)
        if isinstance(key, tuple) and key[0] == "stacked" and isinstance(key[2], SSAValue):
            stacked[result] = key[2]
    fp8: set[Root] = set()
    for rep in bwd.body.block.ops:
        if not isinstance(rep, sim.RepeatOp):
            continue
        n_iter = len(rep.iter_init)
        for i, sliced in enumerate(rep.slices):
            inner = stacked.get(sliced)
            if inner is None or isinstance(inner, OpResult) and (
                    isinstance(inner.op, sim.AttentionOp) or sim.is_generic(inner.op, sim.GenericCallee.RING_MERGE)):
                continue  # an attention's output (a ring's merged one too) stays 16-bit
            if _read_only_by_gemms(rep.body.block.args[n_iter + i]):
                fp8.add(inner)
    return frozenset(fp8)


def _read_only_by_gemms(value: SSAValue) -> bool:
    readers = [use.operation for use in value.uses]
    if not readers:
        return False
    for op in readers:
        if tensors.is_alias_op(op):
            if not _read_only_by_gemms(op.results[0]):
                return False
        elif not isinstance(op, sim.MatmulOp):
            return False
    return True


def layer_saved_values(rep: sim.RepeatOp, roots: Roots | None = None) -> list[tuple[str, int]]:
    """What one iteration of a forward layer repeat saves for its backward: one
    (description, bytes) per storage root, views folded into what they view."""
    roots = roots or Roots()
    block = rep.body.block
    term = block.last_op
    assert isinstance(term, sim.YieldOp)
    n_iter = len(rep.iter_init)
    seen: dict[Root, str] = {}
    for v in term.values[n_iter:]:
        key = roots.root(v)
        if key == STATIC or is_slice_arg(key, block, n_iter) or key in seen:
            continue
        seen[key] = _describe(key)
    return [(desc, roots.iteration_size(key)) for key, desc in seen.items()]


def _describe(key: Root) -> str:
    if isinstance(key, tuple) and key[0] == "stacked":
        return f"{_describe(key[2])}, x{key[1].trip_count} layers"
    value = key[1] if isinstance(key, tuple) else key
    assert isinstance(value, SSAValue)
    if isinstance(value, BlockArgument):
        return f"layer input {value.type}"
    op = value.owner
    assert isinstance(op, Operation)
    label = op.name
    if isinstance(op, (sim.ElementwiseOp, sim.NormOp, sim.ReduceOp)):
        label += f" {op.kind.data}"
    elif isinstance(op, sim.GenericOp):
        label += f" {op.callee.data}"
    hidden = tensors.hidden_saved_bytes(op) if value is op.results[0] else 0
    suffix = f" (+{hidden} B of softmax probabilities)" if hidden else ""
    return f"{label} {value.type}{suffix}"


def saved_roots(fwd: sim.PhaseOp, bwd: sim.PhaseOp | None, roots: Roots,
                keep_stage_outputs: bool = False) -> list[Root]:
    """The roots the forward phase `fwd` keeps for the backward `bwd` (None: a
    forward-only step keeps every result), in yield order, each once
    (`phase_memory` and the allocator's sequence, `allocations`, both read it)."""
    term = fwd.body.block.last_op
    assert isinstance(term, sim.YieldOp)
    saved: dict[Root, None] = {}
    for v, result in zip(term.values, fwd.results, strict=True):
        key = roots.root(v)
        # a training forward's result nothing reads (a pipeline stage's output,
        # sent on to the next stage) is not kept for the backward: Megatron-LM
        # frees its data once sent (`deallocate_output_tensor`, on by
        # `core_transformer_config_from_args`)
        if key != STATIC and (bwd is None or result.uses or keep_stage_outputs):
            saved[key] = None
    return list(saved)


def phase_memory(block: Block, roots: Roots | None = None, *, split_backward: bool = False,
                 keep_stage_outputs: bool = False) -> PhaseMemory:
    """Saved bytes and peaks of one micro-batch of the step in `block` (a module
    body or a `sim.stage` body). No forward phase: nothing is saved. With
    `split_backward` (zb-h1), also what the weight-gradient half reads. With
    `keep_stage_outputs`, a training forward's results nothing reads (the stage's
    output, sent on) are kept to the backward as well (PyTorch's pipelining holds
    them in `fwd_cache` until `backward_one_chunk` pops them)."""
    roots = roots or Roots()
    phases = sim.phases_of(block)
    fwd = phases.get(sim.PhaseKind.FORWARD) or phases.get(sim.PhaseKind.PREFILL) or phases.get(sim.PhaseKind.DECODE)
    bwd = phases.get(sim.PhaseKind.BACKWARD)
    if fwd is None:
        return PhaseMemory(0, 0, 0)
    saved_keys = {key: roots.size(key) for key in saved_roots(fwd, bwd, roots, keep_stage_outputs)}
    f_live = analyze_block(fwd.body.block, roots, kept=set(saved_keys), excluded=set())
    saved = sum(saved_keys.values())
    backward_peak = 0
    if bwd is not None:
        b_term = bwd.body.block.last_op
        assert isinstance(b_term, sim.YieldOp)
        grads = {roots.root(v) for v in b_term.values}
        read = set(uses_by_position(bwd.body.block, roots))
        entry = {k: s for k, s in saved_keys.items() if k in read}
        b_live = analyze_block(
            bwd.body.block, roots, kept=set(), excluded=grads, entry=entry, backward=True
        )
        backward_peak = sum(entry.values()) + b_live.peak
    described = [(_describe(k), s) for k, s in saved_keys.items() if s]
    residual = weight_grad_residual(bwd, roots) if split_backward and bwd is not None else 0
    return PhaseMemory(saved, f_live.peak, backward_peak, described, residual, host_bytes(block, roots))


def weight_grad_residual(bwd: sim.PhaseOp, roots: Roots) -> int:
    """Bytes the W half of `bwd` reads that its B half left: saved activations
    (whole stacked roots) and, per layer, the input-gradient intermediates (the
    gradient of each weight GEMM's output)."""
    w_ops = weight_gradient_ops(bwd)
    kept: dict[Root, int] = {}

    def keep(value: SSAValue, repeat: sim.RepeatOp | None) -> None:
        owner = value.owner
        if (isinstance(owner, Operation) and owner in w_ops) or roots.is_parameter(value):
            return
        key = roots.root(value)
        if isinstance(key, tuple) and key[0] == "arg":
            value = key[1]  # a view of a block argument reads the argument
        if isinstance(value, BlockArgument) and repeat is not None and value.owner is repeat.body.block:
            n_iter = len(repeat.iter_init)
            if value.index >= n_iter:
                # a slice of a saved stacked activation: the whole stack stays
                key = roots.root(repeat.slices[value.index - n_iter])
                kept.setdefault(key, roots.size(key))
                return
            kept.setdefault(("carried", value), repeat.trip_count * tensors.value_bytes(value))
            return
        if key == STATIC or isinstance(key, tuple) and key[0] == "arg":
            return
        per_layer = repeat.trip_count if repeat is not None and isinstance(key, SSAValue) else 1
        kept.setdefault(key, per_layer * roots.size(key) if isinstance(key, SSAValue) else roots.size(key))

    for op in bwd.body.block.ops:
        if isinstance(op, sim.RepeatOp):
            for inner in op.body.block.ops:
                if inner in w_ops:
                    for v in inner.operands:
                        keep(v, op)
        elif op in w_ops:
            for v in op.operands:
                keep(v, None)
    return sum(kept.values())
