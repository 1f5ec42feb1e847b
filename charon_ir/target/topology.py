"""
Where the ranks of a communication group sit in a cluster, and which links their
traffic crosses.

Ranks are numbered as on a device grid: the last grid axis fastest, node-major,
so rank r is GPU `r % gpus_per_node` of node `r // gpus_per_node`, and lies in
scale-up domain `r // domain`.

The bandwidth a group gets on a link class is stated per rank and already net of
the sibling groups that run the same collective at the same time: a data-parallel
all-reduce runs once per tensor-parallel rank, so the node's NICs are shared by
`gpus_per_node / ranks_per_node` groups. That is the static, worst-case sharing an
analytic engine can see; the runtime's max-min fair sharing refines it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import prod

from charon_ir.target.cluster import Cluster

SCALE_UP = "scale_up"
NIC = "nic"


def group_ranks(axis_sizes: dict[str, int], axes: list[str] | tuple[str, ...], rank: int = 0,
                subgroup: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The global ranks of the group over `axes` that contains `rank`, in the
    group's own order (its last axis fastest); with a `subgroup` (one axis), only
    the ranks at those positions along it."""
    ranks = _group_ranks(tuple(axis_sizes.items()), tuple(axes), rank)
    return tuple(ranks[i] for i in subgroup) if subgroup else ranks


