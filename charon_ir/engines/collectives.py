"""
Collectives priced the way NCCL runs them: an algorithm (ring, tree, NVLS,
NVLS-tree, hierarchical, pairwise all-to-all) and a protocol (LL, LL128, Simple)
chosen by predicted time, as NCCL's tuner does, over the links the group crosses
(`charon_ir.target.topology`).

A plan states, per rank, the bytes sent over each link class and the bandwidth
the group gets there, so the runtime can share links between concurrent groups
and re-time the plan. The time of one plan is

    latency + max over links (bytes / bandwidth) + pipeline fill

where latency is NCCL's tuning-model latency (a base plus one software latency
per step, `nccl_latency`) plus the physical hop latencies of the cluster file,
and the fill term `2 sqrt(fill x transfer)` is the cost of filling a pipeline of
optimally sized chunks (nonzero only where a record calibrates it: NVLS).

Payload S (bytes) is the op's `payload_bytes()`: the whole buffer for all_reduce
and broadcast, the gathered output for all_gather, the input for reduce_scatter
and all_to_all. `bus_bandwidth` converts a time to nccl-tests' busbw.

docs/calibration.md lists every constant below and where it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from math import ceil, comb, log2, sqrt

from charon_ir.target.cluster import (
    DEFAULT_NIC_LATENCY_S,
    DEFAULT_SCALE_UP_HOP_S,
    DEFAULT_SWITCH_HOP_S,
    Cluster,
)
from charon_ir.target.hardware import GpuSpec
from charon_ir.target.topology import NIC, SCALE_UP, Placement, place

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send", "recv")
PROTOCOLS = ("LL", "LL128", "Simple")

# --- NCCL's tuning model (src/graph/tuning.cc, NCCL 2.19-2.23), microseconds ---
BASE_LATENCY_US = {
    ("ring", "LL"): 6.6, ("ring", "LL128"): 14.0, ("ring", "Simple"): 8.4,
    ("tree", "LL"): 6.8, ("tree", "LL128"): 14.0, ("tree", "Simple"): 8.4,
}
"""baseLat: fixed cost of launching one collective."""
NVLINK_STEP_US = {
    ("ring", "LL"): 0.6, ("ring", "LL128"): 1.9, ("ring", "Simple"): 3.4,
    ("tree", "LL"): 0.6, ("tree", "LL128"): 1.25, ("tree", "Simple"): 4.0,
}
"""hwLat[NVLINK]: software latency of one step between GPUs of a domain."""
NET_STEP_US = {
    ("ring", "LL"): 2.7, ("ring", "LL128"): 4.0, ("ring", "Simple"): 14.0,
    ("tree", "LL"): 5.0, ("tree", "LL128"): 8.5, ("tree", "Simple"): 14.0,
    ("nvls_tree", "Simple"): 14.0,
}
"""hwLat[NET]: software latency of one step across the network."""
PROTOCOL_BANDWIDTH = {
    ("ring", "LL"): 0.5, ("ring", "LL128"): 0.92, ("ring", "Simple"): 1.0,
    ("tree", "LL"): 1 / 3.8, ("tree", "LL128"): 120 / 128, ("tree", "Simple"): 1.0,
}
"""Fraction of the Simple protocol's bandwidth a protocol keeps (LL sends a flag
with every 8 bytes, LL128 one per 128)."""
TREE_ALLREDUCE_EFFICIENCY = 0.92
"""NCCL: `busBw * .92` for tree all-reduce."""


@dataclass(frozen=True)
class CollectiveConstants:
    """Measured efficiencies of one GPU type's links under NCCL (Simple protocol)."""

    scale_up_efficiency: float
    """Achieved fraction of the scale-up link rate by ring/tree traffic."""
    nic_efficiency: float
    """Achieved fraction of a NIC's line rate."""
    nvls_efficiency: float
    """Achieved fraction of the scale-up link rate by NVLS (in-switch reduction)."""
    nvls_latency_s: float
    nvls_fill_s: float
    """Pipeline-fill constant of NVLS (see the module docstring)."""


