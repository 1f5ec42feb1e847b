"""`kv_tier NAME { capacity bandwidth latency }` blocks of the cluster language:
the memory levels below HBM that `charon serve --cluster` moves KV blocks to."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from charon_ir.target.cluster import ClusterError, KVTier, parse_cluster

NODE = "node { gpu = H100-SXM5-80GB gpus = 8 }\n"


def test_tiers_read_in_order_with_units():
    cluster = parse_cluster(NODE + "kv_tier dram { capacity = 256GiB bandwidth = 50GB/s latency = 2us }\n"
                                   "kv_tier ssd { capacity = 3.84TB bandwidth = 6GB/s }\n")
    assert cluster.kv_tiers == (KVTier("dram", 256 * 2**30, 50e9, 2e-6), KVTier("ssd", 3.84e12, 6e9, 0.0))


def test_no_tier_by_default():
    assert parse_cluster(NODE).kv_tiers == ()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**15), st.integers(1, 10**6), st.integers(0, 10**6)),
                min_size=1, max_size=3))
def test_canonical_text_reads_back(numbers):
    """to_text (what set-target stores on a module) keeps every tier exactly."""
    body = "".join(f"kv_tier {name} {{ capacity = {cap}B bandwidth = {bw}MB/s latency = {lat}ns }}\n"
                   for name, (cap, bw, lat) in zip(("dram", "ssd", "remote"), numbers))
    cluster = parse_cluster(NODE + body)
    again = parse_cluster(cluster.to_text())
    assert again == cluster and again.kv_tiers == cluster.kv_tiers


@pytest.mark.parametrize("block, message", [
    ("kv_tier dram { bandwidth = 5GB/s }", "x.cluster:2:1: 'kv_tier' needs 'capacity'"),
    ("kv_tier dram { capacity = 1GB }", "x.cluster:2:1: 'kv_tier' needs 'bandwidth'"),
    ("kv_tier hbm { capacity = 1GB bandwidth = 5GB/s }",
     "x.cluster:2:1: 'kv_tier' needs a kind (dram | ssd | remote), got 'hbm'"),
    ("kv_tier { capacity = 1GB bandwidth = 5GB/s }", "needs a kind (dram | ssd | remote), got no kind"),
    ("kv_tier dram { capacity = 0GB bandwidth = 5GB/s }", "x.cluster:2:27: 'capacity' is 0GB"),
    ("kv_tier dram { capacity = 5GB/s bandwidth = 5GB/s }", "'capacity' must be a size with a unit"),
    ("kv_tier dram { capacity = 1GB bandwidth = 0GB/s }", "'bandwidth' must be > 0"),
    ("kv_tier dram { capacity = 1GB bandwidth = 5GB/s size = 3 }", "unknown key 'size' in 'kv_tier'"),
    ("kv_tier dram { capacity = 1GB bandwidth = 5GB/s } kv_tier dram { capacity = 2GB bandwidth = 5GB/s }",
     "x.cluster:2:51: 'kv_tier dram' appears twice"),
])
def test_bad_tier_is_one_line_naming_file_and_field(block, message):
    with pytest.raises(ClusterError) as e:
        parse_cluster(NODE + block, "x.cluster")
    assert message in str(e.value) and "\n" not in str(e.value)
