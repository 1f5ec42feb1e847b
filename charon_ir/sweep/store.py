"""The results file: one sqlite row per evaluated point, keyed by its config hash.

WAL mode and a commit per batch of rows: an interrupted sweep keeps every row it
stored, and rerunning the sweep skips the stored keys. Only the main process
writes (workers return records), so there is one writer at a time.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from charon_ir.errors import CharonError

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    metrics TEXT,
    seconds REAL NOT NULL DEFAULT 0,
    cpu_seconds REAL NOT NULL DEFAULT 0,
    stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)
"""
COLUMNS = ("key", "kind", "config", "status", "error", "metrics", "seconds", "cpu_seconds")
"""The columns the store reads and writes: an existing results table needs them all."""

SQLITE_HEADER = b"SQLite format 3\x00"


class ResultStore:
    """Sweep results in a sqlite file (":memory:" keeps them in the process)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            _check_file(Path(self.path))
        try:
            self.db = sqlite3.connect(self.path)
        except sqlite3.Error as e:
            raise CharonError(f"--db {self.path}: cannot open it as a sqlite file ({e})") from None
        try:
            self._check_schema()
            if self.path != ":memory:":
                self.db.execute("PRAGMA journal_mode=WAL")
                # a commit reaches the WAL; a power cut may lose the last few, never corrupt
                self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(SCHEMA)
            self.db.commit()
        except sqlite3.Error as e:
            self.db.close()
            raise CharonError(f"--db {self.path}: not a usable sqlite results file ({e})") from None
        except CharonError:
            self.db.close()
            raise

    def _check_schema(self) -> None:
        """Raise unless the file is empty of tables or holds a sweep's results
        table: never add a results table to another program's database."""
        tables = {name for (name,) in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
        if not tables:
            return
        if "results" not in tables:
            raise CharonError(f"--db {self.path}: a sqlite file of other tables ({', '.join(sorted(tables))}), "
                              "not a sweep's results")
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(results)")}
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            raise CharonError(f"--db {self.path}: its results table is not a sweep's "
                              f"(no column {', '.join(missing)})")

    def stored_keys(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT key FROM results")}

    def put(self, records: Iterable[dict], kind: str) -> None:
        rows = [
            (
                r["key"],
                kind,
                json.dumps(r["config"], sort_keys=True),
                r["status"],
                r.get("error") or "",
                json.dumps(r["metrics"]) if r.get("metrics") is not None else None,
                float(r.get("seconds") or 0.0),
                float(r.get("cpu_seconds") or 0.0),
            )
            for r in records
        ]
        self.db.executemany(
            "INSERT OR REPLACE INTO results (key, kind, config, status, error, metrics, seconds, cpu_seconds)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self.db.commit()

    def get(self, keys: Iterable[str] | None = None) -> list[dict]:
        """Stored records, all of them or those of `keys` (in the order stored)."""
        query = "SELECT key, config, status, error, metrics, seconds, cpu_seconds FROM results ORDER BY rowid"
        wanted = set(keys) if keys is not None else None
        out = []
        for key, config, status, error, metrics, seconds, cpu_seconds in self.db.execute(query):
            if wanted is not None and key not in wanted:
                continue
            out.append({
                "key": key,
                "config": json.loads(config),
                "status": status,
                "error": error,
                "metrics": json.loads(metrics) if metrics else None,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
            })
        return out

    def close(self) -> None:
        self.db.close()


def _check_file(path: Path) -> None:
    """Raise unless `path` is a results file to open or create: not a folder, and
    when it exists and is not empty, a sqlite file (whose header sqlite would
    otherwise only check at the first query, or never for a file under a page)."""
    if path.is_dir():
        raise CharonError(f"--db {path}: is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CharonError(f"--db {path}: cannot create directory {path.parent}: {e.strerror or e}") from None
    if not path.exists():
        if not os.access(path.parent, os.W_OK):
            raise CharonError(f"--db {path}: directory {path.parent} is not writable")
        return
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise CharonError(f"--db {path}: cannot read it: {e.strerror or e}") from None
    if header and header != SQLITE_HEADER:
        raise CharonError(f"--db {path}: not a sqlite file (a sweep's results file)")