# Fitted once, globally per GPU type, by `charon calibrate --refit` against the
# comm records of validation/published.json; see docs/calibration.md.
DEFAULT_CONSTANTS = CollectiveConstants(
    scale_up_efficiency=0.7765,
    nic_efficiency=0.94,
    nvls_efficiency=0.6221,
    nvls_latency_s=39.38e-6,
    nvls_fill_s=2.45e-6,
)
CONSTANTS: dict[str, CollectiveConstants] = {
    "A100-SXM4-80GB": DEFAULT_CONSTANTS,
    "A100-SXM4-40GB": DEFAULT_CONSTANTS,
    "H100-SXM5-80GB": DEFAULT_CONSTANTS,
    # NVLS over NVLink5 in a 72-GPU NVL72 domain (`calibration._refit_nvls_by_gpu`)
    "GB200-per-GPU": replace(DEFAULT_CONSTANTS, nvls_efficiency=0.5663, nvls_fill_s=113.32e-6),
}


def constants_for(gpu_name: str) -> CollectiveConstants:
    return CONSTANTS.get(gpu_name, DEFAULT_CONSTANTS)


def gpu_constants(gpu: GpuSpec) -> CollectiveConstants:
    """The constants fitted for the GPU's calibration, with what its GPU file
    states in place of them."""
    k = constants_for(gpu.calibration)
    eff = gpu.efficiency
    stated = {
        name: getattr(eff, name)
        for name in ("scale_up_efficiency", "nic_efficiency", "nvls_efficiency", "nvls_latency_s", "nvls_fill_s")
        if getattr(eff, name) is not None
    }
    return replace(k, **stated) if stated else k


@dataclass(frozen=True)
class LinkUse:
    """What one rank sends over one link class."""

    link: str
    """`scale_up` or `nic`."""
    bytes: float
    bandwidth: float
    """Bytes/s this rank gets there (efficiency and protocol applied)."""
    tiers: int = 0
    """For `nic`: fabric tiers the traffic climbs (1: the leaf switch only)."""

    @property
    def time_s(self) -> float:
        return self.bytes / self.bandwidth if self.bytes else 0.0


@dataclass(frozen=True)
class CollectivePlan:
    kind: str
    algorithm: str
    protocol: str
    group_size: int
    payload_bytes: float
    steps: int
    latency_s: float
    fill_s: float
    links: tuple[LinkUse, ...]

    @property
    def transfer_s(self) -> float:
        return max((u.time_s for u in self.links), default=0.0)

    @property
    def time_s(self) -> float:
        t = self.transfer_s
        return self.latency_s + t + 2.0 * sqrt(self.fill_s * t)

    def bytes_on(self, link: str) -> float:
        return sum(u.bytes for u in self.links if u.link == link)

    @property
    def bytes_per_rank(self) -> float:
        """Bytes one rank sends in all (scale-up plus NIC)."""
        return sum(u.bytes for u in self.links)


def bus_bandwidth(kind: str, payload_bytes: float, n: int, time_s: float) -> float:
    """nccl-tests' bus bandwidth (bytes/s) of one collective."""
    if time_s <= 0 or n <= 1:
        return 0.0
    algbw = payload_bytes / time_s
    factor = {
        "all_reduce": 2.0 * (n - 1) / n,
        "all_gather": (n - 1) / n,
        "reduce_scatter": (n - 1) / n,
        "all_to_all": (n - 1) / n,
    }.get(kind, 1.0)
    return algbw * factor


