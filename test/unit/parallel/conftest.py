"""Shared fixtures of the parallelism tests."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def import_config(tmp_path, monkeypatch):
    """import_config(base model, seq_len, **overrides) -> the imported module of the
    bundled config with `overrides` (not cached)."""
    pytest.importorskip("torch")
    from charon_ir.frontend import import_model
    from charon_ir.frontend.configs import load_config

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))

    def load(base: str, seq_len: int, **overrides):
        _, config = load_config(base)
        config.update(overrides)
        path = tmp_path / f"{base}-{abs(hash(json.dumps(overrides, sort_keys=True)))}.json"
        path.write_text(json.dumps(config))
        return import_model(path, seq_len=seq_len, batch=1, mode="train", use_cache=False)

    return load
