"""
Lower priced `sim` + `coll` IR to the `event` dialect.

Each compute op becomes an `event.compute` on the `@compute` stream; each
collective an `event.comm` on the lane of its grid axes (`@comm_tp`, `@comm_dp`,
...). SSA uses become event dependencies; a `sim.repeat` becomes an `event.loop`
(never unrolled); phases are flattened in order. The result is one
`event.program` for the module's rank class; the `sim` ops are consumed, the
grids and the target stay. Every compute op and collective must carry a `cost`
attribute (run `cost-annotate` first).

Options:
- blocking (grid axes, default none): collectives on these axes are issued
  synchronously: each starts after the compute issued before it and all later
  compute waits for it (zero-length `comm_issue` / `comm_wait` events on the
  compute stream around it), as a framework that waits on every NCCL call
  (Megatron-LM 2021's tensor-parallel all-reduces); with `pp`, the compute
  stream waits for each point-to-point send to complete (a `comm_wait` after
  it), as Megatron-LM 2021-22's pipeline did.
- host-launch (seconds, default 0: not modelled): the host issues every kernel
  and collective, one after another, for this long each (an `event.launch` on a
  `@host` stream that the event waits for); the host waits for nothing on the
  GPU but the optimizer's barrier, so it runs ahead of long kernels and holds
  back short ones (a step of small kernels is bound by its launches).
- expert-launches (default 0: one launch an op): with `host-launch`, the
  launches the host issues per local expert for each GEMM of the routed experts
  (an op reading the rows `sim.moe_dispatch` filled, [experts, rows, ...]), as
  Transformer Engine's `GroupedLinear` runs one cuBLAS GEMM per expert and, in
  fp8, quantizes each expert's operand on its own; fractional counts are a mean
  over the layer's expert GEMMs (docs/calibration.md, "Host launches of a
  Megatron-Core MoE layer").
- moe-host-sync (default false): the host reads the tokens per expert back
  after each forward dispatch (Megatron-Core's `tokens_per_expert.tolist()`, a
  dropless dispatcher's device-to-host sync), so it issues nothing after a
  forward dispatch all_to_all until that has completed on the GPU.
- sync-expert-a2a (default false): the expert-parallel all_to_alls (a
  `coll.all_to_all` over grid axes holding `ep`: the tokens' dispatch and
  combine) are issued synchronously, as `blocking` issues a whole axis's
  collectives, while the other collectives of those axes (the dense gradients'
  reductions over dp x ep) stay asynchronous: Megatron-Core's token dispatchers
  call the all_to_all in the layer's forward and backward and the next kernel
  waits for it, unless `overlap_moe_expert_parallel_comm` schedules another
  micro-batch's compute beside it.
- host-bandwidth (bytes/s, default `HOST_LINK_BYTES_S`): the GPU's link to
  pinned host memory, each direction, for the CPU activation offload copies of
  layer repeats `offload-activations` marked: as Transformer Engine's
  AsyncDoubleBufferGroupOffloadHandler runs them, the saved activations of
  offloaded layer k (the `sim.cpu_offload_bytes` memory-analysis set on the
  repeat: it must run first) go to the host on a `@comm_host_d2h` stream (layer 0's after
  its forward, layer k + 1's once layer k's is waited for), the compute stream
  waits for copy k after the forward of layer `layer_window_map[k]`; in the
  backward the compute stream waits for the reload before, then starts the
  reload of layer k on `@comm_host_h2d`, before the backward of layer
  `layer_window_map[k]`, and waits for every reload before layer 0's. The marked
  repeat's loop is split at those layers; the copy streams are `copy` streams
  (the copy engines: they take no SMs, so no overlap slowdown), whose exposed
  time is reported under the `host` axis.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

from xdsl.context import Context
import math
from math import prod

from xdsl.dialects.builtin import (
    IntegerType,
    TensorType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from charon_ir.dialects import event
from charon_ir.dialects.coll import (
    AllReduceOp,
    AllToAllOp,
    CollectiveOp,
    GRAD_SYNC,
    GridOp,
    RecvOp,
    ReduceScatterOp,
    SendOp,
)
from charon_ir.dialects.sim import (
    AttentionGradOp,
    COST_ATTR,
    ComputeOp,
    CostAttr,
    FIRST_FORWARD_ATTR,
    GenericOp,
    InputOp,
    MatmulOp,
    MoeCombineOp,
    MoeDispatchOp,
    PIPELINE_ATTR,
    ParamOp,
    PhaseKind,
    PhaseOp,
    PipelineAttr,
    recompute_kind,
    RepeatOp,
    StageOp,
    ViewOp,
    YieldOp,
    numel,
    shape_of,
)
from charon_ir.dialects.sim import CPU_OFFLOAD_BYTES_ATTR, CpuOffloadAttr, cpu_offload_of, offload_copy_bytes
from charon_ir.errors import CharonError
from charon_ir.parallel.accounting import walk_with_multiplicity
from charon_ir.parallel.mesh import AXIS_ORDER, check_grids_fit, data_parallel_replicas, schedule_marks
from charon_ir.parallel.backward_split import weight_gradient_ops
from charon_ir.parallel.schedules import SPLIT_BACKWARD, mark_data_parallel, run_lengths, stage_order
from charon_ir.target.hardware import HOST_LINK_BYTES_S
from charon_ir.target.target import Target

COMPUTE_STREAM = "compute"
HOST_STREAM = "host"
HOST_AXIS = "host"
"""What the CPU offload copies' streams serve: their exposed time is reported
under it, beside the grid axes'."""
OFFLOAD_STREAM = "comm_host_d2h"
RELOAD_STREAM = "comm_host_h2d"


