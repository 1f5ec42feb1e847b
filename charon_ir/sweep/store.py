"""The results file: one sqlite row per evaluated point, keyed by its config hash.

WAL mode and a commit per batch of rows: an interrupted sweep keeps every row it
stored, and rerunning the sweep skips the stored keys. Only the main process
writes (workers return records), so there is one writer at a time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

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


class ResultStore:
    """Sweep results in a sqlite file (":memory:" keeps them in the process)."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path)
        if self.path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
            # a commit reaches the WAL; a power cut may lose the last few, never corrupt
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(SCHEMA)
        self.db.commit()

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
