"""
The cluster description language: what GPUs a job runs on and how they are wired.

A `.cluster` file (grammar: `cluster.lark`) is a list of `key = value` items and
blocks `kind [label] { ... }`. Quantities carry their unit: `400Gb/s`, `450GB/s`
(decimal, one direction), `0.5us`, `2:1`. Example (DGX H100, 32 nodes):

    name = "dgx-h100"
    nodes = 32
    node { gpu = H100-SXM5-80GB  gpus = 8 }
    scale_up nvswitch {          # nvswitch | fully_connected | torus | none
      domain = 8                 # GPUs that share one scale-up fabric (NVL72: 72)
      bandwidth = 450GB/s        # per GPU, one direction
      latency = 0.5us            # per hop
      multicast = true           # in-switch reduction (NVLS, NVSwitch gen3+)
    }
    nic { count = 8  speed = 400Gb/s  rails = 8  latency = 1us  pxn = true }
    scale_out fat_tree {         # fat_tree | fullflat | torus | none
      rail_optimized = true
      tier { span = 32   oversubscription = 1:1  latency = 0.5us }
      tier { span = 1024 oversubscription = 1:1  latency = 0.5us }
    }

Blocks and keys:
- `node`: `gpu` (a row of the GPU table or an alias), `gpus` (per node).
- `scale_up KIND`: `domain` (GPUs per scale-up domain, a multiple of or equal to
  the node size), `bandwidth`, `latency`, `multicast`; for `torus`, `dims`
  (e.g. `[4, 4, 4]`, product = domain) and `bandwidth` per link.
- `nic`: `count` per node, `speed` per NIC, `rails` (NIC i of every node sits on
  rail i), `latency` (NIC + cable), `pxn` (route off-rail traffic over NVLink to
  the GPU on the right rail first, NCCL's PXN).
- `scale_out KIND`: `fat_tree` has `tier` blocks, lowest first, each with `span`
  (nodes below one switch of that tier), `oversubscription` (down:up bandwidth)
  and `latency` (per switch); `rail_optimized`. `fullflat` is one non-blocking
  tier reaching every node (`latency`). `torus` arranges nodes in `dims`, links of
  `bandwidth`, `latency` per hop.
- `kv_tier NAME` (`dram`, `ssd`, `remote`; repeatable, in the order KV blocks move
  down from HBM): `capacity` (bytes per GPU: a node's DRAM or SSD divided by its
  GPUs), `bandwidth` (into one GPU's HBM) and `latency` (per copy). Read by
  `charon serve --cluster` for evicted prefix-cache blocks.
- several `node KIND` blocks: runs of nodes of different GPUs, in rank order,
  each with `nodes` and, optionally, its own `scale_up` and `nic` blocks
  (`NodeKind`; docs/cluster.md "Several kinds of nodes").
- `cpu_nodes ROLE` (`retrieval`, `remote_kv`): `nodes`, CPU-only servers of that
  request stage for `charon serve --cluster`.
- `nodes`: how many nodes; `name`: a label.

`parse_cluster` checks every key and value and raises one-line
`FILE:LINE:COL: message` errors. docs/cluster.md is the user-facing reference;
the presets live in `clusters/` (the same files as examples/clusters/). `Cluster.to_text` prints a canonical one-line
form that `set-target` stores on the module and `parse_cluster` reads back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from math import prod
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError, read_text
from charon_ir.target.hardware import GpuSpec, UnknownGpuError, split_variant, load_gpu


class ClusterError(CharonError):
    pass


SCALE_UP_KINDS = ("nvswitch", "fully_connected", "torus", "none")
SCALE_OUT_KINDS = ("fat_tree", "fullflat", "torus", "none")
MAX_CLUSTER_COUNT = 2**31 - 1
"""The largest count a cluster file gives (nodes, GPUs, NICs, ...), as `charon`'s flags."""
MAX_CLUSTER_BYTES = 64 * 1024
"""The largest cluster file read: the presets are under 1 KB; a 100,000-tier file
took 75 s to parse and price."""
MAX_TIERS = 8
"""The most switch tiers of a fat tree (the largest deployed have three or four)."""

# Decimal scales, so that a value rounds once: 0.4us is 4e-07, not 4.0000000000000003e-07
_BANDWIDTH_UNITS = {
    "B/s": Decimal(1), "KB/s": Decimal(10) ** 3, "MB/s": Decimal(10) ** 6,
    "GB/s": Decimal(10) ** 9, "TB/s": Decimal(10) ** 12,
    "b/s": Decimal(1) / 8, "Kb/s": Decimal(10) ** 3 / 8, "Mb/s": Decimal(10) ** 6 / 8,
    "Gb/s": Decimal(10) ** 9 / 8, "Tb/s": Decimal(10) ** 12 / 8,
}
_BYTE_UNITS = {
    "B": Decimal(1), "KB": Decimal(10) ** 3, "MB": Decimal(10) ** 6, "GB": Decimal(10) ** 9,
    "TB": Decimal(10) ** 12, "KiB": Decimal(2) ** 10, "MiB": Decimal(2) ** 20, "GiB": Decimal(2) ** 30,
    "TiB": Decimal(2) ** 40,
}
_TIME_UNITS = {
    "s": Decimal(1), "ms": Decimal(10) ** -3, "us": Decimal(10) ** -6, "ns": Decimal(10) ** -9,
}
PLAUSIBLE = {
    "bandwidth": (1e3, 1e15, "a link's bandwidth is between 1KB/s and 1000TB/s"),
    "time": (0.0, 1.0, "a link's latency is at most 1s"),
    "size": (1.0, 1e18, "a memory tier holds between 1B and 1000PB per GPU"),
}
"""What a link of any era measures, in B/s and s: beyond it a value is a typo, and
its arithmetic would leave floating point (a 1e300 s latency printed as `infns` in
the module's canonical cluster text)."""


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScaleUp:
    """The fabric inside a scale-up domain (NVLink + NVSwitch, xGMI, ICI)."""

    kind: str
    domain: int
    """GPUs per domain."""
    bandwidth: float
    """Per GPU, one direction, bytes/s (torus: per link and direction)."""
    latency: float
    """Seconds per hop."""
    multicast: bool = False
    dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class Nics:
    count: int
    """Per node."""
    bandwidth: float
    """Per NIC, one direction, bytes/s."""
    rails: int
    latency: float
    pxn: bool = True