def collective_plan(
    kind: str,
    payload_bytes: float,
    ranks: tuple[int, ...] | list[int],
    cluster: Cluster,
    algorithm: str | None = None,
    route: TokenRoute | None = None,
) -> CollectivePlan:
    """The fastest NCCL-like plan for `kind` over the group `ranks` (global rank
    ids), or the best plan of `algorithm` when one is named. An all_to_all that
    moves routed tokens may say how (`route`)."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective '{kind}' (known: {', '.join(KINDS)})")
    ranks = tuple(ranks)
    n = len(ranks)
    if n <= 1 or payload_bytes <= 0 or kind == "recv":
        return CollectivePlan(kind, "none", "none", n, payload_bytes, 0, 0.0, 0.0, ())
    candidates = _candidates(kind, float(payload_bytes), ranks, cluster, route)
    if algorithm is not None:
        candidates = [c for c in candidates if c.algorithm == algorithm]
        if not candidates:
            raise ValueError(f"algorithm '{algorithm}' does not apply to {kind} on this group")
    return min(candidates, key=lambda c: c.time_s)


def _candidates(kind: str, s: float, ranks: tuple[int, ...], cluster: Cluster,
                route: TokenRoute | None = None) -> list[CollectivePlan]:
    pl = place(cluster, ranks)
    k = gpu_constants(cluster.gpu)
    if kind == "all_reduce":
        out = [_ring(kind, s, pl, cluster, k, proto) for proto in PROTOCOLS]
        if pl.domains > 1:
            out += [_tree(s, pl, cluster, k, proto) for proto in PROTOCOLS]
        if pl.domains > 1 and pl.per_domain > 1 and _runs_hierarchical(cluster):
            out.append(_hierarchical(kind, s, pl, cluster, k))
        if pl.multicast and pl.domains == 1:
            out.append(_nvls(s, pl, cluster, k))
        if pl.multicast and pl.domains > 1:
            out.append(_nvls_tree(s, pl, cluster, k))
        if cluster.scale_out.sharp and pl.domains > 1 and pl.nic is not None:
            out.append(_sharp(s, pl, cluster, k))
        return out
    if kind in ("all_gather", "reduce_scatter"):
        out = [_ring(kind, s, pl, cluster, k, proto) for proto in PROTOCOLS]
        if pl.domains > 1 and pl.per_domain > 1 and _runs_hierarchical(cluster):
            out.append(_hierarchical(kind, s, pl, cluster, k))
        return out
    if kind == "broadcast":
        return [_ring(kind, s, pl, cluster, k, proto) for proto in PROTOCOLS]
    if kind == "all_to_all":
        if route is not None:
            return [_token_all_to_all(s, pl, cluster, k, route)]
        return [_all_to_all(s, pl, cluster, k)]
    return [_send(s, pl, cluster, k)]


# ---------------------------------------------------------------------------
# Algorithms
# ---------------------------------------------------------------------------


def _runs_hierarchical(cluster: Cluster) -> bool:
    """NCCL and RCCL run rings (and trees) across nodes, not a separate
    intra-then-inter all-reduce; measured NCCL busbw across nodes sits at the
    ring's bound (docs/calibration.md). Torus machines (TPU/XLA) reduce one
    dimension after the other, which is the hierarchical plan."""
    return cluster.scale_up.kind == "torus"


def _scale_up_bw(pl: Placement, k: CollectiveConstants, factor: float = 1.0) -> float:
    return pl.scale_up.bandwidth * k.scale_up_efficiency * factor


def _nic_bw(pl: Placement, k: CollectiveConstants, factor: float = 1.0, off_rail: bool = False
            ) -> float:
    link = pl.nic_off_rail if off_rail else pl.nic
    assert link is not None
    return link.bandwidth * k.nic_efficiency * factor


def _nic_use(nbytes: float, pl: Placement, k: CollectiveConstants, factor: float = 1.0,
             off_rail: bool = False) -> LinkUse:
    link = pl.nic_off_rail if off_rail else pl.nic
    assert link is not None
    return LinkUse(NIC, nbytes, _nic_bw(pl, k, factor, off_rail), link.tiers)


REFERENCE_SCALE_UP_HOP_S = DEFAULT_SCALE_UP_HOP_S
REFERENCE_NET_PATH_S = DEFAULT_NIC_LATENCY_S + DEFAULT_SWITCH_HOP_S
"""NCCL's step latencies were measured end to end on DGX-class systems (one
NVSwitch hop; NIC, one leaf switch, NIC). A cluster's paths add only what they
take beyond these."""


def intra_step_s(algorithm: str, protocol: str, pl: Placement) -> float:
    extra = max(0.0, pl.scale_up.latency - REFERENCE_SCALE_UP_HOP_S)
    return NVLINK_STEP_US[(algorithm, protocol)] * 1e-6 + extra


def inter_step_s(algorithm: str, protocol: str, pl: Placement) -> float:
    if pl.nic is None:
        return intra_step_s(algorithm, protocol, pl)
    extra = max(0.0, pl.nic.latency - REFERENCE_NET_PATH_S)
    return NET_STEP_US[(algorithm, protocol)] * 1e-6 + extra


def nccl_latency(algorithm: str, protocol: str, kind: str, pl: Placement) -> float:
    """NCCL's tuning-model latency (seconds) of one collective, with the extra
    path latency of the cluster file added to every step."""
    n, m, p = pl.size, pl.domains, pl.per_domain
    nsteps = 2 * (n - 1) if kind == "all_reduce" else n - 1
    intra = intra_step_s(algorithm, protocol, pl)
    inter = inter_step_s(algorithm, protocol, pl)
    base = BASE_LATENCY_US[(algorithm, protocol)] * 1e-6
    if algorithm == "ring":
        n_inter = 0 if m == 1 else (2 * (m - 1) if kind == "all_reduce" else m - 1)
        if kind == "broadcast":
            return base + (n - 1) * intra + (m - 1) * (inter - intra)
        return base + (nsteps - n_inter) * intra + n_inter * inter
    # tree
    return base + 2 * ((p - 1) * intra + ceil(log2(m)) * inter)


def _ring(kind: str, s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants,
          proto: str) -> CollectivePlan:
    """Rings through every rank; each ring leaves a domain once, on the NIC of
    the rank at its edge, and NCCL runs one ring per NIC so all NICs carry it."""
    n, p = pl.size, pl.per_domain
    if kind == "all_reduce":
        per_rank = 2.0 * (n - 1) / n * s
    elif kind == "broadcast":
        per_rank = s
    else:
        per_rank = (n - 1) / n * s
    steps = 2 * (n - 1) if kind == "all_reduce" else n - 1
    f = PROTOCOL_BANDWIDTH[("ring", proto)]
    if pl.domains == 1:
        links = (LinkUse(SCALE_UP, per_rank, _scale_up_bw(pl, k, f)),)
    else:
        links = (
            LinkUse(SCALE_UP, per_rank * (p - 1) / p, _scale_up_bw(pl, k, f)),
            _nic_use(per_rank / p, pl, k, f),
        )
    lat = nccl_latency("ring", proto, kind, pl)
    return CollectivePlan(kind, "ring", proto, n, s, steps, lat, 0.0, links)


SHARP_SWITCH_S = 1.0e-6
"""Aggregation in one switch of a SHARP tree, per tier climbed and come back
down (NVIDIA quotes sub-microsecond InfiniBand switch latency; the reduction
adds to it): an assumption, no record times SHARP."""


def _sharp(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants) -> CollectivePlan:
    """NCCL's CollNet all-reduce over SHARP switches: a reduce-scatter inside
    each domain, each rank's 1/p shard sent once up the switch tree, reduced in
    the network and received once back, then an all-gather inside the domain.
    A NIC carries s/p each way (a ring across domains: 2 (n-1)/n s/p), and the
    inter-domain steps are one climb of the tree, not 2 (m - 1) hops."""
    n, p = pl.size, pl.per_domain
    assert pl.nic is not None
    links = [_nic_use(s / p, pl, k)]
    if p > 1:
        links.insert(0, LinkUse(SCALE_UP, 2.0 * (p - 1) / p * s, _scale_up_bw(pl, k)))
    tiers = max(1, pl.nic.tiers)
    latency = (BASE_LATENCY_US[("tree", "Simple")] * 1e-6
               + 2 * (p - 1) * intra_step_s("ring", "Simple", pl)
               + 2 * inter_step_s("tree", "Simple", pl) + tiers * SHARP_SWITCH_S)
    return CollectivePlan("all_reduce", "sharp", "Simple", n, s, 2 * (p - 1) + 2, latency, 0.0, tuple(links))


def _tree(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants, proto: str
          ) -> CollectivePlan:
    """NCCL's tree all-reduce: a chain inside each domain, a double binary tree
    across domains. NCCL's tuning model gives it half the link bandwidth (the
    whole buffer goes up and comes back down) times 0.92."""
    n, p, m = pl.size, pl.per_domain, pl.domains
    f = PROTOCOL_BANDWIDTH[("tree", proto)] * TREE_ALLREDUCE_EFFICIENCY
    links = (
        LinkUse(SCALE_UP, 2.0 * s * (p - 1) / p, _scale_up_bw(pl, k, f)),
        _nic_use(2.0 * s / p, pl, k, f),
    )
    steps = 2 * ((p - 1) + ceil(log2(m)))
    return CollectivePlan("all_reduce", "tree", proto, n, s, steps,
                          nccl_latency("tree", proto, "all_reduce", pl), 0.0, links)


def _nvls(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants) -> CollectivePlan:
    """NVLink SHARP: the switch reduces (multimem.ld_reduce) and multicasts
    (multimem.st), so each GPU sends and receives the buffer once."""
    links = (LinkUse(SCALE_UP, s, pl.scale_up.bandwidth * k.nvls_efficiency),)
    lat = k.nvls_latency_s + 2 * max(0.0, pl.scale_up.latency - REFERENCE_SCALE_UP_HOP_S)
    return CollectivePlan("all_reduce", "nvls", "Simple", pl.size, s, 2, lat, k.nvls_fill_s, links)


def double_binary_tree_load(m: int) -> float:
    """Bytes each node sends (and receives) per byte of its slice in an
    all-reduce over NCCL's double binary tree of m nodes: 1 for two nodes, 2 once
    some node is an inner node of one tree (NCCL's tuner: bwInter / 2 for
    nNodes > 2)."""
    return 1.0 if m <= 2 else 2.0


def _nvls_tree(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants
               ) -> CollectivePlan:
    """NVLS inside each domain, then a double binary tree across domains on the
    1/p slice each GPU owns, over that GPU's own NIC."""
    p, m = pl.per_domain, pl.domains
    links = (
        LinkUse(SCALE_UP, s, pl.scale_up.bandwidth * k.nvls_efficiency),
        _nic_use(s / p * double_binary_tree_load(m), pl, k),
    )
    assert pl.nic is not None
    lat = (k.nvls_latency_s + 2 * max(0.0, pl.scale_up.latency - REFERENCE_SCALE_UP_HOP_S)
           + 2 * ceil(log2(m)) * inter_step_s("nvls_tree", "Simple", pl))
    return CollectivePlan("all_reduce", "nvls_tree", "Simple", pl.size, s,
                          2 + 2 * ceil(log2(m)), lat, k.nvls_fill_s, links)


