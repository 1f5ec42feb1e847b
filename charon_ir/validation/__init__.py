"""Published measurements the simulator is checked against (`published.json`, a
copy of the project's reference table: kernel, collective, training and
inference records with their sources)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def published_records() -> tuple[dict[str, Any], ...]:
    text = resources.files("charon_ir.validation").joinpath("published.json").read_text()
    return tuple(json.loads(text))
