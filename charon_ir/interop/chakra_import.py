"""Execution traces as `sim` IR: a PyTorch execution trace
(torch.profiler.ExecutionTraceObserver's JSON, the host-side format Chakra
converts from), or one rank's Chakra trace (`import_chakra`, below).

Each op the step's Python code called — the outermost `aten::` op of each
nesting, which holds the dispatcher's inner calls — becomes one `sim.generic`
named by its aten op (`aten.mm`), carrying its FLOPs (GEMMs, attention; one per
output element otherwise) and the bytes of its tensors, so every engine prices
it; views and allocations (no kernel runs) are left out. Ops under an autograd
node are the backward phase, ops under `Optimizer.step` the optimizer phase, the
rest the forward. Operands are wired by tensor id within a phase.

A collective (an outermost `c10d::` op, or a `record_param_comms` outside one)
becomes the `coll` op of its kind over a flat byte buffer on the mesh axes its
process group spans (`_mesh`: the groups in use factored into (stride, size)
axes of the world). The group: the `record_param_comms` inside names it
(`pg_name`; its ranks from `## process_group:init ##`, else `global_rank_start`,
`global_rank_stride`, `pg_size`), as NCCL records; gloo records none, so a
trace whose `process_group:init` lists one group uses it and one that lists
several is refused. It waits for the compute issued before it (a NCCL
collective waits for its caller's stream); what reads its tensors waits for it.
A trace that sends or receives (`c10d::send`, `c10d::recv_`: peer and tag
among their arguments) brings its pipeline's: every rank it exchanges messages
with (`import_execution_trace`).
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, NamedTuple

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from charon_ir.dialects import coll, sim
from charon_ir.dialects.sim import COST_ATTR, PIPELINE_ATTR, PhaseKind
from charon_ir.errors import CharonError, read_json_file
from charon_ir.interop.chakra import node_attrs, read_trace, schema

FREE = frozenset({
    "aten::view", "aten::as_strided", "aten::t", "aten::transpose", "aten::reshape", "aten::expand",
    "aten::detach", "aten::detach_", "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze",
    "aten::permute", "aten::_unsafe_view", "aten::alias", "aten::resolve_conj", "aten::resolve_neg",
    "aten::narrow", "aten::split", "aten::chunk", "aten::unbind", "aten::lift_fresh", "aten::_reshape_alias",
    "aten::expand_as", "aten::view_as", "aten::contiguous", "aten::to", "aten::empty", "aten::empty_like",
    "aten::empty_strided", "aten::result_type", "aten::item", "aten::_local_scalar_dense", "aten::is_nonzero",
    "aten::size", "aten::stride", "aten::dim", "aten::flatten", "aten::unflatten", "aten::movedim",
})
"""Ops that run no kernel by themselves (views, allocations, metadata); one of
them holding an op that does (a `contiguous` that copies) is kept."""

_GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm")
RECORD_PARAM_COMMS = "record_param_comms"
"""The node a NCCL process group records around each collective, its attributes
naming the group (`pg_name`, `pg_size`, `global_rank_start`, `global_rank_stride`)
and the message (`collective_name`, `in_msg_nelems`, `out_msg_nelems`, `dtype`)."""
_BACKEND_RECORDS = ("gloo:", "nccl:")
_C10D = {
    # c10d op -> (collective, the argument holding its buffer, whether that is one rank's part)
    "allreduce_": ("all_reduce", 0, False), "allreduce_coalesced_": ("all_reduce", 0, False),
    "broadcast_": ("broadcast", 0, False),
    "allgather_": ("all_gather", 1, True), "_allgather_base_": ("all_gather", 1, True),
    "allgather_coalesced_": ("all_gather", 1, True), "allgather_into_tensor_coalesced_": ("all_gather", 1, True),
    "reduce_scatter_": ("reduce_scatter", 0, True), "_reduce_scatter_base_": ("reduce_scatter", 0, True),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 0, True),
    "alltoall_": ("all_to_all", 1, False), "alltoall_base_": ("all_to_all", 1, False),
    "barrier": ("barrier", 0, False),
}
_P2P = ("send", "recv_", "recv_any_source_")
_COMMS_NAMES = {
    # record_param_comms' collective_name, "_", "base", "coalesced", "into_tensor" dropped
    "allreduce": "all_reduce", "broadcast": "broadcast", "allgather": "all_gather",
    "reducescatter": "reduce_scatter", "reducescattertensor": "reduce_scatter", "alltoall": "all_to_all",
    "alltoallv": "all_to_all", "barrier": "barrier", "wait": "wait", "send": "send", "recv": "recv",
}
_DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1, "Byte": 1,
    "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8,
}
_DTYPES = {
    "float": Float32Type, "double": Float64Type, "c10::Half": Float16Type, "c10::BFloat16": BFloat16Type,
}
_INTS = {"long int": 64, "int": 32, "short int": 16, "signed char": 8, "unsigned char": 8, "bool": 1}


class _Comm(NamedTuple):
    """A communication node of an execution trace."""

    kind: str
    """all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send or recv."""
    nbytes: float
    """The buffer: one rank's part for all_gather and reduce_scatter, the whole otherwise."""
    pg: str
    members: list[int]
    """The group's global ranks."""
    peer: int | None = None
    """A send's or receive's peer (global rank)."""
    tag: int | None = None


def _is_tensor(value: Any) -> bool:
    # [tensor_id, storage_id, offset, numel, itemsize, device]
    return isinstance(value, list) and len(value) == 6 and isinstance(value[-1], str) and all(
        isinstance(v, int) for v in value[:5])


def _tensors(values: Any) -> Iterator[list]:
    if _is_tensor(values):
        yield values
    elif isinstance(values, list):
        for v in values:
            yield from _tensors(v)


def _element_type(type_name: str):
    inner = type_name.removeprefix("Tensor(").removesuffix(")")
    if inner in _DTYPES:
        return _DTYPES[inner]()
    if inner in _INTS:
        return IntegerType(_INTS[inner])
    return None


def load_execution_trace(path: str | Path) -> dict[str, Any]:
    data = read_json_file(path, "PyTorch execution trace (JSON)")
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise CharonError(f"{path}: not a PyTorch execution trace: no 'nodes' list")
    return data


