"""`charon validate --live` on this machine's CPU, with a tiny Llama: the real
step is measured, its ops profiled into a fresh database and the step simulated
from them."""

from __future__ import annotations

import math

from charon_ir.validation.live import LIVE_MODEL, LiveSetup, format_live, run_live

TINY = dict(LIVE_MODEL, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, intermediate_size=352, vocab_size=512,
            max_position_embeddings=128)


def test_live_validation_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_PROFILE_DB", str(tmp_path / "profile.db"))
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "ir"))
    setup = LiveSetup(config=TINY, seq_len=128, steps=3, warmup=1, profile_repeats=3)
    result = run_live("cpu", setup)
    assert result.device == "cpu" and result.dtype == "fp32"
    assert len(result.measured_samples) == 3 and result.measured_s > 0
    assert result.predicted_s > 0 and math.isfinite(result.error)
    # every op of the step was measured here, so the database priced all of them
    assert set(result.engines) == {"db"}
    # how close the prediction comes depends on the machine's load while the real
    # step runs: no test asserts it (a timing of real kernels); `charon validate
    # --live` reports it and the README quotes it at the default size
    assert "error" in format_live(result)


def test_unknown_device_is_one_line_error():
    import pytest

    from charon_ir.errors import CharonError

    with pytest.raises(CharonError, match="--device"):
        run_live("tpu")
