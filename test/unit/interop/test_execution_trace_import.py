"""PyTorch execution traces as sim IR. The shipped trace was recorded by torch's
ExecutionTraceObserver on a CPU (bench/record_kineto_trace.py --execution-trace)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.interop.chakra_import import import_execution_trace

ET = Path(__file__).parents[2] / "data" / "kineto" / "llama4-cpu-s256.et.json.gz"


def _generic(module):
    for phase in module.body.block.ops:
        if not isinstance(phase, sim.PhaseOp):
            continue  # the grid and step inputs of a trace with collectives
        for op in phase.body.block.ops:
            if isinstance(op, sim.GenericOp):
                yield phase.kind.data, op


def test_the_recorded_step_imports_with_its_gemm_flops():
    module = import_execution_trace(ET)
    module.verify()
    assert [p.kind.data for p in module.body.block.ops] == ["forward", "backward", "optimizer"]
    flops: dict = {}
    for phase, op in _generic(module):
        flops[(phase, op.callee.data)] = flops.get((phase, op.callee.data), 0.0) + op.flop_count.value.data
    # the 4-layer Llama of the trace: hidden 1024, ffn 2816, vocab 8192, 256 tokens
    h, ffn, layers, vocab, tokens = 1024, 2816, 4, 8192, 256
    forward = 2.0 * tokens * (layers * (4 * h * h + 3 * h * ffn) + h * vocab)
    assert flops[("forward", "aten.linear")] == forward
    assert flops[("backward", "aten.mm")] == 2 * forward  # input and weight gradients
    callees = {(phase, op.callee.data) for phase, op in _generic(module)}
    assert ("optimizer", "aten._fused_adamw_") in callees
    assert ("forward", "aten.scaled_dot_product_attention") in callees
    assert not any(c in ("aten.view", "aten.t", "aten.transpose") for _, c in callees)  # views run no kernel


def _node(node_id, name, parent, inputs=(), outputs=()):
    def io(tensors):
        return {"values": [[tid, tid, 0, n, 4, "cpu"] for tid, n, _ in tensors],
                "shapes": [shape for _, _, shape in tensors], "types": ["Tensor(float)"] * len(tensors),
                "strides": [[] for _ in tensors]}

    return {"id": node_id, "name": name, "ctrl_deps": parent, "inputs": io(inputs), "outputs": io(outputs),
            "attrs": []}


def test_a_hand_written_trace(tmp_path):
    x, w = (10, 8 * 16, [8, 16]), (11, 32 * 16, [32, 16])
    wt, y, z = (12, 32 * 16, [16, 32]), (13, 8 * 32, [8, 32]), (14, 8 * 32, [8, 32])
    nodes = [
        _node(1, "[pytorch|profiler|execution_trace|thread]", 0),
        _node(2, "aten::linear", 1, [x, w], [y]),
        _node(3, "aten::t", 2, [w], [wt]),
        _node(4, "aten::mm", 2, [x, wt], [y]),
        _node(5, "aten::view", 1, [y], [z]),  # a view: no kernel
        _node(6, "aten::relu", 1, [y], [z]),
        _node(7, "autograd::engine::evaluate_function: ReluBackward0", 1),
        _node(8, "aten::threshold_backward", 7, [z, y], [y]),
    ]
    path = tmp_path / "et.json"
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes}))
    module = import_execution_trace(path)
    got = [(phase, op.callee.data, op.flop_count.value.data, len(op.inputs)) for phase, op in _generic(module)]
    assert got == [("forward", "aten.linear", 2.0 * 8 * 16 * 32, 0), ("forward", "aten.relu", 8 * 32, 1),
                   ("backward", "aten.threshold_backward", 8 * 32, 0)]
    linear = next(op for _, op in _generic(module))
    assert linear.byte_count.value.data == 4 * (8 * 16 + 32 * 16 + 8 * 32)


def _imported_and_simulated(charon_cli, trace: Path, out: Path, gpus: int) -> dict:
    """`charon import --execution-trace TRACE -o OUT`, then `charon simulate` of
    OUT on `gpus` GPUs: the JSON report."""
    imported = charon_cli("import", "--execution-trace", str(trace), "-o", str(out))
    assert imported.returncode == 0, imported.stderr
    simulated = charon_cli("simulate", "--model", str(out), "--gpus", str(gpus), "--json")
    assert simulated.returncode == 0, simulated.stderr
    return json.loads(simulated.stdout)


def test_an_imported_trace_simulates(tmp_path, charon_cli):
    report = _imported_and_simulated(charon_cli, ET, tmp_path / "step.mlir", gpus=1)
    assert report["iteration_time_s"] > 0
    ops = sum(1 for _ in _generic(import_execution_trace(ET)))
    assert report["engines"] == {"analytic": ops}  # every imported op is priced


def test_bad_execution_traces_are_one_line(charon_fails, tmp_path):
    cases = {
        "bad.json": (b"[1, 2", "bad.json:1:6: malformed PyTorch execution trace (JSON)"),
        "nonodes.json": (b'{"schema": "x"}', "no 'nodes' list"),
        "noid.json": (json.dumps({"nodes": [{"name": "aten::mm"}]}).encode(), "has no integer id and name"),
        "noio.json": (json.dumps({"nodes": [{"id": 1, "name": "aten::mm"}]}).encode(), "has no inputs"),
        "comm.json": (json.dumps({"nodes": [_node(1, "record_param_comms", 0)]}).encode(), "collective '' is not one of"),
        "empty.json": (json.dumps({"nodes": [_node(1, "aten::view", 0)]}).encode(), "nothing to simulate"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        line = charon_fails("import", "--execution-trace", str(tmp_path / name), "-o", str(tmp_path / "o.mlir"))
        assert message in line and name in line, line
        assert not (tmp_path / "o.mlir").exists()
    with pytest.raises(CharonError, match="cannot read"):
        import_execution_trace(tmp_path / "missing.json")


# --- collectives: a two-rank step recorded over gloo, and NCCL's record_param_comms

DISTRIBUTED = Path(__file__).parents[2] / "data" / "distributed"
"""tp2-gloo.<rank>.et.json.gz: bench/record_distributed_et.py's tensor- and sequence-parallel MLP step."""


