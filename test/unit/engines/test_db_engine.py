"""The `db` engine: measured times by op key and device, without torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from charon_ir.dialects.sim import COST_ATTR, ComputeOp, CostAttr
from charon_ir.engines.base import ENGINES
from charon_ir.engines.db import DbEngine
from charon_ir.errors import CharonError
from charon_ir.passes.cost_annotate import CostAnnotatePass
from charon_ir.passes.set_target import SetTargetPass
from charon_ir.profile.collect import charon_context, parse_module_text
from charon_ir.profile.key import OpKey
from charon_ir.profile.store import Measurement, ProfileStore

MODULE = """
builtin.module {
  %a = sim.input "a" : tensor<256x128xbf16>
  %w = sim.param "w" : tensor<344x128xbf16>
  %m = sim.matmul %a, %w {transpose_rhs} : (tensor<256x128xbf16>, tensor<344x128xbf16>) -> tensor<256x344xbf16>
  %s = sim.elementwise "silu" %m : tensor<256x344xbf16> -> tensor<256x344xbf16>
  %v = sim.generic "view"(%s) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<256x344xbf16>) -> tensor<344x256xbf16>
}
"""


def module_with_target() -> ModuleOp:
    module = parse_module_text(MODULE, "m")
    SetTargetPass(hardware="H100", gpus=1).apply(charon_context(), module)
    return module


def compute_ops(module: ModuleOp) -> list[ComputeOp]:
    return [op for op in module.walk() if isinstance(op, ComputeOp)]


def fill(path: Path, device: str, times: dict[str, float], torch_version: str = "2.13.0") -> None:
    with ProfileStore.open(path) as store:
        for op in compute_ops(parse_module_text(MODULE, "m")):
            key = OpKey.of(op)
            if key.kind in times:
                store.put(Measurement(key, device, torch_version, times[key.kind], op.flops(), op.bytes_moved(), 5, 0.0))


def annotate(engines: tuple[str, ...]) -> dict[str, CostAttr]:
    module = module_with_target()
    CostAnnotatePass(engines=engines).apply(charon_context(), module)
    return {op.name: op.attributes[COST_ATTR] for op in compute_ops(module)}  # pyright: ignore


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "profile.db"
    monkeypatch.setenv("CHARON_PROFILE_DB", str(path))
    monkeypatch.delenv("CHARON_PROFILE_DEVICE", raising=False)
    return path


def test_registered():
    assert ENGINES["db"]() is DbEngine


def test_prices_measured_ops_for_the_target_gpu(db: Path):
    fill(db, "H100-SXM5-80GB", {"matmul": 2e-5, "elementwise": 3e-6})
    fill(db, "cpu", {"matmul": 9.0, "elementwise": 9.0})
    costs = annotate(("db",))
    assert costs["sim.matmul"].engine.data == "db"
    assert costs["sim.matmul"].time_s.data == 2e-5
    assert costs["sim.matmul"].flops.data == 2 * 256 * 344 * 128
    assert costs["sim.elementwise"].time_s.data == 3e-6
    # a view moves nothing: free on every device
    assert (costs["sim.generic"].engine.data, costs["sim.generic"].time_s.data) == ("db", 0.0)


def test_device_environment_selects_cpu_measurements(db: Path, monkeypatch: pytest.MonkeyPatch):
    fill(db, "cpu", {"matmul": 4e-4, "elementwise": 5e-5})
    monkeypatch.setenv("CHARON_PROFILE_DEVICE", "cpu")
    costs = annotate(("db",))
    assert costs["sim.matmul"].time_s.data == 4e-4


def test_misses_fall_through_to_the_next_engine(db: Path):
    fill(db, "H100-SXM5-80GB", {"matmul": 2e-5})
    costs = annotate(("db", "analytic"))
    assert costs["sim.matmul"].engine.data == "db"
    assert costs["sim.elementwise"].engine.data == "analytic"


def test_db_alone_names_the_op_it_cannot_price(db: Path):
    fill(db, "H100-SXM5-80GB", {"matmul": 2e-5})
    with pytest.raises(CharonError, match="no engine of 'db' can price sim.elementwise"):
        annotate(("db",))


def test_missing_database_is_empty_and_not_created(db: Path):
    engine = DbEngine()
    module = module_with_target()
    from charon_ir.target.target import Target

    target = Target.from_module(module)
    assert engine.price(compute_ops(module)[0], target) is None
    assert not db.exists()


def test_corrupt_database_is_one_line(db: Path):
    db.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(CharonError) as info:
        annotate(("db", "analytic"))
    assert str(info.value) == (
        f"profile database {db} is not a valid Charon profile database: file is not a database"
    )


def test_installed_torch_version_wins(db: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("charon_ir.profile.store.installed_torch_version", lambda: "2.13.0")
    fill(db, "H100-SXM5-80GB", {"matmul": 1e-5}, torch_version="2.13.0")
    fill(db, "H100-SXM5-80GB", {"matmul": 7e-5}, torch_version="9.9.9")
    assert annotate(("db", "analytic"))["sim.matmul"].time_s.data == 1e-5


def test_lookup_imports_no_torch(db: Path):
    fill(db, "cpu", {"matmul": 4e-4, "elementwise": 5e-5})
    code = (
        "import sys\n"
        "from charon_ir.profile.collect import charon_context, parse_module_text\n"
        "from charon_ir.passes.set_target import SetTargetPass\n"
        "from charon_ir.passes.cost_annotate import CostAnnotatePass\n"
        f"m = parse_module_text({MODULE!r}, 'm')\n"
        "SetTargetPass(hardware='H100', gpus=1).apply(charon_context(), m)\n"
        "CostAnnotatePass(engines=('db', 'predict', 'analytic')).apply(charon_context(), m)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    env = {"CHARON_PROFILE_DB": str(db), "CHARON_PROFILE_DEVICE": "cpu", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
