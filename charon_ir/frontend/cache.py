"""On-disk cache of imported IR, keyed by a hash of the config and the options.

The key covers the model config (its JSON, keys sorted), every import option and
FRONTEND_VERSION plus the torch/transformers versions, so a change to any of them
is a miss. Entries are text IR written atomically (temp file + rename): a crash
never leaves a half-written entry for the next run to parse.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

FRONTEND_VERSION = "charon-frontend-5"
"""Bump when the emitted IR changes for the same config and options."""


def cache_root() -> Path:
    """Where every cache lives (imported IR, serving latency tables, validation
    steps, sweep clusters), one folder each: `$CHARON_CACHE_DIR`, else
    ~/.cache/charon."""
    env = os.environ.get("CHARON_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "charon"


def cache_dir() -> Path:
    """The imported IR's folder."""
    return cache_root() / "ir"


def cache_key(config: dict[str, Any], options: dict[str, Any], versions: dict[str, str]) -> str:
    payload = json.dumps(
        {"config": config, "options": options, "versions": versions, "frontend": FRONTEND_VERSION},
        sort_keys=True, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def cache_path(key: str) -> Path:
    return cache_dir() / f"{key}.mlir"


CHECKSUM_PREFIX = "// charon-ir-cache sha256 "
"""The last line of an entry: the digest of the text above it. An entry damaged
after it was written (truncated, edited) is a miss, not IR that `charon import`
copies out unparsed."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read(key: str) -> str | None:
    try:
        stored = cache_path(key).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    text, _, last = stored.rstrip("\n").rpartition("\n")
    if last != CHECKSUM_PREFIX + _digest(text + "\n"):
        return None
    return text + "\n"


def write(key: str, text: str) -> Path:
    path = cache_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
    text = text if text.endswith("\n") else text + "\n"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text + CHECKSUM_PREFIX + _digest(text) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