def _collectives(module):
    from charon_ir.dialects import coll

    for phase in module.body.block.ops:
        if isinstance(phase, sim.PhaseOp):
            for op in phase.body.block.ops:
                if isinstance(op, coll.CollectiveOp):
                    yield phase.kind.data, op


@pytest.mark.parametrize("rank", [0, 1])
def test_a_recorded_two_rank_step_imports_with_its_collectives(rank):
    from charon_ir.dialects import coll

    module = import_execution_trace(DISTRIBUTED / f"tp2-gloo.{rank}.et.json.gz")
    module.verify()
    (grid,) = [op for op in module.body.block.ops if isinstance(op, coll.GridOp)]
    assert grid.axis_sizes() == {"a0": 2}  # the world: gloo's one (default) group of 2
    seq, hidden, f32 = 64, 256, 4
    half = seq // 2 * hidden * f32  # one rank's half of the sequence
    got = [(phase, op.op_kind(), op.operands[0].type.get_shape()[0], op.results[0].type.get_shape()[0])
           for phase, op in _collectives(module)]
    assert got == [
        ("forward", "broadcast", 2 * half, 2 * half),  # the batch, from rank 0
        ("forward", "all_gather", half, 2 * half),  # the sequence before the column-parallel linear
        ("forward", "reduce_scatter", 2 * half, half),  # the row-parallel linear's partial sums
        ("backward", "all_gather", half, 2 * half),  # their transposes
        ("backward", "reduce_scatter", 2 * half, half),
        ("backward", "all_reduce", hidden * f32, hidden * f32),  # the LayerNorm's weight and bias gradients
        ("backward", "all_reduce", hidden * f32, hidden * f32),
    ]
    assert all(op.group_size() == 2 for _, op in _collectives(module))
    linear = [op for phase, op in _generic(module) if phase == "forward" and op.callee.data == "aten.linear"]
    assert [op.flop_count.value.data for op in linear] == [2.0 * seq * hidden * 2 * hidden] * 2  # 4h/2 columns