def _hierarchical(kind: str, s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants
                  ) -> CollectivePlan:
    """Inside each domain first (reduce-scatter), then across domains between
    the ranks that hold the same slice (one rail each), then inside again
    (all-gather): each NIC carries only its rank's 1/p slice."""
    n, p, m = pl.size, pl.per_domain, pl.domains
    if kind == "all_reduce":
        intra, inter = 2.0 * (p - 1) / p * s, 2.0 * (m - 1) / m * s / p
        steps = 2 * (p - 1) + 2 * (m - 1)
    else:
        intra, inter = (p - 1) / p * s, (m - 1) / m * s / p
        steps = (p - 1) + (m - 1)
    links = (
        LinkUse(SCALE_UP, intra, _scale_up_bw(pl, k)),
        _nic_use(inter, pl, k),
    )
    assert pl.nic is not None
    intra_step = intra_step_s("ring", "Simple", pl)
    inter_step = inter_step_s("ring", "Simple", pl)
    per_phase = 2 if kind == "all_reduce" else 1
    lat = (BASE_LATENCY_US[("ring", "Simple")] * 1e-6 + per_phase * (p - 1) * intra_step
           + per_phase * (m - 1) * inter_step)
    return CollectivePlan(kind, "hierarchical", "Simple", n, s, steps, lat, 0.0, links)


