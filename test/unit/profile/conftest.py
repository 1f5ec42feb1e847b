"""Fixtures for the profile tests: a tiny Llama step and a database profiled from
it once per session on this machine's CPU (a few seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from charon_ir.profile.collect import OpSet, parse_module_text
from charon_ir.profile.reference_step import LlamaShape, llama_step_mlir
from charon_ir.profile.session import ProfileRun, plan, profile_ops
from charon_ir.profile.store import ProfileStore
from charon_ir.profile.sweep import DEFAULT_FACTORS

TINY = LlamaShape(batch=1, seq=256, hidden=128, heads=2, kv_heads=1, ffn=344, vocab=512, layers=2)


@pytest.fixture(scope="session")
def tiny_step_text() -> str:
    return llama_step_mlir(TINY)


@pytest.fixture(scope="session")
def profiled_db(tmp_path_factory: pytest.TempPathFactory, tiny_step_text: str) -> tuple[Path, ProfileRun]:
    """The tiny step and its sweep, measured on the CPU."""
    path = tmp_path_factory.mktemp("profile") / "profile.db"
    opset = OpSet()
    opset.add_module(parse_module_text(tiny_step_text, "tiny"))
    with ProfileStore.open(path) as store:
        run = profile_ops(store, plan(opset, DEFAULT_FACTORS), "cpu", warmup=1, repeats=5)
    return path, run
