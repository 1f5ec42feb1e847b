"""The cluster description language: presets, round trips, one-line errors."""

from pathlib import Path

import pytest

from charon_ir.target.cluster import (
    Cluster,
    ClusterError,
    implicit_cluster,
    load_cluster,
    parse_cluster,
    preset_names,
)
from charon_ir.target.hardware import load_gpu

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "clusters"

SMALL = """
name = "two"
nodes = 2
node { gpu = H100  gpus = 8 }
nic { count = 8  speed = 400Gb/s }
"""


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_parses_and_round_trips(name: str):
    cluster = load_cluster(name)
    assert cluster.total_gpus == cluster.nodes * cluster.gpus_per_node
    assert parse_cluster(cluster.to_text()) == cluster


def test_the_issue_presets_exist():
    for name in ("dgx-a100", "dgx-h100", "h800", "h20", "dgx-b200", "gb200-nvl72"):
        assert name in preset_names()


def test_examples_are_the_presets():
    examples = sorted(p.stem for p in EXAMPLES.glob("*.cluster"))
    assert examples == preset_names()
    for name in examples:
        cluster = load_cluster(str(EXAMPLES / f"{name}.cluster"))
        assert cluster == load_cluster(name)


def test_units_and_defaults():
    c = parse_cluster(SMALL)
    assert c.name == "two" and c.gpu.name == "H100-SXM5-80GB"
    assert c.nics.bandwidth == 50e9  # 400 Gb/s = 50 GB/s
    assert c.nics.rails == 8
    # H100 SXM nodes default to NVSwitch with NVLS, the GPU table's bandwidth
    assert c.scale_up.kind == "nvswitch" and c.scale_up.multicast
    assert c.scale_up.bandwidth == 450e9
    assert c.nic_bandwidth_per_gpu == 50e9


def test_fat_tree_tiers_and_oversubscription():
    c = parse_cluster(SMALL.replace("nodes = 2", "nodes = 64") + """
        scale_out fat_tree {
          tier { span = 16  oversubscription = 2:1  latency = 0.4us }
          tier { span = 64 }
        }""")
    assert [t.span for t in c.scale_out.tiers] == [16, 64]
    assert c.scale_out.tiers[0].oversubscription == 2.0
    assert c.scale_out.tiers[0].latency == 0.4e-6


def test_torus_and_fully_connected():
    tpu = load_cluster("tpu-v5p")
    assert tpu.scale_up.kind == "torus" and tpu.scale_up.dims == (8, 8, 8)
    amd = load_cluster("mi300x")
    assert amd.scale_up.kind == "fully_connected"
    nvl = load_cluster("gb200-nvl72")
    assert nvl.scale_up.domain == 72 and nvl.gpus_per_node == 4


def test_implicit_cluster_matches_the_gpu_table():
    c = implicit_cluster(load_gpu("A100"), 16, 8)
    assert c.nodes == 2 and not c.scale_up.multicast
    assert c.nics.count == 8 and c.nics.bandwidth == 25e9


