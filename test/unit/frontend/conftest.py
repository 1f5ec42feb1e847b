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