def test_a_recorded_two_rank_step_simulates(tmp_path, charon_cli):
    report = _imported_and_simulated(charon_cli, DISTRIBUTED / "tp2-gloo.1.et.json.gz", tmp_path / "step.mlir",
                                     gpus=2)
    assert report["iteration_time_s"] > report["breakdown"]["compute_s"] > 0
    assert set(report["breakdown"]["exposed_comm_s"]) == {"a0"}


def _comms_node(node_id, parent, **attrs):
    node = _node(node_id, "record_param_comms", parent)
    node["attrs"] = [{"name": k, "type": "string" if isinstance(v, str) else "int", "value": v}
                     for k, v in attrs.items()]
    return node


def _groups_node(node_id, groups):
    node = _node(node_id, "## process_group:init ##", 1)
    node["inputs"] = {"values": [json.dumps(groups)], "shapes": [[]], "types": ["String"], "strides": [[]]}
    return node


def test_nccl_collectives_take_the_group_record_param_comms_names(tmp_path):
    """A NCCL trace's collectives, as torch's ExecutionTraceObserver writes them
    (the attributes torch's own distributed tests check): the group by pg_name,
    from process_group:init, or from global_rank_start/stride and pg_size."""
    groups = [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [], "group_size": 8},
              {"pg_name": "1", "pg_desc": "dp", "ranks": [1, 3, 5, 7], "group_size": 4}]
    x = (10, 1024, [1024])
    nodes = [
        _node(1, "[pytorch|profiler|execution_trace|thread]", 0),
        _groups_node(2, groups),
        _node(3, "aten::relu", 1, [x], [x]),
        _node(4, "c10d::allreduce_", 1, [x], [x]),
        _comms_node(5, 4, collective_name="allreduce", dtype="BFloat16", in_msg_nelems=1024, out_msg_nelems=1024,
                    pg_name="1", pg_size=4, global_rank_start=1, global_rank_stride=2),
        _node(6, "nccl:all_reduce", 5, [x]),
        # a group made after recording began: not in process_group:init
        _comms_node(7, 1, collective_name="_allgather_base", dtype="Float", in_msg_nelems=256, out_msg_nelems=512,
                    pg_name="9", pg_size=2, global_rank_start=1, global_rank_stride=1),
        _comms_node(8, 1, collective_name="wait", dtype="Float", in_msg_nelems=0, out_msg_nelems=0),
        _node(9, "aten::relu", 1, [x], [x]),
    ]
    path = tmp_path / "nccl.json"
    path.write_text(json.dumps({"schema": "1.1.1-chakra.0.0.4", "nodes": nodes}))
    module = import_execution_trace(path)
    module.verify()
    got = [(op.op_kind(), op.axis_names(), op.group_size(), op.payload_bytes()) for _, op in _collectives(module)]
    # ranks 1, 3, 5, 7 (stride 2) and 1, 2 (stride 1): a 4 x 2 grid of the 8 ranks
    assert got == [("all_reduce", ["a0"], 4, 2048.0), ("all_gather", ["a1"], 2, 2048.0)]
    (grid,) = [op for op in module.body.block.ops if op.name == "coll.grid"]
    assert grid.axis_sizes() == {"a0": 4, "a1": 2}


