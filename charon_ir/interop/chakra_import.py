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

Collectives (c10d / NCCL nodes) are refused in one line: a single-process trace
has none, and a multi-rank trace needs its process groups mapped onto a mesh,
which this importer does not do yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Block, Region, SSAValue

from charon_ir.dialects import coll, sim
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
_DTYPES = {
    "float": Float32Type, "double": Float64Type, "c10::Half": Float16Type, "c10::BFloat16": BFloat16Type,
}
_INTS = {"long int": 64, "int": 32, "short int": 16, "signed char": 8, "unsigned char": 8, "bool": 1}


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


def _flops(node: dict, shapes: list) -> float:
    name = node["name"]
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = shapes[-2], shapes[-1]
            return 2.0 * a[0] * a[1] * b[1]
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = shapes[-2], shapes[-1]
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
        self.contexts: dict[int, tuple[bool, str]] = {}
        self.children: dict[int, list[int]] = {}
        for n in self.nodes.values():
            parent = n.get("ctrl_deps")
            if isinstance(parent, int) and parent in self.nodes:
                self.children.setdefault(parent, []).append(n["id"])

    def context(self, node_id: int) -> tuple[bool, str]:
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
        inside, phase = self._with(current, *self.contexts[current]) if current is not None else (False, "forward")
        for nid in reversed(chain):
            self.contexts[nid] = (inside, phase)
            inside, phase = self._with(nid, inside, phase)
        return self.contexts[node_id]

    def _with(self, node_id: int, inside: bool, phase: str) -> tuple[bool, str]:
        """The context a node gives its children."""
        name = self.nodes[node_id]["name"]
        inside = inside or name.startswith("aten::")
        if name.startswith(("Optimizer.step", "Optimizer.zero_grad")):
            phase = "optimizer"
        elif phase == "forward" and (name.startswith("autograd::engine::evaluate_function")
                                     or name.endswith(("Backward0", "Backward1"))):
            phase = "backward"
        return inside, phase

    def descendants(self, node_id: int) -> Iterator[dict]:
        stack = list(self.children.get(node_id, ()))
        while stack:
            n = self.nodes[stack.pop()]
            yield n
            stack.extend(self.children.get(n["id"], ()))

    def is_comm(self, name: str) -> bool:
        n = name.lower()
        return n.startswith("c10d::") or "nccl" in n or n == "record_param_comms"

    def kernels(self) -> list[tuple[str, dict]]:
        """(phase, node) of every op that runs work, in execution (id) order."""
        out = []
        for node_id in sorted(self.nodes):
            node = self.nodes[node_id]
            name = node["name"]
            if self.is_comm(name):
                raise CharonError(f"{self.where}: node {node_id} is a collective ({name}): importing "
                                  "multi-rank traces (process groups onto a mesh) is not supported yet")
            if not name.startswith("aten::"):
                continue
            inside, phase = self.context(node_id)
            if inside:
                continue  # inside another aten op: its time is that op's
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

    def build(self) -> ModuleOp:
        phases: dict[str, list] = {"forward": [], "backward": [], "optimizer": []}
        for phase, node in self.kernels():
            phases[phase].append(node)
        ops = []
        for kind, nodes in phases.items():
            if not nodes:
                continue
            block = Block()
            values: dict[int, SSAValue] = {}
            for node in nodes:
                inputs = [values[t[0]] for t in _tensors(node["inputs"]["values"]) if t[0] in values]
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
                op = sim.GenericOp(node["name"].replace("::", "."), inputs, result_types, flops, nbytes)
                block.add_op(op)
                for tensor_id, result in zip(produced, op.results):
                    values[tensor_id] = result
            block.add_op(sim.YieldOp())
            ops.append(sim.PhaseOp(kind, Region(block)))
        return ModuleOp(ops)


def import_execution_trace(path: str | Path) -> ModuleOp:
    """The `sim` module of one rank's PyTorch execution trace."""
    return _Importer(load_execution_trace(path), str(path)).build()


# --- Chakra execution traces (.et) -------------------------------------------

_COLLECTIVE_OPS = {"ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL", "BROADCAST"}


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


