"""The allocations and frees one GPU of a pipeline stage makes over training
steps, in program order, for the caching allocator's replay
(`charon_ir.memory.allocator`).

    stage_events(chunks, schedule, pp, microbatches, stage, steps=2) -> list[Event]

The sequence follows memory-analysis's own rules (`liveness`): a value's
storage root is allocated by the op that defines it and freed after its last
reader in the same block; what a forward phase yields for its backward is kept
until the backward's last reader of it; the weight gradients a backward yields
live in the gradient buffers; parameters, step inputs and data-parallel buffers
are not allocated here. It goes further than the analysis where the order
matters to the allocator:

- a `sim.repeat` runs its body `count` times (the events are emitted per
  iteration; the IR is not unrolled): an iteration's values are its own
  allocations, what it yields as a stacked output stays allocated (one block per
  layer, as autograd saves per layer), and a backward repeat's iteration frees
  the saved slice it read once it has run (autograd frees a node's saved tensors
  after its backward) when nothing after the repeat reads the stack;
- storage is reference-counted, as PyTorch's is: a value carried into the next
  iteration or kept as a stacked output is one block, freed when its last holder
  lets go;
- items run in the stage's schedule order (`schedules.stage_order`), each
  micro-batch's forward keeping its own saved blocks until its backward (under a
  split backward, zb-h1, what the W item reads is one block from B to W);
- the model states are allocated once, one block per tensor the framework
  allocates (`states.state_tensors`): the parameters, gradient buffers and
  fp32 master copies before the first step, the optimizer's moments (which
  torch.optim and FusedAdam create lazily) after the first step's backward,
  at its optimizer step; the step runs `steps` times from the cache the
  previous one left: the steady state a training run's peak reflects;
- a layer's parameters gathered by ZeRO-3 (FSDP) are one block on the
  all-gather stream (FSDP2 all-gathers on its own streams), the next layer's
  gathered (prefetched) before the running layer's is freed: two layers at once,
  as the analysis counts them;
- the largest other communication buffer the analysis counts is one block held
  through the steps;
- under `offload-activations` an offloaded layer's saved blocks leave the GPU
  once the copy of it is waited for (after the forward of its Transformer
  Engine window layer) and are allocated again before the backward of that
  layer (`sim.CpuOffloadAttr.windows`); a window past the repeat's layers is
  taken at the repeat's end (forward) or start (backward).

Not replayed: the optimizer phase's temporaries (the analysis does not count
them either), NCCL's and cuBLAS's own buffers, and the CUDA context. FSDP2's
gradients are each layer's reduce-scatter outputs, made in the first backward
and freed at `zero_grad`; they are modelled as persistent blocks allocated
before the first step (as Megatron-Core's gradient buffer is), and each
step's reduce-scatter output is not replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.ir import Block, SSAValue

from charon_ir.dialects import sim
from charon_ir.memory import tensors
from charon_ir.memory.allocator import ALLOC, FREE, Event
from charon_ir.memory.liveness import (STATIC, Root, Roots, is_slice_arg, saved_roots, uses_by_position,
                                       weight_grad_residual)
from charon_ir.parallel.schedules import SPLIT_BACKWARD, stage_order

COMPUTE_STREAM = 0
ALL_GATHER_STREAM = 1


class _OnHost:
    """A layer's saved blocks copied to the host (`offload-activations`): the
    bytes of each block freed on the GPU, and the blocks the reload made."""

    def __init__(self, sizes: dict[int, int]) -> None:
        self.sizes = sizes
        self.reloaded: dict[int, int] = {}


Storage = list[tuple[int, ...] | tuple[_OnHost, tuple[int, ...]]]
"""A root's allocations: one tuple of keys, or one per iteration of a stacked
root (a tuple is empty where an iteration allocated nothing); an offloaded
layer's entry is (its _OnHost, the keys it had on the GPU)."""


@dataclass
class ChunkProgram:
    """What the sequence needs of one virtual stage's block (a `StageClass`)."""

    block: Block
    roots: Roots
    gathered_layer: dict[sim.RepeatOp, int] = field(default_factory=dict)
    """Bytes of one layer's parameters gathered on the all-gather stream, per
    layer repeat (ZeRO-3 without its parameters kept gathered)."""