def test_bad_collectives_are_one_line(charon_fails, tmp_path):
    groups = [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [], "group_size": 4},
              {"pg_name": "1", "pg_desc": "tp", "ranks": [0, 1], "group_size": 2}]
    x = (10, 16, [16])
    head = [_node(1, "[pytorch|profiler|execution_trace|thread]", 0), _node(3, "aten::relu", 1, [x], [x])]
    cases = {
        "ambiguous.json": ([_groups_node(2, groups), _node(4, "c10d::allreduce_", 1, [x], [x])],
                           "names no process group"),
        "send.json": ([_groups_node(2, groups[:1]), _node(4, "c10d::send", 1, [x])], "point-to-point"),
        "gather.json": ([_groups_node(2, groups[:1]), _node(4, "c10d::gather_", 1, [x])], "not a collective"),
        "badinit.json": ([_groups_node(2, {"x": 1})], "holds no JSON list of process groups"),
        "dtype.json": ([_comms_node(4, 1, collective_name="allreduce", dtype="Quux", in_msg_nelems=1,
                                    out_msg_nelems=1, pg_name="0", pg_size=2, global_rank_start=0,
                                    global_rank_stride=1)], "dtype 'Quux'"),
    }
    for name, (nodes, message) in cases.items():
        (tmp_path / name).write_text(json.dumps({"nodes": head + nodes}))
        line = charon_fails("import", "--execution-trace", str(tmp_path / name), "-o", str(tmp_path / "o.mlir"))
        assert message in line and name in line, (name, line)
        assert not (tmp_path / "o.mlir").exists()


def test_a_recorded_pipeline_imports_both_stages_with_paired_messages():
    from charon_ir.dialects import coll

    module = import_execution_trace(DISTRIBUTED / "pp2-gloo.1.et.json.gz")  # brings rank 0, its peer
    module.verify()
    stages = [op for op in module.body.block.ops if isinstance(op, sim.StageOp)]
    assert [st.stage_ids() for st in stages] == [(0,), (1,)]
    activation = 64 * 1024 * 4  # [seq, 4 * hidden] float32, each way, per micro-batch

    def p2p(stage):
        return [(op.name, op.shift.value.data, (op.operands or op.results)[0].type.get_shape()[0])
                for op in stage.walk() if isinstance(op, (coll.SendOp, coll.RecvOp))]

    # GPipe over two micro-batches: the first stage sends both activations, then
    # receives both gradients; the second the mirror image
    assert p2p(stages[0]) == [("coll.send", 1, activation)] * 2 + [("coll.recv", 1, activation)] * 2
    assert p2p(stages[1]) == [("coll.recv", -1, activation)] * 2 + [("coll.send", -1, activation)] * 2


def test_a_recorded_pipeline_simulates(tmp_path, charon_cli):
    report = _imported_and_simulated(charon_cli, DISTRIBUTED / "pp2-gloo.0.et.json.gz", tmp_path / "step.mlir",
                                     gpus=2)
    assert report["iteration_time_s"] > report["breakdown"]["compute_s"] > 0
    first, second = report["stages"]
    assert first["bubble_s"] > 0 and second["bubble_s"] > 0  # each stage waits for the other's messages


def test_bad_pipelines_are_one_line(charon_fails, tmp_path):
    import gzip
    import shutil

    shutil.copy(DISTRIBUTED / "pp2-gloo.0.et.json.gz", tmp_path / "pp.0.et.json.gz")
    line = charon_fails("import", "--execution-trace", str(tmp_path / "pp.0.et.json.gz"), "-o", str(tmp_path / "o.mlir"))
    assert "exchanges messages with rank 1" in line and "missing" in line
    shutil.copy(DISTRIBUTED / "pp2-gloo.0.et.json.gz", tmp_path / "unranked.et.json.gz")
    line = charon_fails("import", "--execution-trace", str(tmp_path / "unranked.et.json.gz"), "-o", str(tmp_path / "o.mlir"))
    assert "says no rank" in line
    data = json.loads(gzip.open(DISTRIBUTED / "pp2-gloo.1.et.json.gz").read())
    recv = next(n for n in data["nodes"] if n["name"] == "c10d::recv_")
    recv["inputs"]["values"][3] = 7  # another tag
    (tmp_path / "pp.1.et.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    line = charon_fails("import", "--execution-trace", str(tmp_path / "pp.0.et.json.gz"), "-o", str(tmp_path / "o.mlir"))
    assert "message 0 from rank 0 to rank 1" in line and "tag 7" in line
    assert not (tmp_path / "o.mlir").exists()