def _collective(kind: str, x: SSAValue, axes: list[str], result: TensorType) -> Operation:
    """The `coll` op of a collective of `kind` (all_reduce, broadcast, all_gather,
    reduce_scatter, all_to_all) on the mesh's `axes`, over dim 0 of `x`."""
    dim0 = IntegerAttr(0, 64)
    if kind == "all_reduce":
        return coll.AllReduceOp(x, "mesh", axes)
    if kind == "broadcast":
        return coll.BroadcastOp(x, "mesh", axes)
    if kind == "all_gather":
        return coll.AllGatherOp(x, "mesh", axes, result, axis=dim0)
    if kind == "reduce_scatter":
        return coll.ReduceScatterOp(x, "mesh", axes, result, axis=dim0)
    return coll.AllToAllOp(x, "mesh", axes, result, split_axis=dim0, concat_axis=dim0)


def _flops(node: dict, shapes: list) -> float:
    name = node["name"]
    try:
        # mm(a, b), addmm(bias, a, b, beta, alpha): the matrices by position
        first = 1 if name in ("aten::addmm", "aten::baddbmm", "aten::addbmm") else 0
        if name in ("aten::mm", "aten::addmm"):
            a, b = shapes[first], shapes[first + 1]
            return 2.0 * a[0] * a[1] * b[1]
        if name in ("aten::bmm", "aten::baddbmm", "aten::addbmm"):
            a, b = shapes[first], shapes[first + 1]
            return 2.0 * a[0] * a[1] * a[2] * b[2]
        if "scaled_dot_product" in name and "attention" in name:
            q, k = shapes[0], shapes[1]
            batch_heads = q[0] * q[1]
            forward = 4.0 * batch_heads * q[2] * k[2] * q[3]
            causal = any(v is True for v in node["inputs"]["values"][3:])
            return (2.5 if "backward" in name else 1.0) * forward * (0.5 if causal else 1.0)
    except (IndexError, TypeError):
        raise CharonError(f"execution trace: node {node['id']} ({name}) has operand shapes {shapes}, "
                          "not those of its op") from None
    return 0.0


