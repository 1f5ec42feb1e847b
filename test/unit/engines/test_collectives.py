"""NCCL-like collective plans: closed-form bytes, monotone time, physical bounds."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.engines.collectives import (
    KINDS,
    bus_bandwidth,
    collective_plan,
    double_binary_tree_load,
)
from charon_ir.target.cluster import load_cluster
from charon_ir.target.topology import NIC, SCALE_UP, group_ranks, place

CLUSTERS = ["dgx-a100", "dgx-h100", "gb200-nvl72", "mi300x", "h20", "tpu-v5p", "fullflat-h100"]

clusters = st.sampled_from(CLUSTERS).map(load_cluster)
sizes = st.floats(min_value=1.0, max_value=2.0**34)


@st.composite
def groups(draw):
    """A cluster and one group of a (dp, tp) grid on it."""
    cluster = draw(clusters)
    tp = draw(st.sampled_from([1, 2, 4, cluster.gpus_per_node]))
    dp = draw(st.integers(min_value=1, max_value=max(1, min(16, cluster.total_gpus // tp))))
    axes = draw(st.sampled_from([["tp"], ["dp"], ["dp", "tp"]]))
    ranks = group_ranks({"dp": dp, "tp": tp}, axes)
    return cluster, ranks


def raw_bandwidth(cluster, ranks, link):
    pl = place(cluster, ranks)
    return pl.scale_up.bandwidth if link == SCALE_UP else max(
        c.bandwidth for c in (pl.nic, pl.nic_off_rail) if c is not None
    )


@settings(max_examples=60, deadline=None)
@given(groups(), sizes)
def test_ring_bytes_match_the_closed_forms(group, s):
    cluster, ranks = group
    n = len(ranks)
    if n == 1:
        return
    closed = {
        "all_reduce": 2 * (n - 1) / n * s,
        "all_gather": (n - 1) / n * s,
        "reduce_scatter": (n - 1) / n * s,
        "broadcast": s,
    }
    for kind, want in closed.items():
        plan = collective_plan(kind, s, ranks, cluster, algorithm="ring")
        assert plan.bytes_per_rank == pytest.approx(want, rel=1e-9)
        assert plan.steps == (2 * (n - 1) if kind == "all_reduce" else n - 1)


@settings(max_examples=40, deadline=None)
@given(groups(), sizes)
def test_all_to_all_bytes_match_the_closed_form_without_pxn(group, s):
    cluster, ranks = group
    n = len(ranks)
    plan = collective_plan("all_to_all", s, ranks, replace(cluster, nics=replace(cluster.nics, pxn=False)))
    if n > 1:
        assert plan.bytes_per_rank == pytest.approx((n - 1) / n * s, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(groups(), sizes, sizes, st.sampled_from(KINDS[:-1]))
def test_time_is_monotone_in_size(group, a, b, kind):
    cluster, ranks = group
    small, large = sorted((a, b))
    t_small = collective_plan(kind, small, ranks, cluster).time_s
    t_large = collective_plan(kind, large, ranks, cluster).time_s
    assert t_small <= t_large * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(groups(), sizes, st.sampled_from(KINDS[:-1]))
def test_never_faster_than_bytes_over_peak_link_bandwidth(group, s, kind):
    cluster, ranks = group
    plan = collective_plan(kind, s, ranks, cluster)
    for use in plan.links:
        assert plan.time_s >= use.bytes / raw_bandwidth(cluster, ranks, use.link) * (1 - 1e-12)
    n = len(ranks)
    if n > 1 and kind in ("all_reduce", "all_gather", "reduce_scatter"):
        # every rank must receive at least (n-1)/n of the data through its ports
        pl = place(cluster, ranks)
        ports = pl.scale_up.bandwidth + (pl.nic.bandwidth if pl.nic else 0.0)
        assert plan.time_s >= (n - 1) / n * s / ports * (1 - 1e-12)


def test_single_node_h100_all_reduce_uses_nvls_at_large_sizes():
    h100 = load_cluster("dgx-h100")
    plan = collective_plan("all_reduce", 2**30, tuple(range(8)), h100)
    assert plan.algorithm == "nvls" and plan.bytes_on(SCALE_UP) == 2**30
    a100 = load_cluster("dgx-a100")
    assert collective_plan("all_reduce", 2**30, tuple(range(8)), a100).algorithm == "ring"


def test_small_messages_pick_a_low_latency_protocol():
    plan = collective_plan("all_reduce", 4096, tuple(range(8)), load_cluster("dgx-a100"))
    assert plan.protocol == "LL"


def test_multi_node_ring_is_bound_by_the_nics():
    h100 = load_cluster("dgx-h100")
    ranks = tuple(range(32))
    plan = collective_plan("all_reduce", 2**34, ranks, h100, algorithm="ring")
    busbw = bus_bandwidth("all_reduce", 2**34, 32, plan.time_s)
    assert 0.85 * 400e9 < busbw < 400e9  # 8 NICs x 50 GB/s per node
    assert plan.bytes_on(NIC) == pytest.approx(2 * 31 / 32 * 2**34 / 8)


def test_nvls_tree_halves_its_network_bandwidth_beyond_two_nodes():
    assert double_binary_tree_load(2) == 1.0 and double_binary_tree_load(4) == 2.0


def test_concurrent_dp_groups_share_the_node_nics():
    """Whether a data-parallel group has one rank per node (TP=8: eight sibling
    groups share the node's NICs) or all eight, the bytes leaving a node and the
    per-rank NIC share are the same."""
    h100 = load_cluster("dgx-h100")
    tp8 = group_ranks({"dp": 4, "tp": 8}, ["dp"])
    dp_tp = group_ranks({"dp": 4, "tp": 8}, ["dp", "tp"])
    one_rank_per_node = collective_plan("all_reduce", 2**30, tp8, h100, algorithm="ring")
    whole_nodes = collective_plan("all_reduce", 2**30, dp_tp, h100, algorithm="ring")
    assert one_rank_per_node.bytes_on(NIC) == pytest.approx(2 * 3 / 4 * 2**30)
    assert whole_nodes.bytes_on(NIC) == pytest.approx(2 * 31 / 32 * 2**30 / 8)
    nic = [u for u in one_rank_per_node.links if u.link == NIC][0]
    assert nic.bandwidth == pytest.approx(50e9 * 0.94) and nic.tiers == 1


def test_all_to_all_and_send():
    h100 = load_cluster("dgx-h100")
    a2a = collective_plan("all_to_all", 2**26, tuple(range(16)), h100)
    assert a2a.bytes_on(NIC) == pytest.approx(8 / 16 * 2**26)
    intra = collective_plan("send", 2**26, (0, 1), h100)
    inter = collective_plan("send", 2**26, (0, 8), h100)
    assert intra.time_s < inter.time_s
    assert collective_plan("recv", 2**26, (0, 8), h100).time_s == 0.0
    with pytest.raises(ValueError, match="unknown collective"):
        collective_plan("gossip", 1.0, (0, 1), h100)