class _Sequence:
    """Events with reference-counted keys."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._refs: dict[int, int] = {}
        self._sizes: dict[int, int] = {}
        self._next = 0

    def alloc(self, nbytes: int, stream: int = COMPUTE_STREAM) -> tuple[int, ...]:
        if nbytes <= 0:
            return ()
        key = self._next
        self._next += 1
        self._refs[key] = 1
        self._sizes[key] = nbytes
        self.events.append((ALLOC, key, nbytes, stream))
        return (key,)

    def hold(self, storage: Storage) -> Storage:
        for keys in storage:
            if keys and isinstance(keys[0], _OnHost):
                continue
            for key in keys:
                self._refs[key] += 1
        return list(storage)

    def drop(self, storage: Storage) -> None:
        for keys in storage:
            if keys and isinstance(keys[0], _OnHost):
                continue
            for key in keys:
                self._refs[key] -= 1
                if self._refs[key] == 0:
                    del self._refs[key]
                    del self._sizes[key]
                    self.events.append((FREE, key, 0, 0))

    def offload(self, layer: list[tuple[int, ...]]) -> _OnHost:
        """A layer's saved entries copied to the host: the stack's references on
        the GPU blocks are let go (a block another holder keeps stays)."""
        host = _OnHost({k: self._sizes[k] for keys in layer for k in keys})
        self.drop(list(layer))
        return host

    def reload(self, host: _OnHost) -> None:
        """The copy back before the layer's backward: one block per block
        offloaded, held by the host record until the layer's backward takes it."""
        for key, nbytes in host.sizes.items():
            if key not in host.reloaded:
                host.reloaded[key] = self.alloc(nbytes)[0]


@dataclass(frozen=True)
class _OpStep:
    scratch: int
    allocs: tuple[tuple[int, int], ...]
    """(root, bytes) of the results that own their storage."""
    frees: tuple[int, ...]
    """The roots whose last reader (or whose unread definition) this op is."""


@dataclass(frozen=True)
class _YieldStep:
    frees: tuple[int, ...]


@dataclass(frozen=True)
class _RepeatStep:
    op: sim.RepeatOp
    carried: tuple[tuple[int, bool], ...]
    """Per `iter_init` operand: its root, and whether the repeat takes the
    outer's reference (nothing after the repeat reads it)."""
    sliced: tuple[tuple[int, bool], ...]
    body: tuple[_OpStep | _YieldStep | _RepeatStep, ...]
    arg_keys: tuple[int, ...]
    yield_carried: tuple[int, ...]
    yield_stacked: tuple[tuple[str, int, int], ...]
    """Per stacked output: ("none" | "cast" | "keep", root, bytes of a cast)."""
    results: tuple[int | None, ...]
    """Per result: its root, None where the result is not kept (excluded)."""
    layer_bytes: int
    frees: tuple[int, ...]
    offload_after: dict[int, list[int]]
    """A forward repeat under `offload-activations`: iteration -> the layers whose
    saved blocks leave the GPU once it has run (Transformer Engine's
    `layer_window_map`: the copy of layer i is waited for after the forward of
    layer window(i)). A reverse repeat: iteration -> the layers copied back before
    it runs (before the backward of layer window(i)). Windows past the repeat's
    layers are taken at its end (forward) or start (backward)."""


_Step = _OpStep | _YieldStep | _RepeatStep


