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
    api.make_pass("lower-to-events", blocking=tuple(config.blocking_comm)).apply(ctx, module)
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
                    "only compute, collective, send and receive nodes"),
        "unknowndep": (write("unknowndep", s.Node(id=0, name="mm", type=s.node_types["COMP_NODE"], data_deps=[7])),
                       "depends on node 7, which the trace lacks"),
    }
    for name, (path, message) in cases.items():
        line = charon_fails("import", "--chakra", path, "-o", str(tmp_path / "o.mlir"))
        assert message in line, (name, line)
    assert not (tmp_path / "o.mlir").exists()
    line = charon_fails("import", "--chakra", str(exported / "charon.5.et"), "llama-3.1-8b")
    assert "give one of a model, --execution-trace and --chakra" in line


# --- a pipeline: sends and receives pair across the ranks' traces

PP_STEP = dict(hardware="H100-SXM5-80GB", gpus=8, tp=2, pp=2, dp=2, sequence_parallel=True, seq_len=512,
               global_batch=4, micro_batch=1)


@cache
def _pipeline(directory: str):
    """A pp=2 step (ranks 5 and 7 are one pipeline), exported, and its own
    fine-tier report and event programs."""
    from charon_ir import api
    from charon_ir.runtime.simulate_target import simulate_module

    config, _ = api.configure("llama-3.1-8b", **PP_STEP)
    ctx, module, _ = api.build_training_module(config)
    api.make_pass("lower-to-events", blocking=tuple(config.blocking_comm)).apply(ctx, module)
    Exporter(module).write(directory, [5, 7])
    return Path(directory), simulate_module(ctx, module, tier="fine"), module


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    return _pipeline(str(tmp_path_factory.mktemp("pp")))


def _per_program(module) -> list[dict]:
    """Per event program: compute seconds and bytes sent per point-to-point message."""
    from charon_ir.interop.chakra_export import COMP, SEND, unroll
    from charon_ir.dialects import event

    out = []
    for program in [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]:
        rc = unroll(program)
        out.append({"compute_s": sum(d for d, k in zip(rc.duration_s, rc.kind) if k == COMP),
                    "sent": [b for b, k in zip(rc.nbytes, rc.kind) if k == SEND]})
    return out


def test_a_pipeline_reimports_and_simulates_as_exported(pipeline, ctx):
    """Export -> import -> simulate: the same compute per rank (exactly: the
    trace's exact durations), the same bytes per message, the step within 1 %."""
    from charon_ir.registry import ALL_PASSES
    from charon_ir.runtime.simulate_target import simulate_module

    directory, expected, original = pipeline
    module = import_chakra(directory / "charon.5.et")  # brings rank 7, its peer
    module.verify()
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    assert [st.stage_ids() for st in stages] == [(0,), (1,)]
    (grid,) = [op for op in module.body.block.ops if isinstance(op, coll.GridOp)]
    assert grid.axis_sizes()["pp"] == 2 and prod(grid.axis_sizes().values()) == 8
    sends = [op for op in module.walk() if isinstance(op, coll.SendOp)]
    recvs = [op for op in module.walk() if isinstance(op, coll.RecvOp)]
    assert len(sends) == len(recvs) == 4
    for name, options in (("set-target", {"hardware": "H100-SXM5-80GB", "gpus": 8}), ("cost-annotate", {}),
                          ("lower-to-events", {})):
        ALL_PASSES[name]()(**options).apply(ctx, module)
    report = simulate_module(ctx, module, tier="fine")
    for got, want in zip(_per_program(module), _per_program(original), strict=True):
        assert got["compute_s"] == pytest.approx(want["compute_s"], rel=1e-12)
        assert got["sent"] == want["sent"] and got["sent"]
    assert report["breakdown"]["compute_s"] == pytest.approx(expected["breakdown"]["compute_s"], rel=1e-12)
    assert report["iteration_time_s"] == pytest.approx(expected["iteration_time_s"], rel=0.01)


def test_reprice_leaves_the_durations_to_the_engines(pipeline):
    directory, _, _ = pipeline
    priced = [op for op in import_chakra(directory / "charon.7.et").walk() if sim.COST_ATTR in op.attributes]
    assert priced and {op.attributes[sim.COST_ATTR].engine.data for op in priced} == {"trace"}
    assert not [op for op in import_chakra(directory / "charon.7.et", reprice=True).walk() if sim.COST_ATTR in op.attributes]


def test_unmatched_messages_are_one_line(pipeline, tmp_path, charon_fails):
    directory, _, _ = pipeline
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "charon.5.et").write_bytes((directory / "charon.5.et").read_bytes())
    (lone / "comm_group.json").write_text((directory / "comm_group.json").read_text())
    line = charon_fails("import", "--chakra", str(lone / "charon.5.et"), "-o", str(tmp_path / "o.mlir"))
    assert "exchanges messages with rank 7" in line and "missing" in line
    # rank 7's first receive from rank 5 given another tag
    s = schema()
    meta, nodes = read_trace(directory / "charon.7.et")
    for n in nodes:
        if n.type == s.node_types["COMM_RECV_NODE"] and node_attrs(n)["comm_src"] == 5:
            for a in n.attr:
                if a.name == "comm_tag":
                    a.int64_val += 1
            break
    (lone / "charon.7.et").write_bytes(frame(meta.SerializeToString())
                                       + b"".join(frame(n.SerializeToString()) for n in nodes))
    line = charon_fails("import", "--chakra", str(lone / "charon.5.et"), "-o", str(tmp_path / "o.mlir"))
    assert "message 0 from rank 5 to rank 7" in line and "comm_tag" in line
    assert not (tmp_path / "o.mlir").exists()


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.permutations(range(n)))))
def test_nodes_are_taken_in_an_order_their_dependencies_allow(case):
    from charon_ir.errors import CharonError
    from charon_ir.interop.chakra_import import _ordered

    n, edges, ids = case
    s = schema()
    nodes = [s.Node(id=ids[i], name=f"n{i}") for i in range(n)]
    for a, b in edges:  # a depends on b
        nodes[a].data_deps.append(ids[b])
    deps = {a: {b for x, b in edges if x == a} for a in range(n)}
    done: set[int] = set()
    while True:  # peel off the nodes whose dependencies are all done
        ready = {a for a in range(n) if a not in done and deps[a] <= done}
        if not ready:
            break
        done |= ready
    acyclic = len(done) == n
    try:
        order = _ordered(nodes, "t")
    except CharonError as e:
        assert not acyclic and "make a cycle" in str(e)
        return
    position = {node.id: i for i, node in enumerate(order)}
    assert sorted(position) == sorted(ids)
    assert acyclic
    for node in nodes:
        assert all(position[d] < position[node.id] for d in node.data_deps)
    if not edges:
        assert [node.id for node in order] == sorted(ids)  # nothing to wait for: id order


def test_reprice_goes_with_chakra(charon_fails, tmp_path):
    line = charon_fails("import", "--execution-trace", str(tmp_path / "x.json"), "--reprice")
    assert "--reprice goes with --chakra" in line
