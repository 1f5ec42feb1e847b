"""Where a group's ranks sit and what each link gives one rank."""

import pytest

from charon_ir.target.cluster import load_cluster, parse_cluster
from charon_ir.target.topology import group_ranks, place


def test_group_ranks_follow_the_grid_numbering():
    sizes = {"dp": 4, "pp": 2, "tp": 8}
    assert group_ranks(sizes, ["tp"]) == tuple(range(8))
    assert group_ranks(sizes, ["dp"]) == (0, 16, 32, 48)
    assert group_ranks(sizes, ["dp"], rank=3) == (3, 19, 35, 51)
    assert group_ranks(sizes, ["dp", "tp"]) == tuple(
        d * 16 + t for d in range(4) for t in range(8)
    )
    assert len(set(group_ranks(sizes, ["pp", "tp"], rank=21))) == 16


def test_tensor_parallel_group_stays_in_the_domain():
    pl = place(load_cluster("dgx-h100"), tuple(range(8)))
    assert pl.domains == 1 and pl.per_domain == 8 and pl.nic is None
    assert pl.scale_up.bandwidth == 450e9 and pl.multicast


def test_data_parallel_group_rides_one_rail_and_shares_the_nics():
    h100 = load_cluster("dgx-h100")
    dp = group_ranks({"dp": 4, "tp": 8}, ["dp"])
    pl = place(h100, dp)
    assert pl.domains == 4 and pl.per_domain == 1 and pl.rail_aligned
    assert pl.nic is not None and pl.nic.bandwidth == 50e9  # one NIC per GPU
    assert pl.nic.tiers == 1  # 4 nodes under one leaf


def test_oversubscribed_spine_cuts_bandwidth():
    text = """
    nodes = 64
    node { gpu = H100 gpus = 8 }
    nic { count = 8 speed = 400Gb/s }
    scale_out fat_tree {
      tier { span = 16 oversubscription = 2:1 }
      tier { span = 64 }
    }"""
    c = parse_cluster(text)
    inside = place(c, tuple(range(0, 16 * 8, 8)))  # 16 nodes: one leaf
    across = place(c, tuple(range(0, 32 * 8, 8)))  # 32 nodes: through the spine
    assert inside.nic.tiers == 1 and across.nic.tiers == 2
    assert across.nic.bandwidth == pytest.approx(inside.nic.bandwidth / 2)
    assert across.nic.latency > inside.nic.latency


RAIL_OPTIMIZED_WITHOUT_PXN = """
nodes = 32
node { gpu = H100 gpus = 8 }
nic { count = 8 speed = 400Gb/s pxn = false }
scale_out fat_tree {
  rail_optimized = true
  tier { span = 32 oversubscription = 4:1 }
  tier { span = 32 }
}"""


def test_off_rail_traffic_without_pxn_climbs_to_the_spine():
    text = RAIL_OPTIMIZED_WITHOUT_PXN
    c = parse_cluster(text)
    skewed = place(c, (0, 9))  # GPU 0 of node 0, GPU 1 of node 1
    assert not skewed.rail_aligned
    assert skewed.nic.tiers == 2 and skewed.nic.bandwidth == pytest.approx(50e9 / 4)
    with_pxn = place(parse_cluster(text.replace("pxn = false", "pxn = true")), (0, 9))
    assert with_pxn.nic.tiers == 1


def test_all_to_all_of_a_rail_aligned_group_changes_rails_without_pxn():
    """Two whole nodes are rail-aligned (every node uses all rails), but GPU i's
    block for GPU j != i changes rails: without PXN it climbs to the spine (it
    was priced on the rail, as fast as with PXN)."""
    from charon_ir.engines.collectives import collective_plan

    text = RAIL_OPTIMIZED_WITHOUT_PXN
    ranks = tuple(range(16))
    without, with_pxn = (parse_cluster(text.replace("pxn = false", f"pxn = {pxn}")) for pxn in ("false", "true"))
    assert place(without, ranks).rail_aligned
    assert place(without, ranks).nic_off_rail.tiers == 2 and place(with_pxn, ranks).nic_off_rail.tiers == 1
    slow, fast = (collective_plan("all_to_all", 256e6, ranks, c).time_s for c in (without, with_pxn))
    assert slow > 1.5 * fast


def test_fully_connected_groups_use_only_their_peer_links():
    amd = load_cluster("mi300x")
    full = place(amd, tuple(range(8)))
    pair = place(amd, (0, 1))
    assert full.scale_up.bandwidth == pytest.approx(448e9)
    assert pair.scale_up.bandwidth == pytest.approx(448e9 / 7)


def test_torus_groups_use_the_dimensions_they_span():
    tpu = load_cluster("tpu-v5p")
    ring = place(tpu, tuple(range(8)))  # the last torus dimension, a full ring
    plane = place(tpu, tuple(range(64)))  # two dimensions
    assert ring.scale_up.bandwidth == pytest.approx(2 * 100e9)
    assert plane.scale_up.bandwidth == pytest.approx(4 * 100e9)


def test_nvl72_spans_nodes_inside_one_domain():
    nvl = load_cluster("gb200-nvl72")
    pl = place(nvl, tuple(range(72)))
    assert pl.domains == 1 and pl.nodes == 18 and pl.multicast


def test_rails_follow_the_nic_order():
    from charon_ir.target.topology import rail_of

    text = """
    nodes = 4
    node { gpu = H100 gpus = 8 }
    nic { count = 4 speed = 400Gb/s rails = 2 }
    """
    c = parse_cluster(text)
    # two GPUs per NIC, NIC j on rail j mod 2
    assert [rail_of(c, r) for r in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    # GPU 0 of node 0 and GPU 4 of node 1 share rail 0
    assert place(c, (0, 12)).rail_aligned
    assert not place(c, (0, 10)).rail_aligned