class _Walker:
    """Emits a chunk's events. Each block is compiled once into steps (roots,
    sizes and last readers resolved), which every iteration and micro-batch
    replays."""

    def __init__(self, seq: _Sequence, chunk: ChunkProgram) -> None:
        self.seq = seq
        self.roots = chunk.roots
        self.gathered_layer = chunk.gathered_layer
        self._plans: dict[tuple[Block, bool], tuple[_Step, ...]] = {}
        self._ids: dict[Root, int] = {}

    def id(self, key: Root) -> int:
        """A small integer for a root: the live sets are keyed by these (hashing
        an SSA value is slow)."""
        return self._ids.setdefault(key, len(self._ids))

    def plan(self, block: Block, excluded: frozenset[Root], backward: bool) -> tuple[_Step, ...]:
        cached = self._plans.get((block, backward))
        if cached is not None:
            return cached
        roots = self.roots
        last = uses_by_position(block, roots)
        last_read: dict[int, list[Root]] = {}
        for key, at in last.items():
            last_read.setdefault(at, []).append(key)
        steps: list[_Step] = []
        for i, op in enumerate(block.ops):
            frees = [self.id(roots.root(r)) for r in op.results if last.get(roots.root(r), i) <= i]
            frees += [k for k in map(self.id, last_read.get(i, ())) if k not in frees]
            if isinstance(op, sim.RepeatOp) and op.trip_count > 0:
                steps.append(self._repeat_step(op, i, last, excluded, backward, tuple(frees)))
            elif isinstance(op, sim.YieldOp):
                steps.append(_YieldStep(tuple(frees)))
            else:
                allocs = []
                for r in op.results:
                    key = roots.root(r)
                    if key is r and key not in excluded:
                        allocs.append((self.id(key), roots.size(key)))
                steps.append(_OpStep(tensors.transient_bytes(op), tuple(allocs), tuple(frees)))
        plan = tuple(steps)
        self._plans[(block, backward)] = plan
        return plan

    def _repeat_step(self, op: sim.RepeatOp, at: int, last: dict[Root, int], excluded: frozenset[Root],
                     backward: bool, frees: tuple[int, ...]) -> _RepeatStep:
        roots = self.roots
        body = op.body.block
        term = body.last_op
        assert isinstance(term, sim.YieldOp)
        n_iter = len(op.iter_init)
        operand_keys = [roots.root(v) for v in op.operands]

        def taken(key: Root) -> tuple[int, bool]:
            return self.id(key), last.get(key) == at and operand_keys.count(key) == 1

        stacked_keys = {roots.root(v) for v in term.values[n_iter:]} - {STATIC}
        # a backward layer's stacked outputs are its weight gradients
        body_excluded = frozenset(
            k for k in stacked_keys if not is_slice_arg(k, body, n_iter)) if backward else frozenset()
        yield_stacked = []
        for v in term.values[n_iter:]:
            key = roots.root(v)
            if key == STATIC or key in body_excluded or is_slice_arg(key, body, n_iter):
                yield_stacked.append(("none", self.id(key), 0))
            elif key in roots.fp8_saved:  # saved as its fp8 cast, a block of its own
                yield_stacked.append(("cast", self.id(key), roots.iteration_size(key)))
            else:
                yield_stacked.append(("keep", self.id(key), 0))
        results: list[int | None] = []
        for r in op.results:
            key = roots.root(r)
            results.append(None if key in excluded or key == STATIC else self.id(key))
        return _RepeatStep(
            op,
            tuple(taken(roots.root(v)) for v in op.iter_init),
            tuple(taken(roots.root(v)) for v in op.slices),
            self.plan(body, body_excluded, backward),
            tuple(self.id(("arg", a)) for a in body.args),
            tuple(self.id(roots.root(v)) for v in term.values[:n_iter]),
            tuple(yield_stacked),
            tuple(results),
            self.gathered_layer.get(op, 0),
            frees,
            _offload_schedule(op),
        )

    def block(self, block: Block, live: dict[int, Storage], *, excluded: frozenset[Root], backward: bool,
              on_yield: Callable[[dict[int, Storage]], None] | None = None) -> None:
        """Walk `block`: `live` holds the roots live on entry (its references are
        the walk's to drop), and what is left in it at the end."""
        self.run(self.plan(block, excluded, backward), live, on_yield)

    def run(self, steps: tuple[_Step, ...], live: dict[int, Storage],
            on_yield: Callable[[dict[int, Storage]], None] | None = None) -> None:
        seq = self.seq
        for step in steps:
            if isinstance(step, _OpStep):
                scratch = seq.alloc(step.scratch)
                for key, nbytes in step.allocs:
                    live[key] = [seq.alloc(nbytes)]
                if scratch:
                    seq.drop([scratch])
            elif isinstance(step, _RepeatStep):
                self.repeat(step, live)
            elif on_yield is not None:
                on_yield(live)
            for key in step.frees:
                storage = live.pop(key, None)
                if storage is not None:
                    seq.drop(storage)

    def repeat(self, step: _RepeatStep, live: dict[int, Storage]) -> None:
        seq = self.seq
        trip, n_iter = step.op.trip_count, len(step.carried)

        def take(key: int, taken: bool) -> tuple[Storage, bool]:
            storage = live.get(key)
            if storage is None:
                return [], False
            return (live.pop(key), True) if taken else (storage, False)

        carry: list[Storage] = []
        for key, can_take in step.carried:
            storage, taken = take(key, can_take)
            carry.append(storage if taken else seq.hold(storage))
        slices: list[tuple[Storage, bool]] = []
        for key, can_take in step.sliced:
            storage, taken = take(key, can_take)
            if len(storage) != trip:  # not a stack of per-layer blocks
                if taken:
                    seq.drop(storage)
                storage, taken = [], False
            slices.append((storage, taken))
        stacked: list[Storage] = [[] for _ in step.yield_stacked]
        gathered = seq.alloc(step.layer_bytes, ALL_GATHER_STREAM)
        reverse = step.op.reverse is not None
        for k in range(trip):
            index = trip - 1 - k if reverse else k
            if reverse:
                for layer in step.offload_after.get(k, ()):
                    for storage, _ in slices:
                        entry = storage[layer] if storage else ()
                        if entry and isinstance(entry[0], _OnHost):
                            seq.reload(entry[0])
            prefetched = seq.alloc(step.layer_bytes, ALL_GATHER_STREAM) if k + 1 < trip else ()
            inner: dict[int, Storage] = dict(zip(step.arg_keys[:n_iter], carry))
            for arg_key, (storage, taken) in zip(step.arg_keys[n_iter:], slices, strict=True):
                if storage:
                    entry = storage[index]
                    if entry and isinstance(entry[0], _OnHost):
                        # the reloaded blocks: the host record's references pass to the layer
                        host, keys = entry
                        inner[arg_key] = [tuple(host.reloaded.pop(key) for key in keys if key in host.reloaded)]
                        continue
                    piece = [entry]
                    inner[arg_key] = piece if taken else seq.hold(piece)
            next_carry: list[Storage] = []

            def at_yield(values: dict[int, Storage], next_carry: list[Storage] = next_carry) -> None:
                for key in step.yield_carried:
                    next_carry.append(seq.hold(values.get(key, [])))
                for j, (how, key, nbytes) in enumerate(step.yield_stacked):
                    if how == "none":
                        stacked[j].append(())
                    elif how == "cast":
                        stacked[j].append(seq.alloc(nbytes))
                    else:
                        stacked[j].append(tuple(k for keys in seq.hold(values.get(key, [])) for k in keys))

            self.run(step.body, inner, at_yield)
            for storage in inner.values():
                seq.drop(storage)
            carry = next_carry
            seq.drop([gathered])
            gathered = prefetched
            if not reverse:
                for layer in step.offload_after.get(k, ()):
                    self._offload(stacked, step, layer)
        for storage, _ in slices:  # a reload no iteration took (none in a well-formed step)
            for entry in storage:
                if entry and isinstance(entry[0], _OnHost):
                    seq.drop([tuple(entry[0].reloaded.values())])
                    entry[0].reloaded.clear()
        for j, key in enumerate(step.results):
            storage = carry[j] if j < n_iter else stacked[j - n_iter]
            if key is None or key in live:
                seq.drop(storage)
            else:
                live[key] = storage

    def _offload(self, stacked: list[Storage], step: _RepeatStep, layer: int) -> None:
        """Layer `layer`'s saved blocks that Transformer Engine's handler moves
        (`Roots.offloadable`) copied to the host: the GPU lets them go."""
        moved = {self.id(key) for key in self.roots.offloadable(step.op)}
        kept = [j for j, (how, key, _) in enumerate(step.yield_stacked) if how != "none" and key in moved]
        entries = [stacked[j][layer] for j in kept]
        host = self.seq.offload([e for e in entries if not (e and isinstance(e[0], _OnHost))])
        for j, entry in zip(kept, entries, strict=True):
            stacked[j][layer] = (host, entry)