ALL_TO_ALL_PEER_US = 0.5
"""Per-peer cost of posting one send/recv pair in a grouped all-to-all."""


def _all_to_all(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants
                ) -> CollectivePlan:
    """Every rank sends S/n to every other rank at once. With PXN, a block for
    a GPU on another rail first crosses NVLink to the local GPU on that rail."""
    n, p = pl.size, pl.per_domain
    intra = (p - 1) / n * s
    inter = (n - p) / n * s
    uses = []
    if pl.domains > 1:
        off_rail = not pl.rail_aligned or p > 1
        pxn = off_rail and cluster.nics.pxn
        if pxn:
            intra += inter * (p - 1) / p
        uses.append(_nic_use(inter, pl, k, off_rail=off_rail and not pxn))
    uses.insert(0, LinkUse(SCALE_UP, intra, _scale_up_bw(pl, k)))
    step = inter_step_s("ring", "Simple", pl)
    lat = BASE_LATENCY_US[("ring", "Simple")] * 1e-6 + step + (n - 1) * ALL_TO_ALL_PEER_US * 1e-6
    return CollectivePlan("all_to_all", "pairwise", "Simple", n, s, 1, lat, 0.0, tuple(uses))


def _send(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants) -> CollectivePlan:
    if pl.domains > 1:
        assert pl.nic is not None
        links = (_nic_use(s, pl, k),)
    else:
        links = (LinkUse(SCALE_UP, s, _scale_up_bw(pl, k)),)
    lat = inter_step_s("ring", "Simple", pl)
    return CollectivePlan("send", "p2p", "Simple", pl.size, s, 1, lat, 0.0, links)