@dataclass(frozen=True)
class Tier:
    span: int
    """Nodes below one switch of this tier."""
    oversubscription: float
    """Down- over up-link bandwidth of this tier's switches (1.0: non-blocking)."""
    latency: float


@dataclass(frozen=True)
class ScaleOut:
    kind: str
    tiers: tuple[Tier, ...] = ()
    rail_optimized: bool = True
    dims: tuple[int, ...] = ()
    bandwidth: float = 0.0
    """Torus only: per link and direction."""
    latency: float = 0.0
    """Torus and fullflat: per hop."""
    sharp: bool = False
    """The switches reduce in the network (NVIDIA SHARP): fat_tree and fullflat only."""


KV_TIER_NAMES = ("dram", "ssd", "remote")
"""Memory levels below HBM that hold KV cache blocks (`kv_tier` blocks, `--kv-tier`)."""
CPU_NODE_ROLES = ("retrieval", "remote_kv")
"""Request stages served by CPU-only nodes (`cpu_nodes` blocks): vector-DB search,
a remote KV store; each node is one server of serving's `--stage-servers`."""


@dataclass(frozen=True)
class KVTier:
    """A memory level below HBM that evicted KV blocks move to (per GPU)."""

    name: str
    capacity_bytes: float
    bandwidth: float
    """Bytes/s from this level into one GPU's HBM."""
    latency_s: float = 0.0


@dataclass(frozen=True)
class CpuNodes:
    """CPU-only nodes (no GPU, no rank) serving one request stage."""

    role: str
    nodes: int


@dataclass(frozen=True)
class NodeKind:
    """One run of nodes of a heterogeneous cluster, in rank order: `nodes` nodes
    of one GPU with their own scale-up fabric and NICs. Runs of one kind (the
    same `name`, the `node` block's label) are alike."""

    name: str
    gpu: GpuSpec
    nodes: int
    scale_up: ScaleUp
    nics: Nics


