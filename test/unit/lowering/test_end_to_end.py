"""The first end-to-end path: parse, target, price, lower, interpret."""

import json
from pathlib import Path

from xdsl.context import Context

from charon_ir.lowering.lower_to_events import LowerToEventsPass
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.runtime.simulate_target import simulate_module
from charon_ir.testing import make_context, parse_module

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def simulate(name: str, **target) -> dict:
    ctx: Context = make_context()
    module = parse_module((EXAMPLES / name).read_text(), ctx)
    SetTargetPass(**target).apply(ctx, module)
    CostAnnotatePass().apply(ctx, module)
    LowerToEventsPass().apply(ctx, module)
    module.verify()
    return simulate_module(ctx, module)


def test_transformer_layer_report():
    report = simulate("transformer_layer.mlir", hardware="H100-SXM5-80GB", gpus=8)
    busy = {k: v["busy_s"] for k, v in report["streams"].items()}
    assert set(busy) == {"compute", "comm_tp"}
    # nothing overlaps in a TP layer: every all_reduce sits on the critical path
    assert report["iteration_time_s"] >= max(busy.values())
    b = report["breakdown"]
    total = b["compute_s"] + sum(b["exposed_comm_s"].values()) + b["bubble_s"]
    assert abs(total - report["iteration_time_s"]) < 1e-12
    assert report["engines"] == {"analytic": 50}
    assert 0 < report["mfu"] < 1


def test_same_input_same_report_byte_for_byte():
    a = json.dumps(simulate("transformer_layer.mlir", hardware="H100"))
    b = json.dumps(simulate("transformer_layer.mlir", hardware="H100"))
    assert a == b


def test_a_faster_gpu_is_faster():
    a100 = simulate("mlp.mlir", hardware="A100", gpus=1)["iteration_time_s"]
    h100 = simulate("mlp.mlir", hardware="H100", gpus=1)["iteration_time_s"]
    assert h100 < a100