@dataclass(frozen=True)
class _Phases:
    """What a chunk's micro-batch runs, resolved once: its forward (the roots its
    yield keeps for the backward) and backward (the gradients it yields, the
    roots it reads)."""

    forward: Block | None
    saved: tuple[int, ...]
    backward: Block | None
    grads: frozenset[Root]
    read: frozenset[int]

    @staticmethod
    def of(block: Block, walker: _Walker, keep_stage_outputs: bool) -> _Phases:
        roots = walker.roots
        phases = sim.phases_of(block)
        fwd = phases.get(sim.PhaseKind.FORWARD) or phases.get(sim.PhaseKind.PREFILL) or phases.get(
            sim.PhaseKind.DECODE)
        bwd = phases.get(sim.PhaseKind.BACKWARD)
        saved = [walker.id(key) for key in saved_roots(fwd, bwd, roots, keep_stage_outputs)] if fwd else []
        grads: frozenset[Root] = frozenset()
        read: frozenset[int] = frozenset()
        if bwd is not None:
            term = bwd.body.block.last_op
            assert isinstance(term, sim.YieldOp)
            grads = frozenset(roots.root(v) for v in term.values)
            read = frozenset(map(walker.id, uses_by_position(bwd.body.block, roots)))
        return _Phases(fwd.body.block if fwd else None, tuple(saved), bwd.body.block if bwd else None, grads, read)


