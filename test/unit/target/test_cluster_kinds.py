"""Clusters of several node kinds: runs of `node` blocks in rank order, one-line
errors when the kinds do not cover the nodes or disagree."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.target.cluster import ClusterError, load_cluster, parse_cluster

TWO_KINDS = """
name = "mixed"
node h100 { gpu = H100  gpus = 8  nodes = 2 }
node b200 { gpu = B200  gpus = 8  nodes = 1 }
"""


def test_kinds_in_rank_order():
    c = parse_cluster(TWO_KINDS, "mixed.cluster")
    assert c.heterogeneous and c.kind_names() == ("h100", "b200")
    assert c.nodes == 3 and c.total_gpus == 24
    assert c.gpu.name == "H100-SXM5-80GB"  # the first node's
    assert [c.kind_of_rank(r).name for r in (0, 15, 16, 23)] == ["h100", "h100", "b200", "b200"]
    # each kind takes its own GPU's NVLink
    assert c.kind("b200").scale_up.bandwidth == 2 * c.kind("h100").scale_up.bandwidth
    assert c.view("b200").gpu.name.startswith("B200") and not c.view("b200").kinds


def test_slowest_view_takes_each_link_at_its_slowest():
    c = parse_cluster(TWO_KINDS + "node slow { gpu = B200 gpus = 8 nodes = 1 "
                      "nic { count = 4 speed = 200Gb/s latency = 3us } }", "m.cluster")
    slow = c.slowest_view(("b200", "h100", "slow"))
    assert slow.scale_up.bandwidth == c.kind("h100").scale_up.bandwidth  # NVLink 4, not 5
    assert slow.nics == c.kind("slow").nics  # 4 x 200 Gb/s per node
    assert slow.nics.latency == 3e-6
    assert slow.gpu == c.kind("b200").gpu  # priced as the first kind's GPU
    assert c.slowest_view(("b200",)).scale_up == c.kind("b200").scale_up


def test_shipped_example_round_trips():
    c = load_cluster("hetero-h100-b200")
    assert c.kind_names() == ("h100", "b200") and c.total_gpus == 16
    assert parse_cluster(c.to_text()) == c


def test_one_kind_is_the_homogeneous_cluster():
    one = parse_cluster('name = "x"\nnode h100 { gpu = H100 gpus = 8 nodes = 2 }\n'
                        "nic { count = 8 speed = 400Gb/s }")
    plain = parse_cluster('name = "x"\nnodes = 2\nnode { gpu = H100 gpus = 8 }\n'
                          "nic { count = 8 speed = 400Gb/s }")
    assert one == plain and not one.kinds
    # two runs of one kind are one kind too
    runs = parse_cluster('name = "x"\nnode a { gpu = H100 nodes = 1 }\nnode a { gpu = H100 nodes = 1 }\n'
                         "nic { count = 8 speed = 400Gb/s }")
    assert runs == plain


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h100", "b200"]), st.integers(1, 4)), min_size=1, max_size=5))
def test_runs_cover_every_rank_once(runs):
    gpus = {"h100": "H100", "b200": "B200"}
    text = "\n".join(f"node {k} {{ gpu = {gpus[k]} gpus = 8 nodes = {n} }}" for k, n in runs)
    c = parse_cluster(text + "\nnic { count = 8 speed = 400Gb/s }", "r.cluster")
    assert c.nodes == sum(n for _, n in runs)
    expected = [k for k, n in runs for _ in range(n * 8)]
    assert [c.kind_of_rank(r).name if c.kinds else expected[0] for r in range(c.total_gpus)] == expected
    assert parse_cluster(c.to_text()) == c
    with pytest.raises(ClusterError, match="beyond"):
        if c.kinds:
            c.kind_of_rank(c.total_gpus)
        else:
            raise ClusterError("beyond")


@pytest.mark.parametrize("text, message", [
    (TWO_KINDS + "nodes = 4", r"m.cluster:5:9: 'nodes' is 4 but the node kinds hold 3 "
                              r"\(h100: 2, b200: 1\): the kinds must cover every node"),
    ("node a { gpu = H100 nodes = 1 }\nnode { gpu = B200 nodes = 1 }",
     r"m.cluster:2:1: a file with several 'node' blocks names each one's kind"),
    ("node a { gpu = H100 nodes = 1 }\nnode b { gpu = B200 }", r"m.cluster:2:1: 'node' needs 'nodes'"),
    ("node a { gpu = H100 nodes = 1 }\nnode b { gpu = Z100 nodes = 1 }", r"m.cluster:2:16: unknown GPU 'Z100'"),
    ("node a { gpu = H100 nodes = 1 }\nnode b { gpu = B200 gpus = 4 nodes = 1 }",
     r"m.cluster:2:28: node kind 'b' has 4 GPUs per node but 'a' has 8"),
    ("node a { gpu = H100 nodes = 1 }\nnode a { gpu = B200 nodes = 1 }",
     r"m.cluster:2:1: node kind 'a' differs from its first run \(line 1\)"),
    ("node a { gpu = GB200 gpus = 4 nodes = 9 }\nnode b { gpu = H100 gpus = 4 nodes = 1 }",
     r"m.cluster:1:1: node kind 'a' \(GPUs 0 to 35\) cuts a 72-GPU scale-up domain"),
    ("node a { gpu = H100 nodes = 1 colour = red }\nnode b { gpu = B200 nodes = 1 }",
     r"m.cluster:1:31: unknown key 'colour' in 'node'"),
])
def test_bad_kinds_are_one_line(text, message):
    with pytest.raises(ClusterError, match=message) as e:
        parse_cluster(text, "m.cluster")
    assert "\n" not in str(e.value)


def test_a_mixed_cluster_is_not_resized():
    with pytest.raises(ClusterError, match="cannot be changed"):
        parse_cluster(TWO_KINDS).with_nodes(8)


def test_cpu_nodes_serve_a_stage_and_round_trip():
    c = parse_cluster(TWO_KINDS + "cpu_nodes retrieval { nodes = 4 }\ncpu_nodes remote_kv { nodes = 1 }")
    assert [(p.role, p.nodes) for p in c.cpu_nodes] == [("retrieval", 4), ("remote_kv", 1)]
    assert c.total_gpus == 24  # no GPU, no rank
    assert parse_cluster(c.to_text()) == c
    plain = parse_cluster('node { gpu = H100 }\ncpu_nodes retrieval { nodes = 2 }')
    assert parse_cluster(plain.to_text()).cpu_nodes == plain.cpu_nodes


@pytest.mark.parametrize("block, message", [
    ("cpu_nodes routing { nodes = 2 }", r"c.cluster:2:1: 'cpu_nodes' needs a kind \(retrieval \| remote_kv\), got 'routing'"),
    ("cpu_nodes retrieval { }", r"c.cluster:2:1: 'cpu_nodes' needs 'nodes'"),
    ("cpu_nodes retrieval { nodes = 0 }", r"c.cluster:2:31: 'nodes' must be >= 1, got 0"),
    ("cpu_nodes retrieval { nodes = 1 }\ncpu_nodes retrieval { nodes = 2 }", r"c.cluster:3:1: 'cpu_nodes retrieval' appears twice"),
])
def test_bad_cpu_nodes_are_one_line(block, message):
    with pytest.raises(ClusterError, match=message):
        parse_cluster("node { gpu = H100 }\n" + block, "c.cluster")
