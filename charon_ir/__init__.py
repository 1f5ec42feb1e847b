"""Charon-IR: predicts how fast, and in how much memory, an LLM trains and serves
on a GPU cluster. The Python entry points are `charon_ir.simulate` (training,
`charon simulate`) and `charon_ir.serve` (`charon serve`); both return the dict
the CLI prints with `--json`. They are imported on first use, so that importing
the package (or running `charon-opt`) stays light."""

from __future__ import annotations

from typing import Any

__all__ = ["serve", "simulate"]


def __getattr__(name: str) -> Any:
    if name == "simulate":
        from charon_ir.api import simulate

        return simulate
    if name == "serve":
        from charon_ir.serving.api import serve

        return serve
    raise AttributeError(f"module 'charon_ir' has no attribute '{name}'")
