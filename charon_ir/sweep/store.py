"""The results file: one sqlite row per evaluated point, keyed by its config hash.

WAL mode and a commit per batch of rows: an interrupted sweep keeps every row it
stored, and rerunning the sweep skips the stored keys. Only the main process
writes (workers return records), so there is one writer at a time.

Each row also names the simulator that timed it (`simulator_fingerprint`): a
store opened with a fingerprint sees only its own rows, so after an upgrade, a
recalibration or a re-profiled database the same sweep re-times its stored
points instead of mixing two versions' times in one ranking.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from charon_ir.errors import CharonError
from charon_ir.report.output import names_a_folder

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
    stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    simulator TEXT NOT NULL DEFAULT ''
)
"""
COLUMNS = ("key", "kind", "config", "status", "error", "metrics", "seconds", "cpu_seconds")
"""The columns an existing results table needs (one written before `simulator`
existed gets that column added, its rows naming no simulator)."""

SQLITE_HEADER = b"SQLite format 3\x00"


class ResultStore:
    """Sweep results in a sqlite file (":memory:" keeps them in the process).

    `simulator` (a `simulator_fingerprint`): rows are written with it, and only
    rows with it are stored keys and records; None reads every row."""

    def __init__(self, path: str | Path = ":memory:", simulator: str | None = None) -> None:
        self.path = str(path)
        self.simulator = simulator
        if self.path != ":memory:":
            _check_file(self.path)
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
            if "simulator" not in {row[1] for row in self.db.execute("PRAGMA table_info(results)")}:
                self.db.execute("ALTER TABLE results ADD COLUMN simulator TEXT NOT NULL DEFAULT ''")
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

    def _rows(self, columns: str) -> sqlite3.Cursor:
        if self.simulator is None:
            return self.db.execute(f"SELECT {columns} FROM results ORDER BY rowid")
        return self.db.execute(f"SELECT {columns} FROM results WHERE simulator = ? ORDER BY rowid",
                               (self.simulator,))

    def stored_keys(self) -> set[str]:
        return {key for (key,) in self._rows("key")}

    def stale_keys(self) -> set[str]:
        """Keys stored by another simulator than this store's (none when it reads every row)."""
        if self.simulator is None:
            return set()
        return {key for (key,) in self.db.execute(
            "SELECT key FROM results WHERE simulator != ?", (self.simulator,))}

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
                self.simulator or "",
            )
            for r in records
        ]
        try:
            self.db.executemany(
                "INSERT OR REPLACE INTO results (key, kind, config, status, error, metrics, seconds,"
                " cpu_seconds, simulator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self.db.commit()
        except sqlite3.Error as e:  # a read-only mount or an immutable file, a full disk
            raise CharonError(f"--db {self.path}: cannot write to it ({e})") from None

    def get(self, keys: Iterable[str] | None = None, configs: bool = True) -> list[dict]:
        """Stored records, all of them or those of `keys` (in the order stored);
        without `configs`, each record's config is None (not decoded: a caller
        that holds the points has them)."""
        wanted = set(keys) if keys is not None else None
        out = []
        for key, config, status, error, metrics, seconds, cpu_seconds in self._rows(
                f"key, {'config' if configs else 'NULL'}, status, error, metrics, seconds, cpu_seconds"):
            if wanted is not None and key not in wanted:
                continue
            try:
                row = {
                    "key": key,
                    "config": json.loads(config) if configs else None,
                    "status": status,
                    "error": error,
                    "metrics": json.loads(metrics) if metrics else None,
                    "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                }
                _check_row(row, configs)
            except (TypeError, ValueError) as e:  # JSONDecodeError is a ValueError
                raise CharonError(f"--db {self.path}: the row of point {key} is not a sweep's "
                                  f"record ({e}); give another --db") from None
            out.append(row)
        return out

    def close(self) -> None:
        self.db.close()


def _check_row(row: dict, config: bool = True) -> None:
    """The types the ranking and the summaries read: a row written by another
    program (or edited) fails here, by its key, not in a sort far away."""
    if config and not isinstance(row["config"], dict):
        raise TypeError("its config is not an object")
    metrics = row["metrics"]
    if metrics is None:
        return
    if not isinstance(metrics, dict):
        raise TypeError("its metrics are not an object")
    for name, value in metrics.items():
        if name not in RANKED_METRICS:
            continue
        numbers = value.values() if name in LATENCY_METRICS and isinstance(value, dict) else (value,)
        if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in numbers):
            raise TypeError(f"metric {name!r} is {value!r}, not a number")


NUMERIC_METRICS = frozenset({
    "iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "max_peak_memory_bytes", "gpus",
    "throughput_tokens_per_s", "throughput_tokens_per_s_per_gpu", "requests_per_s", "reported_gpus",
})
"""Metrics the ranking compares or divides: a number (or null) in every row."""
LATENCY_METRICS = frozenset({"ttft_s", "tpot_s", "itl_s", "e2e_s"})
"""Latency summaries: a number, or an object of numbers (mean, p50, p90, ...)."""
RANKED_METRICS = NUMERIC_METRICS | LATENCY_METRICS


def _check_file(path: str | Path) -> None:
    """Raise unless `path` is a results file to open or create: not a folder (nor
    a name ending in a separator), and when it exists and is not empty, a sqlite
    file (whose header sqlite would otherwise only check at the first query, or
    never for a file under a page)."""
    if names_a_folder(path):
        raise CharonError(f"--db {path}: is a directory, not a file")
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CharonError(f"--db {path}: cannot create directory {path.parent}: {e.strerror or e}") from None
    if not os.access(path.parent, os.W_OK):
        # an existing file too: sqlite writes its write-ahead log beside it
        raise CharonError(f"--db {path}: directory {path.parent} is not writable")
    if not path.exists():
        return
    if not os.access(path, os.W_OK):
        raise CharonError(f"--db {path}: the file is not writable")
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise CharonError(f"--db {path}: cannot read it: {e.strerror or e}") from None
    if header and header != SQLITE_HEADER:
        raise CharonError(f"--db {path}: not a sqlite file (a sweep's results file)")


SIMULATOR_PACKAGES = ("charon_ir", "charon_ir.dialects", "charon_ir.passes", "charon_ir.lowering")
"""The code and data that time a point: the package and the three it maps in
from the repository's top level (an editable install keeps them apart)."""


def simulator_fingerprint(profile_db: Path | None = None, inputs: Iterable[Path] = ()) -> str:
    """16 hex digits of sha256 over the simulator's files (code, GPU specs,
    calibration data, bundled configs), the contents of `inputs` (the files the
    points name: a model's config.json or .mlir, a cluster file) and, when the
    `db` engine prices, `profile_db`'s size and modification time. Any edit
    changes it: a stored time is reused only by the very simulator, and inputs,
    that computed it."""
    digest = hashlib.sha256()
    for name in SIMULATOR_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        sub = {Path(*n.split(".")[1:]) for n in SIMULATOR_PACKAGES if n.startswith(name + ".")}
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc" \
                    and not any(rel.is_relative_to(s) for s in sub):
                digest.update(f"{name}/{rel.as_posix()}\0".encode())
                digest.update(path.read_bytes())
    for path in sorted(set(inputs)):
        digest.update(f"input {path}\0".encode())
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"unreadable")
    if profile_db is not None:
        try:
            st = profile_db.stat()
            digest.update(f"profile-db {st.st_size} {st.st_mtime_ns}".encode())
        except OSError:
            digest.update(b"profile-db missing")
    return digest.hexdigest()[:16]