# ---------------------------------------------------------------------------
# Routed tokens: MoE dispatch and combine by a routing-aware dispatcher
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenRoute:
    """How an all_to_all of MoE tokens is run (docs/calibration.md, "MoE
    all-to-all"). The expert-major side [experts, capacity, h] holds `top_k`
    copies of each token, one per routed expert, experts laid out contiguously
    over the group (experts / n a rank, Megatron-Core's local experts)."""

    experts: int
    top_k: int = 0
    """0: every copy travels on its own (NCCL's all-to-all: Megatron-Core's
    `alltoall` dispatcher). k > 0: a token crosses the network once per
    destination domain and is fanned out over the scale-up links there, once per
    destination rank (DeepEP's and HybridEP's dispatch; their combine reduces in
    the domain first and sends one partial sum back per domain)."""
    groups: int = 0
    groups_per_token: int = 0
    """Group-limited routing (DeepSeek-V2/V3's `n_group` / `topk_group`): the
    experts form `groups` contiguous groups and a token's copies go to experts of
    `groups_per_token` of them; 0: any expert."""
    replicas: int = 1
    """Ranks next to each other (tensor parallelism) that hold the same tokens:
    each sends 1/replicas of them, as Megatron-Core's sequence-parallel MoE input
    does, and a dispatch all-gathers what arrives among them over the scale-up
    links."""
    to_experts: bool = True
    """A dispatch (tokens to their experts; what all-gathers among replicas)
    rather than a combine."""


