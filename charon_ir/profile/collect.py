"""The ops to profile: every distinct compute op of a module, by `OpKey`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects.sim import ComputeOp
from charon_ir.errors import read_text
from charon_ir.profile.key import OpKey, is_free_view
from charon_ir.registry import ALL_DIALECTS
from charon_ir.tools.charon_opt import parse_located


def charon_context() -> Context:
    ctx = Context(allow_unregistered=False)
    for name, factory in {**get_all_dialects(), **ALL_DIALECTS}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def parse_module_file(path: Path) -> ModuleOp:
    return parse_module_text(read_text(path), str(path))


def parse_module_text(text: str, name: str) -> ModuleOp:
    """Parse and verify `text`; errors become one line naming `name`:line:col."""
    return parse_located(charon_context(), text, name)


@dataclass
class OpSet:
    """Distinct compute ops, first occurrence kept. `sim.generic` ops are kept
    too: the runner runs the few whose arguments their shapes determine and
    reports the rest."""

    ops: dict[OpKey, ComputeOp] = field(default_factory=dict)
    views: int = 0
    """Zero-work `sim.generic` views: free, priced 0 without measuring."""

    def add_module(self, module: ModuleOp) -> None:
        for op in module.walk():
            if not isinstance(op, ComputeOp):
                continue
            if is_free_view(op):
                self.views += 1
            else:
                self.ops.setdefault(OpKey.of(op), op)