def _offload_schedule(op: sim.RepeatOp) -> dict[int, list[int]]:
    """`_RepeatStep.offload_after` of a layer repeat (empty when unmarked)."""
    mark = sim.cpu_offload_of(op)
    if mark is None or mark.layers.data == 0:
        return {}
    trip, first = op.trip_count, mark.first.data
    windows = mark.windows()
    schedule: dict[int, list[int]] = {}
    for layer in range(min(mark.layers.data, trip)):
        window = min(windows[first + layer] - first, trip - 1)
        at = trip - 1 - window if op.reverse is not None else window
        schedule.setdefault(at, []).append(layer)
    return schedule


def _forward(walker: _Walker, phases: _Phases) -> dict[int, Storage]:
    """One micro-batch's forward phase; the storage it keeps for the backward."""
    if phases.forward is None:
        return {}
    seq = walker.seq
    saved: dict[int, Storage] = {}

    def at_yield(values: dict[int, Storage]) -> None:
        for key in phases.saved:
            saved[key] = seq.hold(values.get(key, []))

    live: dict[int, Storage] = {}
    walker.block(phases.forward, live, excluded=frozenset(), backward=False, on_yield=at_yield)
    for storage in live.values():
        seq.drop(storage)
    return saved


def _backward(walker: _Walker, phases: _Phases, saved: dict[int, Storage]) -> None:
    seq = walker.seq
    live = {}
    for key, storage in saved.items():
        if phases.backward is not None and key in phases.read:
            live[key] = storage
        else:
            seq.drop(storage)
    if phases.backward is None:
        return
    walker.block(phases.backward, live, excluded=phases.grads, backward=True)
    for storage in live.values():
        seq.drop(storage)


def _residual(walker: _Walker, block: Block) -> int:
    """Under a split backward: what a micro-batch's B item leaves for its W item
    (`liveness.weight_grad_residual`), one block."""
    bwd = sim.phases_of(block).get(sim.PhaseKind.BACKWARD)
    return weight_grad_residual(bwd, walker.roots) if bwd is not None else 0


