"""Helpers for tests and scripts: a context with every Charon dialect, parsing."""

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

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