class _Importer:
    def __init__(self, data: dict, where: str) -> None:
        self.where = where
        self.nodes: dict[int, dict] = {}
        for i, n in enumerate(data["nodes"]):
            if not isinstance(n, dict) or not isinstance(n.get("id"), int) or not isinstance(n.get("name"), str):
                raise CharonError(f"{where}: nodes[{i}] has no integer id and name")
            for side in ("inputs", "outputs"):
                io = n.get(side)
                if not isinstance(io, dict) or not all(isinstance(io.get(k), list) for k in ("values", "shapes", "types")):
                    raise CharonError(f"{where}: node {n['id']} ({n['name']}) has no {side} values/shapes/types")
            self.nodes[n["id"]] = n
        self.groups, self.world = self._process_groups()
        self.contexts: dict[int, tuple[bool, PhaseKind]] = {}
        self.children: dict[int, list[int]] = {}
        for n in self.nodes.values():
            parent = n.get("ctrl_deps")
            if isinstance(parent, int) and parent in self.nodes:
                self.children.setdefault(parent, []).append(n["id"])

    def _process_groups(self) -> tuple[dict[str, list[int]], int]:
        """pg_name -> ranks, from the `## process_group:init ##` node (the groups
        that existed when recording began; `ranks` empty: the world), and the
        world's size (the default group's)."""
        groups: dict[str, list[int]] = {}
        world = 0
        for n in self.nodes.values():
            if n["name"] != "## process_group:init ##":
                continue
            try:
                entries = json.loads(n["inputs"]["values"][0])
                for e in entries:
                    size = int(e["group_size"])
                    groups[str(e["pg_name"])] = [int(r) for r in e.get("ranks") or range(size)]
                    if e.get("pg_desc") == "default_pg" or not world:
                        world = max(world, size) if e.get("pg_desc") != "default_pg" else size
            except (IndexError, TypeError, ValueError, KeyError, AttributeError):
                raise CharonError(f"{self.where}: node {n['id']} (## process_group:init ##) holds no JSON list "
                                  "of process groups (pg_name, ranks, group_size)") from None
        return groups, world

    def collective(self, node: dict) -> _Comm | None:
        """(collective, buffer bytes, pg_name, member ranks) of a communication
        node; None for one that moves nothing (a barrier, a wait). The buffer is
        one rank's part for all_gather and reduce_scatter, the whole otherwise.
        Its group: the `record_param_comms` inside (NCCL) names it; a trace
        without one (gloo records none) names none, so the one group of
        `## process_group:init ##` is taken, and several are one error."""
        name, where = node["name"], f"{self.where}: node {node['id']} ({node['name']})"
        meta = node if name == RECORD_PARAM_COMMS else next(
            (d for d in self.descendants(node["id"]) if d["name"] == RECORD_PARAM_COMMS), None)
        if meta is not None:
            attrs = {a.get("name"): a.get("value") for a in meta.get("attrs", []) if isinstance(a, dict)}
            raw = str(attrs.get("collective_name", ""))
            key = raw.lower().replace("_base", "").replace("_coalesced", "").replace("_into_tensor", "").replace("_", "")
            kind = _COMMS_NAMES.get(key)
            if kind is None:
                raise CharonError(f"{where}: collective '{raw}' is not one of "
                                  f"{', '.join(sorted(set(_COMMS_NAMES.values()) - {'wait'}))}")
            if kind in ("wait", "barrier"):
                return None
            if kind in ("send", "recv"):
                if meta is node:
                    raise CharonError(f"{where}: point-to-point ({raw}) outside a c10d send or recv: "
                                      "the trace does not say its peer")
                return self._point_to_point(node, kind, attrs, where)
            itemsize = _DTYPE_BYTES.get(str(attrs.get("dtype")))
            if itemsize is None:
                raise CharonError(f"{where}: record_param_comms dtype {attrs.get('dtype')!r} is not one of "
                                  f"{', '.join(_DTYPE_BYTES)}")
            try:
                nelems = int(attrs["out_msg_nelems" if kind == "reduce_scatter" else "in_msg_nelems"])
                pg = str(attrs["pg_name"])
                members = self.groups.get(pg) or [
                    int(attrs["global_rank_start"]) + i * int(attrs["global_rank_stride"])
                    for i in range(int(attrs["pg_size"]))]
            except (KeyError, TypeError, ValueError):
                raise CharonError(f"{where}: record_param_comms lacks integer in/out_msg_nelems, pg_name and "
                                  "pg_size, global_rank_start, global_rank_stride") from None
            return _Comm(kind, float(nelems * itemsize), pg, members)
        op = name.removeprefix("c10d::")
        if op in _P2P:
            return self._point_to_point(node, "send" if op == "send" else "recv", None, where)
        if op not in _C10D:
            raise CharonError(f"{where}: not a collective this importer knows ({', '.join(sorted(_C10D))})")
        kind, arg, _ = _C10D[op]
        if kind == "barrier":
            return None
        pg, members = self._only_group(where)
        values = node["inputs"]["values"]
        nbytes = float(sum(t[3] * t[4] for t in _tensors(values[arg]))) if arg < len(values) else 0.0
        return _Comm(kind, nbytes, pg, members)

    def _only_group(self, where: str) -> tuple[str, list[int]]:
        if len(self.groups) != 1:
            raise CharonError(f"{where}: names no process group (no record_param_comms: a gloo trace), and "
                              f"the trace has {len(self.groups)} groups, not one to take")
        (pg, members), = self.groups.items()
        return pg, members

    def _point_to_point(self, node: dict, kind: str, attrs: dict | None, where: str
                        ) -> _Comm:
        """(send | recv, bytes, pg_name, member ranks, the peer's global rank, tag)
        of a c10d send or recv (its arguments: tensors, group, peer's rank in the
        group, tag)."""
        if attrs is not None and str(attrs.get("pg_name")) in self.groups:
            pg = str(attrs["pg_name"])
            members = self.groups[pg]
        elif attrs is not None:
            try:
                pg = str(attrs["pg_name"])
                members = [int(attrs["global_rank_start"]) + i * int(attrs["global_rank_stride"])
                           for i in range(int(attrs["pg_size"]))]
            except (KeyError, TypeError, ValueError):
                raise CharonError(f"{where}: record_param_comms lacks pg_name and pg_size, global_rank_start, "
                                  "global_rank_stride") from None
        else:
            pg, members = self._only_group(where)
        values = node["inputs"]["values"]
        if len(values) < 4 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values[2:4]):
            raise CharonError(f"{where}: a point-to-point op without an integer peer and tag (tensors, "
                              "group, peer, tag)")
        peer, tag = values[2], values[3]
        if not 0 <= peer < len(members):
            raise CharonError(f"{where}: peer {peer} is not a rank of its group of {len(members)}")
        return _Comm(kind, float(sum(t[3] * t[4] for t in _tensors(values[0]))), pg, members, members[peer], tag)

    def context(self, node_id: int) -> tuple[bool, PhaseKind]:
        """Whether an aten op encloses the node, and the phase its enclosing
        nodes put it in (memoized along the parent chain: autograd nodes nest
        deeply)."""
        found = self.contexts.get(node_id)
        if found is not None:
            return found
        chain = []
        current: int | None = node_id
        while current is not None and current not in self.contexts:
            chain.append(current)
            parent = self.nodes[current].get("ctrl_deps")
            current = parent if isinstance(parent, int) and parent in self.nodes and parent != current else None
            if len(chain) > len(self.nodes):
                raise CharonError(f"{self.where}: the nodes' ctrl_deps (parents) make a cycle")
        # what the chain's top inherits: its parent's context, with the parent itself
        inside, phase = (self._with(current, *self.contexts[current]) if current is not None
                         else (False, PhaseKind.FORWARD))
        for nid in reversed(chain):
            self.contexts[nid] = (inside, phase)
            inside, phase = self._with(nid, inside, phase)
        return self.contexts[node_id]

    def _with(self, node_id: int, inside: bool, phase: PhaseKind) -> tuple[bool, PhaseKind]:
        """The context a node gives its children."""
        name = self.nodes[node_id]["name"]
        inside = inside or name.startswith(("aten::", "c10d::", RECORD_PARAM_COMMS))
        if name.startswith(("Optimizer.step", "Optimizer.zero_grad")):
            phase = PhaseKind.OPTIMIZER
        elif phase == PhaseKind.FORWARD and (name.startswith("autograd::engine::evaluate_function")
                                             or name.endswith(("Backward0", "Backward1"))):
            phase = PhaseKind.BACKWARD
        return inside, phase

    def descendants(self, node_id: int) -> Iterator[dict]:
        stack = list(self.children.get(node_id, ()))
        while stack:
            n = self.nodes[stack.pop()]
            yield n
            stack.extend(self.children.get(n["id"], ()))

    def kernels(self) -> list[tuple[PhaseKind, dict]]:
        """(phase, node) of every op that runs work, in execution (id) order:
        outermost aten ops, and collectives (an outermost c10d op, or a
        `record_param_comms` outside one). A top-level op after the backward
        began is the backward's (a gradient all-reduce after `loss.backward()`),
        one after the optimizer's step the optimizer's."""
        out = []
        backward_began = stepped = False
        for node_id in sorted(self.nodes):
            node = self.nodes[node_id]
            name = node["name"]
            if name.startswith(_BACKEND_RECORDS):
                continue  # the backend running a c10d op (on its own thread): the op is the record
            if not name.startswith(("aten::", "c10d::", RECORD_PARAM_COMMS)):
                if name.startswith("Optimizer.step"):
                    stepped = True
                continue
            inside, phase = self.context(node_id)
            if inside:
                continue  # inside another aten or c10d op: its time is that op's
            if phase == PhaseKind.BACKWARD:
                backward_began = True
            elif phase == PhaseKind.FORWARD and (backward_began or stepped):
                phase = PhaseKind.OPTIMIZER if stepped else PhaseKind.BACKWARD
            if name in FREE and all(d["name"] in FREE for d in self.descendants(node_id)
                                    if d["name"].startswith("aten::")):
                continue
            out.append((phase, node))
        if not out:
            raise CharonError(f"{self.where}: no aten ops that run work: nothing to simulate")
        return out

    def work(self, node: dict) -> tuple[float, float]:
        """FLOPs (its own, else those of the GEMMs and attention inside it, else
        one per output element) and bytes of its tensors."""
        inner = [node, *self.descendants(node["id"])]
        flops = sum(_flops(n, n["inputs"]["shapes"]) for n in inner
                    if n["name"] in _GEMMS or "scaled_dot_product" in n["name"])
        if not flops:
            flops = float(sum(t[3] for t in _tensors(node["outputs"]["values"])))
        nbytes = float(sum(t[3] * t[4] for side in ("inputs", "outputs") for t in _tensors(node[side]["values"])))
        return flops, nbytes

    def plan(self) -> tuple[dict[PhaseKind, list], dict[int, _Comm | None]]:
        """The phases' nodes and what each communication node is (`collective`)."""
        phases: dict[PhaseKind, list] = {
            kind: [] for kind in (PhaseKind.FORWARD, PhaseKind.BACKWARD, PhaseKind.OPTIMIZER)
        }
        comms: dict[int, _Comm | None] = {}
        for phase, node in self.kernels():
            phases[phase].append(node)
            if not node["name"].startswith("aten::"):
                comms[node["id"]] = self.collective(node)
        return phases, comms

    def build(self, phases: dict[PhaseKind, list], comms: dict[int, _Comm | None]) -> ModuleOp:
        """One rank's step: a phase per phase of the trace."""
        used = _used_groups([comms])
        ops: list = []
        axes_of: dict[str, list[str]] = {}
        if used:
            world = self.world or 1 + max(r for members in used.values() for r in members)
            mesh, axes_of = _mesh(used, set(used), world, self.where)
            ops.append(coll.GridOp("mesh", mesh))
        inputs: list = []
        free: dict[TensorType, SSAValue] = {}
        phase_ops = []
        for kind, nodes in phases.items():
            if nodes:
                block = self.fill(nodes, comms, axes_of, inputs, free, {})
                phase_ops.append(sim.PhaseOp(kind, Region(block)))
        return ModuleOp([*ops, *inputs, *phase_ops])

    def fill(self, nodes: list, comms: dict[int, _Comm | None], axes_of: dict[str, list[str]], inputs: list,
             free: dict, shift_to: dict[int, int]) -> Block:
        """A block of `nodes`' ops: aten ops as `sim.generic`, collectives (and,
        with `shift_to` (peer rank -> shift along `pp`), sends and receives) as
        `coll` ops; operands wired by tensor id."""
        block = Block()
        values: dict[int, SSAValue] = {}
        last: list[SSAValue] = []  # the latest compute op's result
        for node in nodes:
            inputs_of = [values[t[0]] for t in _tensors(node["inputs"]["values"]) if t[0] in values]
            if node["id"] in comms:
                # issued after the compute before it, which it waits for (as a
                # NCCL collective waits for its caller's stream)
                self._collective(block, node, comms[node["id"]], last, values, axes_of, inputs, free, shift_to)
                continue
            result_types, produced = [], []
            outs = node["outputs"]
            for value, shape, type_name in zip(outs["values"], outs["shapes"], outs["types"]):
                element = _element_type(type_name) if _is_tensor(value) else None
                if element is None or not isinstance(shape, list) or any(
                        not isinstance(d, int) or d < 1 for d in shape):
                    continue
                result_types.append(TensorType(element, shape))
                produced.append(value[0])
            flops, nbytes = self.work(node)
            op = sim.GenericOp(node["name"].replace("::", "."), inputs_of, result_types, flops, nbytes)
            block.add_op(op)
            for tensor_id, result in zip(produced, op.results):
                values[tensor_id] = result
            last = list(op.results[:1]) or last
        block.add_op(sim.YieldOp())
        return block

    @staticmethod
    def _collective(block: Block, node: dict, found, deps: list[SSAValue], values: dict[int, SSAValue],
                    axes_of: dict[str, list[str]], inputs: list, free: dict, shift_to: dict[int, int]) -> None:
        """A collective as the `coll` op of its kind over a flat byte buffer made
        by `deps`; what reads its tensors afterwards (in place, or its outputs)
        waits for it. One over a single rank, or moving nothing, is left out."""
        if found is None or len(found.members) < 2:
            return
        kind, nbytes, pg, members = found.kind, found.nbytes, found.pg, found.members
        byte = IntegerType(8)
        per = max(round(nbytes), 1)
        if kind in ("send", "recv"):
            props = {"grid": SymbolRefAttr("mesh"), "grid_axes": ArrayAttr([StringAttr("pp")]),
                     "shift": IntegerAttr(shift_to[found.peer], 64)}
            message = TensorType(byte, [per])
            if kind == "recv":  # posted at the start; what reads the tensor it fills waits for it
                op = coll.RecvOp.build(result_types=[message], properties=props)
                block.add_op(op)
                for t in _tensors(node["inputs"]["values"]):
                    values[t[0]] = op.results[0]
                return
            buffer = sim.GenericOp("c10d.buffer", deps, [message], 0.0, 0.0)
            block.add_op(buffer)
            block.add_op(coll.SendOp.build(operands=[buffer.results[0]], properties=props))
            return
        group, axes = len(members), axes_of[pg]
        if kind == "all_to_all":
            per = -(-per // group) * group  # whole blocks per rank
        shapes = {"all_gather": (per, per * group), "reduce_scatter": (per * group, per)}.get(kind, (per, per))
        source, result = TensorType(byte, [shapes[0]]), TensorType(byte, [shapes[1]])
        if deps:
            # the buffer: made by what the collective reads (a free op: no kernel)
            buffer = sim.GenericOp("c10d.buffer", deps, [source], 0.0, 0.0)
            block.add_op(buffer)
            x = buffer.results[0]
        else:  # first in its phase: a step input, ready at the start
            if source not in free:
                op = sim.InputOp(f"c10d_buffer_{len(free)}", source)
                inputs.append(op)
                free[source] = op.result
            x = free[source]
        op = _collective(kind, x, axes, result)
        block.add_op(op)
        for t in (*_tensors(node["outputs"]["values"]), *_tensors(node["inputs"]["values"])):
            values[t[0]] = op.results[0]


def _used_groups(comms: list[dict[int, _Comm | None]]) -> dict[str, list[int]]:
    """pg_name -> ranks of the groups the collectives run on (point-to-point
    messages travel on the pipeline's axis instead)."""
    return {c.pg: c.members for found in comms for c in found.values()
            if c is not None and c.peer is None and len(c.members) > 1}


_ET_FILE = re.compile(r"(?P<prefix>.+)\.(?P<rank>\d+)(?P<suffix>\.[^\d].*)")
"""A rank's execution trace among its pipeline's: `{prefix}.{rank}{suffix}`
(`step.3.et.json.gz`)."""


def import_execution_trace(path: str | Path) -> ModuleOp:
    """The `sim` module of one rank's PyTorch execution trace. One that sends
    or receives brings its pipeline: the traces of the ranks it exchanges
    messages with, transitively (`{prefix}.{rank}{suffix}` beside it), each rank
    one `sim.stage` (its position along their axis, `pp`) whose one phase is its
    step in execution order, the k-th send from a rank to another paired with
    the other's k-th receive (checked: the same size and tag)."""
    path = Path(path)
    first = _Importer(load_execution_trace(path), str(path))
    phases, comms = first.plan()
    p2p = [c for c in comms.values() if c is not None and c.peer is not None]
    if not p2p:
        return first.build(phases, comms)
    m = _ET_FILE.fullmatch(path.name)
    if m is None:
        raise CharonError(f"{path}: sends or receives, and its name says no rank ({{prefix}}.{{rank}}.et.json, "
                          "the name its peers' traces are found by)")
    ranks = {int(m.group("rank")): (first, phases, comms)}
    todo = [int(m.group("rank"))]
    while todo:
        rank = todo.pop()
        for c in ranks[rank][2].values():
            if c is None or c.peer is None or c.peer in ranks:
                continue
            peer_path = path.with_name(f"{m.group('prefix')}.{c.peer}{m.group('suffix')}")
            if not peer_path.is_file():
                raise CharonError(f"{path}: rank {rank} exchanges messages with rank {c.peer}, whose trace "
                                  f"{peer_path} is missing (every stage of the pipeline is imported)")
            importer = _Importer(load_execution_trace(peer_path), str(peer_path))
            ranks[c.peer] = (importer, *importer.plan())
            todo.append(c.peer)
    _pair_messages({r: (imp.where, [(n, comms[n["id"]]) for nodes in ph.values() for n in nodes
                                    if comms.get(n["id"]) is not None and comms[n["id"]].peer is not None])
                    for r, (imp, ph, comms) in ranks.items()})
    stages = sorted(ranks)
    axis = _pipeline_axis(stages, path)
    used = _used_groups([comms for _, _, comms in ranks.values()])
    world = max([imp.world for imp, _, _ in ranks.values()] + [1 + max(stages)])
    mesh, axes_of = _mesh(used, set(used), world, str(path), axis)
    ops: list = [coll.GridOp("mesh", mesh)]
    position = {r: i for i, r in enumerate(stages)}
    for r in stages:
        importer, phases, comms = ranks[r]
        nodes = sorted((n for ns in phases.values() for n in ns), key=lambda n: n["id"])
        inputs: list = []
        block = importer.fill(nodes, comms, axes_of, inputs, {},
                              {peer: i - position[r] for peer, i in position.items()})
        ops.append(sim.StageOp([position[r]], Region(Block([*inputs, sim.PhaseOp(PhaseKind.FORWARD, Region(block))]))))
    module = ModuleOp(ops)
    module.attributes[PIPELINE_ATTR] = _one_run(len(stages))
    return module


def _pair_messages(ranks: dict[int, tuple[str, list]]) -> None:
    """The k-th send from rank a to rank b and the k-th receive at b from a
    are one message: the same size and tag (lowering pairs them in order)."""
    out: dict[tuple[int, int], list] = {}
    into: dict[tuple[int, int], list] = {}
    for r, (_, found) in ranks.items():
        for node, c in found:
            kind, nbytes, peer, tag = c.kind, c.nbytes, c.peer, c.tag
            key = (r, peer) if kind == "send" else (peer, r)
            (out if kind == "send" else into).setdefault(key, []).append((node, nbytes, tag))
    for key in sorted(set(out) | set(into)):
        sent, got = out.get(key, []), into.get(key, [])
        if len(sent) != len(got):
            raise CharonError(f"{ranks[key[0]][0]}: rank {key[0]} sends {len(sent)} messages to rank {key[1]}, "
                              f"which receives {len(got)} from it")
        for k, ((a, size_a, tag_a), (b, size_b, tag_b)) in enumerate(zip(sent, got)):
            if (size_a, tag_a) != (size_b, tag_b):
                raise CharonError(f"{ranks[key[0]][0]}: message {k} from rank {key[0]} to rank {key[1]}: the send "
                                  f"(node {a['id']}) has {size_a:.0f} bytes and tag {tag_a}, its receive (node "
                                  f"{b['id']}) {size_b:.0f} bytes and tag {tag_b} (sends and receives pair in order)")


def _one_run(stages: int) -> sim.PipelineAttr:
    """The `#sim.pipeline` of imported stages: each one's phase runs once (the
    trace is the step's schedule already)."""
    return sim.PipelineAttr(stages, 1, "gpipe", 1, [0] * stages)


# --- Chakra execution traces (.et) -------------------------------------------

_COLLECTIVE_OPS = {"ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL", "BROADCAST"}
_NODE_TYPES = ("COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE")
_TRACE_FILE = re.compile(r"(?P<prefix>.+)\.(?P<rank>\d+)\.et")
"""ASTRA-sim's trace naming, `{prefix}.{npu}.et`: how the peers of a rank's
sends and receives are found beside it."""
TRACE_ENGINE = "trace"
"""The `cost` engine of a compute node priced at its trace's duration."""


def _factors(members: list[int], where: str, pg: str) -> list[tuple[int, int]]:
    """A process group as (stride, size) mesh axes, innermost first: the ranks
    that differ from its lowest only along those axes (a tp group: [(1, 8)]; a
    dp x cp group: two axes). One error when the ranks form no such grid."""
    base, ranks = members[0], sorted(members)
    factors: list[tuple[int, int]] = []
    span = 1
    while span < len(ranks):
        stride = ranks[span] - base
        size = 1
        while size * span < len(ranks) and ranks[size * span] == base + size * stride:
            size += 1
        if size < 2 or len(ranks) % (span * size):
            raise CharonError(f"{where}: process group {pg} {ranks[:8]}... is not a grid of ranks")
        factors.append((stride, size))
        span *= size
    expected = sorted(base + sum(i * s for i, (s, _) in zip(idx, factors))
                      for idx in product(*(range(n) for _, n in factors)))
    if expected != ranks:
        raise CharonError(f"{where}: process group {pg} {ranks[:8]}... is not a grid of ranks")
    return factors


def _mesh(groups: dict[str, list[int]], used: set[str], world: int, where: str,
          pipeline: tuple[int, int] | None = None) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Mesh axes (outermost first, with their sizes) in which every used process
    group is a set of axes, and each group's axes. Ranks no group spans get an
    axis of their own, so the mesh holds the whole world. `pipeline` (stride,
    size) is the axis the imported ranks' sends and receives run along: it is
    named `pp`, the axis lowering reads as pipeline stages."""
    factors = {pg: _factors(groups[pg], where, pg) for pg in sorted(used)}
    sizes: dict[int, int] = {}
    for fs in [*factors.values(), [pipeline] if pipeline else []]:
        for stride, size in fs:
            if sizes.setdefault(stride, size) != size:
                raise CharonError(f"{where}: process groups disagree on the mesh: stride {stride} spans "
                                  f"{sizes[stride]} and {size} ranks")
    axes: list[tuple[int, int]] = []  # (stride, size), innermost first, gaps filled
    stride = 1
    for s in sorted(sizes):
        if s % stride:
            raise CharonError(f"{where}: process groups with strides {sorted(sizes)} form no mesh")
        if s > stride:
            axes.append((stride, s // stride))
        axes.append((s, sizes[s]))
        stride = s * sizes[s]
    if world % stride:
        raise CharonError(f"{where}: process groups span {stride} ranks, not a divisor of the world's {world}")
    if world > stride:
        axes.append((stride, world // stride))
    names = {s: f"a{i}" for i, (s, _) in enumerate(reversed(axes))}
    if pipeline:
        names[pipeline[0]] = "pp"
    mesh = {names[s]: n for s, n in reversed(axes)}
    return mesh, {pg: [names[s] for s, _ in sorted(fs, reverse=True)] for pg, fs in factors.items()}


def _ordered(nodes: list, where: str) -> list:
    """The nodes in an order their dependencies allow (lowest id first among the
    ready ones: a trace written in program order keeps it). A dependency on a
    node the trace lacks, or a cycle, is one error."""
    by_id = {n.id: n for n in nodes}
    if len(by_id) != len(nodes):
        raise CharonError(f"{where}: two nodes share an id")
    waiting: dict[int, int] = {}
    users: dict[int, list[int]] = {}
    for n in nodes:
        deps = set(n.data_deps) | set(n.ctrl_deps)
        for d in deps:
            if d not in by_id:
                raise CharonError(f"{where}: node {n.id} ({n.name}) depends on node {d}, which the trace lacks")
            users.setdefault(d, []).append(n.id)
        waiting[n.id] = len(deps)
    ready = [i for i, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(by_id[i])
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(nodes):
        stuck = min(i for i, count in waiting.items() if count > 0)
        raise CharonError(f"{where}: the dependencies of node {stuck} ({by_id[stuck].name}) make a cycle")
    return out


def _read_rank(path: Path) -> tuple[Any, list]:
    meta, nodes = read_trace(path)
    types = schema().node_type_names
    for n in nodes:
        if types[n.type] not in _NODE_TYPES:
            raise CharonError(f"{path}: node {n.id} ({n.name}) is a {types[n.type]}: only compute, collective, "
                              "send and receive nodes are imported")
    return meta, _ordered(nodes, str(path))


def _peers(path: Path, rank: int | None, nodes: list) -> list[tuple[Any, bool, int]]:
    """(node, is a send, peer) of each send and receive of a rank's trace; each
    must name the rank itself as its source (a send) or destination (a receive)."""
    s = schema()
    send, recv = s.node_types["COMM_SEND_NODE"], s.node_types["COMM_RECV_NODE"]
    out = []
    for n in nodes:
        if n.type not in (send, recv):
            continue
        a = node_attrs(n)
        if rank is None:
            raise CharonError(f"{path}: node {n.id} ({n.name}) is point-to-point, and the file's name says no "
                              "rank ({prefix}.{rank}.et, ASTRA-sim's naming) to find its peers' traces by")
        src, dst = a.get("comm_src"), a.get("comm_dst")
        if not isinstance(src, int) or not isinstance(dst, int):
            raise CharonError(f"{path}: node {n.id} ({n.name}) is point-to-point without integer comm_src "
                              "and comm_dst")
        mine, peer = (src, dst) if n.type == send else (dst, src)
        if mine != rank:
            raise CharonError(f"{path}: node {n.id} ({n.name}) {'sends from' if n.type == send else 'receives at'} "
                              f"rank {mine}, but the file is rank {rank}'s")
        if peer == rank or peer < 0:
            raise CharonError(f"{path}: node {n.id} ({n.name}) has peer rank {peer}")
        out.append((n, n.type == send, peer))
    return out


@dataclass
class _Rank:
    path: Path
    meta: Any
    nodes: list
    p2p: list[tuple[Any, bool, int]]


def _pipeline(path: Path, meta: Any, nodes: list) -> dict[int, _Rank]:
    """The given rank's trace and, through their sends and receives, every rank
    it exchanges messages with, transitively (its pipeline: each read from
    `{prefix}.{rank}.et` beside it), by rank."""
    m = _TRACE_FILE.fullmatch(path.name)
    rank = int(m.group("rank")) if m else None
    p2p = _peers(path, rank, nodes)  # without a rank: raises at the first send or receive
    if not p2p:
        return {}
    assert rank is not None and m is not None
    found = {rank: _Rank(path, meta, nodes, p2p)}
    todo = [rank]
    while todo:
        for _, _, peer in found[todo.pop()].p2p:
            if peer in found:
                continue
            peer_path = path.with_name(f"{m.group('prefix')}.{peer}.et")
            if not peer_path.is_file():
                raise CharonError(f"{path}: rank {rank}'s pipeline exchanges messages with rank {peer}, whose "
                                  f"trace {peer_path} is missing (every stage of the pipeline is imported)")
            peer_meta, peer_nodes = _read_rank(peer_path)
            found[peer] = _Rank(peer_path, peer_meta, peer_nodes, _peers(peer_path, peer, peer_nodes))
            todo.append(peer)
    return found


def _pipeline_axis(ranks: list[int], where: Path) -> tuple[int, int]:
    """The (stride, size) of the mesh axis the ranks of a pipeline lie on."""
    if len(ranks) < 2:
        raise CharonError(f"{where}: its sends and receives reach no other rank")
    stride = ranks[1] - ranks[0]
    if any(b - a != stride for a, b in zip(ranks, ranks[1:])):
        raise CharonError(f"{where}: the ranks its messages reach, {ranks[:8]}, are not evenly spaced: "
                          "not one pipeline axis of a mesh")
    return stride, len(ranks)


def _check_messages(ranks: dict[int, _Rank]) -> None:
    """The k-th send from rank a to rank b and the k-th receive at b from a are
    one message: the same tag and size (lowering pairs them in that order)."""
    sends: dict[tuple[int, int], list] = {}
    recvs: dict[tuple[int, int], list] = {}
    for r, rank in ranks.items():
        for n, is_send, peer in rank.p2p:
            (sends if is_send else recvs).setdefault((r, peer) if is_send else (peer, r), []).append(n)
    for key in sorted(set(sends) | set(recvs)):
        out, into = sends.get(key, []), recvs.get(key, [])
        if len(out) != len(into):
            raise CharonError(f"{ranks[key[0]].path}: rank {key[0]} sends {len(out)} messages to rank {key[1]}, "
                              f"which receives {len(into)} from it")
        for k, (a, b) in enumerate(zip(out, into)):
            sa, sb = node_attrs(a), node_attrs(b)
            for field in ("comm_tag", "comm_size"):
                if sa.get(field) != sb.get(field):
                    raise CharonError(
                        f"{ranks[key[0]].path}: message {k} from rank {key[0]} to rank {key[1]}: the send "
                        f"(node {a.id}) has {field} {sa.get(field)}, its receive (node {b.id}) {sb.get(field)} "
                        "(sends and receives pair in order)")


def _groups(path: Path, groups_file: str | Path | None) -> tuple[Path, dict[str, list[int]]]:
    gfile = Path(groups_file) if groups_file else path.parent / "comm_group.json"
    try:
        return gfile, {str(k): [int(r) for r in v] for k, v in json.loads(gfile.read_text()).items()}
    except OSError:
        raise CharonError(f"{path}: its collectives name process groups, and {gfile} (pg_name -> ranks) "
                          "cannot be read") from None
    except (ValueError, TypeError, AttributeError):
        raise CharonError(f"{gfile}: not a JSON object of pg_name -> list of ranks") from None


def import_chakra(path: str | Path, groups_file: str | Path | None = None, reprice: bool = False) -> ModuleOp:
    """The `sim` module of one rank's Chakra trace: a compute node becomes a
    `sim.generic` named by the node (its FLOPs from `num_ops`, bytes from
    `tensor_size` when given) priced at the node's duration (`charon_duration_s`,
    else a nonzero `duration_micros`; with `reprice`, or without either, the
    engines price it), a collective the `coll` op of its type on the mesh axes
    its process group spans (`comm_group.json` beside the trace, or
    `groups_file`), its buffer `comm_size` bytes. Data and control dependencies
    become operands.

    A trace with sends and receives brings its pipeline: the traces of every
    rank it exchanges messages with (transitively, `{prefix}.{rank}.et` beside
    it) are imported too, each rank one `sim.stage` (its position along the
    ranks' axis, named `pp`) whose one phase is its whole step, and the k-th
    send from a rank to another becomes the `coll.send` paired with the other's
    k-th `coll.recv` (checked: the same `comm_tag` and `comm_size`). The module's
    `sim.pipeline` runs each stage's phase once (one micro-batch: the trace is
    the step's schedule already)."""
    path = Path(path)
    meta, nodes = _read_rank(path)
    pipeline = _pipeline(path, meta, nodes)
    ranks = pipeline or {-1: _Rank(path, meta, nodes, [])}
    s = schema()
    colls = {r: [n for n in rank.nodes if n.type == s.node_types["COMM_COLL_NODE"]] for r, rank in ranks.items()}
    groups: dict[str, list[int]] = {}
    used: set[str] = set()
    if any(colls.values()):
        gfile, groups = _groups(path, groups_file)
        for r, found in colls.items():
            for n in found:
                a = node_attrs(n)
                if str(a.get("pg_name")) not in groups:
                    raise CharonError(f"{ranks[r].path}: node {n.id} ({n.name}) names process group "
                                      f"{a.get('pg_name')!r}, which {gfile} lacks")
                kind = s.comm_type_names.get(a.get("comm_type"))
                if kind not in _COLLECTIVE_OPS:
                    raise CharonError(f"{ranks[r].path}: node {n.id} ({n.name}) has collective type "
                                      f"{kind or a.get('comm_type')}: imported are {', '.join(sorted(_COLLECTIVE_OPS))}")
                used.add(str(a["pg_name"]))
    stages = sorted(pipeline)
    axis = None
    if pipeline:
        _check_messages(pipeline)
        axis = _pipeline_axis(stages, path)
    mesh: dict[str, int] = {}
    axes_of: dict[str, list[str]] = {}
    if used or axis:
        world = int(node_attrs(meta).get("world_size") or 0) or 1 + max(
            [r for g in groups.values() for r in g] + stages)
        mesh, axes_of = _mesh(groups, used, world, str(path), axis)
    ops: list = []
    if mesh:
        ops.append(coll.GridOp("mesh", mesh))
    priced: list = []
    if not pipeline:
        inputs: list = []
        phase = _phase(ranks[-1], groups, axes_of, {}, reprice, priced, inputs)
        module = ModuleOp([*ops, *inputs, phase])
        _attach(priced)
        return module
    position = {r: i for i, r in enumerate(stages)}
    for r in stages:
        inputs = []
        phase = _phase(pipeline[r], groups, axes_of, position, reprice, priced, inputs, position[r])
        ops.append(sim.StageOp([position[r]], Region(Block([*inputs, phase]))))
    module = ModuleOp(ops)
    _attach(priced)
    module.attributes[PIPELINE_ATTR] = _one_run(len(stages))
    return module


def _recorded(op, a: dict[str, Any], node, reprice: bool, priced: list) -> None:
    """Note the node's recorded duration as `op`'s price (in `priced`): a compute
    node's `charon_duration_s` (the exporter's exact seconds), else its nonzero
    `duration_micros`; a communication node's `charon_duration_s` only (the
    project's price, which may count what Chakra cannot say, as a sequence-
    parallel collective overlapped with GEMMs; a measured one includes the wait
    for the slowest peer, so the engines re-price it). With `reprice`, none."""
    if reprice:
        return
    exact = a.get("charon_duration_s")
    if isinstance(exact, float) and 0 <= exact < float("inf"):
        priced.append((op, exact))
    elif isinstance(op, sim.GenericOp) and node.duration_micros > 0:
        priced.append((op, node.duration_micros * 1e-6))


def _attach(priced: list) -> None:
    """The noted durations as `cost` attributes (cost-annotate keeps them); a
    collective's bytes need its grid, so the ops are in their module by now."""
    for op, seconds in priced:
        if isinstance(op, sim.GenericOp):
            cost = sim.CostAttr(seconds, op.flops(), op.bytes_moved(), TRACE_ENGINE)
        else:
            cost = sim.CostAttr(seconds, 0.0, op.ring_bytes_per_rank(), TRACE_ENGINE)
        op.attributes[COST_ATTR] = cost


def _lane(kind: str, a: dict[str, Any], axes_of: dict[str, list[str]]) -> Any:
    """The stream lowering puts a node on, for communication nodes: one per
    collective group's axes, one for sends and one for receives; None for compute."""
    if kind == "COMM_COLL_NODE":
        return tuple(axes_of[str(a["pg_name"])])
    return {"COMM_SEND_NODE": "send", "COMM_RECV_NODE": "recv"}.get(kind)


def _phase(rank: _Rank, groups: dict[str, list[int]], axes_of: dict[str, list[str]],
           position: dict[int, int], reprice: bool, priced: list, inputs: list, me: int = 0) -> sim.PhaseOp:
    """One rank's nodes as the ops of one `forward` phase; the step inputs it
    reads are appended to `inputs`."""
    s = schema()
    types = s.node_type_names
    block = Block()
    results: dict[int, SSAValue] = {}
    byte = IntegerType(8)
    token = TensorType(byte, [1])
    peers = {id(n): peer for n, _, peer in rank.p2p}
    lane: dict[int, Any] = {}
    free: dict[TensorType, SSAValue] = {}

    def buffer_of(deps: list[SSAValue], t: TensorType) -> SSAValue:
        """A communication node's buffer: made by what it waits for (a free op:
        no kernel); one it waits for nothing for is a step input, ready at the
        start (a free op would wait for the compute issued before it)."""
        if deps:
            op = sim.GenericOp("chakra.buffer", deps, [t], 0.0, 0.0)
            block.add_op(op)
            return op.results[0]
        if t not in free:
            op = sim.InputOp(f"chakra_buffer_{len(free)}", t)
            inputs.append(op)
            free[t] = op.result
        return free[t]

    for n in rank.nodes:
        a = node_attrs(n)
        kind = types[n.type]
        lane[n.id] = _lane(kind, a, axes_of)
        # a communication node's dependencies on its own lane are its lane's
        # order, which lowering keeps (one stream per lane): as operands they
        # would hold its buffer, made on the compute stream, until they are done
        deps = [results[d] for d in dict.fromkeys((*n.data_deps, *n.ctrl_deps))
                if lane[n.id] is None or lane[d] != lane[n.id]]
        if kind == "COMP_NODE":
            flops, nbytes = float(a.get("num_ops") or 0), float(a.get("tensor_size") or 0)
            op = sim.GenericOp(n.name.replace("::", "."), deps, [token], flops, nbytes)
            _recorded(op, a, n, reprice, priced)
            block.add_op(op)
            results[n.id] = op.results[0]
            continue
        if kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
            size = max(int(a.get("comm_size") or 0), 1)
            props = {"grid": SymbolRefAttr("mesh"), "grid_axes": ArrayAttr([StringAttr("pp")]),
                     "shift": IntegerAttr(position[peers[id(n)]] - me, 64)}
            message = TensorType(byte, [size])
            if kind == "COMM_RECV_NODE":
                # the project's receive is posted at the start and completes
                # with its message: what the node waited for besides is dropped
                op = coll.RecvOp.build(result_types=[message], properties=props)
                _recorded(op, a, n, reprice, priced)
                block.add_op(op)
                results[n.id] = op.results[0]
                continue
            # a send reads a buffer made by what it waits for; what waits for
            # the send waits for that buffer (a send has no result)
            buffer = buffer_of(deps, message)
            send = coll.SendOp.build(operands=[buffer], properties=props)
            _recorded(send, a, n, reprice, priced)
            block.add_op(send)
            results[n.id] = buffer
            continue
        pg, kind = str(a["pg_name"]), s.comm_type_names[a["comm_type"]]
        axes = axes_of[pg]
        size = max(int(a.get("comm_size") or 0), 1)
        group = len(groups[pg])
        if kind in ("ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL"):
            size = -(-size // group) * group  # whole blocks per rank
        full, part = TensorType(byte, [size]), TensorType(byte, [size // group])
        x = buffer_of(deps, part if kind == "ALL_GATHER" else full)
        op = _collective(kind.lower(), x, axes, part if kind == "REDUCE_SCATTER" else full)
        _recorded(op, a, n, reprice, priced)
        block.add_op(op)
        results[n.id] = op.results[0]
    block.add_op(sim.YieldOp())
    return sim.PhaseOp(PhaseKind.FORWARD, Region(block))
