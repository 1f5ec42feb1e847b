"""Chakra execution traces: the schema, the framing, and the export checked
against the simulated step it came from."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charon_ir.errors import CharonError
from charon_ir.interop.chakra import frame, node_attrs, read_frames, read_trace, schema, varint
from charon_ir.interop.chakra_export import Exporter, Mesh, RankClass, _rounded, parse_ranks

# --- a trace written from Chakra's schema by hand, not by the project's classes

def _key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def _int_field(number: int, value: int) -> bytes:
    return _key(number, 0) + varint(value)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _key(number, 2) + varint(len(value)) + value


def _attr(name: str, **value) -> bytes:
    # AttributeProto: name = 1, int64_val = 9, bool_val = 27, string_val = 29
    (kind, v), = value.items()
    body = _bytes_field(1, name.encode())
    if kind == "int64":
        body += _int_field(9, v)
    elif kind == "bool":
        body += _int_field(27, int(v))
    else:
        body += _bytes_field(29, v.encode())
    return body


def _node(node_id: int, name: str, node_type: int, data_deps=(), ctrl_deps=(), duration=0, attrs=()) -> bytes:
    # Node: id = 1, name = 2, type = 3, ctrl_deps = 4, data_deps = 5, duration_micros = 7, attr = 10
    body = _int_field(1, node_id) + _bytes_field(2, name.encode()) + _int_field(3, node_type)
    if ctrl_deps:
        body += _bytes_field(4, b"".join(varint(d) for d in ctrl_deps))  # packed, as proto3 writes it
    for d in data_deps:
        body += _int_field(5, d)  # unpacked: parsers accept both
    body += _int_field(7, duration)
    for a in attrs:
        body += _bytes_field(10, a)
    return body


def test_a_trace_written_from_the_schema_by_hand_is_read_back(tmp_path):
    COMP, SEND, COLL = 4, 5, 7
    meta = _bytes_field(1, b"0.0.4") + _bytes_field(2, _attr("schema", string="hand"))
    nodes = [
        _node(0, "gemm", COMP, duration=120, attrs=[_attr("num_ops", int64=10**12), _attr("is_cpu_op", bool=False)]),
        _node(1, "allreduce", COLL, data_deps=[0], duration=40,
              attrs=[_attr("comm_type", int64=0), _attr("comm_size", int64=1 << 26), _attr("pg_name", string="7")]),
        _node(2, "send", SEND, data_deps=[0], ctrl_deps=[1],
              attrs=[_attr("comm_src", int64=0), _attr("comm_dst", int64=1), _attr("comm_size", int64=4096)]),
    ]
    path = tmp_path / "hand.0.et"
    path.write_bytes(b"".join(varint(len(m)) + m for m in [meta, *nodes]))
    metadata, read = read_trace(path)
    assert metadata.version == "0.0.4"
    assert [(n.id, n.name, n.type) for n in read] == [(0, "gemm", COMP), (1, "allreduce", COLL), (2, "send", SEND)]
    assert read[0].duration_micros == 120 and node_attrs(read[0])["num_ops"] == 10**12
    assert node_attrs(read[1]) == {"comm_type": 0, "comm_size": 1 << 26, "pg_name": "7"}
    assert list(read[2].data_deps) == [0] and list(read[2].ctrl_deps) == [1]
    s = schema()
    assert s.comm_type_names[0] == "ALL_REDUCE" and s.node_type_names[COLL] == "COMM_COLL_NODE"


def test_bad_traces_are_one_line(tmp_path):
    good = _node(0, "k", 4, duration=1)
    meta = _bytes_field(1, b"0.0.4")
    cases = {
        "empty.et": (b"", "empty"),
        "truncated.et": (varint(len(meta)) + meta + varint(100) + good, "claims 100 bytes"),
        "garbage.et": (varint(3) + b"\xff\xff\xff", "does not parse"),
        "type.et": (varint(len(meta)) + meta + frame(_node(5, "odd", 42)), "unknown node type 42"),
        "invalid.et": (varint(len(meta)) + meta + frame(_node(5, "odd", 0)), "unknown node type 0"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(CharonError, match=message) as info:
            read_trace(path)
        assert "\n" not in str(info.value) and name in str(info.value)
    with pytest.raises(CharonError, match="cannot read"):
        read_trace(tmp_path / "missing.et")


@given(st.lists(st.binary(max_size=300), max_size=20))
def test_framing_round_trips(payloads):
    import io

    data = b"".join(frame(p) for p in payloads)
    assert [p for _, p in read_frames(io.BytesIO(data), "x")] == payloads


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.data())
def test_mesh_rank_and_coords_are_inverse(shape, data):
    axes = tuple("abcde"[: len(shape)])
    mesh = Mesh(axes, tuple(shape))
    rank = data.draw(st.integers(0, mesh.world - 1))
    assert mesh.rank(mesh.coords(rank)) == rank


@given(st.lists(st.tuples(st.integers(0, 99), st.integers(0, 20)), min_size=1, max_size=6))
def test_rank_ranges(ranges):
    text = ",".join(f"{lo}-{lo + n}" for lo, n in ranges)
    assert parse_ranks(text, 200) == sorted({r for lo, n in ranges for r in range(lo, lo + n + 1)})


@given(st.lists(st.tuples(st.floats(0, 2e-3), st.integers(0, 2)), max_size=200))
def test_whole_microseconds_keep_each_streams_total(events):
    rc = RankClass("stage0", 0, 1, duration_s=[d for d, _ in events], stream=[s for _, s in events])
    micros = _rounded(rc)
    assert all(m >= 0 for m in micros)
    for stream in range(3):
        exact = sum(d for d, s in events if s == stream) * 1e6
        assert abs(sum(m for m, (_, s) in zip(micros, events) if s == stream) - exact) <= 0.5 + 1e-6


def test_rank_ranges_outside_the_run_are_refused():
    with pytest.raises(CharonError, match="rank 64 is outside the run's 64 GPUs"):
        parse_ranks("0-64", 64)
    with pytest.raises(CharonError, match="expected ranks"):
        parse_ranks("a-b", 64)
    with pytest.raises(CharonError, match="empty"):
        parse_ranks("5-2", 64)


# --- the export against the simulated step

CONFIGS = {
    "tp-pp-dp": dict(gpus=8, tp=2, pp=2, sequence_parallel=True, seq_len=512, global_batch=8),
    "interleaved": dict(gpus=8, tp=2, pp=2, vpp=2, seq_len=512, global_batch=8),
    "cp": dict(gpus=8, tp=2, cp=2, pp=2, seq_len=1024, global_batch=4),
}


@cache
def _lowered(name: str):
    from charon_ir import api

    config, _ = api.configure("llama-3.1-8b", hardware="H100-SXM5-80GB", micro_batch=1, **CONFIGS[name])
    ctx, module, _ = api.build_training_module(config)
    api.make_pass("lower-to-events", blocking=tuple(config.blocking_comm)).apply(ctx, module)
    return module


@cache
def _exported(name: str, directory: str):
    module = _lowered(name)
    exporter = Exporter(module)
    summary = exporter.write(directory, list(range(exporter.mesh.world)))
    traces = {r: read_trace(Path(directory) / f"charon.{r}.et") for r in summary.ranks}
    groups = json.loads((Path(directory) / "comm_group.json").read_text())
    return module, exporter, traces, groups


@pytest.fixture(scope="module", params=list(CONFIGS))
def exported(request, tmp_path_factory):
    return _exported(request.param, str(tmp_path_factory.mktemp(request.param)))


def _flat(module):
    from charon_ir.dialects import event
    from charon_ir.runtime.flatten import KIND_COMM, KIND_COMPUTE, flatten_all

    programs = [op for op in module.body.block.ops if isinstance(op, event.ProgramOp)]
    flat = flatten_all(programs)
    compute = defaultdict(float)
    comms = defaultdict(list)
    for i in range(flat.num_events):
        p = int(flat.event_program[i])
        if flat.kind[i] == KIND_COMPUTE:
            compute[p] += float(flat.duration[i])
        elif flat.kind[i] == KIND_COMM and flat.labels[i] != "recv":
            comms[p].append((flat.labels[i], int(flat.bytes[i])))
    return compute, comms


def test_each_rank_computes_as_long_as_its_simulated_stage(exported):
    module, exporter, traces, _ = exported
    compute, _ = _flat(module)
    types = schema().node_types
    for rank, (meta, nodes) in traces.items():
        stage = exporter.classes.index(exporter.rank_class(rank))
        comp = [n for n in nodes if n.type == types["COMP_NODE"]]
        exact = sum(node_attrs(n)["charon_duration_s"] for n in comp)
        assert exact == pytest.approx(compute[stage], rel=1e-12)
        # whole microseconds, rounded on the running total of the stream
        assert abs(sum(n.duration_micros for n in comp) - compute[stage] * 1e6) <= 0.5 + 1e-6


def test_each_collective_moves_the_simulated_bytes(exported):
    module, exporter, traces, _ = exported
    _, comms = _flat(module)
    s = schema()
    for rank, (_, nodes) in traces.items():
        stage = exporter.classes.index(exporter.rank_class(rank))
        written = [(n.name, node_attrs(n)["charon_bytes_per_rank"] if n.type == s.node_types["COMM_COLL_NODE"]
                    else node_attrs(n)["comm_size"]) for n in nodes
                   if n.type in (s.node_types["COMM_COLL_NODE"], s.node_types["COMM_SEND_NODE"])]
        assert written == comms[stage]
        for n in nodes:
            if n.type == s.node_types["COMM_COLL_NODE"]:
                assert s.comm_type_names[node_attrs(n)["comm_type"]] == n.name.upper()


def test_comm_size_is_the_collectives_buffer(tmp_path, ctx):
    """The example layer's tensor-parallel all-reduces sum a [4096, 8192] bf16
    activation: Chakra's comm_size is that buffer (ASTRA-sim divides it into its
    ring's steps), not the 2(n-1)/n of it each rank sends."""
    from charon_ir.registry import ALL_PASSES
    from charon_ir.testing import parse_module

    text = (Path(__file__).parents[3] / "examples" / "transformer_layer.mlir").read_text()
    module = parse_module(text, ctx)
    for name, options in (("set-target", {"hardware": "H100-SXM5-80GB", "gpus": 8}), ("cost-annotate", {}),
                          ("lower-to-events", {})):
        ALL_PASSES[name]()(**options).apply(ctx, module)
    Exporter(module).write(tmp_path, [3])
    _, nodes = read_trace(tmp_path / "charon.3.et")
    reduces = [node_attrs(n) for n in nodes if n.name == "all_reduce"]
    assert reduces and {a["comm_size"] for a in reduces} == {4096 * 8192 * 2}
    assert {a["charon_bytes_per_rank"] for a in reduces} == {2 * 7 * 4096 * 8192 * 2 // 8}


def test_the_dependency_graph_is_acyclic_and_closed(exported):
    _, _, traces, _ = exported
    for _, nodes in traces.values():
        ids = {n.id for n in nodes}
        assert len(ids) == len(nodes)
        indegree = {n.id: 0 for n in nodes}
        children = defaultdict(list)
        for n in nodes:
            for d in {*n.data_deps, *n.ctrl_deps}:
                assert d in ids
                children[d].append(n.id)
                indegree[n.id] += 1
        ready = [i for i, k in indegree.items() if k == 0]
        seen = 0
        while ready:
            i = ready.pop()
            seen += 1
            for c in children[i]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    ready.append(c)
        assert seen == len(nodes)  # Kahn's algorithm visits every node only without a cycle


def test_sends_meet_receives_and_groups_agree(exported):
    _, exporter, traces, groups = exported
    s = schema()
    sends, recvs = Counter(), Counter()
    per_group = defaultdict(dict)
    for rank, (_, nodes) in traces.items():
        sequence = defaultdict(list)
        for n in nodes:
            a = node_attrs(n)
            if n.type == s.node_types["COMM_SEND_NODE"]:
                sends[(a["comm_src"], a["comm_dst"], a["comm_tag"], a["comm_size"])] += 1
                assert a["comm_src"] == rank
            elif n.type == s.node_types["COMM_RECV_NODE"]:
                recvs[(a["comm_src"], a["comm_dst"], a["comm_tag"], a["comm_size"])] += 1
                assert a["comm_dst"] == rank
            elif n.type == s.node_types["COMM_COLL_NODE"]:
                assert rank in groups[a["pg_name"]]
                sequence[a["pg_name"]].append((a["comm_type"], a["comm_size"]))
        for pg, seq in sequence.items():
            per_group[pg][rank] = seq
    assert sends == recvs
    for pg, by_rank in per_group.items():
        # every member runs the same collectives on its group, in the same order
        assert set(by_rank) == set(groups[pg]), pg
        assert len({tuple(seq) for seq in by_rank.values()}) == 1, pg


def test_export_command(tmp_path, capsys, monkeypatch):
    import sys

    from charon_ir import cli

    out = tmp_path / "et"
    monkeypatch.setattr(sys, "argv", ["charon", "export", "--chakra", str(out), "--model", "llama-3.1-8b",
                                      "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "512",
                                      "--global-batch", "8", "--ranks", "0,7"])
    cli.main()
    assert sorted(p.name for p in out.iterdir()) == ["charon.0.et", "charon.7.et", "comm_group.json"]
    assert "wrote 2 Chakra traces" in capsys.readouterr().err
    meta, _ = read_trace(out / "charon.7.et")
    assert node_attrs(meta)["rank"] == "7"


def test_export_command_bad_input(charon_fails, tmp_path):
    flags = ["--model", "llama-3.1-8b", "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "512",
             "--global-batch", "8"]
    line = charon_fails("export", "--chakra", str(tmp_path / "x"), *flags, "--ranks", "0-8")
    assert "rank 8 is outside the run's 8 GPUs" in line
    assert not (tmp_path / "x" / "charon.0.et").exists()
    assert "--chakra" in charon_fails("export", *flags)