@functools.cache
def _int_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, 64)


I64_MAX = 2**63 - 1


def _count_attr(value: float, what: str, op: Operation) -> IntegerAttr:
    """An event's FLOP or byte count, an i64: a step whose one kernel counts more
    (an 8B model at a 1e8-token sequence) is refused by name, not by the verifier."""
    if not 0 <= value <= I64_MAX:
        raise CharonError(f"lower-to-events: '{op.name}' counts {value:.3g} {what}, beyond the "
                          "64-bit counters of an event (a sequence or batch this large is not a step)")
    return _int_attr(round(value))


@functools.cache
def _link_attr(kind: event.Link) -> event.LinkAttr:
    return event.LinkAttr(kind)


@functools.cache
def _string_attr(value: str) -> StringAttr:
    return StringAttr(value)


def comm_stream_name(axes: list[str]) -> str:
    return "comm_" + "_".join(axes)


EXPERT_AXIS = "ep"


def is_expert_a2a(op: Operation) -> bool:
    """Whether `op` is an expert-parallel all_to_all (a token dispatch or
    combine): one over grid axes holding `ep`."""
    return isinstance(op, AllToAllOp) and EXPERT_AXIS in op.axis_names()


@dataclass
class _Offload:
    """Where one lowering of a phase's CPU offload copies stands (Transformer
    Engine's AsyncDoubleBufferGroupOffloadHandler; docs/calibration.md)."""

    windows: list[int]
    """`layer_window_map`: the chunk layer at which offloaded layer k's copy is
    waited for (forward) and its reload started (backward)."""
    layer_bytes: list[int]
    """What each offloaded chunk layer saves: the bytes its copies move."""
    group: int
    """Forward: the copy waited for next (0 up); backward: the reload started next
    (down from the last offloaded layer)."""
    copy: SSAValue | None = None
    """The copy last started: d2h in the forward, h2d in the backward."""

    @staticmethod
    def of(block: Block, reverse: bool) -> _Offload:
        marks = [(rep, m) for rep in block.ops if isinstance(rep, RepeatOp) and (m := cpu_offload_of(rep))]
        _, mark = marks[0]
        offloaded = mark.chunk_offloaded.data
        layer_bytes = [0] * offloaded
        for rep, m in marks:
            if m.layers.data:
                # memory-analysis' count of what the layer sends to the host: the
                # copies move exactly the host bytes (fp8 casts included)
                size = offload_copy_bytes(rep)
                if size is None:
                    raise CharonError(f"lower-to-events: a layer repeat offloads {m.layers.data} layers but has "
                                      f"no {CPU_OFFLOAD_BYTES_ATTR} (the bytes a layer sends to the host): run "
                                      "memory-analysis after offload-activations and before lower-to-events")
                for k in range(m.first.data, m.first.data + m.layers.data):
                    layer_bytes[k] = size
        return _Offload(mark.windows(), layer_bytes, offloaded - 1 if reverse else 0)


