"""All-to-alls of routed MoE tokens (`TokenRoute`): the bytes a routing-aware
dispatcher (DeepEP, HybridEP) puts on the network and the scale-up links,
against the closed forms of docs/calibration.md ("MoE all-to-all")."""

from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.engines.collectives import TokenRoute, collective_plan, expected_destinations
from charon_ir.target.cluster import load_cluster
from charon_ir.target.topology import NIC, SCALE_UP

H100 = load_cluster("dgx-h100")
S = 4096 * 8 * 7168 * 2.0
"""One DeepSeek-V3 dispatch: 4096 tokens, top-8, hidden 7168, bf16."""


def test_deepseek_v3_over_eight_nodes_matches_the_closed_form():
    # EP64 over 8 nodes: 32 experts a node, one of the 8 groups each; a token's
    # 8 experts lie in 4 groups drawn of 8, then 8 drawn of their 128 experts
    route = TokenRoute(256, top_k=8, groups=8, groups_per_token=4)
    nodes = 8 * 0.5 * (1 - comb(96, 8) / comb(128, 8))  # P(group picked) = 1/2
    ranks = 64 * 0.5 * (1 - comb(124, 8) / comb(128, 8))
    assert expected_destinations(route, 64, 8) == pytest.approx(nodes, rel=1e-12)
    assert nodes == pytest.approx(3.629, abs=1e-3)
    assert expected_destinations(route, 64) == pytest.approx(ranks, rel=1e-12)
    plan = collective_plan("all_to_all", S, tuple(range(64)), H100, route=route)
    assert plan.bytes_on(NIC) == pytest.approx(S / 8 * nodes * 7 / 8, rel=1e-12)
    assert plan.bytes_on(SCALE_UP) == pytest.approx(S / 8 * ranks * 7 / 8, rel=1e-12)
    # versus every copy on its own, S (n - p) / n on the NICs: k / D = 2.2 times more
    pairwise = collective_plan("all_to_all", S, tuple(range(64)), H100)
    assert pairwise.bytes_on(NIC) / plan.bytes_on(NIC) == pytest.approx(8 / nodes, rel=1e-12)


def test_without_groups_a_token_reaches_the_nodes_of_uniform_draws():
    route = TokenRoute(256, top_k=8)
    want = 8 * (1 - comb(256 - 32, 8) / comb(256, 8))
    assert expected_destinations(route, 64, 8) == pytest.approx(want, rel=1e-12)


def test_replicas_send_their_share_and_a_dispatch_gathers_it():
    # tp 2: each rank of the pair sends half the tokens; the dispatch then
    # all-gathers the arrived half over NVLink, the combine does not
    ranks = tuple(range(0, 128, 2))
    alone = collective_plan("all_to_all", S / 2, ranks, H100)
    dispatch = collective_plan("all_to_all", S, ranks, H100, route=TokenRoute(256, replicas=2))
    combine = collective_plan("all_to_all", S, ranks, H100,
                              route=TokenRoute(256, replicas=2, to_experts=False))
    assert dispatch.bytes_on(NIC) == combine.bytes_on(NIC) == pytest.approx(alone.bytes_on(NIC))
    assert combine.bytes_on(SCALE_UP) == pytest.approx(alone.bytes_on(SCALE_UP))
    assert dispatch.bytes_on(SCALE_UP) == pytest.approx(alone.bytes_on(SCALE_UP) + S / 2)


@st.composite
def routes(draw):
    groups = draw(st.sampled_from([0, 1, 2, 4, 8]))
    experts = draw(st.sampled_from([8, 16, 64, 128, 256]))
    if groups and experts % groups:
        groups = 0
    pick = draw(st.integers(1, groups)) if groups else 0
    allowed = pick * (experts // groups) if groups else experts
    top_k = draw(st.integers(1, min(8, allowed)))
    return TokenRoute(experts, top_k=top_k, groups=groups, groups_per_token=pick)


@settings(max_examples=80, deadline=None)
@given(routes(), st.sampled_from([8, 16, 32, 64]), st.sampled_from([1, 2, 4, 8]))
def test_a_token_reaches_at_least_one_and_at_most_k_units(route, n, per_unit):
    if route.experts % n:
        return
    units = -(-n // per_unit)
    reached = expected_destinations(route, n, per_unit)
    assert 1 - 1e-9 <= reached <= min(route.top_k, units) + 1e-9
    # a domain is reached whenever one of its ranks is
    assert reached <= expected_destinations(route, n) + 1e-9


@settings(max_examples=60, deadline=None)
@given(routes(), st.sampled_from([16, 32, 64, 128]))
def test_one_copy_per_node_never_puts_more_on_the_network(route, n):
    if route.experts % n or n > H100.total_gpus:
        return
    ranks = tuple(range(n))
    routed = collective_plan("all_to_all", S, ranks, H100, route=route)
    pairwise = collective_plan("all_to_all", S, ranks, H100)
    assert routed.bytes_on(NIC) <= pairwise.bytes_on(NIC) * (1 + 1e-9)