def _mesh(groups: dict[str, list[int]], used: set[str], world: int, where: str
          ) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Mesh axes (outermost first, with their sizes) in which every used process
    group is a set of axes, and each group's axes. Ranks no group spans get an
    axis of their own, so the mesh holds the whole world."""
    factors = {pg: _factors(groups[pg], where, pg) for pg in sorted(used)}
    sizes: dict[int, int] = {}
    for pg, fs in factors.items():
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
    mesh = {names[s]: n for s, n in reversed(axes)}
    return mesh, {pg: [names[s] for s, _ in sorted(fs, reverse=True)] for pg, fs in factors.items()}


def import_chakra(path: str | Path, groups_file: str | Path | None = None) -> ModuleOp:
    """The `sim` module of one rank's Chakra trace: a compute node becomes a
    `sim.generic` named by the node (its FLOPs from `num_ops`, bytes from
    `tensor_size` when given), a collective the `coll` op of its type on the
    mesh axes its process group spans (`comm_group.json` beside the trace, or
    `groups_file`), its buffer `comm_size` bytes. Data dependencies become
    operands. Point-to-point nodes are refused (not imported yet)."""
    path = Path(path)
    meta, nodes = read_trace(path)
    s = schema()
    types = s.node_type_names
    meta_attrs = node_attrs(meta)
    colls = [n for n in nodes if types[n.type] == "COMM_COLL_NODE"]
    for n in nodes:
        if types[n.type] in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
            raise CharonError(f"{path}: node {n.id} ({n.name}) is point-to-point: importing sends and "
                              "receives (pipeline stages) is not supported yet")
        if types[n.type] not in ("COMP_NODE", "COMM_COLL_NODE"):
            raise CharonError(f"{path}: node {n.id} ({n.name}) is a {types[n.type]}: only compute and "
                              "collective nodes are imported")
    groups: dict[str, list[int]] = {}
    mesh: dict[str, int] = {}
    axes_of: dict[str, list[str]] = {}
    if colls:
        gfile = Path(groups_file) if groups_file else path.parent / "comm_group.json"
        try:
            groups = {str(k): [int(r) for r in v] for k, v in json.loads(gfile.read_text()).items()}
        except OSError:
            raise CharonError(f"{path}: its collectives name process groups, and {gfile} (pg_name -> ranks) "
                              "cannot be read") from None
        except (ValueError, TypeError, AttributeError):
            raise CharonError(f"{gfile}: not a JSON object of pg_name -> list of ranks") from None
        used = set()
        for n in colls:
            a = node_attrs(n)
            if str(a.get("pg_name")) not in groups:
                raise CharonError(f"{path}: node {n.id} ({n.name}) names process group {a.get('pg_name')!r}, "
                                  f"which {gfile} lacks")
            kind = s.comm_type_names.get(a.get("comm_type"))
            if kind not in _COLLECTIVE_OPS:
                raise CharonError(f"{path}: node {n.id} ({n.name}) has collective type {kind or a.get('comm_type')}: "
                                  f"imported are {', '.join(sorted(_COLLECTIVE_OPS))}")
            used.add(str(a["pg_name"]))
        world = int(meta_attrs.get("world_size") or 0) or 1 + max(r for g in groups.values() for r in g)
        mesh, axes_of = _mesh(groups, used, world, str(path))
    ops: list = []
    if mesh:
        ops.append(coll.GridOp("mesh", mesh))
    block = Block()
    results: dict[int, SSAValue] = {}
    byte = IntegerType(8)
    token = TensorType(byte, [1])
    for n in sorted(nodes, key=lambda n: n.id):
        deps = [results[d] for d in (*n.data_deps, *n.ctrl_deps) if d in results]
        a = node_attrs(n)
        if types[n.type] == "COMP_NODE":
            flops, nbytes = float(a.get("num_ops") or 0), float(a.get("tensor_size") or 0)
            op = sim.GenericOp(n.name.replace("::", "."), deps, [token], flops, nbytes)
            block.add_op(op)
            results[n.id] = op.results[0]
            continue
        pg, kind = str(a["pg_name"]), s.comm_type_names[a["comm_type"]]
        axes = axes_of[pg]
        size = max(int(a.get("comm_size") or 0), 1)
        group = len(groups[pg])
        if kind in ("ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL"):
            size = -(-size // group) * group  # whole blocks per rank
        full, part = TensorType(byte, [size]), TensorType(byte, [size // group])
        # the buffer: made by what the collective waits for (a view: no kernel)
        buffer = sim.GenericOp("chakra.buffer", deps, [part if kind == "ALL_GATHER" else full], 0.0, 0.0)
        block.add_op(buffer)
        x = buffer.results[0]
        if kind == "ALL_REDUCE":
            op = coll.AllReduceOp(x, "mesh", axes)
        elif kind == "BROADCAST":
            op = coll.BroadcastOp(x, "mesh", axes)
        elif kind == "ALL_GATHER":
            op = coll.AllGatherOp(x, "mesh", axes, full, axis=IntegerAttr(0, 64))
        elif kind == "REDUCE_SCATTER":
            op = coll.ReduceScatterOp(x, "mesh", axes, part, axis=IntegerAttr(0, 64))
        else:
            op = coll.AllToAllOp(x, "mesh", axes, full, split_axis=IntegerAttr(0, 64), concat_axis=IntegerAttr(0, 64))
        block.add_op(op)
        results[n.id] = op.results[0]
    block.add_op(sim.YieldOp())
    ops.append(sim.PhaseOp("forward", Region(block)))
    return ModuleOp(ops)