@dataclass(frozen=True)
class Cluster:
    name: str
    gpu: GpuSpec
    """Every node's GPU; with several node kinds, the first node's."""
    gpus_per_node: int
    nodes: int
    scale_up: ScaleUp
    nics: Nics
    scale_out: ScaleOut
    source: str = field(default="", compare=False)
    kv_tiers: tuple[KVTier, ...] = ()
    """Memory levels below HBM for KV blocks, nearest first (`kv_tier` blocks)."""
    cpu_nodes: tuple[CpuNodes, ...] = ()
    """CPU-only nodes beside the GPU nodes, per request stage they serve."""
    kinds: tuple[NodeKind, ...] = ()
    """Runs of nodes in rank order when the file has several `node` blocks
    (empty: every node alike); `gpu`, `scale_up` and `nics` are the first run's."""

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def nic_bandwidth_per_gpu(self) -> float:
        return self.nics.count * self.nics.bandwidth / self.gpus_per_node

    @property
    def heterogeneous(self) -> bool:
        return len(self.kind_names()) > 1

    def with_nodes(self, nodes: int) -> Cluster:
        if self.kinds:
            raise ClusterError(f"cluster '{self.name}' has {len(self.kinds)} runs of node kinds: "
                               "its node count is theirs and cannot be changed")
        return replace(self, nodes=nodes)

    def kind_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k.name for k in self.kinds))

    def kind_of_rank(self, rank: int) -> NodeKind:
        """The node kind GPU `rank` (node-major) sits on."""
        node = rank // self.gpus_per_node
        for kind in self.kinds:
            if node < kind.nodes:
                return kind
            node -= kind.nodes
        raise ClusterError(f"rank {rank} is beyond the {self.total_gpus} GPUs of cluster '{self.name}'")

    def kind(self, name: str) -> NodeKind:
        for kind in self.kinds:
            if kind.name == name:
                return kind
        raise ClusterError(f"cluster '{self.name}' has no node kind '{name}' "
                           f"(kinds: {', '.join(self.kind_names()) or 'none'})")

    def view(self, name: str) -> Cluster:
        """The cluster as one kind's GPUs see it: every node of that kind, the same
        node count and network (what prices collectives among that kind's ranks)."""
        k = self.kind(name)
        return Cluster(self.name, k.gpu, self.gpus_per_node, self.nodes, k.scale_up, k.nics,
                       self.scale_out, self.source, self.kv_tiers)

    def slowest_view(self, names: tuple[str, ...]) -> Cluster:
        """The cluster with each link class at its slowest among the kinds `names`:
        what traffic joining ranks of those kinds crosses (a pipeline's send from an
        H100 stage to a B200 stage runs at the H100's links); the GPU is the first's."""
        kinds = [self.kind(n) for n in names]
        first = kinds[0]
        scale_up = replace(first.scale_up,
                           bandwidth=min(k.scale_up.bandwidth for k in kinds),
                           latency=max(k.scale_up.latency for k in kinds),
                           multicast=all(k.scale_up.multicast for k in kinds))
        nics = min(kinds, key=lambda k: k.nics.count * k.nics.bandwidth).nics
        nics = replace(nics, latency=max(k.nics.latency for k in kinds))
        return Cluster(self.name, first.gpu, self.gpus_per_node, self.nodes, scale_up, nics,
                       self.scale_out, self.source, self.kv_tiers)

    def to_text(self) -> str:
        """A canonical one-line form, read back by `parse_cluster`."""
        so = self.scale_out
        parts = [f'name = "{self.name}"', f"nodes = {self.nodes}"]
        if self.kinds:
            parts += [
                f"node {k.name} {{ gpu = {_gpu_ref(k.gpu.ref)} gpus = {self.gpus_per_node}"
                f" nodes = {k.nodes} {_scale_up_text(k.scale_up)} {_nic_text(k.nics)} }}"
                for k in self.kinds
            ]
        else:
            parts += [
                f"node {{ gpu = {_gpu_ref(self.gpu.ref)} gpus = {self.gpus_per_node} }}",
                _scale_up_text(self.scale_up),
                _nic_text(self.nics),
            ]
        body = []
        if so.kind == "fat_tree":
            body.append(f"rail_optimized = {_b(so.rail_optimized)}")
            body += [
                f"tier {{ span = {t.span} oversubscription = {_num(t.oversubscription)}:1"
                f" latency = {_t(t.latency)} }}"
                for t in so.tiers
            ]
        if so.kind in ("fullflat", "torus"):
            body.append(f"latency = {_t(so.latency)}")
        if so.sharp:
            body.append("sharp = true")
        if so.kind == "torus":
            body += [f"dims = {_dims(so.dims)}", f"bandwidth = {_bw(so.bandwidth)}"]
        parts.append(f"scale_out {so.kind} {{ {' '.join(body)} }}".replace("{  }", "{ }"))
        parts += [f"kv_tier {t.name} {{ capacity = {_num(t.capacity_bytes)}B bandwidth = {_bw(t.bandwidth)}"
                  f" latency = {_t(t.latency_s)} }}" for t in self.kv_tiers]
        parts += [f"cpu_nodes {c.role} {{ nodes = {c.nodes} }}" for c in self.cpu_nodes]
        return " ".join(parts)


def _scale_up_text(su: ScaleUp) -> str:
    return (f"scale_up {su.kind} {{ domain = {su.domain} bandwidth = {_bw(su.bandwidth)}"
            f" latency = {_t(su.latency)} multicast = {_b(su.multicast)}"
            + (f" dims = {_dims(su.dims)}" if su.dims else "")
            + " }")


def _nic_text(nic: Nics) -> str:
    return (f"nic {{ count = {nic.count} speed = {_bw(nic.bandwidth)} rails = {nic.rails}"
            f" latency = {_t(nic.latency)} pxn = {_b(nic.pxn)} }}")


def _gpu_ref(ref: str) -> str:
    """A GPU's ref as a cluster value: a bare word where the grammar takes one,
    else a quoted string (a file path, a variant)."""
    return ref if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", ref) else f'"{ref}"'


def _num(x: float) -> str:
    return repr(float(x)).removesuffix(".0") if float(x).is_integer() else repr(float(x))


def _bw(x: float) -> str:
    return f"{_num(x / 1e9)}GB/s"


def _t(x: float) -> str:
    return f"{_num(round(x * 1e9, 6))}ns"


def _b(x: bool) -> str:
    return "true" if x else "false"


def _dims(d: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(x) for x in d) + "]"


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


@dataclass
class _Value:
    kind: str  # quantity | ratio | word | string | list
    raw: Any
    line: int
    col: int
    key_pos: tuple[int, int] = (0, 0)


@dataclass
class _Block:
    kind: str
    label: str | None
    line: int
    col: int
    entries: dict[str, _Value] = field(default_factory=dict)
    blocks: list[_Block] = field(default_factory=list)