def error_of(text: str) -> str:
    with pytest.raises(ClusterError) as info:
        parse_cluster(text, "f.cluster")
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("node { gpu H100 }", "f.cluster:1:12: expected '=' between 'gpu' and 'H100'"),
        ("node { gpu = H100 ", "f.cluster:1:19: unexpected end of file"),
        ("node { gpu = H100 } %", "f.cluster:1:21: unexpected character '%'"),
        ("nodes = -4\nnode { gpu = H100 }", "f.cluster:1:9: a negative number (counts, bandwidths and latencies are >= 0)"),
        ("node { gpu = Z100 }", "f.cluster:1:14: unknown GPU 'Z100' (known: A100-SXM4-40GB"),
        ("node { gpu = H100 gpu = A100 }", "f.cluster:1:19: 'gpu' is set twice"),
        ("node { gpu = H100 colour = 3 }", "f.cluster:1:19: unknown key 'colour' in 'node'"),
        ("nodes = 2", "f.cluster:1:1: missing block 'node'"),
        ("nodes = two node { gpu = H100 }", "f.cluster:1:9: 'nodes' must be a whole number"),
        ("node { gpu = H100 } nic { count = 8 speed = 400 }",
         "f.cluster:1:45: 'speed' must be a bandwidth with a unit"),
        ("node { gpu = H100 } nic { count = 4 speed = 1GB/s rails = 8 }",
         "f.cluster:1:59: 'rails' (8) cannot exceed 'count' (4)"),
        ("node { gpu = H100 } scale_up nvlink { }",
         "f.cluster:1:21: 'scale_up' needs a kind (nvswitch | fully_connected | torus | none), got 'nvlink'"),
        ("node { gpu = H100 } scale_up torus { dims = [2, 2] domain = 8 bandwidth = 1GB/s }",
         "f.cluster:1:21: torus dims [2, 2] hold 4 GPUs but 'domain' is 8"),
        ("nodes = 8 node { gpu = H100 } scale_out fat_tree { tier { span = 4 } }",
         "f.cluster:1:31: the top tier spans 4 nodes but the cluster has 8"),
        ("node { gpu = H100 } scale_out fat_tree { tier { span = 4 oversubscription = 1:2 } }",
         "'oversubscription' must be a ratio down:up >= 1"),
        # was accepted and had no effect
        ("nodes = 8 node { gpu = H100 } scale_out fat_tree { tier { span = 4 } "
         "tier { span = 8 oversubscription = 4:1 } }",
         "f.cluster:1:70: the top tier has no uplinks: its oversubscription can only be 1:1"),
        ("node { gpu = H100 } rack { }", "f.cluster:1:21: unknown block 'rack' in the file"),
        # a zero bandwidth divided by zero in the collectives; 1e400 became inf, which the
        # IR's printed target could not parse back
        ("node { gpu = H100 } nic { count = 8 speed = 0Gb/s }", "f.cluster:1:45: 'speed' must be > 0"),
        ("node { gpu = H100 } nic { count = 8 speed = 1e400Gb/s }",
         "f.cluster:1:45: 'speed' is out of range: '1e400Gb/s'"),
        # finite but no link's: a 1e300 s latency left floating point in the module's text
        ("node { gpu = H100 } nic { count = 8 speed = 1e-300Gb/s }",
         "f.cluster:1:45: 'speed' is 1e-300Gb/s: a link's bandwidth is between 1KB/s and 1000TB/s"),
        ("node { gpu = H100 } nic { count = 8 speed = 400Gb/s latency = 1e300s }",
         "f.cluster:1:63: 'latency' is 1e300s: a link's latency is at most 1s"),
    ],
)
def test_errors_name_file_line_column(text: str, expected: str):
    assert expected in error_of(text)


def test_missing_file_and_unknown_preset():
    with pytest.raises(ClusterError, match="cluster file 'nope/x.cluster': cannot read"):
        load_cluster("nope/x.cluster")
    with pytest.raises(ClusterError, match=r"no cluster file or preset 'dgx-z9' \(presets: .*dgx-h100"):
        load_cluster("dgx-z9")


def test_a_file_that_is_not_text(tmp_path, charon_fails):
    """It used to escape as a UnicodeDecodeError (an internal error)."""
    path = tmp_path / "binary.cluster"
    path.write_bytes(b"\x00\xff garbage")
    line = f"cluster file '{path}': not UTF-8 text (byte 1)"
    with pytest.raises(ClusterError) as info:
        load_cluster(str(path))
    assert str(info.value) == line
    step = Path(__file__).resolve().parents[2] / "lit/lowering/Inputs/eight_layers.mlir"
    args = ("simulate", "--model", str(step), "--gpus", "2", "--global-batch", "4", "--cluster", str(path))
    assert charon_fails(*args) == f"error: {line}"


def test_clusters_are_hashable_values():
    a, b = load_cluster("dgx-h100"), load_cluster("dgx-h100")
    assert a == b and hash(a) == hash(b)
    assert isinstance(a, Cluster) and a.with_nodes(4).total_gpus == 32


def test_a_count_past_64_bit_products(tmp_path):
    """It reached the IR and failed there as an i64 overflow naming neither file nor key."""
    assert error_of("nodes = 99999999999999999999999\nnode { gpu = H100 gpus = 8 }\n") == (
        "f.cluster:1:9: 'nodes' must be <= 2147483647, got 99999999999999999999999")
