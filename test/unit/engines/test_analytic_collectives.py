"""The analytic engine prices collectives of the IR on the target's cluster."""

from charon_ir.dialects.coll import CollectiveOp
from charon_ir.engines.analytic import AnalyticEngine
from charon_ir.engines.collectives import collective_plan
from charon_ir.target.cluster import load_cluster, parse_cluster
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target
from charon_ir.testing import parse_module

MODULE = """
builtin.module {
  coll.grid @mesh(axes = ["dp", "tp"], shape = 4x8)
  %x = sim.input "x" : tensor<4096x4096xbf16>
  %tp = coll.all_reduce %x on @mesh ["tp"] : tensor<4096x4096xbf16>
  %dp = coll.all_reduce %x on @mesh ["dp"] : tensor<4096x4096xbf16>
  %all = coll.all_reduce %x on @mesh ["dp", "tp"] : tensor<4096x4096xbf16>
  coll.send %x on @mesh ["dp"] shift 1 : tensor<4096x4096xbf16>
  coll.send %x on @mesh ["tp"] shift 1 : tensor<4096x4096xbf16>
  %r = coll.recv on @mesh ["dp"] shift 1 : tensor<4096x4096xbf16>
}
"""


def priced(target: Target) -> dict[str, float]:
    module = parse_module(MODULE)
    out = {}
    for op in module.walk():
        if isinstance(op, CollectiveOp):
            key = f"{op.op_kind()}:{','.join(op.axis_names())}"
            out[key] = AnalyticEngine().price(op, target).time_s
    return out


def test_cluster_target_prices_each_group_on_its_links():
    cluster = load_cluster("dgx-h100")
    t = priced(Target(cluster.gpu, 32, 8, cluster))
    assert t["all_reduce:tp"] < t["all_reduce:dp,tp"] < t["all_reduce:dp"]
    assert t["send:tp"] < t["send:dp"]
    assert t["recv:dp"] == 0.0
    s = 4096 * 4096 * 2
    want = collective_plan("all_reduce", s, (0, 8, 16, 24), cluster).time_s
    assert t["all_reduce:dp"] == want


def test_target_without_cluster_uses_the_gpu_table():
    t = priced(Target(load_gpu("A100"), 32, 8))
    assert t["all_reduce:tp"] < t["all_reduce:dp"]


def test_an_oversubscribed_spine_slows_the_data_parallel_group():
    text = """
    nodes = 4
    node { gpu = H100 gpus = 8 }
    nic { count = 8 speed = 400Gb/s }
    scale_out fat_tree {
      tier { span = 2 oversubscription = %s }
      tier { span = 4 }
    }"""
    flat, tapered = parse_cluster(text % "1:1"), parse_cluster(text % "3:1")
    t_flat = priced(Target(flat.gpu, 32, 8, flat))
    t_tapered = priced(Target(tapered.gpu, 32, 8, tapered))
    assert t_tapered["all_reduce:dp"] > 2 * t_flat["all_reduce:dp"]
    assert t_tapered["all_reduce:tp"] == t_flat["all_reduce:tp"]
