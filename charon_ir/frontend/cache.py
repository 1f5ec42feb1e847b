"""On-disk cache of imported IR, keyed by a hash of the config and the options.

The key covers the model config (its JSON, keys sorted), every import option and
FRONTEND_VERSION plus the torch/transformers versions, so a change to any of them
is a miss. Entries are text IR written atomically (temp file + rename): a crash
never leaves a half-written entry for the next run to parse. Each entry ends in a
seal over those inputs and its text: an entry damaged or edited after it was
written is a miss, resealed or not.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FRONTEND_VERSION = "charon-frontend-14"
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


@dataclass(frozen=True)
class CacheKey:
    """What one import's entry is found and sealed by."""

    inputs: str
    """The sha256 of the inputs: the config, the options, the versions."""

    @property
    def name(self) -> str:
        """The entry's file name: the first half of `inputs`. The other half is
        written nowhere, so an entry cannot be resealed from what is on disk."""
        return self.inputs[:32]


def cache_key(config: dict[str, Any], options: dict[str, Any], versions: dict[str, str]) -> CacheKey:
    payload = json.dumps(
        {"config": config, "options": options, "versions": versions, "frontend": FRONTEND_VERSION},
        sort_keys=True, default=str,
    )
    return CacheKey(hashlib.sha256(payload.encode()).hexdigest())


def cache_path(key: CacheKey) -> Path:
    return cache_dir() / f"{key.name}.mlir"


SEAL_PREFIX = "// charon-ir-cache seal "
"""The last line of an entry: the digest of the inputs' digest and the text above
it. An entry damaged after it was written (truncated, edited) is a miss, not IR
that `charon import` copies out unparsed; so is one edited and resealed with the
digest of its own text (a vocabulary changed tenfold changed the step time with
no word), or one copied under another entry's name."""


def seal(key: CacheKey, text: str) -> str:
    return hashlib.sha256(f"{key.inputs}\n{text}".encode()).hexdigest()


def read(key: CacheKey) -> str | None:
    try:
        stored = cache_path(key).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    text, _, last = stored.rstrip("\n").rpartition("\n")
    if last != SEAL_PREFIX + seal(key, text + "\n"):
        return None
    return text + "\n"


def write(key: CacheKey, text: str) -> Path:
    path = cache_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key.name}.", suffix=".tmp")
    text = text if text.endswith("\n") else text + "\n"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text + SEAL_PREFIX + seal(key, text) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
