"""Flatten an `event.program` into arrays, once, for the interpreter.

Loops are expanded here, in plain arrays, never in the IR: event i of the flat
program has a stream index (-1 for a zero-time join), a duration, a kind and the
indices of the events it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, SSAValue

from charon_ir.dialects import event
from charon_ir.errors import CharonError

KIND_JOIN, KIND_COMPUTE, KIND_COMM = 0, 1, 2


@dataclass
class FlatProgram:
    name: str
    ranks: int
    streams: list[str]
    stream_kinds: list[int]
    duration: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    labels: list[str]
    deps: list[list[int]]
    engines: dict[str, int] = field(default_factory=dict)
    """Event ops in the IR priced by each engine (IR ops, not loop iterations)."""
    attributes: dict[str, int] = field(default_factory=dict)

    @property
    def num_events(self) -> int:
        return len(self.labels)


class _Builder:
    def __init__(self, stream_index: dict[str, int]):
        self.stream_index = stream_index
        self.duration: list[float] = []
        self.stream: list[int] = []
        self.kind: list[int] = []
        self.flops: list[float] = []
        self.bytes: list[float] = []
        self.labels: list[str] = []
        self.deps: list[list[int]] = []

    def add(self, stream: int, kind: int, duration: float, deps: list[int],
            label: str, flops: float = 0.0, nbytes: float = 0.0) -> int:
        self.duration.append(duration)
        self.stream.append(stream)
        self.kind.append(kind)
        self.flops.append(flops)
        self.bytes.append(nbytes)
        self.labels.append(label)
        self.deps.append(deps)
        return len(self.labels) - 1

    def run_block(self, block: Block, env: dict[SSAValue, int]) -> None:
        for op in block.ops:
            if isinstance(op, event.StreamOp | event.YieldOp):
                continue
            if isinstance(op, event.EventOpBase):
                deps = [env[d] for d in op.deps]
                stream = self.stream_index[op.stream.string_value()]
                kind = KIND_COMPUTE if isinstance(op, event.ComputeOp) else KIND_COMM
                flops = op.attributes.get("flops")
                nbytes = op.attributes.get("bytes")
                env[op.token] = self.add(
                    stream,
                    kind,
                    op.duration_s.value.data,
                    deps,
                    op.label.data,
                    float(flops.value.data) if isinstance(flops, IntegerAttr) else 0.0,
                    float(nbytes.value.data) if isinstance(nbytes, IntegerAttr) else 0.0,
                )
            elif isinstance(op, event.WaitOp):
                env[op.token] = self.add(-1, KIND_JOIN, 0.0, [env[d] for d in op.deps], "wait")
            elif isinstance(op, event.LoopOp):
                prev = env[op.init]
                body = op.body.block
                term = body.last_op
                assert isinstance(term, event.YieldOp)
                for _ in range(op.count.value.data):
                    inner = dict(env)
                    inner[body.args[0]] = prev
                    self.run_block(body, inner)
                    prev = inner[term.token]
                env[op.token] = prev
            else:
                raise CharonError(f"interpreter: unexpected op '{op.name}' in an event program")


def flatten(program: event.ProgramOp) -> FlatProgram:
    streams: list[str] = []
    kinds: list[int] = []
    for op in program.body.block.ops:
        if isinstance(op, event.StreamOp):
            streams.append(op.sym_name.data)
            kinds.append(KIND_COMPUTE if op.kind.data == "compute" else KIND_COMM)
    builder = _Builder({s: i for i, s in enumerate(streams)})
    builder.run_block(program.body.block, {})
    engines: dict[str, int] = {}
    for op in program.walk():
        eng = op.attributes.get("engine")
        if isinstance(eng, StringAttr):
            engines[eng.data] = engines.get(eng.data, 0) + 1
    attributes = {
        k: v.value.data  # pyright: ignore[reportAttributeAccessIssue]
        for k, v in program.attributes.items()
        if hasattr(v, "value")
    }
    return FlatProgram(
        name=program.sym_name.data,
        ranks=program.ranks.value.data,
        streams=streams,
        stream_kinds=kinds,
        duration=np.asarray(builder.duration, dtype=np.float64),
        stream=np.asarray(builder.stream, dtype=np.int64),
        kind=np.asarray(builder.kind, dtype=np.int8),
        flops=np.asarray(builder.flops, dtype=np.float64),
        bytes=np.asarray(builder.bytes, dtype=np.float64),
        labels=builder.labels,
        deps=builder.deps,
        engines=engines,
        attributes=attributes,
    )
