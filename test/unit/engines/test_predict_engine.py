"""The `predict` engine: times for ops the database lacks, from models fitted on
the measurements of the same family."""

from __future__ import annotations

from pathlib import Path

import pytest

from charon_ir.dialects.sim import ComputeOp
from charon_ir.engines.base import ENGINES
from charon_ir.engines.predict import PredictEngine
from charon_ir.profile.collect import charon_context, parse_module_text
from charon_ir.profile.key import OpKey
from charon_ir.profile.store import Measurement, ProfileStore
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.target.target import Target


def silu(rows: int, cols: int = 256) -> str:
    return (
        f'%x{rows} = sim.input "x{rows}" : tensor<{rows}x{cols}xbf16>\n'
        f'%y{rows} = sim.elementwise "silu" %x{rows} : tensor<{rows}x{cols}xbf16> -> tensor<{rows}x{cols}xbf16>\n'
    )


def module(rows: list[int], extra: str = ""):
    m = parse_module_text("builtin.module {\n" + "".join(silu(r) for r in rows) + extra + "}\n", "m")
    SetTargetPass(hardware="H100", gpus=1).apply(charon_context(), m)
    return m


def ops(m) -> list[ComputeOp]:
    return [op for op in m.walk() if isinstance(op, ComputeOp)]


def synthetic_time(op: ComputeOp) -> float:
    """A launch overhead plus a memory-bound term: what a roofline model fits."""
    return 4e-6 + op.bytes_moved() / 5e10


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "profile.db"
    monkeypatch.setenv("CHARON_PROFILE_DB", str(path))
    monkeypatch.setenv("CHARON_PROFILE_DEVICE", "cpu")
    with ProfileStore.open(path) as store:
        for op in ops(module([64, 128, 256, 512, 1024, 2048])):
            store.put(Measurement(OpKey.of(op), "cpu", "2.13.0", synthetic_time(op), op.flops(), op.bytes_moved(), 5, 0.0))
    return path


def test_registered():
    assert ENGINES["predict"]() is PredictEngine


def test_predicts_unmeasured_sizes_of_a_measured_family(db: Path):
    m = module([96, 768, 4096])
    target = Target.from_module(m)
    engine = PredictEngine()
    for op in ops(m):
        cost = engine.price(op, target)
        assert cost is not None and cost.engine == "predict"
        assert abs(cost.time_s - synthetic_time(op)) / synthetic_time(op) < 0.02
        assert cost.bytes == op.bytes_moved()


def test_unknown_family_falls_through(db: Path):
    m = module([64], '%z = sim.elementwise "exp" %x64 : tensor<64x256xbf16> -> tensor<64x256xbf16>\n')
    target = Target.from_module(m)
    exp = [op for op in ops(m) if OpKey.of(op).family == "elementwise[exp]:bf16"][0]
    assert PredictEngine().price(exp, target) is None


def test_other_device_has_no_models(db: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CHARON_PROFILE_DEVICE")
    m = module([96])
    assert PredictEngine().price(ops(m)[0], Target.from_module(m)) is None
