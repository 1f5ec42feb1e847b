"""In-network reduction on the scale-out network (SHARP) as a cluster capability."""

from __future__ import annotations

import pytest

from charon_ir.engines.collectives import collective_plan
from charon_ir.errors import CharonError
from charon_ir.target.cluster import parse_cluster

FAT_TREE = """
nodes = 32
node { gpu = H100-SXM5-80GB gpus = 8 }
scale_out fat_tree { SHARP tier { span = 32 } }
"""


def _cluster(sharp: bool):
    return parse_cluster(FAT_TREE.replace("SHARP", "sharp = true" if sharp else ""))


def test_sharp_round_trips_through_the_canonical_text() -> None:
    cluster = _cluster(True)
    assert cluster.scale_out.sharp
    assert parse_cluster(cluster.to_text()) == cluster
    flat = parse_cluster("nodes = 4 node { gpu = H100 } scale_out fullflat { sharp = true }")
    assert flat.scale_out.sharp and parse_cluster(flat.to_text()).scale_out.sharp


def test_sharp_halves_the_nic_traffic_of_a_large_all_reduce() -> None:
    ranks = tuple(range(0, 256, 8))  # one GPU per node: every byte crosses a NIC
    ring = collective_plan("all_reduce", 1e9, ranks, _cluster(False))
    sharp = collective_plan("all_reduce", 1e9, ranks, _cluster(True))
    assert sharp.algorithm == "sharp"
    nic = {u.link: u.bytes for u in sharp.links}["nic"]
    assert nic == pytest.approx(1e9)  # once each way, against the ring's 2 (n - 1) / n
    assert sharp.time_s < 0.6 * ring.time_s


def test_sharp_plays_no_part_inside_one_domain_or_for_other_collectives() -> None:
    inside = collective_plan("all_reduce", 1e9, tuple(range(8)), _cluster(True))
    assert inside.algorithm != "sharp"
    gather = collective_plan("all_gather", 1e9, tuple(range(0, 256, 8)), _cluster(True))
    assert gather.algorithm != "sharp"
    with pytest.raises(ValueError, match="does not apply"):
        collective_plan("all_reduce", 1e9, tuple(range(8)), _cluster(True), algorithm="sharp")


def test_torus_takes_no_sharp() -> None:
    with pytest.raises(CharonError, match="sharp"):
        parse_cluster("nodes = 4 node { gpu = TPU-v5p gpus = 4 } scale_out torus { dims = [2, 2] "
                      "bandwidth = 100GB/s sharp = true }")
