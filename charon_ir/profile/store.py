"""
The profile database: measured latencies in sqlite.

One row per (op kind, variant, shapes, dtypes, device, torch version). The file is
in WAL mode with a busy timeout, and each measurement is committed on its own with
INSERT OR IGNORE: a killed `charon profile` keeps every row it committed, and two
runs writing the same file at once neither corrupt it nor duplicate rows.

The file's location: `--db PATH`, else `$CHARON_PROFILE_DB`, else
`~/.cache/charon/profile.db`.

A row whose time is not a number of seconds in [0, MAX_TIME_S], or whose FLOPs or
bytes are not finite numbers >= 0 (a file edited or damaged by hand: `time_s = -1`
priced a step at 0.6 ms, `'abc'` was an internal error, `1e308` an infinite step),
is read as missing: the engines price the op otherwise, `charon profile` measures
it again and replaces the row, and one warning line per file says how many.
"""

from __future__ import annotations

import math
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from charon_ir.errors import CharonError
from charon_ir.profile.device import installed_torch_version
from charon_ir.profile.key import OpKey

SCHEMA_VERSION = 1
APPLICATION = "charon-profile"
BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurement (
    kind TEXT NOT NULL,
    variant TEXT NOT NULL,
    shapes TEXT NOT NULL,
    dtypes TEXT NOT NULL,
    device TEXT NOT NULL,
    torch_version TEXT NOT NULL,
    time_s REAL NOT NULL,
    flops REAL NOT NULL,
    bytes REAL NOT NULL,
    repeats INTEGER NOT NULL,
    spread REAL NOT NULL,
    measured_at REAL NOT NULL,
    host TEXT NOT NULL,
    PRIMARY KEY (kind, variant, shapes, dtypes, device, torch_version)
) WITHOUT ROWID;
"""


MAX_TIME_S = 3600.0
"""The longest time a row may hold: no kernel runs for an hour."""

USABLE_ROW = (
    f"typeof(time_s) IN ('real', 'integer') AND time_s BETWEEN 0 AND {MAX_TIME_S} "
    # 9e999 is how SQL spells infinity
    "AND typeof(flops) IN ('real', 'integer') AND flops >= 0 AND flops < 9e999 "
    "AND typeof(bytes) IN ('real', 'integer') AND bytes >= 0 AND bytes < 9e999"
)
"""`usable` in SQL: the rows a lookup reads, which a new measurement does not replace."""


def usable(time_s: object, flops: object, bytes_: object) -> bool:
    """Whether a row's numbers can be priced with: a time in [0, MAX_TIME_S] and
    finite, non-negative FLOPs and bytes (sqlite keeps text in a REAL column)."""
    numbers = (time_s, flops, bytes_)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
        return False
    return 0 <= time_s <= MAX_TIME_S and flops >= 0 and bytes_ >= 0  # pyright: ignore[reportOperatorIssue]


_WARNED: set[Path] = set()
"""The files whose unusable rows were reported: once per process, not per read."""


def _warn_unusable(path: Path, rows: list[tuple]) -> None:
    if path in _WARNED:
        return
    _WARNED.add(path)
    kind, _, shapes, _, device, _, time_s = rows[0][:7]
    what = "row" if len(rows) == 1 else "rows"
    print(f"warning: profile database {path}: {len(rows)} {what} with a time that is not a number of "
          f"seconds in [0, {MAX_TIME_S:g}] (or bad FLOPs or bytes) ignored, measured again by "
          f"`charon profile`; the first: {kind} {shapes} on {device}, time_s = {time_s!r}",
          file=sys.stderr)


def default_db_path() -> Path:
    env = os.environ.get("CHARON_PROFILE_DB")
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/charon/profile.db").expanduser()


@dataclass(frozen=True)
class Measurement:
    key: OpKey
    device: str
    torch_version: str
    time_s: float
    """Seconds per call (`runner.summarize`)."""
    flops: float
    bytes: float
    repeats: int
    spread: float
    """Interquartile range over the median: how noisy the samples were."""
    measured_at: float = 0.0
    host: str = ""


class ProfileStore:
    """An open profile database. `ProfileStore.open(path)` creates it (and its
    directory) when missing; `ProfileStore.open_existing(path)` returns None
    instead, so a lookup never leaves an empty file behind."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self.conn = conn

    # ---- opening

    @staticmethod
    def open(path: Path | str | None = None) -> ProfileStore:
        path = Path(path).expanduser() if path is not None else default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            blocking = next((p for p in path.parents if p.exists()), None)
            if blocking is not None and not blocking.is_dir():  # "File exists" said nothing
                raise CharonError(f"profile database {path}: {blocking} is a file, not a folder") from None
            raise CharonError(f"profile database {path}: cannot create its directory: {e.strerror}") from None
        return ProfileStore._connect(path, create=True)

    @staticmethod
    def open_existing(path: Path | str | None = None) -> ProfileStore | None:
        path = Path(path).expanduser() if path is not None else default_db_path()
        if not path.exists():
            return None
        return ProfileStore._connect(path, create=False)

    @staticmethod
    def open_shipped(path: Path) -> ProfileStore:
        """A database shipped inside the package: read-only and immutable, so
        reading it writes nothing beside it (site-packages may be read-only)."""
        return ProfileStore._connect(path, create=False, immutable=True)

    @staticmethod
    def _connect(path: Path, create: bool, immutable: bool = False) -> ProfileStore:
        if path.is_dir():
            raise CharonError(f"profile database {path} is a directory")
        try:
            # autocommit off in the DB-API sense; `with conn:` commits each write
            if immutable:
                conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True,
                                       isolation_level=None)
            else:
                conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as e:
            raise CharonError(f"profile database {path}: cannot open: {e}") from None
        store = ProfileStore(path, conn)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            store._check_or_create(create)
        except sqlite3.DatabaseError as e:
            conn.close()
            raise _invalid(path, str(e)) from None
        except CharonError:
            conn.close()
            raise
        return store

    def _check_or_create(self, create: bool) -> None:
        conn = self.conn
        # Reading the schema is the first access to the file's pages: a file that is
        # not sqlite fails here ("file is not a database").
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            if not create:
                raise _invalid(self.path, "it has no tables")
            # WAL lets readers run beside one writer; setting it needs no open transaction
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('application', ?), ('schema_version', ?)",
                    (APPLICATION, str(SCHEMA_VERSION)),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            tables = {"meta", "measurement"}
        if "meta" not in tables or "measurement" not in tables:
            raise _invalid(self.path, "it lacks the meta and measurement tables")
        meta = dict(conn.execute("SELECT name, value FROM meta"))
        if meta.get("application") != APPLICATION:
            raise _invalid(self.path, f"its application is {meta.get('application')!r}")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise _invalid(
                self.path,
                f"schema version {meta.get('schema_version')}, this Charon reads version {SCHEMA_VERSION}",
            )
        if create:
            conn.execute("PRAGMA journal_mode = WAL")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ProfileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading and writing

    def _guard(self, what: str):
        return _Guard(self.path, what)

    def time_of(self, key: OpKey, device: str, torch_version: str) -> float | None:
        """The stored seconds of `key` on `device` with `torch_version`, if any
        (an unusable row is none)."""
        with self._guard("read"):
            row = self.conn.execute(
                "SELECT time_s, flops, bytes FROM measurement WHERE kind = ? AND variant = ? "
                "AND shapes = ? AND dtypes = ? AND device = ? AND torch_version = ?",
                (key.kind, key.variant, key.shapes, key.dtypes, device, torch_version),
            ).fetchone()
        return float(row[0]) if row is not None and usable(*row) else None

    def put(self, m: Measurement) -> bool:
        """Commit one measurement; False when a usable row with its key already
        exists (another run measured it first: the first measurement stays). An
        unusable row is replaced."""
        with self._guard("write"):
            cur = self.conn.execute(
                "INSERT INTO measurement (kind, variant, shapes, dtypes, device, "
                "torch_version, time_s, flops, bytes, repeats, spread, measured_at, host) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET time_s = excluded.time_s, flops = excluded.flops, "
                "bytes = excluded.bytes, repeats = excluded.repeats, spread = excluded.spread, "
                f"measured_at = excluded.measured_at, host = excluded.host WHERE NOT ({USABLE_ROW})",
                (
                    m.key.kind, m.key.variant, m.key.shapes, m.key.dtypes, m.device,
                    m.torch_version, m.time_s, m.flops, m.bytes, m.repeats, m.spread,
                    m.measured_at or time.time(), m.host or socket.gethostname(),
                ),
            )
        return cur.rowcount == 1

    def update(self, m: Measurement) -> None:
        """Replace the timing of a row: one this run inserted (a later round's
        refinement), or, refreshing, one an earlier run did."""
        with self._guard("write"):
            self.conn.execute(
                "UPDATE measurement SET time_s = ?, repeats = ?, spread = ?, measured_at = ? "
                "WHERE kind = ? AND variant = ? AND shapes = ? AND dtypes = ? AND device = ? "
                "AND torch_version = ?",
                (
                    m.time_s, m.repeats, m.spread, m.measured_at or time.time(),
                    m.key.kind, m.key.variant, m.key.shapes, m.key.dtypes, m.device, m.torch_version,
                ),
            )

    def measurements(self, device: str | None = None) -> Iterator[Measurement]:
        query = (
            "SELECT kind, variant, shapes, dtypes, device, torch_version, time_s, flops, "
            "bytes, repeats, spread, measured_at, host FROM measurement"
        )
        args: tuple[str, ...] = ()
        if device is not None:
            query += " WHERE device = ?"
            args = (device,)
        with self._guard("read"):
            rows = self.conn.execute(query + " ORDER BY kind, variant, shapes, dtypes", args).fetchall()
        unusable = [r for r in rows if not usable(r[6], r[7], r[8])]
        if unusable:
            _warn_unusable(self.path, unusable)
        for r in rows:
            if usable(r[6], r[7], r[8]):
                yield Measurement(OpKey(r[0], r[1], r[2], r[3]), *r[4:])

    def devices(self) -> list[str]:
        with self._guard("read"):
            return [r[0] for r in self.conn.execute("SELECT DISTINCT device FROM measurement ORDER BY device")]


def latest_by_key(measurements: Iterable[Measurement]) -> dict[OpKey, Measurement]:
    """One measurement per op key: the installed torch version's, else the newest."""
    torch_version = installed_torch_version()
    chosen: dict[OpKey, Measurement] = {}
    for m in measurements:
        prev = chosen.get(m.key)
        if prev is None:
            chosen[m.key] = m
            continue
        m_same, prev_same = m.torch_version == torch_version, prev.torch_version == torch_version
        if (m_same and not prev_same) or (m_same == prev_same and m.measured_at > prev.measured_at):
            chosen[m.key] = m
    return chosen


class _Guard:
    """Turns sqlite errors met after opening into one-line CharonErrors."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = path, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            return False
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise CharonError(
                f"profile database {self.path}: still locked by another process after "
                f"{BUSY_TIMEOUT_S:.0f} s ({self.what})"
            ) from None
        if isinstance(exc, sqlite3.DatabaseError):
            raise _invalid(self.path, str(exc)) from None
        return False


def _invalid(path: Path, why: str) -> CharonError:
    return CharonError(f"profile database {path} is not a valid Charon profile database: {why}")
