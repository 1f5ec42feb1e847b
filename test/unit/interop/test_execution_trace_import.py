"""PyTorch execution traces as sim IR. The shipped trace was recorded by torch's
ExecutionTraceObserver on a CPU (bench/record_kineto_trace.py --execution-trace)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from charon_ir.dialects import sim
from charon_ir.errors import CharonError
from charon_ir.interop.chakra_import import import_execution_trace

ET = Path(__file__).parents[2] / "data" / "kineto" / "llama4-cpu-s256.et.json.gz"


def _generic(module):
    for phase in module.body.block.ops:
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


def test_an_imported_trace_simulates(tmp_path, capsys, monkeypatch):
    from charon_ir import cli

    out = tmp_path / "step.mlir"
    monkeypatch.setattr(sys, "argv", ["charon", "import", "--execution-trace", str(ET), "-o", str(out)])
    cli.main()
    monkeypatch.setattr(sys, "argv", ["charon", "simulate", "--model", str(out), "--gpus", "1", "--json"])
    capsys.readouterr()
    cli.main()
    report = json.loads(capsys.readouterr().out)
    assert report["iteration_time_s"] > 0
    ops = sum(1 for _ in _generic(import_execution_trace(ET)))
    assert report["engines"] == {"analytic": ops}  # every imported op is priced


def test_bad_execution_traces_are_one_line(charon_fails, tmp_path):
    cases = {
        "bad.json": (b"[1, 2", "bad.json:1:6: malformed PyTorch execution trace (JSON)"),
        "nonodes.json": (b'{"schema": "x"}', "no 'nodes' list"),
        "noid.json": (json.dumps({"nodes": [{"name": "aten::mm"}]}).encode(), "has no integer id and name"),
        "noio.json": (json.dumps({"nodes": [{"id": 1, "name": "aten::mm"}]}).encode(), "has no inputs"),
        "comm.json": (json.dumps({"nodes": [_node(1, "record_param_comms", 0)]}).encode(), "is a collective"),
        "empty.json": (json.dumps({"nodes": [_node(1, "aten::view", 0)]}).encode(), "nothing to simulate"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        line = charon_fails("import", "--execution-trace", str(tmp_path / name), "-o", str(tmp_path / "o.mlir"))
        assert message in line and name in line, line
        assert not (tmp_path / "o.mlir").exists()
    with pytest.raises(CharonError, match="cannot read"):
        import_execution_trace(tmp_path / "missing.json")
