"""Hardware axes: a cluster synthesised around a GPU from the swept network knobs.

`nic_speed`, `scale_up_domain`, `topology` and `oversubscription` change the
GPU table's implicit cluster (`charon_ir.target.cluster.implicit_cluster`); the
result is written once as a `.cluster` file named by the hash of its text, in
the directory every worker of a sweep can read back (set-target takes files and
presets, and the file keeps a report reproducible by hand).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError
from charon_ir.target.cluster import PLAUSIBLE

TOPOLOGIES = ("fat_tree", "rail_fat_tree", "fullflat")
"""fat_tree: one non-blocking tier over every node (the implicit cluster's);
rail_fat_tree: rail-optimised two tiers, 32 nodes per leaf; fullflat: one
switch hop between any two NICs (the FullFlat co-design study)."""

LEAF_NODES = 32
SWITCH_HOP_S = 0.3e-6


def nic_bandwidth(text: str) -> float:
    """Bytes/s from `400Gb/s`, `50GB/s` or a bare number of Gb/s."""
    match = re.fullmatch(r"\s*([0-9.]+)\s*(Gb/s|GB/s|Tb/s|TB/s)?\s*", str(text))
    if not match:
        raise CharonError(f"nic_speed must look like 400Gb/s or 50GB/s, got '{text}'")
    value, unit = float(match.group(1)), match.group(2) or "Gb/s"
    scale = {"Gb/s": 1e9 / 8, "GB/s": 1e9, "Tb/s": 1e12 / 8, "TB/s": 1e12}[unit]
    low, high, shown = PLAUSIBLE["bandwidth"]
    if not low <= value * scale <= high:  # else the synthesised cluster file's line would be named
        raise CharonError(f"nic_speed '{text}': {shown}")
    return value * scale


def has_hardware_axes(config: dict[str, Any]) -> bool:
    return bool(config.get("nic_speed") or config.get("scale_up_domain") or config.get("topology")
                or float(config.get("oversubscription") or 1.0) != 1.0)


def cluster_text(config: dict[str, Any], gpus: int) -> str:
    """The canonical cluster text of a point's hardware settings."""
    from charon_ir.target.cluster import ScaleOut, Tier, implicit_cluster, load_cluster
    from charon_ir.target.hardware import load_gpu

    if config.get("cluster"):
        base = load_cluster(config["cluster"])
        per_node = base.gpus_per_node
        base = base.with_nodes(max(base.nodes, -(-gpus // per_node)))
    else:
        gpu = load_gpu(config["hardware"])
        per_node = int(config.get("gpus_per_node") or gpu.gpus_per_node)
        base = implicit_cluster(gpu, gpus, per_node)
    cluster = base
    domain = int(config.get("scale_up_domain") or 0)
    if domain:
        if domain % per_node and per_node % domain:
            raise CharonError(
                f"scale_up_domain {domain} is neither a multiple nor a divisor of {per_node} GPUs per node"
            )
        cluster = replace(cluster, scale_up=replace(cluster.scale_up, domain=domain))
    if config.get("nic_speed"):
        cluster = replace(cluster, nics=replace(cluster.nics, bandwidth=nic_bandwidth(config["nic_speed"])))
    topology = config.get("topology") or ""
    ratio = float(config.get("oversubscription") or 1.0)
    if topology and topology not in TOPOLOGIES:
        raise CharonError(f"topology must be one of {', '.join(TOPOLOGIES)}, got '{topology}'")
    nodes = cluster.nodes
    if topology == "fullflat":
        cluster = replace(cluster, scale_out=ScaleOut("fullflat", latency=SWITCH_HOP_S))
    elif topology == "rail_fat_tree" or ratio != 1.0:
        # the leaves' uplinks are what is oversubscribed (down:up at the leaf): the
        # top tier has none, and nodes under one leaf never use them
        leaf = min(LEAF_NODES, nodes)
        tiers = (Tier(leaf, 1.0, SWITCH_HOP_S),)
        if nodes > leaf:
            top = -(-nodes // leaf) * leaf
            tiers = (Tier(leaf, ratio, SWITCH_HOP_S), Tier(top, 1.0, SWITCH_HOP_S))
            cluster = cluster.with_nodes(top) if top != nodes else cluster
        cluster = replace(cluster, scale_out=ScaleOut("fat_tree", tiers, topology == "rail_fat_tree"))
    elif topology == "fat_tree":
        cluster = replace(cluster, scale_out=ScaleOut("fat_tree", (Tier(nodes, 1.0, SWITCH_HOP_S),), True))
    return cluster.to_text()


def cluster_directory() -> Path:
    from charon_ir.frontend.cache import cache_root

    return cache_root() / "sweep-clusters"


def cluster_file(config: dict[str, Any], gpus: int) -> str:
    """The path of a point's synthesised cluster, written when missing."""
    text = cluster_text(config, gpus)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = cluster_directory() / f"{digest}.cluster"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # write then rename: concurrent workers never read half a file
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
    return str(path)
