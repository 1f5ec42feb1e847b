"""The GPU kernel measurements shipped with Charon (`charon_ir.profile.shipped`)."""

from __future__ import annotations

import shutil
import stat
from collections import Counter
from pathlib import Path

import pytest

from charon_ir.api import TrainingConfig, build_training_module
from charon_ir.dialects.sim import COST_ATTR, ComputeOp
from charon_ir.engines.db import measurement_table
from charon_ir.profile.key import is_free_view
from charon_ir.profile.shipped import (
    SHIPPED_MAX_SPREAD,
    SHIPPED_GPUS,
    SHIPPED_STEPS,
    SHIPPED_DB,
    SHIPPED_ENV,
    shipped_db_path,
)
from charon_ir.profile.shipped_steps import shipped_steps_opset
from charon_ir.profile.store import Measurement, ProfileStore, latest_by_key

@pytest.fixture
def user_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(SHIPPED_ENV, raising=False)
    monkeypatch.delenv("CHARON_PROFILE_DEVICE", raising=False)
    return tmp_path / "profile.db"


@pytest.fixture(scope="module")
def shipped_ops():
    return shipped_steps_opset().ops


def test_shipped_database_is_read_only_and_leaves_nothing_beside_it(tmp_path: Path):
    # a read-only folder, as site-packages can be: WAL mode would need to write -wal/-shm files
    folder = tmp_path / "site"
    folder.mkdir()
    copy = folder / SHIPPED_DB.name
    shutil.copy(SHIPPED_DB, copy)
    copy.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with ProfileStore.open_shipped(copy) as store:
            assert set(store.devices()) == set(SHIPPED_GPUS)
            assert sum(1 for _ in store.measurements("H100-SXM5-80GB")) > 3000
        assert sorted(p.name for p in folder.iterdir()) == [SHIPPED_DB.name]
    finally:
        folder.chmod(stat.S_IRWXU)


def test_switched_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(SHIPPED_ENV, "off")
    assert shipped_db_path() is None
    monkeypatch.setenv(SHIPPED_ENV, "")
    assert shipped_db_path() == SHIPPED_DB


@pytest.mark.parametrize("gpu", SHIPPED_GPUS)
def test_every_runnable_op_of_the_shipped_steps_is_measured(gpu: str, shipped_ops):
    """A pass that changes the steps' shapes leaves the shipped kernels stale:
    re-run `charon profile --device cuda --shipped-steps` on each GPU."""
    ops = shipped_ops
    with ProfileStore.open_shipped(SHIPPED_DB) as store:  # the file, read by the engines or not
        table = latest_by_key(store.measurements(gpu))
    # what has no torch runner (fused kernels, MoE routing, aten ops whose arguments
    # the IR lacks) or did not fit the GPU (the 405B stage's AdamW) falls through
    no_runner = ("fused.", "moe_", "topk", "layer_norm_stats", "aten.", "optimizer_step")
    missing = {k.family for k, op in ops.items() if k not in table and not is_free_view(op)}
    assert not {f for f in missing if not f.startswith(no_runner)}
    assert sum(k in table for k in ops) > 200


def test_engines_price_with_the_shipped_kernels(user_db: Path, monkeypatch: pytest.MonkeyPatch):
    def engines_used() -> dict[str, int]:
        _, module, _ = build_training_module(TrainingConfig(
            model="llama-3.1-8b", gpus=64, tp=8, pp=2, sequence_parallel=True, seq_len=4096,
            global_batch=256, engines=("db", "predict", "analytic")))
        return dict(Counter(op.attributes[COST_ATTR].engine.data for op in module.walk()  # pyright: ignore
                            if isinstance(op, ComputeOp) and not is_free_view(op)))

    monkeypatch.setenv("CHARON_PROFILE_DB", str(user_db))
    used = engines_used()
    assert used["db"] > used.get("analytic", 0) > 0
    monkeypatch.setenv(SHIPPED_ENV, "off")
    assert set(engines_used()) == {"analytic"}


def test_unstable_shipped_rows_stay_in_the_file_but_price_nothing(user_db: Path):
    """Rows whose samples spread over a quarter of their median (the H200's small
    kernels split between their own time and PyTorch's launch interval) are not read."""
    for gpu in SHIPPED_GPUS:
        with ProfileStore.open_shipped(SHIPPED_DB) as store:
            stored = latest_by_key(store.measurements(gpu))
        read = measurement_table(user_db, gpu)
        unstable = {k for k, m in stored.items() if m.spread > SHIPPED_MAX_SPREAD}
        assert unstable and len(read) > 2500
        assert not unstable & set(read) and set(read) == set(stored) - unstable


def test_a_faster_gpu_is_not_priced_much_slower_by_its_own_kernels(user_db: Path):
    """The H200's eager small-kernel timings once priced its step 14 % slower than
    the H100's; re-timed as CUDA graphs its kernels price it within a few percent
    (the same chip's GEMMs and attention, more HBM bandwidth)."""
    def step(gpu: str) -> float:
        config = TrainingConfig(model="llama-3.1-8b", gpus=64, tp=8, pp=2, sequence_parallel=True,
                                seq_len=4096, global_batch=256, hardware=gpu,
                                engines=("db", "predict", "analytic"))
        _, module, _ = build_training_module(config)
        engines = Counter(op.attributes[COST_ATTR].engine.data for op in module.walk()  # pyright: ignore
                          if isinstance(op, ComputeOp) and not is_free_view(op))
        assert engines["db"] > 60, engines
        return sum(op.attributes[COST_ATTR].time_s.data for op in module.walk()  # pyright: ignore
                   if isinstance(op, ComputeOp) and not is_free_view(op))

    assert step("H200-SXM-141GB") < 1.05 * step("H100-SXM5-80GB")


def test_user_measurement_wins_over_the_shipped_one(user_db: Path, monkeypatch: pytest.MonkeyPatch):
    key, op = next((k, o) for k, o in shipped_steps_opset(list(SHIPPED_STEPS)[:1]).ops.items()
                   if k.kind == "matmul")
    shipped = measurement_table(user_db, "H100-SXM5-80GB")[key]
    with ProfileStore.open(user_db) as store:
        store.put(Measurement(key, "H100-SXM5-80GB", "2.13.0", shipped.time_s * 3, op.flops(),
                              op.bytes_moved(), 5, 0.0))
    assert measurement_table(user_db, "H100-SXM5-80GB")[key].time_s == pytest.approx(shipped.time_s * 3)
    monkeypatch.setenv(SHIPPED_ENV, "off")
    assert list(measurement_table(user_db, "H100-SXM5-80GB")) == [key]