def _miss_probability(share: tuple[int, ...], route: TokenRoute) -> float:
    """Probability that none of a token's k copies lands on a unit (a rank or a
    domain) holding `share[g]` experts of group g (only the groups it touches),
    experts drawn uniformly without replacement from the allowed ones: all of
    them, or those of `groups_per_token` groups drawn uniformly."""
    k = route.top_k
    if not route.groups:
        allowed, mine = route.experts, sum(share)
        return comb(allowed - mine, k) / comb(allowed, k)
    g, pick = route.groups, route.groups_per_token
    per_group = route.experts // g
    allowed = pick * per_group
    # ways to pick j of the touched groups with b of the unit's experts among them
    ways: dict[tuple[int, int], int] = {(0, 0): 1}
    for a in share:
        for (j, b), w in list(ways.items()):
            ways[(j + 1, b + a)] = ways.get((j + 1, b + a), 0) + w
    untouched = g - len(share)
    total = comb(g, pick)
    miss = 0.0
    for (j, b), w in ways.items():
        if j <= pick:
            miss += w * comb(untouched, pick - j) / total * comb(allowed - b, k) / comb(allowed, k)
    return miss


def expected_destinations(route: TokenRoute, ranks: int, per_unit: int = 1) -> float:
    """Expected number of units (blocks of `per_unit` neighbouring ranks of a
    group of `ranks`: the ranks themselves, or their domains) that one token's
    copies reach, experts / ranks of them on each rank in order."""
    per_rank = route.experts // ranks
    per_group = route.experts // route.groups if route.groups else route.experts
    hits = 0.0
    cache: dict[tuple[int, ...], float] = {}
    for first in range(0, ranks, per_unit):
        lo, hi = first * per_rank, min(ranks, first + per_unit) * per_rank
        share = tuple(sorted(
            min(hi, (g + 1) * per_group) - max(lo, g * per_group)
            for g in range(lo // per_group, (hi - 1) // per_group + 1)
        ))
        if share not in cache:
            cache[share] = 1.0 - _miss_probability(share, route)
        hits += cache[share]
    return hits


def _token_all_to_all(s: float, pl: Placement, cluster: Cluster, k: CollectiveConstants,
                      route: TokenRoute) -> CollectivePlan:
    """An all_to_all of routed tokens. Each of `replicas` ranks holding the same
    tokens sends 1/replicas of them. Without `top_k` every copy travels (the
    pairwise plan); with it, a token of S / k bytes goes once to each remote
    domain it reaches, on its own rail (to the GPU of the same local index), and
    from there, and in its own domain, once to each other rank it reaches over the
    scale-up links: per rank

        network:  S / k * D * (m - 1) / m      D: expected domains reached
        scale-up: S / k * R * (p - 1) / p      R: expected ranks reached

    (a domain's entry rank, one of its p, already holds the token). A dispatch
    among replicas then all-gathers what arrived: (r - 1) / r * S more on the
    scale-up links."""
    r = max(1, route.replicas)
    share = s / r
    if route.top_k:
        n, m, p = pl.size, pl.domains, pl.per_domain
        row = share / route.top_k
        ranks_reached = expected_destinations(route, n)
        uses = [LinkUse(SCALE_UP, row * ranks_reached * (p - 1) / p, _scale_up_bw(pl, k))]
        if m > 1:
            domains = expected_destinations(route, n, p)
            uses.append(_nic_use(row * domains * (m - 1) / m, pl, k))
        step = inter_step_s("ring", "Simple", pl)
        lat = BASE_LATENCY_US[("ring", "Simple")] * 1e-6 + step + (n - 1) * ALL_TO_ALL_PEER_US * 1e-6
        plan = CollectivePlan("all_to_all", "routed", "Simple", n, s, 1, lat, 0.0, tuple(uses))
    else:
        plan = _all_to_all(share, pl, cluster, k)
    if r == 1 or not route.to_experts:
        return plan
    links = tuple(
        replace(u, bytes=u.bytes + (r - 1) / r * s) if u.link == SCALE_UP else u for u in plan.links
    )
    return replace(plan, payload_bytes=s, links=links)


@cache
def cached_plan(kind: str, payload_bytes: float, ranks: tuple[int, ...], cluster: Cluster,
                route: TokenRoute | None = None) -> CollectivePlan:
    return collective_plan(kind, payload_bytes, ranks, cluster, route=route)