@cache
def _parser():
    import lark  # ~55 ms: not on charon-opt's start-up, which loads set-target

    grammar = resources.files("charon_ir.target").joinpath("cluster.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True)


class _Reader:
    """Turns the lark tree into `_Block`s and checks keys and values, raising
    errors that name the file, line and column."""

    def __init__(self, filename: str):
        self.filename = filename

    def fail(self, line: int, col: int, message: str) -> ClusterError:
        return ClusterError(f"{self.filename}:{line}:{col}: {message}")

    def value(self, tree) -> _Value:
        meta = tree.meta
        if tree.data == "list":
            items = [self.value(c) for c in tree.children if c is not None]
            return _Value("list", items, meta.line, meta.column)
        token = tree.children[0]
        raw = str(token)
        if tree.data == "string":
            raw = raw[1:-1]
        return _Value(str(tree.data), raw, token.line, token.column)

    def block(self, tree, kind: str, label: str | None, line: int, col: int) -> _Block:
        blk = _Block(kind, label, line, col)
        for item in tree:
            if item.data == "assignment":
                key_tok, value_tree = item.children[0], item.children[1]
                key = str(key_tok)
                if key in blk.entries:
                    raise self.fail(key_tok.line, key_tok.column, f"'{key}' is set twice")
                value = self.value(value_tree)
                # "unknown key" errors point at the key, value errors at the value
                value.key_pos = (key_tok.line, key_tok.column)
                blk.entries[key] = value
            else:
                names = [c for c in item.children if not hasattr(c, "data")]
                kind_tok = names[0]
                label_tok = names[1] if len(names) > 1 else None
                subitems = [c for c in item.children if hasattr(c, "data")]
                blk.blocks.append(
                    self.block(
                        subitems,
                        str(kind_tok),
                        None if label_tok is None else str(label_tok),
                        kind_tok.line,
                        kind_tok.column,
                    )
                )
        return blk

    # -- typed accessors -------------------------------------------------

    def check_keys(self, blk: _Block, allowed: tuple[str, ...], blocks: tuple[str, ...] = ()):
        where = "the file" if blk.kind == "<file>" else f"'{blk.kind}'"
        for key, v in blk.entries.items():
            if key not in allowed:
                line, col = v.key_pos
                raise self.fail(
                    line, col, f"unknown key '{key}' in {where} (known: {', '.join(allowed)})"
                )
        for sub in blk.blocks:
            if sub.kind not in blocks:
                known = ", ".join(blocks) if blocks else "none"
                raise self.fail(
                    sub.line, sub.col, f"unknown block '{sub.kind}' in {where} (known: {known})"
                )

    def need(self, blk: _Block, key: str) -> _Value:
        if key not in blk.entries:
            raise self.fail(blk.line, blk.col, f"'{blk.kind}' needs '{key}'")
        return blk.entries[key]

    def integer(self, blk: _Block, key: str, default: int | None = None, minimum: int = 1) -> int:
        if key not in blk.entries and default is not None:
            return default
        v = self.need(blk, key)
        if v.kind != "quantity" or not re.fullmatch(r"[0-9]+", v.raw):
            raise self.fail(v.line, v.col, f"'{key}' must be a whole number, got '{_show(v)}'")
        n = int(v.raw)
        if n < minimum:
            raise self.fail(v.line, v.col, f"'{key}' must be >= {minimum}, got {n}")
        if n > MAX_CLUSTER_COUNT:  # the IR's integers are 64-bit: products of counts must fit
            raise self.fail(v.line, v.col, f"'{key}' must be <= {MAX_CLUSTER_COUNT}, got {n}")
        return n

    def quantity(self, blk: _Block, key: str, units: dict[str, Decimal], what: str,
                 default: float | None = None) -> float:
        if key not in blk.entries and default is not None:
            return default
        v = self.need(blk, key)
        m = re.fullmatch(r"([0-9.eE+\-]+?)([A-Za-z]+(?:/[A-Za-z]+)?)?", v.raw) if v.kind == "quantity" else None
        if m is None or m.group(2) not in units:
            raise self.fail(
                v.line, v.col,
                f"'{key}' must be a {what} with a unit ({', '.join(units)}), got '{_show(v)}'",
            )
        try:
            x = float(Decimal(m.group(1)) * units[m.group(2)])
        except InvalidOperation:
            raise self.fail(v.line, v.col, f"'{key}' has a malformed number '{v.raw}'") from None
        if not math.isfinite(x):  # 1e400 overflows to inf
            raise self.fail(v.line, v.col, f"'{key}' is out of range: '{v.raw}'")
        if x < 0:
            raise self.fail(v.line, v.col, f"'{key}' must be >= 0")
        if what == "bandwidth" and x == 0:  # every transfer over it would take forever
            raise self.fail(v.line, v.col, f"'{key}' must be > 0")
        low, high, shown = PLAUSIBLE[what]
        if not low <= x <= high:  # a typo's unit: times of 1e300 s, reports in 1e301 s
            raise self.fail(v.line, v.col, f"'{key}' is {v.raw}: {shown}")
        return x

    def boolean(self, blk: _Block, key: str, default: bool) -> bool:
        if key not in blk.entries:
            return default
        v = blk.entries[key]
        if v.kind != "word" or v.raw not in ("true", "false"):
            raise self.fail(v.line, v.col, f"'{key}' must be true or false, got '{_show(v)}'")
        return v.raw == "true"

    def ratio(self, blk: _Block, key: str, default: float) -> float:
        if key not in blk.entries:
            return default
        v = blk.entries[key]
        if v.kind == "ratio":
            down, up = (float(x) for x in v.raw.split(":"))
            if down > 0 and up > 0 and down >= up:
                return down / up
        elif v.kind == "quantity" and re.fullmatch(r"[0-9]+(\.[0-9]+)?", v.raw) and float(v.raw) >= 1:
            return float(v.raw)
        raise self.fail(
            v.line, v.col, f"'{key}' must be a ratio down:up >= 1 such as 2:1, got '{_show(v)}'"
        )

    def dims(self, blk: _Block, key: str) -> tuple[int, ...]:
        v = self.need(blk, key)
        if v.kind != "list" or not v.raw or any(
            x.kind != "quantity" or not re.fullmatch(r"[0-9]+", x.raw) or int(x.raw) < 1
            for x in v.raw
        ):
            raise self.fail(v.line, v.col, f"'{key}' must be a list of sizes such as [4, 4]")
        return tuple(int(x.raw) for x in v.raw)

    def text(self, blk: _Block, key: str, default: str) -> str:
        if key not in blk.entries:
            return default
        v = blk.entries[key]
        if v.kind not in ("string", "word"):
            raise self.fail(v.line, v.col, f"'{key}' must be a name, got '{_show(v)}'")
        return v.raw

    def single(self, top: _Block, kind: str, required: bool = True) -> _Block | None:
        found = [b for b in top.blocks if b.kind == kind]
        if len(found) > 1:
            raise self.fail(found[1].line, found[1].col, f"block '{kind}' appears twice")
        if not found and required:
            raise self.fail(1, 1, f"missing block '{kind}'")
        return found[0] if found else None

    def labelled(self, blk: _Block, kinds: tuple[str, ...]) -> str:
        if blk.label not in kinds:
            got = "no kind" if blk.label is None else f"'{blk.label}'"
            raise self.fail(
                blk.line, blk.col,
                f"'{blk.kind}' needs a kind ({' | '.join(kinds)}), got {got}",
            )
        return blk.label

    # -- the cluster ------------------------------------------------------

    def cluster(self, top: _Block, source: str) -> Cluster:
        self.check_keys(top, ("name", "nodes"), ("node", "scale_up", "nic", "scale_out", "kv_tier",
                                                 "cpu_nodes"))
        name = self.text(top, "name", Path(self.filename).stem)
        node_blocks = [b for b in top.blocks if b.kind == "node"]
        if len(node_blocks) > 1 or any(b.label or "nodes" in b.entries for b in node_blocks):
            return self.heterogeneous(top, name, node_blocks, source)
        nodes = self.integer(top, "nodes", default=1)

        node = self.single(top, "node")
        assert node is not None
        self.check_keys(node, ("gpu", "gpus"))
        gpu = self.node_gpu(node)
        per_node = self.integer(node, "gpus", default=gpu.gpus_per_node)

        scale_up = self.read_scale_up(top, gpu, per_node)
        nics = self.read_nics(top, gpu, per_node)
        scale_out = self.read_scale_out(top, nodes)
        return Cluster(name, gpu, per_node, nodes, scale_up, nics, scale_out, source,
                       self.read_kv_tiers(top), self.read_cpu_nodes(top))

    def heterogeneous(self, top: _Block, name: str, node_blocks: list[_Block], source: str) -> Cluster:
        """Several `node` blocks: runs of nodes in rank order, each labelled with
        its kind, with its own `nodes` and, optionally, its own `scale_up` and
        `nic` blocks (else the file's, else its GPU's)."""
        runs: list[NodeKind] = []
        first_of: dict[str, tuple[NodeKind, _Block]] = {}
        per_node = 0
        start = 0  # the run's first GPU
        for node in node_blocks:
            self.check_keys(node, ("gpu", "gpus", "nodes"), ("scale_up", "nic"))
            if node.label is None and len(node_blocks) > 1:
                raise self.fail(node.line, node.col, "a file with several 'node' blocks names each "
                                "one's kind: 'node h100 { ... }'")
            gpu = self.node_gpu(node)
            gpus = self.integer(node, "gpus", default=gpu.gpus_per_node)
            if not per_node:
                per_node = gpus
            elif gpus != per_node:
                at = node.entries.get("gpus")
                line, col = (at.line, at.col) if at else (node.line, node.col)
                raise self.fail(line, col, f"node kind '{node.label}' has {gpus} GPUs per node but "
                                f"'{node_blocks[0].label}' has {per_node}: every node holds as many")
            count = self.integer(node, "nodes", default=self.integer(top, "nodes", default=1)
                                 if len(node_blocks) == 1 else None)
            source_blk = lambda kind: node if any(b.kind == kind for b in node.blocks) else top  # noqa: E731
            scale_up = self.read_scale_up(source_blk("scale_up"), gpu, per_node)
            nics = self.read_nics(source_blk("nic"), gpu, per_node)
            run = NodeKind(node.label or gpu.name, gpu, count, scale_up, nics)
            if run.name in first_of:
                before, blk = first_of[run.name]
                if (before.gpu, before.scale_up, before.nics) != (gpu, scale_up, nics):
                    raise self.fail(node.line, node.col, f"node kind '{run.name}' differs from its "
                                    f"first run (line {blk.line}): one kind, one GPU and fabric")
            else:
                first_of[run.name] = (run, node)
            domain = scale_up.domain
            if domain > per_node and (start % domain or (count * per_node) % domain):
                raise self.fail(node.line, node.col, f"node kind '{run.name}' (GPUs {start} to "
                                f"{start + count * per_node - 1}) cuts a {domain}-GPU scale-up "
                                "domain: a domain lies within one kind")
            runs.append(run)
            start += count * per_node
        nodes = sum(r.nodes for r in runs)
        if "nodes" in top.entries:
            stated = self.integer(top, "nodes")
            if stated != nodes:
                v = top.entries["nodes"]
                held = ", ".join(f"{r.name}: {r.nodes}" for r in runs)
                raise self.fail(v.line, v.col, f"'nodes' is {stated} but the node kinds hold "
                                f"{nodes} ({held}): the kinds must cover every node")
        for kind in ("scale_up", "nic"):
            self.single(top, kind, required=False)  # at most once at the top
        scale_out = self.read_scale_out(top, nodes)
        first = runs[0]
        kinds = tuple(runs) if len(first_of) > 1 else ()
        return Cluster(name, first.gpu, per_node, nodes, first.scale_up, first.nics, scale_out,
                       source, self.read_kv_tiers(top), self.read_cpu_nodes(top), kinds)

    def node_gpu(self, node: _Block) -> GpuSpec:
        gpu_value = self.need(node, "gpu")
        if gpu_value.kind not in ("word", "string"):
            raise self.fail(gpu_value.line, gpu_value.col, "'gpu' must be a GPU name")
        gpu_ref = gpu_value.raw
        base, _ = split_variant(gpu_ref)
        if base.endswith(".toml") and not Path(base).is_absolute():
            # a GPU file next to the cluster file
            near = Path(self.filename).parent / base
            if near.exists():
                gpu_ref = str(near) + gpu_ref[len(base):]
        try:
            return load_gpu(gpu_ref)
        except UnknownGpuError as e:
            raise self.fail(gpu_value.line, gpu_value.col, str(e)) from None

    def each_labelled(self, top: _Block, kind: str, labels: tuple[str, ...],
                      keys: tuple[str, ...]) -> Iterator[tuple[str, _Block]]:
        """(label, block) of each `kind LABEL { ... }` block of `top`, in order:
        its label one of `labels` and given once, its keys among `keys`."""
        seen: set[str] = set()
        for blk in (b for b in top.blocks if b.kind == kind):
            label = self.labelled(blk, labels)
            if label in seen:
                raise self.fail(blk.line, blk.col, f"'{kind} {label}' appears twice")
            seen.add(label)
            self.check_keys(blk, keys)
            yield label, blk

    def read_cpu_nodes(self, top: _Block) -> tuple[CpuNodes, ...]:
        return tuple(CpuNodes(role, self.integer(blk, "nodes"))
                     for role, blk in self.each_labelled(top, "cpu_nodes", CPU_NODE_ROLES, ("nodes",)))

    def read_kv_tiers(self, top: _Block) -> tuple[KVTier, ...]:
        return tuple(
            KVTier(
                name,
                self.quantity(blk, "capacity", _BYTE_UNITS, "size"),
                self.quantity(blk, "bandwidth", _BANDWIDTH_UNITS, "bandwidth"),
                self.quantity(blk, "latency", _TIME_UNITS, "time", default=0.0),
            )
            for name, blk in self.each_labelled(top, "kv_tier", KV_TIER_NAMES, ("capacity", "bandwidth", "latency"))
        )

    def read_scale_up(self, top: _Block, gpu: GpuSpec, per_node: int) -> ScaleUp:
        blk = self.single(top, "scale_up", required=False)
        if blk is None:
            return default_scale_up(gpu, per_node)
        kind = self.labelled(blk, SCALE_UP_KINDS)
        keys = ("domain", "bandwidth", "latency", "multicast") + (("dims",) if kind == "torus" else ())
        self.check_keys(blk, keys)
        dims = self.dims(blk, "dims") if kind == "torus" else ()
        domain = self.integer(blk, "domain", default=prod(dims) if dims else per_node)
        if kind == "none":
            domain = 1
        if dims and prod(dims) != domain:
            raise self.fail(blk.line, blk.col, f"torus dims {list(dims)} hold {prod(dims)} GPUs but 'domain' is {domain}")
        if domain % per_node and per_node % domain:
            raise self.fail(
                blk.line, blk.col,
                f"scale-up domain ({domain} GPUs) must be a multiple or a divisor of the node size ({per_node})",
            )
        bandwidth = self.quantity(blk, "bandwidth", _BANDWIDTH_UNITS, "bandwidth",
                                  default=gpu.scale_up_bandwidth or 0.0)
        if kind != "none" and bandwidth <= 0:
            raise self.fail(blk.line, blk.col, "'scale_up' needs 'bandwidth' > 0")
        latency = self.quantity(blk, "latency", _TIME_UNITS, "time", default=gpu.scale_up_latency)
        multicast = self.boolean(blk, "multicast", default=False)
        if multicast and kind != "nvswitch":
            raise self.fail(blk.entries["multicast"].line, blk.entries["multicast"].col,
                            "'multicast' needs a switched fabric (scale_up nvswitch)")
        return ScaleUp(kind, domain, bandwidth, latency, multicast, dims)

    def read_nics(self, top: _Block, gpu: GpuSpec, per_node: int) -> Nics:
        blk = self.single(top, "nic", required=False)
        if blk is None:
            return default_nics(gpu, per_node)
        self.check_keys(blk, ("count", "speed", "rails", "latency", "pxn"))
        count = self.integer(blk, "count")
        speed = self.quantity(blk, "speed", _BANDWIDTH_UNITS, "bandwidth")
        rails = self.integer(blk, "rails", default=count)
        if rails > count:
            v = blk.entries["rails"]
            raise self.fail(v.line, v.col, f"'rails' ({rails}) cannot exceed 'count' ({count})")
        latency = self.quantity(blk, "latency", _TIME_UNITS, "time", default=gpu.nic_latency)
        pxn = self.boolean(blk, "pxn", default=True)
        return Nics(count, speed, rails, latency, pxn)

    def read_scale_out(self, top: _Block, nodes: int) -> ScaleOut:
        blk = self.single(top, "scale_out", required=False)
        if blk is None:
            return default_scale_out(nodes)
        kind = self.labelled(blk, SCALE_OUT_KINDS)
        if kind == "fat_tree":
            self.check_keys(blk, ("rail_optimized", "sharp"), ("tier",))
            if len(blk.blocks) > MAX_TIERS:
                extra = blk.blocks[MAX_TIERS]
                raise self.fail(extra.line, extra.col, f"{len(blk.blocks):,} tiers; a fat tree has at "
                                f"most {MAX_TIERS} (the largest deployed have three or four)")
            tiers = []
            for t in blk.blocks:
                self.check_keys(t, ("span", "oversubscription", "latency"))
                tiers.append(
                    Tier(
                        self.integer(t, "span"),
                        self.ratio(t, "oversubscription", 1.0),
                        self.quantity(t, "latency", _TIME_UNITS, "time", default=DEFAULT_SWITCH_HOP_S),
                    )
                )
            if not tiers:
                raise self.fail(blk.line, blk.col, "'scale_out fat_tree' needs at least one 'tier' block")
            rails_joined = self.boolean(blk, "rail_optimized", True)
            for i, (lo, hi) in enumerate(zip(tiers, tiers[1:])):
                # a tier spanning what the one below spans joins no more nodes, except
                # the spine right above a rail-optimized leaf tier: it joins the rails
                same_ok = rails_joined and i == 0 and hi.span == lo.span
                if not same_ok and (hi.span <= lo.span or hi.span % lo.span):
                    raise self.fail(blk.line, blk.col,
                                    "tier spans must grow, each a multiple of the one below "
                                    f"(spans {lo.span} then {hi.span})")
            if tiers[-1].span < nodes:
                raise self.fail(
                    blk.line, blk.col,
                    f"the top tier spans {tiers[-1].span} nodes but the cluster has {nodes}",
                )
            if tiers[-1].oversubscription != 1.0:
                top = blk.blocks[-1]
                raise self.fail(top.line, top.col,
                                "the top tier has no uplinks: its oversubscription can only be 1:1 "
                                "(oversubscribe the tier below, whose uplinks reach it)")
            return ScaleOut(kind, tuple(tiers), self.boolean(blk, "rail_optimized", True),
                            sharp=self.boolean(blk, "sharp", False))
        if kind == "fullflat":
            self.check_keys(blk, ("latency", "sharp"))
            lat = self.quantity(blk, "latency", _TIME_UNITS, "time", default=DEFAULT_SWITCH_HOP_S)
            return ScaleOut(kind, (Tier(max(nodes, 1), 1.0, lat),), False, latency=lat,
                            sharp=self.boolean(blk, "sharp", False))
        if kind == "torus":
            self.check_keys(blk, ("dims", "bandwidth", "latency"))
            dims = self.dims(blk, "dims")
            if prod(dims) != nodes:
                raise self.fail(blk.line, blk.col,
                                f"torus dims {list(dims)} hold {prod(dims)} nodes but 'nodes' is {nodes}")
            return ScaleOut(
                kind, (), False, dims,
                self.quantity(blk, "bandwidth", _BANDWIDTH_UNITS, "bandwidth"),
                self.quantity(blk, "latency", _TIME_UNITS, "time", default=DEFAULT_SWITCH_HOP_S),
            )
        self.check_keys(blk, ())
        return ScaleOut("none")


def _show(v: _Value) -> str:
    if v.kind == "list":
        return "[" + ", ".join(_show(x) for x in v.raw) + "]"
    return str(v.raw)


# Physical hop latencies used when a file does not state them (seconds). The
# software cost per collective step is separate (engines/collectives.py).
DEFAULT_SCALE_UP_HOP_S = 0.5e-6
"""NVLink + NVSwitch port-to-port, a few hundred ns."""
DEFAULT_NIC_LATENCY_S = 1.0e-6
"""InfiniBand/RoCE NIC and cable, one way."""
DEFAULT_SWITCH_HOP_S = 0.5e-6
"""One InfiniBand/Ethernet switch hop (NDR switches quote ~0.2-0.6 us)."""


def default_scale_up(gpu: GpuSpec, per_node: int) -> ScaleUp:
    """The GPU table's scale-up fabric for nodes of `per_node` GPUs. A domain
    wider than the GPU's usual node (NVL72) spans nodes; otherwise it is cut to
    the node."""
    tech = gpu.scale_up_tech.lower()
    domain = gpu.scale_up_domain or 1
    if domain <= gpu.gpus_per_node:
        domain = min(domain, per_node)
    if domain % per_node and per_node % domain:
        domain = per_node
    if "nvlink" in tech and "bridge" not in tech and domain > 1:
        # NVSwitch multicast (NVLS) exists from Hopper (NVSwitch gen3) on: the GPU
        # file's `multicast`
        return ScaleUp("nvswitch", domain, gpu.scale_up_bandwidth, gpu.scale_up_latency, gpu.multicast)
    if "infinity fabric" in tech or "xgmi" in tech:
        return ScaleUp("fully_connected", domain, gpu.scale_up_bandwidth, gpu.scale_up_latency)
    if "ici" in tech.split():
        # TPU slices: a torus we cannot shape from the table; a switched domain
        # of the node's chips is the closest plain reading
        return ScaleUp("nvswitch", per_node, gpu.scale_up_bandwidth, gpu.scale_up_latency)
    if gpu.scale_up_bandwidth and domain > 1:
        return ScaleUp("nvswitch", domain, gpu.scale_up_bandwidth, gpu.scale_up_latency)
    return ScaleUp("none", 1, gpu.scale_up_bandwidth, gpu.scale_up_latency)


def default_nics(gpu: GpuSpec, per_node: int) -> Nics:
    """The GPU table's NICs, scaled to a node of `per_node` GPUs (one 400 Gb/s
    NIC per GPU where the table has none)."""
    if gpu.nics_stated:
        count = max(1, round(gpu.nics_per_node * per_node / gpu.gpus_per_node))
        speed = gpu.nic_bandwidth
    else:
        count, speed = per_node, 400e9 / 8
    return Nics(count, speed, count, gpu.nic_latency, True)


def default_scale_out(nodes: int) -> ScaleOut:
    return ScaleOut("fat_tree", (Tier(max(nodes, 1), 1.0, DEFAULT_SWITCH_HOP_S),), True)


def implicit_cluster(gpu: GpuSpec, gpus: int, gpus_per_node: int) -> Cluster:
    """The cluster a target without a cluster file stands for: the GPU table's
    usual node, NICs and a non-blocking single-tier network."""
    nodes = max(1, -(-gpus // gpus_per_node))
    return Cluster(
        f"{gpu.name}x{gpus}", gpu, gpus_per_node, nodes, default_scale_up(gpu, gpus_per_node),
        default_nics(gpu, gpus_per_node), default_scale_out(nodes),
    )


def parse_cluster(text: str, filename: str = "<cluster>") -> Cluster:
    import lark

    reader = _Reader(filename)
    if len(text) > MAX_CLUSTER_BYTES:  # characters, an upper bound of lark's work
        raise ClusterError(f"{filename}: {len(text):,} characters; a cluster file is at most "
                           f"{MAX_CLUSTER_BYTES:,} (the presets are under 1,000)")
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedCharacters as e:
        at = e.pos_in_stream
        ch = text[at] if at is not None and at < len(text) else "?"
        if ch == "-" and at + 1 < len(text) and text[at + 1].isdigit():
            # every number of a cluster is a count, a size, a bandwidth or a latency
            raise reader.fail(e.line, e.column, "a negative number (counts, bandwidths and latencies "
                              "are >= 0)") from None
        raise reader.fail(e.line, e.column, f"unexpected character '{ch}'") from None
    except lark.exceptions.UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            raise reader.fail(len(lines), len(lines[-1]) + 1,
                              "unexpected end of file (a '}' is missing?)") from None
        expected = sorted(_describe(t) for t in e.expected)
        # `gpu H100` reads as the start of a block `gpu H100 { ... }`: say what
        # was most likely meant
        before = re.search(r"([A-Za-z_][\w.\-]*)[ \t]+([A-Za-z_][\w.\-]*)\s*$",
                           text[: tok.start_pos])
        if before and expected == ["'{'"]:
            line = text.count("\n", 0, before.start(2)) + 1
            col = before.start(2) - (text.rfind("\n", 0, before.start(2)) + 1) + 1
            raise reader.fail(
                line, col,
                f"expected '=' between '{before.group(1)}' and '{before.group(2)}'",
            ) from None
        raise reader.fail(
            tok.line, tok.column,
            f"unexpected '{tok}' (expected {', '.join(expected)})",
        ) from None
    except lark.exceptions.UnexpectedInput as e:  # pragma: no cover - other lark errors
        raise reader.fail(getattr(e, "line", 1), getattr(e, "column", 1), "syntax error") from None
    top = reader.block(tree.children, "<file>", None, 1, 1)
    return reader.cluster(top, text)


_TERMINAL_NAMES = {
    "NAME": "a name", "QUANTITY": "a number", "RATIO": "a ratio", "ESCAPED_STRING": "a string",
    "EQUAL": "'='", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "SEMICOLON": "';'", "$END": "end of file",
}


def _describe(terminal: str) -> str:
    return _TERMINAL_NAMES.get(terminal, terminal)


@cache
def parse_cluster_cached(text: str, filename: str = "<cluster>") -> Cluster:
    return parse_cluster(text, filename)


# ---------------------------------------------------------------------------
# Files and presets
# ---------------------------------------------------------------------------


def preset_names() -> list[str]:
    folder = resources.files("charon_ir.target").joinpath("clusters")
    return sorted(p.name.removesuffix(".cluster") for p in folder.iterdir()
                  if p.name.endswith(".cluster"))


def load_cluster(spec: str) -> Cluster:
    """A cluster from a file path or a preset name (`dgx-h100`)."""
    path = Path(spec)
    if path.suffix == ".cluster" or path.exists() or "/" in spec:
        return parse_cluster(read_text(path, f"cluster file '{spec}'", ClusterError), spec)
    if spec in preset_names():
        res = resources.files("charon_ir.target").joinpath("clusters", f"{spec}.cluster")
        return parse_cluster(res.read_text(), f"{spec}.cluster")
    raise ClusterError(
        f"no cluster file or preset '{spec}' (presets: {', '.join(preset_names())})"
    )
