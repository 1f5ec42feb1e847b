"""
Lower priced `sim` + `coll` IR to the `event` dialect.

Each compute op becomes an `event.compute` on the `@compute` stream; each
collective an `event.comm` on the lane of its grid axes (`@comm_tp`, `@comm_dp`,
...). SSA uses become event dependencies; a `sim.repeat` becomes an `event.loop`
(never unrolled); phases are flattened in order. The result is one
`event.program` for the module's rank class; the `sim` ops are consumed, the
grids and the target stay.

Options: none. Every compute op and collective must carry a `cost` attribute
(run `cost-annotate` first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
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
from charon_ir.dialects.coll import CollectiveOp, GridOp
from charon_ir.dialects.sim import (
    ComputeOp,
    CostAttr,
    InputOp,
    ParamOp,
    PhaseOp,
    RepeatOp,
    ViewOp,
    YieldOp,
    numel,
)
from charon_ir.errors import CharonError
from charon_ir.passes.cost_annotate import COST_ATTR
from charon_ir.target.target import Target

COMPUTE_STREAM = "compute"


def comm_stream_name(axes: list[str]) -> str:
    return "comm_" + "_".join(axes)


@dataclass
class _Emitter:
    """Appends events to one block; maps each sim value to the token after which
    it is available (None: available from the start)."""

    block: Block
    streams: dict[str, list[str] | None]
    tokens: dict[SSAValue, SSAValue | None] = field(default_factory=dict)

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
        for op in block.ops:
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
            return
        if isinstance(op, PhaseOp):
            self.lower_block(op.body.block)
            term = op.body.block.last_op
            assert isinstance(term, YieldOp)
            for res, val in zip(op.outputs, term.values, strict=True):
                self.tokens[res] = self.tokens.get(val)
            return
        if isinstance(op, RepeatOp):
            self.lower_repeat(op)
            return
        if isinstance(op, (ComputeOp, CollectiveOp)):
            self.lower_priced(op)
            return
        raise CharonError(f"lower-to-events: cannot lower '{op.name}'")

    def lower_priced(self, op: ComputeOp | CollectiveOp) -> None:
        cost = op.attributes.get(COST_ATTR)
        if not isinstance(cost, CostAttr):
            raise CharonError(
                f"lower-to-events: '{op.name}' has no cost; run cost-annotate first"
            )
        deps = self.deps_of(op.operands)
        attrs = {"engine": cost.engine}
        if isinstance(op, ComputeOp):
            attrs["flops"] = IntegerAttr(round(cost.flops.data), 64)
            ev = event.ComputeOp(COMPUTE_STREAM, op.op_kind(), cost.time_s.data, deps, **attrs)
        else:
            axes = op.axis_names()
            stream = comm_stream_name(axes)
            self.streams.setdefault(stream, axes)
            attrs["bytes"] = IntegerAttr(round(cost.bytes.data), 64)
            attrs["group"] = IntegerAttr(op.group_size(), 64)
            ev = event.CommOp(stream, op.op_kind(), cost.time_s.data, deps, **attrs)
        token = self.emit(ev)
        for r in op.results:
            self.tokens[r] = token

    def lower_repeat(self, op: RepeatOp) -> None:
        init = self.join([*op.iter_init, *op.slices])
        body_block = Block(arg_types=[event.TokenType()])
        inner = _Emitter(body_block, self.streams, dict(self.tokens))
        prev = body_block.args[0]
        for arg in op.body.block.args:
            inner.tokens[arg] = prev
        inner.lower_block(op.body.block)
        term = op.body.block.last_op
        assert isinstance(term, YieldOp)
        done = inner.join(term.values) if inner.deps_of(term.values) else prev
        body_block.add_op(event.YieldOp(done))
        loop = event.LoopOp(
            op.trip_count, init, Region(body_block), label=StringAttr("repeat")
        )
        token = self.emit(loop)
        for r in op.outputs:
            self.tokens[r] = token


def count_tokens(module: ModuleOp) -> int:
    """Tokens one step processes on one rank class, read off the `tokens` input:
    token ids [batch, seq] count every element; hidden states [..., hidden] count
    all but the last dim."""
    for op in module.walk():
        if isinstance(op, InputOp) and op.sym_name.data == "tokens":
            t = op.result.type
            assert isinstance(t, TensorType)
            if isinstance(t.element_type, IntegerType):
                return numel(op.result)
            return prod(t.get_shape()[:-1])
    return 0


@dataclass(frozen=True)
class LowerToEventsPass(ModulePass):
    name = "lower-to-events"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = Target.from_module(op)
        if any(isinstance(o, event.ProgramOp) for o in op.body.block.ops):
            raise CharonError("lower-to-events: the module is already lowered")
        body = Block()
        streams: dict[str, list[str] | None] = {COMPUTE_STREAM: None}
        emitter = _Emitter(body, streams)
        tokens = count_tokens(op)
        to_erase: list[Operation] = []
        for top in list(op.body.block.ops):
            if isinstance(top, GridOp):
                continue
            emitter.lower_op(top)
            to_erase.append(top)
        for top in reversed(to_erase):
            top.detach()
            top.erase(safe_erase=False)
        stream_ops = [
            event.StreamOp(name, "compute" if axes is None else "comm", axes)
            for name, axes in streams.items()
        ]
        first = body.first_op
        for s in stream_ops:
            if first is None:
                body.add_op(s)
            else:
                body.insert_op_before(s, first)
        attrs = {"tokens": IntegerAttr(tokens, 64)} if tokens else {}
        op.body.block.add_op(event.ProgramOp("main", target.gpus, Region(body), **attrs))

