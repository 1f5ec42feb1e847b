"""A cluster file is bounded before it is parsed (issue #30, item 3): 100,000
tiers took 75 s and 1,000 identical tiers were accepted."""

from __future__ import annotations

import pytest

from charon_ir.target.cluster import MAX_CLUSTER_BYTES, MAX_TIERS, ClusterError, parse_cluster

HEAD = "nodes = 16\nnode { gpu = H100 }\nscale_out fat_tree {\n"


def tiers(*spans: int) -> str:
    return HEAD + "".join(f"  tier {{ span = {s} }}\n" for s in spans) + "}\n"


def error_of(text: str) -> str:
    with pytest.raises(ClusterError) as info:
        parse_cluster(text, "f.cluster")
    assert "\n" not in str(info.value)
    return str(info.value)


def test_identical_tiers_are_refused():
    assert error_of(tiers(16, 16, 16)) == ("f.cluster:3:1: tier spans must grow, each a multiple of the "
                                           "one below (spans 16 then 16)")
    assert "spans 16 then 16" in error_of(tiers(4, 16, 16))
    # but the spine above a rail-optimized leaf tier spans the same nodes: it joins the rails
    assert [t.span for t in parse_cluster(tiers(16, 16), "f.cluster").scale_out.tiers] == [16, 16]
    no_rails = HEAD + "  rail_optimized = false\n  tier { span = 16 }\n  tier { span = 16 }\n}\n"
    assert "spans 16 then 16" in error_of(no_rails)


def test_more_tiers_than_a_fat_tree_has_are_refused():
    text = tiers(*(2**i for i in range(MAX_TIERS + 1)))
    assert error_of(text).startswith(f"f.cluster:{4 + MAX_TIERS}:3: {MAX_TIERS + 1} tiers; a fat tree has at most {MAX_TIERS}")
    # eight growing tiers is the most a file may have
    assert len(parse_cluster(tiers(*(2**i for i in range(1, MAX_TIERS + 1))), "f.cluster").scale_out.tiers) == MAX_TIERS


def test_a_huge_file_is_refused_before_parsing():
    text = tiers(*[16] * 100_000)
    # refused by its size, before lark (which took a minute over it)
    assert error_of(text).startswith(f"f.cluster: {len(text):,} characters; a cluster file is at "
                                     f"most {MAX_CLUSTER_BYTES:,}")


def test_1000_identical_tiers_in_a_file(tmp_path, charon_fails):
    cluster = tmp_path / "same.cluster"
    cluster.write_text(tiers(*[16] * 1000))
    line = charon_fails("simulate", "--model", "llama-3.1-8b", "--cluster", str(cluster), "--gpus", "8")
    assert line == f"error: {cluster}:{4 + MAX_TIERS}:3: 1,000 tiers; a fat tree has at most {MAX_TIERS} (the largest deployed have three or four)"
