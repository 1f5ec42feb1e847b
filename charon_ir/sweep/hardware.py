"""Hardware axes: a GPU variant and a cluster synthesised around it from the swept knobs.

`peak_flops_scale`, `hbm_bw` and `hbm_capacity` derive a GPU variant from the
point's GPU (`H100-SXM5-80GB:hbm_bw=8e12`, docs/gpus.md), which keeps its base's
fitted efficiencies. `nic_speed`, `scale_out_bw`, `scale_up_bw`,
`scale_up_domain`, `topology` and `oversubscription` change the GPU's implicit
cluster (`charon_ir.target.cluster.implicit_cluster`) or the point's; the
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
from charon_ir.frontend.cache import cache_root
from charon_ir.target.cluster import PLAUSIBLE, ScaleOut, Tier, implicit_cluster, load_cluster
from charon_ir.target.hardware import derive_gpu, load_gpu

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


GPU_AXES = ("peak_flops_scale", "hbm_bw", "hbm_capacity")
"""Axes that make a GPU variant (they apply to serving points too)."""
LINK_AXES = ("scale_up_bw", "scale_out_bw")
"""Per GPU and direction: the scale-up link, and the node's NICs shared out per GPU."""

_RATE_UNITS = {"": 1.0, "B/s": 1.0, "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8}
_SIZE_UNITS = {"": 1.0, "B": 1.0, "GB": 1e9, "TB": 1e12, "GiB": 2**30, "TiB": 2**40}


def _quantity(key: str, text: Any, units: dict[str, float], example: str) -> float:
    match = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)\s*", str(text))
    if not match or match.group(2) not in units:
        raise CharonError(f"'{key}' must look like {example} (or a number in SI units), got '{text}'")
    try:
        value = float(match.group(1)) * units[match.group(2)]
    except ValueError:
        raise CharonError(f"'{key}' must look like {example}, got '{text}'") from None
    if not 0 < value < float("inf"):
        raise CharonError(f"'{key}' must be positive, got '{text}'")
    return value


def rate(key: str, text: Any) -> float:
    """Bytes/s of a bandwidth axis (`8TB/s`, `900GB/s`, `8e12`)."""
    value = _quantity(key, text, _RATE_UNITS, "8TB/s or 450GB/s")
    low, high, shown = PLAUSIBLE["bandwidth"]
    if not low <= value <= high:
        raise CharonError(f"'{key}' is '{text}': {shown}")
    return value


def size(key: str, text: Any) -> float:
    """Bytes of a capacity axis (`141GB`, `192GiB`, `1.41e11`)."""
    return _quantity(key, text, _SIZE_UNITS, "141GB or 192GiB")


def gpu_overrides(config: dict[str, Any]) -> dict[str, float]:
    """The GPU variant's keys (target.hardware.VARIANT_KEYS) a point's GPU axes set."""
    out: dict[str, float] = {}
    if float(config.get("peak_flops_scale") or 0.0) not in (0.0, 1.0):
        out["peak_flops_scale"] = float(config["peak_flops_scale"])
    if config.get("hbm_bw"):
        out["hbm_bw"] = rate("hbm_bw", config["hbm_bw"])
    if config.get("hbm_capacity"):
        out["hbm"] = size("hbm_capacity", config["hbm_capacity"])
    return out


def point_hardware(config: dict[str, Any]) -> str:
    """The GPU a point runs on: its `hardware` (or its cluster's GPU), as the
    variant its GPU axes make ("" when neither is set)."""
    overrides = gpu_overrides(config)
    hardware = config.get("hardware") or ""
    if not overrides:
        return hardware
    if not hardware and config.get("cluster"):
        hardware = load_cluster(config["cluster"]).gpu.ref
    base = load_gpu(hardware or "H100-SXM5-80GB")
    return derive_gpu(base, overrides, f"the point's GPU axes on {base.name}").ref


def has_hardware_axes(config: dict[str, Any]) -> bool:
    """Whether a point needs a synthesised cluster (a GPU variant alone does not)."""
    return bool(config.get("nic_speed") or config.get("scale_up_domain") or config.get("topology")
                or config.get("scale_up_bw") or config.get("scale_out_bw")
                or float(config.get("oversubscription") or 1.0) != 1.0)


def cluster_text(config: dict[str, Any], gpus: int) -> str:
    """The canonical cluster text of a point's hardware settings."""
    if config.get("cluster"):
        base = load_cluster(config["cluster"])
        per_node = base.gpus_per_node
        base = base.with_nodes(max(base.nodes, -(-gpus // per_node)))
        if gpu_overrides(config):
            base = replace(base, gpu=load_gpu(point_hardware(config)))
    else:
        gpu = load_gpu(point_hardware(config))
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
    if config.get("scale_up_bw"):
        cluster = replace(cluster, scale_up=replace(cluster.scale_up, bandwidth=rate("scale_up_bw", config["scale_up_bw"])))
    if config.get("scale_out_bw"):
        # the node's NICs share it out: per NIC, the per-GPU rate times GPUs per NIC
        per_nic = rate("scale_out_bw", config["scale_out_bw"]) * per_node / cluster.nics.count
        cluster = replace(cluster, nics=replace(cluster.nics, bandwidth=per_nic))
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