@dataclass(frozen=True)
class _MicroBatch:
    """One micro-batch of a chunk, recorded once and replayed per micro-batch
    with its keys moved: the forward allocates keys [0, forward_keys), the
    backward reads those and allocates [forward_keys, forward_keys +
    backward_keys)."""

    forward: list[Event]
    forward_keys: int
    backward: list[Event]
    backward_keys: int
    unread: list[Event]
    """Frees of what the forward keeps, for a forward whose backward never runs."""

    @staticmethod
    def record(walker: _Walker, phases: _Phases) -> _MicroBatch:
        walker.seq = forward = _Sequence()
        saved = _forward(walker, phases)
        backward = _Sequence()
        backward._refs, backward._sizes = dict(forward._refs), dict(forward._sizes)
        backward._next = forward._next
        unread = _Sequence()
        unread._refs, unread._sizes = dict(forward._refs), dict(forward._sizes)
        walker.seq = backward
        _backward(walker, phases, {k: list(v) for k, v in saved.items()})
        walker.seq = unread
        for storage in saved.values():
            unread.drop(storage)
        return _MicroBatch(forward.events, forward._next, backward.events, backward._next - forward._next,
                           unread.events)


def _moved(events: list[Event], forward_base: int, forward_keys: int, base: int) -> list[Event]:
    """A recorded item's events with its keys moved: the forward's keys by
    `forward_base`, its own (from `forward_keys` up) to `base`."""
    shift = base - forward_keys
    return [(kind, key + (forward_base if key < forward_keys else shift), nbytes, stream)
            for kind, key, nbytes, stream in events]


def stage_events(chunks: Sequence[ChunkProgram], schedule: str, pp: int, microbatches: int, stage: int,
                 *, held: Sequence[tuple[int, int]] = (), at_first_step: Sequence[tuple[int, int]] = (),
                 steps: int = 2, keep_stage_outputs: bool = False) -> list[Event]:
    """The events of `steps` training steps of one physical stage, whose virtual
    stages are `chunks` (its chunk c is virtual stage c * pp + stage). `held`:
    (bytes, stream) of the blocks allocated once before the first step and held
    through (the model-state tensors, communication buffers); `at_first_step`:
    (bytes, stream) of the blocks the first step's optimizer step allocates once
    its backward items have run, held through (the optimizer's lazily created
    moments). A module with no
    pipeline is one chunk, gpipe, pp 1, one micro-batch. Each chunk's forward
    and backward are walked once (`_MicroBatch`); every micro-batch repeats
    them with keys of its own."""
    events: list[Event] = []
    for key, (nbytes, stream) in enumerate((n, s) for n, s in held if n > 0):
        events.append((ALLOC, key, nbytes, stream))
    next_key = len(events)
    recorded = []
    split = schedule in SPLIT_BACKWARD
    residual_bytes = []
    for chunk in chunks:
        walker = _Walker(_Sequence(), chunk)
        phases = _Phases.of(chunk.block, walker, keep_stage_outputs)
        recorded.append(_MicroBatch.record(walker, phases))
        residual_bytes.append(_residual(walker, chunk.block) if split else 0)
    order = stage_order(schedule, pp, len(chunks), microbatches, stage)
    for step in range(steps):
        pending: dict[tuple[int, int], int] = {}
        residual: dict[tuple[int, int], int] = {}
        for kind, chunk, mb in order:
            item = recorded[chunk]
            if kind == "F":
                pending[(chunk, mb)] = next_key
                events += _moved(item.forward, next_key, item.forward_keys, next_key + item.forward_keys)
                next_key += item.forward_keys
            elif kind[0] == "W":
                key = residual.pop((chunk, mb), None)
                if key is not None:
                    events.append((FREE, key, 0, 0))
            else:
                events += _moved(item.backward, pending.pop((chunk, mb)), item.forward_keys, next_key)
                next_key += item.backward_keys
                if split and residual_bytes[chunk] > 0:
                    residual[(chunk, mb)] = next_key
                    events.append((ALLOC, next_key, residual_bytes[chunk], COMPUTE_STREAM))
                    next_key += 1
        for (chunk, _), base in pending.items():
            item = recorded[chunk]
            events += _moved(item.unread, base, item.forward_keys, next_key)
        if step == 0:
            for nbytes, stream in at_first_step:
                if nbytes > 0:
                    events.append((ALLOC, next_key, nbytes, stream))
                    next_key += 1
    return events