@cache
def _group_ranks(sizes: tuple[tuple[str, int], ...], axes: tuple[str, ...], rank: int
                 ) -> tuple[int, ...]:
    names = [a for a, _ in sizes]
    dims = dict(sizes)
    strides = {a: prod(dims[b] for b in names[i + 1:]) for i, a in enumerate(names)}
    base = rank
    for a in axes:
        base -= ((rank // strides[a]) % dims[a]) * strides[a]
    ranks = [base]
    for a in reversed(axes):
        ranks = [r + i * strides[a] for i in range(dims[a]) for r in ranks]
    return tuple(sorted(ranks, key=lambda r: tuple((r // strides[a]) % dims[a] for a in axes)))


@dataclass(frozen=True)
class LinkClass:
    """One kind of link a group's traffic crosses, as seen by one rank."""

    name: str
    """`scale_up`, `nic` (NIC + the fabric tiers behind it)."""
    bandwidth: float
    """Bytes/s one direction available to one rank of the group, after sharing
    with sibling groups and the oversubscription of the fabric tiers crossed."""
    latency: float
    """Physical latency of one step over this link class, seconds."""
    tiers: int = 0
    """Fabric tiers climbed (NIC class only): 1 = leaf switch only."""


@dataclass(frozen=True)
class Placement:
    """The shape of one group on the cluster."""

    size: int
    domains: int
    """Scale-up domains the group spans (m)."""
    per_domain: int
    """Ranks of the group in each domain (p; the largest if uneven)."""
    nodes: int
    rail_aligned: bool
    """Every domain's ranks use NICs on the same rails, so inter-domain traffic
    can stay on its rail."""
    scale_up: LinkClass
    nic: LinkClass | None
    """None when the group stays inside one domain."""
    nic_off_rail: LinkClass | None
    """The NIC class for traffic between different local GPU indices (all-to-all):
    with PXN, `nic` (the block crosses NVLink to the GPU on the right rail first);
    without, on a rail-optimised fat tree it climbs to the spine."""
    multicast: bool
    """The scale-up fabric reduces and multicasts in the switch (NVLS)."""


def place(cluster: Cluster, ranks: tuple[int, ...]) -> Placement:
    return _place(cluster, tuple(ranks))


@cache
def _place(cluster: Cluster, ranks: tuple[int, ...]) -> Placement:
    su = cluster.scale_up
    per_node = cluster.gpus_per_node
    domain_size = max(1, su.domain)
    by_domain: dict[int, list[int]] = {}
    for r in ranks:
        by_domain.setdefault(r // domain_size, []).append(r)
    m = len(by_domain)
    p = max(len(v) for v in by_domain.values())
    nodes = sorted({r // per_node for r in ranks})
    rails = {frozenset(rail_of(cluster, r) for r in v) for v in by_domain.values()}
    rail_aligned = len(rails) == 1

    scale_up = LinkClass(SCALE_UP, _scale_up_bandwidth(cluster, by_domain, p), su.latency)
    nic = off_rail = None
    if m > 1:
        nic = _nic_class(cluster, nodes, p, rail_aligned or cluster.nics.pxn)
        # between different local GPU indices (all-to-all) traffic changes rails
        # even in a rail-aligned group: without PXN it crosses above the leaf
        off_rail = nic if cluster.nics.pxn else _nic_class(cluster, nodes, p, False)
        if not rail_aligned and not cluster.nics.pxn:
            nic = off_rail
    return Placement(
        len(ranks), m, p, len(nodes), rail_aligned, scale_up, nic, off_rail,
        su.multicast and su.kind == "nvswitch" and p > 1,
    )


def rail_of(cluster: Cluster, rank: int) -> int:
    """The rail of the NIC a rank's GPU uses: GPUs share a node's NICs in order,
    and NIC j of every node sits on rail j mod rails."""
    nics = cluster.nics
    local = rank % cluster.gpus_per_node
    return (local * nics.count // cluster.gpus_per_node) % max(1, nics.rails)


def _scale_up_bandwidth(cluster: Cluster, by_domain: dict[int, list[int]], p: int) -> float:
    su = cluster.scale_up
    if su.kind == "nvswitch":
        # a non-blocking switch: every GPU keeps its full port bandwidth
        return su.bandwidth
    if su.kind == "fully_connected":
        # one dedicated link per peer pair: a group of p uses p - 1 of them
        peers = max(1, su.domain - 1)
        return su.bandwidth * max(1, p - 1) / peers
    if su.kind == "torus":
        # one bidirectional ring per torus dimension the group spans, all
        # dimensions at once (TPU-style multi-dimensional collectives)
        members = next(iter(by_domain.values()))
        coords = [_coords(r % su.domain, su.dims) for r in members]
        bw = 0.0
        for d, size in enumerate(su.dims):
            extent = len({c[d] for c in coords})
            if extent > 1:
                bw += su.bandwidth * (2 if extent == size else 1)
        return bw or su.bandwidth
    # no scale-up fabric: GPUs of a node talk through PCIe and the host
    return su.bandwidth or cluster.nics.bandwidth


def _coords(index: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for size in reversed(dims):
        out.append(index % size)
        index //= size
    return tuple(reversed(out))


def _nic_class(cluster: Cluster, nodes: list[int], p: int, on_rail: bool) -> LinkClass:
    nics, so = cluster.nics, cluster.scale_out
    # the node's NICs are shared by every sibling group that runs alongside
    per_rank = cluster.nic_bandwidth_per_gpu
    if so.kind == "torus":
        spanned = sum(
            1 for d in range(len(so.dims))
            if len({_coords(n, so.dims)[d] for n in nodes}) > 1
        )
        link = so.bandwidth * 2 * max(1, spanned) / cluster.gpus_per_node
        return LinkClass(NIC, min(per_rank, link) if per_rank else link,
                         nics.latency + so.latency, 1)
    if so.kind == "none" or not so.tiers:
        return LinkClass(NIC, per_rank, nics.latency, 1)
    tiers = so.tiers
    top = 0
    while top < len(tiers) - 1 and len({n // tiers[top].span for n in nodes}) > 1:
        top += 1
    if so.kind == "fat_tree" and so.rail_optimized and not on_rail and len(tiers) > 1:
        # rails meet only above the leaf: off-rail traffic climbs to the spine
        top = max(top, 1)
    factor = max((t.oversubscription for t in tiers[:top]), default=1.0)
    latency = nics.latency + tiers[top].latency + 2 * sum(t.latency for t in tiers[:top])
    return LinkClass(NIC, per_rank / factor, latency, top + 1)
