"""One rank's Chakra trace as sim IR: collectives on the mesh axes their process
groups span."""

from __future__ import annotations

import json
from functools import cache
from math import prod
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charon_ir.dialects import coll, sim
from charon_ir.interop.chakra import frame, node_attrs, read_trace, schema
from charon_ir.interop.chakra_export import Exporter, Groups, Mesh
from charon_ir.interop.chakra_import import _factors, _mesh, import_chakra


@cache
def _exported(directory: str) -> Path:
    from charon_ir import api

    config, _ = api.configure("llama-3.1-8b", hardware="H100-SXM5-80GB", gpus=8, tp=2, dp=4,
                              sequence_parallel=True, seq_len=512, global_batch=4, micro_batch=1)
    ctx, module, _ = api.build_training_module(config)
    api._pass("lower-to-events", blocking=tuple(config.blocking_comm)).apply(ctx, module)
    Exporter(module).write(directory, [5])
    return Path(directory)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return _exported(str(tmp_path_factory.mktemp("et")))


def test_a_rank_imports_with_its_collectives_on_mesh_axes(exported):
    module = import_chakra(exported / "charon.5.et")
    module.verify()
    _, nodes = read_trace(exported / "charon.5.et")
    s = schema()
    (grid,) = [op for op in module.body.block.ops if isinstance(op, coll.GridOp)]
    sizes = grid.axis_sizes()
    assert prod(sizes.values()) == 8 and sorted(sizes.values()) == [2, 4]
    inner = list(sizes)[-1]  # the tensor-parallel group: the innermost axis, 2 ranks
    assert sizes[inner] == 2
    colls = [op for op in module.walk() if isinstance(op, coll.CollectiveOp)]
    written = [n for n in nodes if n.type == s.node_types["COMM_COLL_NODE"]]
    assert [op.op_kind() for op in colls] == [n.name for n in written]
    for op, n in zip(colls, written):
        a = node_attrs(n)
        assert op.payload_bytes() == a["comm_size"]
        groups = json.loads((exported / "comm_group.json").read_text())
        assert op.group_size() == len(groups[a["pg_name"]])
    flops = sum(op.flops() for op in module.walk() if isinstance(op, sim.GenericOp))
    assert flops == sum(node_attrs(n)["num_ops"] for n in nodes if n.type == s.node_types["COMP_NODE"])


def test_an_imported_rank_simulates(exported, ctx):
    from charon_ir.registry import ALL_PASSES
    from charon_ir.runtime.simulate_target import simulate_module

    module = import_chakra(exported / "charon.5.et")
    for name, options in (("set-target", {"hardware": "H100-SXM5-80GB", "gpus": 8}), ("cost-annotate", {}),
                          ("lower-to-events", {})):
        ALL_PASSES[name]()(**options).apply(ctx, module)
    report = simulate_module(ctx, module)
    assert report["iteration_time_s"] > 0
    assert len(report["breakdown"]["exposed_comm_s"]) == 2  # the tp and dp axes


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_process_groups_factor_into_the_mesh_they_came_from(shape, data):
    axes = tuple("abcd"[: len(shape)])
    mesh = Mesh(axes, tuple(shape))
    chosen = data.draw(st.lists(st.sampled_from(axes), min_size=1, unique=True))
    rank = data.draw(st.integers(0, mesh.world - 1))
    members = list(Groups(mesh).members(rank, tuple(chosen)))
    if len(members) == 1:
        return
    strides = {a: prod(shape[axes.index(a) + 1:]) for a in axes}
    factors = _factors(members, "x", "g")
    # the chosen axes, neighbours merged (a 2x2 block of contiguous ranks is one axis of 4)
    assert prod(n for _, n in factors) == len(members)
    assert {stride for stride, _ in factors} <= {strides[a] for a in chosen}
    found, of = _mesh({"g": members}, {"g"}, mesh.world, "x")
    assert prod(found.values()) == mesh.world
    assert prod(found[a] for a in of["g"]) == len(members)


def test_bad_chakra_traces_are_one_line(exported, tmp_path, charon_fails):
    s = schema()
    meta = frame(s.GlobalMetadata(version="0.0.4").SerializeToString())

    def write(name, *nodes, groups=None):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "t.0.et").write_bytes(meta + b"".join(frame(n.SerializeToString()) for n in nodes))
        if groups is not None:
            (folder / "comm_group.json").write_text(groups)
        return str(folder / "t.0.et")

    def coll_node(pg="3"):
        n = s.Node(id=1, name="all_reduce", type=s.node_types["COMM_COLL_NODE"])
        n.attr.add(name="comm_type", int64_val=0)
        n.attr.add(name="comm_size", int64_val=64)
        n.attr.add(name="pg_name", string_val=pg)
        return n

    cases = {
        "send": (write("send", s.Node(id=0, name="send", type=s.node_types["COMM_SEND_NODE"])), "point-to-point"),
        "nogroups": (write("nogroups", coll_node()), "cannot be read"),
        "badjson": (write("badjson", coll_node(), groups="[1"), "not a JSON object"),
        "missing": (write("missing", coll_node("9"), groups='{"3": [0, 1]}'), "lacks"),
        "nogrid": (write("nogrid", coll_node(), groups='{"3": [0, 1, 5]}'), "not a grid of ranks"),
        "memload": (write("memload", s.Node(id=0, name="load", type=s.node_types["MEM_LOAD_NODE"])),
                    "only compute and collective nodes"),
    }
    for name, (path, message) in cases.items():
        line = charon_fails("import", "--chakra", path, "-o", str(tmp_path / "o.mlir"))
        assert message in line, (name, line)
    assert not (tmp_path / "o.mlir").exists()
    line = charon_fails("import", "--chakra", str(exported / "charon.5.et"), "llama-3.1-8b")
    assert "give one of a model, --execution-trace and --chakra" in line
