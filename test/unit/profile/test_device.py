"""Which device's measurements a lookup prices with."""

from __future__ import annotations

import os

import pytest

from charon_ir.profile.device import DEVICE_ENV, pricing_device


@pytest.mark.parametrize("before", [None, "H100-SXM5-80GB"])
def test_pricing_device_is_set_inside_and_put_back_after(monkeypatch, before):
    if before is None:
        monkeypatch.delenv(DEVICE_ENV, raising=False)
    else:
        monkeypatch.setenv(DEVICE_ENV, before)
    with pytest.raises(RuntimeError):
        with pricing_device("cpu"):
            assert os.environ[DEVICE_ENV] == "cpu"
            raise RuntimeError("the block fails")
    assert os.environ.get(DEVICE_ENV) == before
