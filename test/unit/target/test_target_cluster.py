"""A target with a cluster survives the trip through the module attribute, and
set-target attaches one."""

import pytest
from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects.sim import TARGET_ATTR, TargetAttr
from charon_ir.errors import CharonError
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.target.cluster import load_cluster
from charon_ir.target.hardware import load_gpu
from charon_ir.target.target import Target


def test_target_without_cluster_prints_its_three_fields():
    t = Target(load_gpu("H100"), 8, 8)
    attr = t.to_attr()
    assert str(attr) == '#sim.target<hardware = "H100-SXM5-80GB", gpus = 8, gpus_per_node = 8>'
    assert Target.from_attr(attr) == t
    assert t.topology.total_gpus == 8  # the implicit cluster


def test_target_with_cluster_round_trips():
    t = Target(load_gpu("H100"), 16, 8, load_cluster("dgx-h100"))
    back = Target.from_attr(t.to_attr())
    assert back == t and back.topology is back.cluster


def test_set_target_with_a_preset(ctx):
    module = ModuleOp([])
    SetTargetPass(cluster="gb200-nvl72").apply(ctx, module)
    t = Target.from_module(module)
    assert t.gpu.name == "GB200-per-GPU" and t.gpus == 576 and t.gpus_per_node == 4
    assert t.cluster is not None and t.cluster.scale_up.domain == 72
    attr = module.attributes[TARGET_ATTR]
    assert isinstance(attr, TargetAttr) and "gb200-nvl72" in attr.cluster.data


def test_set_target_without_cluster_is_unchanged(ctx):
    module = ModuleOp([])
    SetTargetPass(hardware="A100").apply(ctx, module)
    t = Target.from_module(module)
    assert (t.gpu.name, t.gpus, t.gpus_per_node, t.cluster) == ("A100-SXM4-80GB", 8, 8, None)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"cluster": "dgx-h100", "hardware": "A100"}, "differs from the GPU of cluster 'dgx-h100'"),
        ({"cluster": "dgx-h100", "gpus_per_node": 4}, "option 'gpus-per-node' (4) differs"),
        ({"cluster": "mi300x", "gpus": 100000}, "exceeds the 256 GPUs of cluster 'mi300x'"),
        ({}, "option 'hardware' is required"),
        ({"hardware": "Q9000"}, "unknown GPU 'Q9000' (known:"),
    ],
)
def test_set_target_errors(ctx, options, message):
    with pytest.raises(CharonError) as info:
        SetTargetPass(**options).apply(ctx, ModuleOp([]))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_link_for_group_with_a_cluster():
    t = Target(load_gpu("H100"), 32, 8, load_cluster("dgx-h100"))
    assert t.link_for_group({"dp": 4, "tp": 8}, ["tp"]).kind == "scale-up"
    out = t.link_for_group({"dp": 4, "tp": 8}, ["dp"])
    assert out.kind == "scale-out" and out.bandwidth == 50e9
