"""Fixtures of the frontend tests: one import per (model, options) per session,
into a throw-away cache directory."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes more than ~30 s on a 2-core machine")


@pytest.fixture(scope="session", autouse=True)
def _frontend_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Keep the tests' IR cache out of ~/.cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("CHARON_CACHE_DIR", str(tmp_path_factory.mktemp("charon-ir-cache")))
    yield
    mp.undo()


_IMPORTS: dict[tuple, object] = {}


@pytest.fixture(scope="session")
def imported():
    """imported(model, seq_len=..., mode=...) -> ImportResult, memoised per session."""
    from charon_ir.frontend import import_model_with_summary

    def get(model: str, *, seq_len: int = 128, batch: int = 1, mode: str = "train"):
        key = (model, seq_len, batch, mode)
        if key not in _IMPORTS:
            _IMPORTS[key] = import_model_with_summary(model, seq_len=seq_len, batch=batch, mode=mode)
        return _IMPORTS[key]

    return get


@pytest.fixture
def hf_twin(tmp_path):
    """hf_twin(config) -> the path of a config.json holding `config`: the Hugging
    Face model of a `megatron:` model's shapes, its twin."""
    import json

    def write(config: dict) -> str:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        return str(path)

    return write


@pytest.fixture
def simulates_near_its_twin(hf_twin):
    """simulates_near_its_twin(model, twin, axis=, flops_rel=, step_rel=, **options):
    `model` (a `megatron:` model) and its Hugging Face twin `twin` simulated with
    the same options: `model` exposes communication on `axis`, its FLOPs per GPU
    are within `flops_rel` of the twin's and its step within `step_rel`."""
    import charon_ir

    def check(model: str, twin: dict, *, axis: str, flops_rel: float, step_rel: float, **options) -> None:
        megatron = charon_ir.simulate(model, **options)
        hf = charon_ir.simulate(hf_twin(twin), **options)
        assert megatron["breakdown"]["exposed_comm_s"][axis] > 0
        assert megatron["model_flops_per_gpu"] == pytest.approx(hf["model_flops_per_gpu"], rel=flops_rel)
        assert megatron["iteration_time_s"] == pytest.approx(hf["iteration_time_s"], rel=step_rel)

    return check


@pytest.fixture
def gemms_equal_its_twin(hf_twin):
    """gemms_equal_its_twin(megatron_ir, twin) -> the twin's module: imported like
    `megatron_ir` (seq 128, batch 2), with the same parameters and the same
    GEMM and attention FLOPs forward and backward."""
    from charon_ir.dialects import sim
    from charon_ir.frontend import import_model, param_count, phase_flops

    def check(megatron_ir, twin: dict):
        hf = import_model(hf_twin(twin), seq_len=128, batch=2, use_cache=False)
        assert param_count(megatron_ir) == param_count(hf)
        for phase in ("forward", "backward"):
            for kind in (sim.MatmulOp, sim.AttentionOp, sim.AttentionGradOp):
                assert phase_flops(megatron_ir, phase, kind) == pytest.approx(phase_flops(hf, phase, kind), rel=1e-9)
        return hf

    return check
