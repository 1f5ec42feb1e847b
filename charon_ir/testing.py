"""Helpers for tests and scripts: a context with every Charon dialect, parsing,
a routed experts' GEMM."""

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType, UnitAttr, bf16
from xdsl.parser import Parser

from charon_ir.dialects import sim
from charon_ir.registry import ALL_DIALECTS


def make_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    for factory in ALL_DIALECTS.values():
        ctx.load_dialect(factory())
    return ctx


def parse_module(text: str, ctx: Context | None = None) -> ModuleOp:
    module = Parser(ctx or make_context(), text).parse_module()
    module.verify()
    return module


def expert_matmul(experts: int, m: int, k: int, n: int, grouped: bool) -> sim.MatmulOp:
    """[experts, m, k] x [experts, k, n] in bf16, `grouped` (one GEMM per expert,
    as `group-expert-gemms` marks the routed experts') or one batched GEMM."""
    rows = sim.InputOp("rows", TensorType(bf16, (experts, m, k)))
    weight = sim.ParamOp("experts", TensorType(bf16, (experts, k, n)))
    op = sim.MatmulOp(rows.result, weight.result, TensorType(bf16, (experts, m, n)))
    if grouped:
        op.properties["grouped"] = UnitAttr()
    op.verify()
    return op