@dataclass
class _Emitter:
    """Appends events to one block; maps each sim value to the token after which
    it is available (None: available from the start)."""

    block: Block
    streams: dict[str, list[str] | None]
    tokens: dict[SSAValue, SSAValue | None] = field(default_factory=dict)
    virtual_stage: int = 0
    """The pipeline stage being lowered: sends go to virtual_stage + shift."""
    channel: str = "act"
    """What point-to-point ops carry in the phase being lowered: act or grad."""
    last_compute: SSAValue | None = None
    skip_gradient_sync: bool = False
    """Accumulating micro-batch: gradients are reduced over dp only on the last,
    and so is any all-reduce a sharding pass marked `coll.grad_sync` (on any
    axis: data-parallel folds the cp ones into its own reduction, and a pipeline
    without data-parallel still sums the partial gradients once per step)."""
    first_forward: bool = True
    """Whether this is a chunk's first forward of the step: the only one that runs
    the parameter gathers marked `sim.first_forward` (a step without a schedule
    has one forward)."""
    part: str = ""
    """Under a split backward: "B" lowers all but the weight-gradient ops, "W" only
    them (`backward_split`); empty lowers everything."""
    w_ops: frozenset[Operation] = frozenset()
    target: Target | None = None
    """Tells which link a collective crosses (NVLink or the NICs): collectives on
    the same link share its bandwidth in the interpreter."""
    groups: dict[int, tuple[IntegerAttr, StringAttr | None]] = field(default_factory=dict)
    """A collective's group size and link attributes by id(op), shared by the
    emitters of one lowering: a phase is lowered once per schedule run holding
    it, and the grid lookup behind both is most of a collective's lowering."""
    blocking: frozenset[str] = frozenset()
    """Grid axes whose collectives are issued synchronously (`lower-to-events{
    blocking=tp}`): such a collective starts after every compute event issued
    before it and all later compute waits for it, as a framework that calls NCCL
    without `async_op` and waits (Megatron-LM 2021's tensor-parallel all-reduces):
    nothing overlaps it. With `pp`, the compute stream waits for each send."""
    host_launch: float = 0.0
    """Seconds of the host per kernel or collective it issues (0: not modelled)."""
    host_after: SSAValue | None = None
    """The barrier the host last waited at: its next launch comes after it."""
    expert_launches: float = 0.0
    """Launches per local expert of a routed-expert GEMM (0: one an op)."""
    sync_expert_a2a: bool = False
    """The expert-parallel all_to_alls (over axes holding `ep`) block the
    compute stream as a `blocking` axis's collectives do."""
    moe_host_sync: bool = False
    """The host waits for each forward dispatch all_to_all (tokens per expert)."""
    forward: bool = True
    """Whether the phase being lowered is a forward (the only one that syncs)."""
    expert_rows: set[SSAValue] = field(default_factory=set)
    """Values that hold routed tokens by expert ([experts, rows, ...]): what
    `sim.moe_dispatch` filled and what the experts compute from it."""
    host_bandwidth: float = HOST_LINK_BYTES_S
    """Bytes/s of the CPU offload copies, each direction."""
    offload: dict[Block, _Offload] = field(default_factory=dict)
    """Per phase block lowered, its CPU offload copies so far (shared by the
    emitters of its loops)."""

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def deps_of(self, values) -> list[SSAValue]:
        seen: list[SSAValue] = []
        for v in values:
            t = self.tokens.get(v)
            if t is not None and t not in seen:
                seen.append(t)
        return seen

    def join(self, values) -> SSAValue:
        """One token after which all `values` are available (a wait with no
        dependencies when none has a producer: the start of the program)."""
        deps = self.deps_of(values)
        if len(deps) == 1:
            return deps[0]
        return self.emit(event.WaitOp(deps))

    def lower_block(self, block: Block) -> None:
        for op in issue_order(block):
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, (ParamOp, InputOp, GridOp)):
            for r in op.results:
                self.tokens[r] = None
            return
        if isinstance(op, YieldOp):
            return
        if isinstance(op, ViewOp):
            self.tokens[op.result] = self.tokens.get(op.input)
            if self.expert_rows and op.input in self.expert_rows:
                self._mark_expert_rows(op, op.input)
            return
        if isinstance(op, PhaseOp):
            if op.kind.data == PhaseKind.OPTIMIZER:
                # the step waits for every gradient and its reduction to land
                barrier = self.emit(event.BarrierOp())
                for v in _values_used_in(op):
                    self.tokens[v] = barrier
                self.host_after = barrier
            forward, self.forward = self.forward, op.kind.data == PhaseKind.FORWARD
            self.lower_block(op.body.block)
            self.forward = forward
            term = op.body.block.last_op
            assert isinstance(term, YieldOp)
            for res, val in zip(op.outputs, term.values, strict=True):
                self.tokens[res] = self.tokens.get(val)
            return
        if isinstance(op, RepeatOp):
            self.lower_repeat(op)
            return
        if self.part and (op in self.w_ops) != (self.part == "W"):
            # the other half of a split backward: its values exist before this
            # item (B ran earlier) or are not read by it (W runs later)
            for r in op.results:
                self.tokens[r] = None
            return
        if isinstance(op, (ComputeOp, CollectiveOp)):
            self.lower_priced(op)
            return
        raise CharonError(f"lower-to-events: cannot lower '{op.name}'")

    def runs_first_forward_op(self, op: Operation) -> bool:
        """Whether an op of an overlapped parameter gather (`sim.first_forward`)
        runs here: its all_gathers run in the first forward only. Its packing ops
        never run: they are views into Megatron-Core's contiguous parameter
        buffer, whose gathers the forward hooks dispatch ahead of the compute that
        reads them, so a gather waits only for its own stream."""
        return self.first_forward and not isinstance(op, GenericOp)

    def lower_priced(self, op: ComputeOp | CollectiveOp) -> None:
        if (
            self.skip_gradient_sync
            and isinstance(op, (AllReduceOp, ReduceScatterOp))
            and ("dp" in op.axis_names() or GRAD_SYNC in op.attributes)
        ) or (FIRST_FORWARD_ATTR in op.attributes and not self.runs_first_forward_op(op)):
            for r in op.results:
                self.tokens[r] = self.join(op.operands)
            return
        cost = op.attributes.get(COST_ATTR)
        if not isinstance(cost, CostAttr):
            raise CharonError(
                f"lower-to-events: '{op.name}' has no cost; run cost-annotate first"
            )
        deps = self.deps_of(op.operands)
        # a collective the framework waits for (`blocking`): issued in the compute
        # stream's order (a zero-length `comm_issue` kernel there, after all
        # compute issued before it) and waited for by it (a zero-length
        # `comm_wait` after it, which holds back all later compute of the stage,
        # across schedule items); a blocking `pp` send is waited for the same way
        blocking = (
            bool(self.blocking)
            and isinstance(op, CollectiveOp)
            and not isinstance(op, RecvOp)
            and not self.blocking.isdisjoint(op.axis_names())
        ) or (self.sync_expert_a2a and is_expert_a2a(op))
        if blocking and not isinstance(op, SendOp):
            issue = self.emit(event.ComputeOp(COMPUTE_STREAM, "comm_issue", 0.0, deps))
            deps = [issue]
        expert_input = None
        if self.host_launch > 0 and (self.expert_launches > 0 or self.moe_host_sync):
            expert_input = self._track_expert_rows(op)
        if self.host_launch > 0:
            self.streams.setdefault(HOST_STREAM, None)
            after = [self.host_after] if self.host_after is not None else []
            issue_s = self.host_launch * self.launches(op, expert_input)
            deps = [*deps, self.emit(event.LaunchOp(HOST_STREAM, "launch", issue_s, after))]
        fields: dict = {"engine": cost.engine}
        if isinstance(op, ComputeOp):
            fields["flops"] = _count_attr(cost.flops.data, "FLOPs", op)
            ev = event.ComputeOp(COMPUTE_STREAM, op.op_kind(), cost.time_s.data, deps, **fields)
        else:
            axes = op.axis_names()
            stream = comm_stream_name(axes)
            fields["bytes"] = _count_attr(cost.bytes.data, "bytes", op)
            group = self.groups.get(id(op))
            if group is None:
                link = None
                if self.target is not None:
                    link = _link_attr(self.target.link_for_group(
                        op.lookup_grid().axis_sizes(), axes, op.subgroup_positions()).kind)
                group = self.groups[id(op)] = (_int_attr(op.group_size()), link)
            fields["group"] = group[0]
            if group[1] is not None:
                fields["link"] = group[1]
            if isinstance(op, (SendOp, RecvOp)):
                # a lane per direction, as Megatron's batched isend/irecv; the
                # interpreter pairs the k-th send and receive of each channel
                stream += "_" + op.op_kind()
                channel = self.channel
                if "pp" in axes:
                    peer = self.virtual_stage + op.shift.value.data
                    src, dst = (self.virtual_stage, peer) if isinstance(op, SendOp) else (peer, self.virtual_stage)
                else:
                    # a ring inside the rank class (context parallelism): a rank
                    # receives what its neighbour, running this same program, sent
                    shift = op.shift.value.data if isinstance(op, SendOp) else -op.shift.value.data
                    channel = f"{'_'.join(axes)}{shift:+d}"
                    src = dst = self.virtual_stage
                fields["channel"] = _string_attr(channel)
                fields["src"] = _int_attr(src)
                fields["dst"] = _int_attr(dst)
            self.streams.setdefault(stream, axes)
            ev = event.CommOp(stream, op.op_kind(), cost.time_s.data, deps, **fields)
        token = self.emit(ev)
        if isinstance(op, ComputeOp):
            self.last_compute = token
        if blocking:
            self.last_compute = self.emit(event.ComputeOp(COMPUTE_STREAM, "comm_wait", 0.0, [token]))
        for r in op.results:
            self.tokens[r] = token
        if (self.moe_host_sync and self.forward and expert_input is not None
                and isinstance(op, AllToAllOp) and op.split_axis.value.data == 0):
            # the dispatch's tokens per expert read back (`.tolist()`): the host
            # issues the experts' GEMMs, whose splits it needs, after it lands
            self.host_after = token

    def _mark_expert_rows(self, op: Operation, source: SSAValue) -> None:
        lead = shape_of(source)[0]
        for r in op.results:
            shape = shape_of(r) if isinstance(r.type, TensorType) else ()
            if len(shape) >= 3 and shape[0] in (lead, *self._local_experts(op, source)):
                self.expert_rows.add(r)

    @staticmethod
    def _local_experts(op: Operation, source: SSAValue) -> tuple[int, ...]:
        """An all_to_all over the experts dim leaves experts / group of them."""
        if isinstance(op, AllToAllOp) and op.split_axis.value.data == 0:
            return (shape_of(source)[0] // max(1, op.group_size()),)
        return ()

    def _track_expert_rows(self, op: Operation) -> SSAValue | None:
        """The routed-expert rows `op` reads (None: none), marking what it
        computes from them as expert rows too; `sim.moe_dispatch` makes them.
        Rows end where their leading dim does (the combine's tokens)."""
        if isinstance(op, MoeDispatchOp):
            self.expert_rows.add(op.result)
            return None
        if isinstance(op, MoeCombineOp):
            return None
        source = next((v for v in op.operands if v in self.expert_rows), None)
        if source is not None:
            self._mark_expert_rows(op, source)
        return source

    def launches(self, op: Operation, expert_input: SSAValue | None) -> float:
        """Launches the host issues for `op`: one, or for a GEMM of the routed
        experts `expert-launches` per local expert (the result's leading dim)."""
        if self.expert_launches <= 0 or expert_input is None or not isinstance(op, MatmulOp):
            return 1.0
        shape = shape_of(op.result)
        experts = shape[0] if len(shape) == 3 else 1
        return max(1.0, self.expert_launches * experts)

    def lower_repeat(self, op: RepeatOp) -> None:
        init = self.join([] if self.part == "W" else [*op.iter_init, *op.slices])
        if op.trip_count == 0:
            for r in op.outputs:
                self.tokens[r] = init
            return
        mark = cpu_offload_of(op)
        if mark is not None and not self.part:
            token = self.lower_offloaded_repeat(op, mark, init)
        else:
            token = self.loop(op, op.trip_count, init)
        for r in op.outputs:
            self.tokens[r] = token

    def lower_offloaded_repeat(self, op: RepeatOp, mark: CpuOffloadAttr, init: SSAValue) -> SSAValue:
        """A layer repeat of a step that offloads, as loops split at the layers
        where a copy starts or is waited for (`_Offload`)."""
        block = op.parent_block()
        assert block is not None
        state = self.offload.get(block)
        if state is None:
            state = self.offload[block] = _Offload.of(block, bool(op.reverse))
        first, last = mark.first.data, mark.first.data + op.trip_count - 1
        cuts = sorted(c for c in {0, *state.windows} if first <= c <= last)
        token = init
        if not op.reverse:
            lo = first
            for c in cuts:
                token = self.after_forward(state, c, self.loop(op, c - lo + 1, token))
                lo = c + 1
            return self.loop(op, last - lo + 1, token) if lo <= last else token
        hi = last
        for c in reversed(cuts):
            if hi > c:
                token = self.loop(op, hi - c, token)
            token = self.before_backward(state, c, token)
            hi = c
        return self.loop(op, hi - first + 1, token)

    def host_copy(self, stream: str, kind: str, nbytes: int, deps: list[SSAValue]) -> SSAValue:
        self.streams.setdefault(stream, [HOST_AXIS])
        return self.emit(event.CommOp(stream, kind, nbytes / self.host_bandwidth, deps,
                                      bytes=_int_attr(nbytes), group=_int_attr(1)))

    def after_forward(self, state: _Offload, layer: int, token: SSAValue) -> SSAValue:
        """After the forward of chunk layer `layer` (`token`): the handler's
        `synchronize_on_group_commit_forward`."""
        if layer == 0 and state.layer_bytes:
            state.copy = self.host_copy(OFFLOAD_STREAM, "offload", state.layer_bytes[0], [token])
        k = state.group
        if k < len(state.windows) and layer == state.windows[k]:
            assert state.copy is not None
            # the compute stream waits for copy k; then copy k + 1 starts
            token = self.emit(event.ComputeOp(COMPUTE_STREAM, "offload_wait", 0.0, [token, state.copy]))
            if k + 1 < len(state.layer_bytes):
                state.copy = self.host_copy(OFFLOAD_STREAM, "offload", state.layer_bytes[k + 1], [token])
            state.group += 1
        self.last_compute = token
        return token

    def before_backward(self, state: _Offload, layer: int, token: SSAValue) -> SSAValue:
        """Before the backward of chunk layer `layer`: the handler's
        `on_group_commit_backward`."""
        k = state.group
        if k >= 0 and layer == state.windows[k]:
            if state.copy is not None:  # the compute stream waits for the reload before
                token = self.emit(event.ComputeOp(COMPUTE_STREAM, "reload_wait", 0.0, [token, state.copy]))
            state.copy = self.host_copy(RELOAD_STREAM, "reload", state.layer_bytes[k], [token])
            state.group -= 1
        if layer == 0 and state.copy is not None:
            # the first layer's backward waits for every reload
            token = self.emit(event.ComputeOp(COMPUTE_STREAM, "reload_wait", 0.0, [token, state.copy]))
        self.last_compute = token
        return token

    def loop(self, op: RepeatOp, count: int, init: SSAValue) -> SSAValue:
        """`count` iterations of the repeat's body as an `event.loop` after `init`."""
        body_block = Block(arg_types=[event.TokenType()])
        inner = dataclasses.replace(self, block=body_block, tokens=dict(self.tokens), last_compute=None)
        prev = body_block.args[0]
        n_iter = len(op.iter_init)
        for i, arg in enumerate(op.body.block.args):
            # carried values come from the previous iteration; slices (weights,
            # saved activations) exist before the loop, so a prefetch may run ahead
            inner.tokens[arg] = prev if i < n_iter else self.tokens.get(op.slices[i - n_iter])
        inner.lower_block(op.body.block)
        term = op.body.block.last_op
        assert isinstance(term, YieldOp)
        done = inner.join(term.values) if inner.deps_of(term.values) else prev
        body_block.add_op(event.YieldOp(done))
        loop = event.LoopOp(count, init, Region(body_block), label=event.LAYER_REPEAT)
        token = self.emit(loop)
        self.last_compute = token
        return token


def issue_order(block: Block) -> list[Operation]:
    """A block's ops in the order the compute stream issues them: a collective of
    the model's own data flow (tp, cp, ep, a pipeline send) as soon as what it
    reads is computed, the ops before it that it does not read right after it.
    Frameworks launch such a collective as soon as its input exists and run the
    kernels that do not need it beside it: Megatron's column-parallel backward
    starts the input gradient's all-reduce before the weight-gradient GEMM
    (`LinearWithGradAccumulationAndAsyncCommunication`), which a traced graph
    that computes its weight gradients first (HF Llama's separate q, k, v and
    gate, up projections) would leave exposed. Gradient reductions over dp stay
    where data-parallel put them, after the gradients they reduce. The order is
    topological: an op's inputs are issued before it either way."""
    ops = list(block.ops)
    if any(op.regions for op in ops):
        return ops  # a block of loops and phases: they read values captured inside
    order: list[Operation] = []
    pending: list[Operation] = []
    for op in ops:
        if not _issued_early(op):
            pending.append(op)
            continue
        needed = {op}
        for o in reversed(pending):  # pending is in order: users come after their inputs
            if o in needed or any(u.operation in needed for r in o.results for u in r.uses):
                needed.add(o)
        order += [o for o in pending if o in needed] + [op] + [o for o in pending if o not in needed]
        pending = []
    return order + pending


def _issued_early(op: Operation) -> bool:
    return (isinstance(op, CollectiveOp) and not isinstance(op, RecvOp)
            and "dp" not in op.axis_names() and GRAD_SYNC not in op.attributes)


def _values_used_in(op: Operation) -> set[SSAValue]:
    """Values defined outside `op` and used inside it."""
    inside = {r for o in op.walk() for r in o.results}
    inside |= {a for o in op.walk() for reg in o.regions for b in reg.blocks for a in b.args}
    return {v for o in op.walk() for v in o.operands if v not in inside}


def count_tokens(module: Operation) -> int:
    """Tokens one step processes on one rank class, read off the input marked
    `tokens`:
    token ids [batch, seq] count every element; hidden states [..., hidden] count
    all but the last dim."""
    for op in module.walk():
        if isinstance(op, InputOp) and op.is_tokens():
            t = op.result.type
            assert isinstance(t, TensorType)
            if isinstance(t.element_type, IntegerType):
                return numel(op.result)
            return prod(t.get_shape()[:-1])
    return 0


def _stream_kind(name: str, axes: list[str] | None) -> str:
    if name in (OFFLOAD_STREAM, RELOAD_STREAM):
        return "copy"
    return "host" if name == HOST_STREAM else "compute" if axes is None else "comm"


def _stream_ops(streams: dict[str, list[str] | None]) -> list[event.StreamOp]:
    return [
        event.StreamOp(name, _stream_kind(name, axes), axes)
        for name, axes in streams.items()
    ]


def _program(name: str, ranks: int, body: Block, streams, **fields) -> event.ProgramOp:
    first = body.first_op
    for s in _stream_ops(streams):
        if first is None:
            body.add_op(s)
        else:
            body.insert_op_before(s, first)
    return event.ProgramOp(name, ranks, Region(body), **fields)


def recomputed_flops(phase: Operation | None) -> float:
    """FLOPs one run of a backward phase spends re-running the forward: the
    recompute pass's clones (the gradients it marks are not a re-run)."""
    if phase is None:
        return 0.0
    total = 0.0
    for op, mult in walk_with_multiplicity(phase):
        if (isinstance(op, ComputeOp) and recompute_kind(op) is not None
                and not isinstance(op, AttentionGradOp)):
            cost = op.attributes.get(COST_ATTR)
            if isinstance(cost, CostAttr):
                total += cost.flops.data * mult
    return total


def _phase(stage: StageOp, kind: PhaseKind) -> PhaseOp | None:
    for op in stage.body.block.ops:
        if isinstance(op, PhaseOp) and op.kind.data == kind:
            return op
    return None


def lower_pipeline(module: ModuleOp, target: Target, blocking: frozenset[str] = frozenset(),
                   host_launch: float = 0.0, expert_launches: float = 0.0,
                   moe_host_sync: bool = False, sync_expert_a2a: bool = False,
                   host_bandwidth: float = HOST_LINK_BYTES_S) -> list[event.ProgramOp]:
    """One program per physical stage: its schedule's runs of forward (F) and
    backward (B) micro-batches as loops over the lowered phases of its chunks."""
    attr = module.attributes[PIPELINE_ATTR]
    assert isinstance(attr, PipelineAttr)
    schedule = attr.schedule
    pp, vpp, m = attr.pp.data, attr.vpp.data, attr.microbatches.data
    stages = [op for op in module.body.block.ops if isinstance(op, StageOp)]
    by_virtual = {v: st for st in stages for v in st.stage_ids()}
    # ep ranks are data-parallel replicas that bring their own tokens
    dp = data_parallel_replicas(module)
    marks = schedule_marks(module)
    tokens = count_tokens(by_virtual[0]) * m * dp
    split = schedule.data in SPLIT_BACKWARD
    w_ops = {
        v: weight_gradient_ops(phase) if split and (phase := _phase(st, PhaseKind.BACKWARD)) else frozenset()
        for v, st in by_virtual.items()
    }
    programs = []
    groups: dict[int, tuple[IntegerAttr, StringAttr | None]] = {}
    for s in range(pp):
        body = Block()
        streams: dict[str, list[str] | None] = {COMPUTE_STREAM: None}
        start = event.WaitOp([])
        body.add_op(start)
        prev = start.token
        order = stage_order(schedule.data, pp, vpp, m, s)
        order = mark_data_parallel(order, *marks)
        items: dict[tuple[int, str], tuple[list[Operation], SSAValue | None]] = {}
        for pattern, count in run_lengths(order):
            loop_body = Block(arg_types=[event.TokenType()])
            emitter: _Emitter | None = None
            for kind, chunk in pattern:
                v = chunk * pp + s
                phase = _phase(by_virtual[v], PhaseKind.FORWARD if kind[0] == "F" else PhaseKind.BACKWARD)
                if phase is None:
                    continue
                # An item's events depend only on the item (what it reads from
                # outside is ready from the start), so an item lowered in an
                # earlier run of this stage is cloned instead of lowered again.
                lowered = items.get((v, kind))
                if lowered is None:
                    before = loop_body.last_op
                    emitter = _Emitter(
                        loop_body,
                        streams,
                        target=target,
                        virtual_stage=v,
                        channel="act" if kind[0] == "F" else "grad",
                        skip_gradient_sync=dp > 1 and kind in ("B", "W"),
                        first_forward=kind == "F+",
                        part=kind[0] if split and kind[0] != "F" else "",
                        w_ops=w_ops[v],
                        groups=groups,
                        blocking=blocking,
                        host_launch=host_launch,
                        expert_launches=expert_launches,
                        moe_host_sync=moe_host_sync,
                        sync_expert_a2a=sync_expert_a2a,
                        forward=kind[0] == "F",
                        host_bandwidth=host_bandwidth,
                    )
                    emitter.lower_block(phase.body.block)
                    emitted, op = [], before.next_op if before is not None else loop_body.first_op
                    while op is not None:
                        emitted.append(op)
                        op = op.next_op
                    items[(v, kind)] = (emitted, emitter.last_compute)
                    last_compute = emitter.last_compute
                else:
                    mapper: dict[SSAValue, SSAValue] = {}
                    for op in lowered[0]:
                        loop_body.add_op(op.clone(mapper))
                    last_compute = None if lowered[1] is None else mapper[lowered[1]]
                # a marker at the item's end: memory over time counts forwards
                # done and backwards done per stage
                if last_compute is not None:
                    marker = event.WaitOp([last_compute], event.ScheduleItem(kind[0]))
                    loop_body.add_op(marker)
            done = loop_body.last_op.results[0] if loop_body.last_op else loop_body.args[0]
            loop_body.add_op(event.YieldOp(done))
            label = ",".join(f"{k}{c}" for k, c in pattern)
            loop = event.LoopOp(count, prev, Region(loop_body), label=label)
            body.add_op(loop)
            prev = loop.token
        for chunk in range(vpp):
            opt = _phase(by_virtual[chunk * pp + s], PhaseKind.OPTIMIZER)
            if opt is not None:
                emitter = _Emitter(body, streams, virtual_stage=chunk * pp + s, target=target,
                                   groups=groups, blocking=blocking, host_launch=host_launch,
                                   expert_launches=expert_launches, moe_host_sync=moe_host_sync,
                                   sync_expert_a2a=sync_expert_a2a)
                emitter.lower_op(opt)
        recomputed = m * sum(recomputed_flops(_phase(by_virtual[c * pp + s], PhaseKind.BACKWARD)) for c in range(vpp))
        kind = by_virtual[s].node_kind()
        hardware = None
        if target.heterogeneous and kind is not None and target.cluster is not None:
            # a stage on a cluster of several node kinds names its GPU for the report
            hardware = target.cluster.kind(kind).gpu.ref
        programs.append(_program(
            f"stage{s}", target.gpus // pp, body, streams, stage=s,
            tokens=tokens if s == 0 and tokens else None, recompute_flops=recomputed or None, hardware=hardware,
        ))
    return programs


@dataclass(frozen=True)
class LowerToEventsPass(ModulePass):
    name = "lower-to-events"

    blocking: tuple[str, ...] | str = ()
    """Grid axes (tp, dp, cp, ep) whose collectives block the compute stream: each
    waits for the compute issued before it, and all later compute waits for it;
    `pp`: the compute stream waits for every point-to-point send to complete."""

    host_launch: float | int = 0.0
    """Seconds the host takes to issue each kernel and collective (0: not modelled)."""

    expert_launches: float | int = 0.0
    """With host-launch: launches per local expert of each routed-expert GEMM
    (Transformer Engine's GroupedLinear: a GEMM per expert, plus its fp8
    quantization); 0: one launch an op (a grouped GEMM kernel)."""

    moe_host_sync: bool = False
    """With host-launch: the host waits for each forward dispatch all_to_all
    (a dropless dispatcher reading its tokens per expert back)."""

    sync_expert_a2a: bool = False
    """The expert-parallel all_to_alls (dispatch and combine: over axes holding
    `ep`) block the compute stream, as `blocking` does for a whole axis; the
    other collectives of those axes stay asynchronous."""

    host_bandwidth: float | int = HOST_LINK_BYTES_S
    """Bytes/s of the GPU's link to pinned host memory, each direction: the CPU
    activation offload copies of the repeats `offload-activations` marked."""

    def blocking_axes(self) -> frozenset[str]:
        names = (self.blocking,) if isinstance(self.blocking, str) else self.blocking
        axes = frozenset(n for n in names if n)
        unknown = axes - set(AXIS_ORDER)
        if unknown:
            raise CharonError(
                f"lower-to-events: option 'blocking': unknown axis '{sorted(unknown)[0]}' "
                f"(known: {', '.join(AXIS_ORDER)})"
            )
        return axes

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = Target.from_module(op)
        check_grids_fit(op, target.gpus, "lower-to-events", "the target has")  # one built after set-target
        blocking = self.blocking_axes()
        host_launch = float(self.host_launch)
        if not 0.0 <= host_launch < math.inf:  # NaN fails too
            raise CharonError(f"lower-to-events: option 'host-launch' must be a number of seconds >= 0, "
                              f"got {self.host_launch}")
        expert_launches = float(self.expert_launches)
        if not 0.0 <= expert_launches < math.inf:
            raise CharonError(f"lower-to-events: option 'expert-launches' must be a number >= 0, "
                              f"got {self.expert_launches}")
        host_bandwidth = float(self.host_bandwidth)
        if not 0.0 < host_bandwidth < math.inf:
            raise CharonError(f"lower-to-events: option 'host-bandwidth' must be a number of bytes/s > 0, "
                              f"got {self.host_bandwidth}")
        if any(isinstance(o, event.ProgramOp) for o in op.body.block.ops):
            raise CharonError("lower-to-events: the module is already lowered")
        if PIPELINE_ATTR in op.attributes:
            programs = lower_pipeline(op, target, blocking, host_launch, expert_launches, self.moe_host_sync,
                                      self.sync_expert_a2a, host_bandwidth)
            for top in reversed([o for o in op.body.block.ops if isinstance(o, StageOp)]):
                top.detach()
                top.erase(safe_erase=False)
            for program in programs:
                op.body.block.add_op(program)
            return
        body = Block()
        streams: dict[str, list[str] | None] = {COMPUTE_STREAM: None}
        emitter = _Emitter(body, streams, target=target, blocking=blocking, host_launch=host_launch,
                           expert_launches=expert_launches, moe_host_sync=self.moe_host_sync,
                           sync_expert_a2a=self.sync_expert_a2a, host_bandwidth=host_bandwidth)
        tokens = count_tokens(op) * data_parallel_replicas(op)
        recomputed = sum(recomputed_flops(top) for top in op.body.block.ops
                         if isinstance(top, PhaseOp) and top.kind.data == PhaseKind.BACKWARD)
        to_erase: list[Operation] = []
        for top in list(op.body.block.ops):
            if isinstance(top, GridOp):
                continue
            emitter.lower_op(top)
            to_erase.append(top)
        for top in reversed(to_erase):
            top.detach()
            top.erase(safe_erase=False)
        op.body.block.add_op(_program("main", target.gpus, body, streams,
                                      tokens=tokens or None, recompute_flops=recomputed or None))

