"""Published measurements the simulator is checked against (`published.json`, a
copy of the project's reference table: kernel, collective, training and
inference records with their sources), and `charon validate`'s machinery:
`training` maps training records to simulate runs, `runner` runs every record,
`report` prints them, `live` measures a step on this machine."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from charon_ir.errors import CharonError


@cache
def published_records() -> tuple[dict[str, Any], ...]:
    text = resources.files("charon_ir.validation").joinpath("published.json").read_text()
    return tuple(json.loads(text))


def load_record_set(path: Path | None = None) -> tuple[dict[str, Any], ...]:
    """The records of a JSON file (a list of records in published.json's form),
    or the shipped ones."""
    if path is None:
        return published_records()
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise CharonError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise CharonError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise CharonError(f"{path}: expected a JSON list of records")
    for i, record in enumerate(data):
        missing = [k for k in ("id", "category", "model", "hardware", "strategy", "metric", "value")
                   if k not in record]
        if missing:
            raise CharonError(f"{path}: record {i} lacks {', '.join(missing)}")
    return tuple(data)
