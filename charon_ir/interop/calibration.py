"""User calibrations from measured traces, kept in the profile database.

`charon calibrate --profile TRACE` fits, per kernel class, measured / predicted
time (and on a CPU trace the host overhead per op) and stores it here, in the
`calibration` table of the user's profile database, under the device the trace
ran on (`cpu`, or the GPU's name). Each calibration of a device is a new
version; the newest active one is in force, and `charon calibrate --remove
DEVICE` deactivates it, so the one before (or none) is in force again. The
`calibrated` cost engine (`charon_ir.engines.calibrated`) prices with it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from charon_ir.errors import CharonError
from charon_ir.profile.store import ProfileStore, default_db_path

_TABLE = """
CREATE TABLE IF NOT EXISTS calibration (
    device TEXT NOT NULL,
    version INTEGER NOT NULL,
    kernel_class TEXT NOT NULL,
    factor REAL NOT NULL,
    source TEXT NOT NULL,
    created_at REAL NOT NULL,
    active INTEGER NOT NULL,
    PRIMARY KEY (device, version, kernel_class)
)
"""


@dataclass(frozen=True)
class Calibration:
    device: str
    version: int
    factors: dict[str, float]
    source: str
    created_at: float
    active: bool


def _ensure(store: ProfileStore) -> None:
    store.conn.execute(_TABLE)


def save(device: str, factors: dict[str, float], source: str, path: Path | str | None = None) -> Calibration:
    """Store `factors` as the device's newest calibration; returns it."""
    for name, value in factors.items():
        if not math.isfinite(value) or value < 0:
            raise CharonError(f"calibration: factor {name} = {value} is not a finite number >= 0")
    with ProfileStore.open(path) as store:
        _ensure(store)
        conn = store.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            (last,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM calibration WHERE device = ?",
                                   (device,)).fetchone()
            version, now = int(last) + 1, time.time()
            conn.executemany(
                "INSERT INTO calibration VALUES (?, ?, ?, ?, ?, ?, 1)",
                [(device, version, name, float(value), source, now) for name, value in sorted(factors.items())],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return Calibration(device, version, dict(factors), source, now, True)


def calibrations(path: Path | str | None = None, device: str | None = None) -> list[Calibration]:
    """Every stored calibration (of `device`), oldest first."""
    store = ProfileStore.open_existing(path)
    if store is None:
        return []
    with store:
        tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "calibration" not in tables:
            return []
        rows = store.conn.execute(
            "SELECT device, version, kernel_class, factor, source, created_at, active FROM calibration"
            + (" WHERE device = ?" if device is not None else "") + " ORDER BY device, version",
            (device,) if device is not None else ()).fetchall()
    out: dict[tuple[str, int], Calibration] = {}
    for dev, version, name, factor, source, created, active in rows:
        key = (dev, int(version))
        if key not in out:
            out[key] = Calibration(dev, int(version), {}, source, float(created), bool(active))
        out[key].factors[name] = float(factor)
    return list(out.values())


def active(device: str, path: Path | str | None = None) -> Calibration | None:
    """The calibration in force for `device`: its newest active version."""
    found = [c for c in calibrations(path, device) if c.active]
    return found[-1] if found else None


def remove(device: str, path: Path | str | None = None) -> Calibration:
    """Deactivate the device's calibration in force (kept in the table, marked
    inactive); returns it."""
    current = active(device, path)
    if current is None:
        raise CharonError(f"calibrate --remove {device}: no calibration in force for {device} "
                          f"in {Path(path) if path else default_db_path()}")
    with ProfileStore.open(path) as store:
        store.conn.execute("UPDATE calibration SET active = 0 WHERE device = ? AND version = ?",
                           (device, current.version))
        store.conn.commit()
    return current
